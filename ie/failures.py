"""Records a run could not finish. A failed record is never a result: it is kept out of the outputs, listed
in a failures file with its reason, retried by the next run, and the run ends non-zero with one summary line.

A record is unfinished when one of its calls got no answer (`TransportError`: refused, 401, 5xx after retries,
a read timeout, a context overflow) or it ran past its time budget; its `stats` then hold `failed` (the short
reason) and `error` (the detail). An answer that never validated after re-asks is no failure of this kind: the
record is finished with that call recorded as invalid, since asking again would not change it.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter
from collections.abc import Awaitable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeVar

from ie.llm.types import TransportError
from ie.records import LabelledRecord

T = TypeVar("T")
TIME_BUDGET = "time budget"


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def within_budget(work: Awaitable[T], budget_s: float | None) -> tuple[T | None, tuple[str, str] | None]:
    """(the result, None), or (None, (reason, error)) when a call got no answer or `budget_s` ran out first
    (None or 0: no budget). Other exceptions are bugs and propagate."""
    try:
        return await asyncio.wait_for(work, budget_s or None), None
    except TransportError as exc:
        return None, (exc.reason, str(exc))
    except asyncio.TimeoutError:
        return None, (TIME_BUDGET, f"not finished within its time budget of {budget_s:g} s")


def failure_of(record: LabelledRecord) -> str | None:
    """The reason a record is unfinished, or None for a finished one."""
    return record.stats.failed


@dataclass(frozen=True)
class Failure:
    id: str
    text_sha256: str
    reason: str
    error: str

    @classmethod
    def of(cls, record: LabelledRecord) -> Failure:
        stats = record.stats
        if stats.failed is None:
            raise ValueError(f"record {record.id!r} finished: it is no failure")
        return cls(record.id, text_sha256(record.text), stats.failed, stats.error or "")


def write_failures(path: Path, failures: Sequence[Failure]) -> None:
    """This run's failures as JSONL at `path`; no file when there are none (a re-run clears it)."""
    if not failures:
        path.unlink(missing_ok=True)
        return
    path.write_text("".join(json.dumps(asdict(f), ensure_ascii=False) + "\n" for f in failures), encoding="utf-8")


class IncompleteRun(RuntimeError):
    """Some records failed; everything else is written. `summary(command)` is the one line to show."""

    def __init__(self, failures: Sequence[Failure], total: int, listed_in: Path | None = None):
        self.failures, self.total, self.listed_in = list(failures), total, listed_in
        super().__init__(self.summary())

    def summary(self, command: str | None = None) -> str:
        reasons = ", ".join(f"{n} {reason}" for reason, n in Counter(f.reason for f in self.failures).most_common())
        first = self.failures[0]
        line = (f"{len(self.failures)} of {self.total} records failed ({reasons}; first: {first.id}: "
                f"{first.error[:300]})")
        if self.listed_in is not None:
            line += f" and were not written; listed in {self.listed_in}"
        return line + (f"; to retry them, run again: {command}" if command else "")


def all_finished(records: Sequence[LabelledRecord]) -> list[LabelledRecord]:
    """`records`, when every one finished; else `IncompleteRun` listing those that did not: what a library call
    returns, since an unfinished record is never a result."""
    failures = [Failure.of(r) for r in records if failure_of(r) is not None]
    if failures:
        raise IncompleteRun(failures, len(records))
    return list(records)
