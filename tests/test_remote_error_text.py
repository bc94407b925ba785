"""A remote error's text (a Ray job server's 500 carries its whole traceback) is cut to the one line
that says what failed before it goes into an error message (``errors.last_line``)."""

from __future__ import annotations

from hyperpod_rl.errors import last_line

# What JobSubmissionClient raised when the dashboard agent's raylet had exited (new-user report, shortened).
RAY_500 = """Request failed with status code 500: Traceback (most recent call last):
  File "/opt/venv/lib/python3.12/site-packages/aiohttp/web_protocol.py", line 510, in _handle_request
    resp = await request_handler(request)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/opt/venv/lib/python3.12/site-packages/ray/dashboard/optional_utils.py", line 98, in _handler_route
    return await handler(bind_info.instance, req)
           ~~~~~~~~~~~~~^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/opt/venv/lib/python3.12/site-packages/ray/dashboard/modules/job/job_head.py", line 381, in submit_job
    job_agent_client = await self.get_target_agent()
                       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/opt/venv/lib/python3.12/site-packages/ray/dashboard/modules/job/job_head.py", line 240, in get_target_agent
    raise TimeoutError("Failed to get an available agent within 30 s")
TimeoutError: Failed to get an available agent within 30 s
"""


def test_a_server_traceback_becomes_its_prefix_and_its_last_line():
    assert last_line(RAY_500) == "Request failed with status code 500: TimeoutError: Failed to get an available agent within 30 s"


def test_a_bare_traceback_becomes_its_exception_line():
    text = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n    f()\nValueError: boom\n'
    assert last_line(text) == "ValueError: boom"


def test_one_line_is_kept_and_a_long_one_is_cut():
    assert last_line(RuntimeError("Job with submission_id x does not exist")) == "Job with submission_id x does not exist"
    assert last_line("") == ""
    cut = last_line("x" * 1000, limit=300)
    assert len(cut) == 300 and cut.endswith("...")
