"""One redactor, by kind, for every text this project shows: job logs, error details, route answers.

Kinds masked with ``***`` (the key name or query parameter is kept, so the reader sees what was
there):

- AWS access key ids (``AKIA``/``ASIA``/... + 16 upper-case letters or digits; AWS IAM
  "Unique identifier prefixes");
- AWS secret access keys: a 40-character value after a key name (``aws_secret_access_key``,
  ``SecretAccessKey``, ``AWS_SECRET_ACCESS_KEY``), and any bare 40-character word of the key's
  alphabet that mixes upper case, lower case and digits (git and content hashes are lower-case
  hex, so they stay);
- AWS session tokens after a key name (``aws_session_token``, ``SessionToken``,
  ``X-Amz-Security-Token``);
- presigned-URL and SigV4 parts: ``X-Amz-Signature``, ``X-Amz-Credential``,
  ``X-Amz-Security-Token``, ``Signature``, ``AWSAccessKeyId`` and ``token`` query values,
  ``Credential=`` / ``Signature=`` of an ``Authorization`` header, botocore's
  ``Signature:\\n<hex>`` debug line, and ``Bearer`` tokens;
- known secrets (the Ray token), verbatim, base64-encoded (standard and URL-safe alphabets,
  alone or inside a longer base64 text at any byte offset), and split across lines (any
  whitespace between its characters).

Pure standard library, so the JupyterLab server extension carries an identical copy
(``labextension/hyperpod_rl_jupyterlab/_redact.py``; ``tests/test_redact.py`` keeps the two
identical) and imports no ``hyperpod_rl``.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

__all__ = ["MASK", "redact", "redact_json"]

MASK = "***"

_KEY_VALUE = r"[\"']?\s*[:=]\s*[\"']?"
#: (pattern, replacement) pairs applied in order; group 1, where present, is kept.
_KINDS: tuple[tuple[re.Pattern[str], str], ...] = (
    # AWS access key ids (AKIA long-term, ASIA temporary, and the other IAM id prefixes)
    (re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}(?![A-Z0-9])"), MASK),
    # secret access keys and session tokens after their key names
    (re.compile(r"(?i)((?:aws_?)?secret_?access_?key" + _KEY_VALUE + r")[A-Za-z0-9/+=]{40}"), rf"\1{MASK}"),
    (re.compile(r"(?i)((?:aws_?)?(?:session|security)_?token" + _KEY_VALUE + r")[A-Za-z0-9/+=%]{16,}"), rf"\1{MASK}"),
    # presigned URLs and SigV4 authorization headers
    (
        re.compile(r"(?i)((?:X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token|Signature|AWSAccessKeyId|token)=)[^&\s\"'<>,]+"),
        rf"\1{MASK}",
    ),
    (re.compile(r"(Credential=)[^,&\s\"']+"), rf"\1{MASK}"),
    (re.compile(r"(Signature:\s*)[0-9a-f]{64}"), rf"\1{MASK}"),
    (re.compile(r"(?i)(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}"), rf"\1{MASK}"),
    # a bare secret access key: 40 characters of its alphabet mixing upper, lower case and digits
    (
        re.compile(
            r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
        ),
        MASK,
    ),
)


@lru_cache(maxsize=64)
def _secret_pattern(secret: str) -> re.Pattern[str]:
    """The secret verbatim or split by whitespace, and its base64 forms (see the module docstring)."""
    forms = ["".join(re.escape(c) + r"\s*" for c in secret[:-1]) + re.escape(secret[-1])]
    raw = secret.encode()
    for offset in range(3):  # the secret inside a longer base64 text starts at one of three byte offsets
        encoded = base64.b64encode(b"\0" * offset + raw).decode().rstrip("=")
        # drop the characters that also encode the neighbouring bytes: what is left is fixed
        core = encoded[(4 * offset + 2) // 3 : len(encoded) - 2]
        if len(core) >= 8:
            forms += [re.escape(core), re.escape(core.replace("+", "-").replace("/", "_"))]
    return re.compile("|".join(sorted(set(forms), key=len, reverse=True)))


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret of the kinds above replaced by ``***``.

    Args:
        text: any text (a log, an error message, a URL).
        secrets: known secrets (e.g. the Ray token), masked in their encodings too; secrets
            shorter than 8 characters are ignored (they would mask ordinary words).

    Returns:
        The redacted text; text without secrets comes back unchanged.
    """
    for secret in secrets:
        if secret and len(secret) >= 8:
            text = _secret_pattern(secret).sub(MASK, text)
    for pattern, replacement in _KINDS:
        text = pattern.sub(replacement, text)
    return text


def redact_json(data: Any, secrets: Iterable[str] = ()) -> Any:
    """``data`` (JSON-like: dicts, lists, strings, numbers) with :func:`redact` applied to every string, keys too."""
    known = tuple(secrets)
    if isinstance(data, str):
        return redact(data, known)
    if isinstance(data, dict):
        return {redact_json(k, known): redact_json(v, known) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_json(v, known) for v in data]
    return data
