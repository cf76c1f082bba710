"""`ie.failures`: an unfinished record's reason, the failures file, and the one line a run ends with."""
import asyncio
import json

import pytest

from ie.failures import Failure, IncompleteRun, failure_of, text_sha256, within_budget, write_failures
from ie.llm.types import TransportError
from ie.records import LabelledRecord

FAILED = LabelledRecord(id="a", text="Bo runs .", stats={"failed": "read timeout", "error": "ReadTimeout: no token in 30 s"})
DONE = LabelledRecord(id="b", text="Al walks .", stats={"calls": 1})


def test_a_failed_record_is_listed_with_its_reason_and_the_run_summarised_in_one_line(tmp_path):
    assert failure_of(FAILED) == "read timeout" and failure_of(DONE) is None
    with pytest.raises(ValueError, match="'b' finished"):
        Failure.of(DONE)
    path = tmp_path / "failures.jsonl"
    write_failures(path, [Failure.of(FAILED)])
    assert json.loads(path.read_text()) == {"id": "a", "text_sha256": text_sha256("Bo runs ."),
                                            "reason": "read timeout", "error": "ReadTimeout: no token in 30 s"}
    run = IncompleteRun([Failure.of(FAILED)], 3, path)
    assert run.summary("python -m teacher run") == (
        f"1 of 3 records failed (1 read timeout; first: a: ReadTimeout: no token in 30 s) and were not written; "
        f"listed in {path}; to retry them, run again: python -m teacher run")
    write_failures(path, [])  # a re-run with no failure clears the file
    assert not path.exists()


def test_within_budget_turns_an_unanswered_call_or_the_budget_running_out_into_a_reason():
    async def unanswered():
        raise TransportError("HTTP 503: down", status=503)

    assert asyncio.run(within_budget(asyncio.sleep(0, "done"), None)) == ("done", None)
    assert asyncio.run(within_budget(unanswered(), 5)) == (None, ("HTTP 503", "HTTP 503: down"))
    assert asyncio.run(within_budget(asyncio.sleep(5), 0.01)) == (
        None, ("time budget", "not finished within its time budget of 0.01 s"))
