"""Issue 42 item 1: unbounded request values get a 400 that says what to fix, before any work.

Through a real Jupyter server (pytest-jupyter ``jp_fetch``): query values longer than a path may
be or holding a name longer than a file name may be, tutorial folders of the same kinds, log line
counts with thousands of digits, kernel names of megabytes, and bodies nested thousands deep,
over the size limit, or of the wrong types. None answers 500; the server answers the next request.
"""

from __future__ import annotations

import json

import pytest
import tornado
from hyperpod_rl_jupyterlab.handlers import MAX_BODY_BYTES, MAX_BODY_DEPTH, NAME_MAX_BYTES, PATH_MAX_BYTES

LONG_NAME = "n" * (NAME_MAX_BYTES + 1)
LONG_PATH = "/tmp/" + "/".join(["d" * 200] * 25)  # every name fits, the path does not
WIDE_NAME = "é" * 200  # 200 characters, 400 bytes: a name is limited in bytes


async def _refused(jp_fetch, *route: str, method: str = "GET", body: str | bytes | None = None, **params: str) -> str:
    with pytest.raises(tornado.httpclient.HTTPClientError) as err:
        await jp_fetch("hyperpod-rl", *route, method=method, body=body, params=params or None)
    assert err.value.code == 400, (route, err.value.code, err.value.response.body[:300])
    answer = json.loads(err.value.response.body)
    assert answer["reason"] == "bad-request", answer
    return answer["message"]


@pytest.mark.parametrize(
    ("store", "expected"),
    [
        (f"/tmp/{LONG_NAME}/runs", f"store holds a name of {NAME_MAX_BYTES + 1} bytes"),
        (f"/tmp/{WIDE_NAME}", "store holds a name of 400 bytes"),
        (LONG_PATH, f"a path may be at most {PATH_MAX_BYTES} bytes"),
    ],
)
async def test_a_store_no_file_system_takes_is_400_on_every_route(jp_fetch, hprl_home, store, expected):
    routes = [("status",), ("runs",), ("runs", "some-run"), ("runs", "some-run", "logs"), ("adapters",)]
    for route in routes:
        message = await _refused(jp_fetch, *route, store=store)
        assert expected in message and "Settings > Hyperpod RL" in message, message
    message = await _refused(jp_fetch, "runs", "some-run", "stop", method="POST", body="", store=store)
    assert expected in message
    status = json.loads((await jp_fetch("hyperpod-rl", "status")).body)  # the server goes on answering
    assert status["store_exists"] is False


async def test_lines_and_preferred_kernel_are_bounded(jp_fetch, hprl_home):
    (hprl_home / "storage" / "runs" / "some-run").mkdir(parents=True)
    for lines in ("9" * 5000, "1" * 10):
        message = await _refused(jp_fetch, "runs", "some-run", "logs", lines=lines)
        assert "lines is" in message and "at most 9" in message, message
    message = await _refused(jp_fetch, "runs", "some-run", "logs", lines="1e9")
    assert "whole number of log lines" in message
    message = await _refused(jp_fetch, "kernels", preferred="k" * 10_000)  # under tornado's 64 KiB request-line limit
    assert "preferred is 10000 characters long; it may be at most 255" in message, message


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"folder": LONG_NAME}, f"folder holds a name of {NAME_MAX_BYTES + 1} bytes"),
        ({"folder": f"tut/{WIDE_NAME}/x"}, "folder holds a name of 400 bytes"),
        ({"folder": LONG_PATH.lstrip("/")}, f"a path may be at most {PATH_MAX_BYTES} bytes"),
        ({"folder": "tut\x00orial"}, "folder holds the control character '\\x00'"),
        ({"folder": ["tut"]}, 'folder must be text such as "hyperpod-rl-tutorial", got a list'),
        ({"folder": {"a": {"b": 1}}}, "folder must be text"),
        ({"kernel": "python3"}, "kernel must be an object"),
        ({"kernel": {"name": "k" * 1000}}, "kernel.name must be text of at most 255 characters (a kernel's name), got 1000 characters"),
        ({"kernel": {"name": "python3", "display_name": 5}}, "kernel.display_name must be text of at most 255 characters"),
        ([1, 2], "the body must be a JSON object"),
    ],
)
async def test_tutorial_fields_are_checked_before_anything_is_written(jp_fetch, jp_root_dir, hprl_home, body, expected):
    message = await _refused(jp_fetch, "tutorial", method="POST", body=json.dumps(body))
    assert expected in message, message
    assert sorted(p.name for p in jp_root_dir.iterdir()) == [], "a refused request wrote something"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("[" * 30_000 + "]" * 30_000, f"nests JSON deeper than {MAX_BODY_DEPTH} levels"),  # past Python's recursion limit
        ('{"folder": ' + "[" * 50 + "]" * 50 + "}", f"nests JSON deeper than {MAX_BODY_DEPTH} levels"),  # parses, too deep
        ('{"folder": "' + "x" * MAX_BODY_BYTES + '"}', f"at most {MAX_BODY_BYTES} are read"),
        ('{"folder": "tut"', "the body is not JSON"),
        (b'{"folder": "\xff"}', "the body is not JSON"),
        ('{"folder": ' + "9" * 5000 + "}", "the body holds a number of more than 4300 digits"),  # valid JSON json refuses
    ],
)
async def test_tutorial_bodies_are_bounded_before_they_are_walked(jp_fetch, jp_root_dir, hprl_home, raw, expected):
    message = await _refused(jp_fetch, "tutorial", method="POST", body=raw)
    assert expected in message and '{"folder": "hyperpod-rl-tutorial"' in message, message
    assert list(jp_root_dir.iterdir()) == []
