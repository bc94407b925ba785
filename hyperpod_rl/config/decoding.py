"""The shapes compiled decoding (``rollout.decode='compiled'``) pads to: one rule for the policy and the planner.

A compiled decode step is captured per input shape, so the reference backend fills each decode
batch up to a bucket of rows and left-pads each prompt to a multiple of
:data:`DECODE_LENGTH_BUCKET` tokens; its static KV cache then holds ``decode_batch_rows(n)`` rows of
``padded prompt + max_new_tokens`` tokens (``hyperpod_rl.model.policy``, ``hyperpod_rl.plan``).
"""

from __future__ import annotations

__all__ = ["DECODE_LENGTH_BUCKET", "decode_batch_rows", "decode_cache_tokens"]

#: Compiled decoding left-pads every row to a multiple of this many tokens.
DECODE_LENGTH_BUCKET = 256


def decode_batch_rows(n: int) -> int:
    """Rows a compiled decode call of ``n`` observations is filled up to: the next power of two up to 64, then multiples of 64."""
    return 1 << max(0, (n - 1).bit_length()) if n <= 64 else -(-n // 64) * 64


def decode_cache_tokens(prompt_tokens: int, max_new_tokens: int) -> int:
    """Tokens per row of the static KV cache: the prompt padded to :data:`DECODE_LENGTH_BUCKET`, plus the new tokens."""
    return -(-prompt_tokens // DECODE_LENGTH_BUCKET) * DECODE_LENGTH_BUCKET + max_new_tokens
