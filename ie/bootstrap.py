"""Paired bootstrap over records: is system B's micro F1 really above system A's on this gold, or is the
difference within what another sample of the same size could give?

Both systems are scored on the same resampled records each round (Koehn 2004; Berg-Kirkpatrick et al. 2012),
so a record that is hard for both moves both scores together. A bench-sized sample leaves a wide interval, so
a difference between two systems is only read with its interval (docs/DESIGN.md).
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from ie.config import TaskSchema
from ie.schema import Record
from ie.scoring import Counts, ReMode, keyed_pairs, pair_records, symmetric_types

# Fewer records than this and a percentile interval is mostly the sample's own shape (one record: every resample
# is that record, "+100.00 to +100.00"): it is shown with a warning, never read as evidence.
MIN_RECORDS = 30


@dataclass(frozen=True)
class PairedDifference:
    """F1 of A and B on all records, B − A, its percentile interval, the share of resamples where B does
    not beat A (a one-sided p-value for "B > A"), and how many records were resampled."""

    f1_a: float
    f1_b: float
    difference: float
    low: float
    high: float
    p_not_better: float
    resamples: int
    confidence: float
    records: int

    @property
    def too_few(self) -> str | None:
        """Why the interval cannot be read as evidence (too few records), or None."""
        if self.records >= MIN_RECORDS:
            return None
        return (f"the bootstrap has {self.records} record{'s' * (self.records != 1)}: too few for its interval to "
                f"mean anything (at least {MIN_RECORDS}); the difference is no evidence either way")


def record_counts(pairs: list[tuple[set, set]]) -> list[Counts]:
    """Micro counts per record from (gold keys, predicted keys)."""
    return [Counts(len(g & p), len(p - g), len(g - p)) for g, p in pairs]


def _f1(counts: list[Counts], sample: list[int]) -> float:
    total = Counts(sum(counts[i].tp for i in sample), sum(counts[i].fp for i in sample),
                   sum(counts[i].fn for i in sample))
    return total.f1


def paired_bootstrap(a: list[Counts], b: list[Counts], resamples: int = 2000, seed: int = 0,
                     confidence: float = 0.95) -> PairedDifference:
    """`a[i]` and `b[i]` are the two systems' counts on record i (same records, same order)."""
    if len(a) != len(b) or not a:
        raise ValueError(f"paired bootstrap needs the same non-empty records for both systems, got {len(a)} "
                         f"and {len(b)}")
    if resamples < 1 or not 0 < confidence < 1:
        raise ValueError(f"resamples must be >= 1 and confidence in (0, 1), got {resamples} and {confidence}")
    everything = list(range(len(a)))
    rng = random.Random(seed)
    diffs = []
    for _ in range(resamples):
        sample = rng.choices(everything, k=len(everything))
        diffs.append(_f1(b, sample) - _f1(a, sample))
    diffs.sort()
    cut = int((1 - confidence) / 2 * resamples)  # resamples left out on each side: 50 of 2,000 at 95 %
    f1_a, f1_b = _f1(a, everything), _f1(b, everything)
    return PairedDifference(f1_a, f1_b, f1_b - f1_a, diffs[cut], diffs[resamples - 1 - cut],
                            sum(d <= 0 for d in diffs) / resamples, resamples, confidence, len(a))


def compare_systems(gold: list[Record], pred_a: list[Record], pred_b: list[Record], schema: TaskSchema | None = None,
                    re_mode: ReMode = "strict", symmetric: bool = False, resamples: int = 2000, seed: int = 0
                    ) -> dict[str, PairedDifference]:
    """B − A on NER and on RE, matched as `evaluate` matches, paired by gold record (a record a system did not
    predict counts as empty)."""
    sym = symmetric_types(schema) if symmetric else frozenset()
    counts = []
    for pred in (pred_a, pred_b):
        pairs, _ = pair_records(gold, pred)
        counts.append([record_counts(task) for task in keyed_pairs(pairs, re_mode, sym)])
    (ner_a, re_a), (ner_b, re_b) = counts
    return {"ner": paired_bootstrap(ner_a, ner_b, resamples, seed), "re": paired_bootstrap(re_a, re_b, resamples, seed)}
