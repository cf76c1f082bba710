"""ie.record_stats: the `stats` extra each labeller writes reads back as `RecordStats` and dumps to the same JSON."""
import gzip
import json

import pytest

from ie.config import REPO_ROOT
from ie.record_stats import RecordStats
from ie.records import LabelledRecord

TEACHER = {"calls": 8, "cached_calls": 1, "prompt_tokens": 900, "completion_tokens": 120, "prefix_cached_tokens": 64,
           "failed_calls": 0, "truncated_calls": 0, "ungrounded_items": 2, "conflicts": 1, "unresolved_conflicts": 0,
           "agents_skipped_by_routing": 3, "wall_s": 1.25}
STUDENT = {"calls": 1, "prompt_tokens": 200, "completion_tokens": 40, "prefix_cached_tokens": 0, "failed_calls": 0,
           "cached": False, "ungrounded": 1, "invalid": 0, "wall_s": 0.3121}
STUDENT_FAILED = {"failed": "read timeout", "error": "ReadTimeout: no token in 30 s", "wall_s": 30.0012}


@pytest.mark.parametrize("stats", [TEACHER, {**TEACHER, "windows": 3}, STUDENT, {**STUDENT, "windows": 2},
                                   {"ungrounded": 0, "invalid": 2, "error": "not JSON"}, {}])
def test_each_labellers_stats_round_trip_keys_and_values(stats):
    assert RecordStats.model_validate(stats).as_dict() == stats


def test_the_saved_results_stats_round_trip_in_order():
    files = sorted((REPO_ROOT / "results").glob("*/*.jsonl.gz"))
    assert files
    for path in files:
        for line in gzip.open(path, "rt", encoding="utf-8"):
            stats = json.loads(line)["stats"]
            assert list(RecordStats.model_validate(stats).as_dict().items()) == list(stats.items()), path


def test_a_counter_a_labeller_does_not_write_reads_zero():
    stats = LabelledRecord(id="1", text="t", stats=STUDENT).stats
    assert stats.cached_calls == 0 and stats.unresolved_conflicts == 0 and stats.calls == 1 and stats.failed is None
    assert LabelledRecord(id="2", text="t").stats == RecordStats()
    assert LabelledRecord(id="3", text="t", stats=STUDENT_FAILED).stats.failed == "read timeout"
