"""`ie.bootstrap`: the paired bootstrap on hand-computed cases."""

import pytest

from ie.bootstrap import paired_bootstrap
from ie.scoring import Counts


def test_paired_bootstrap_by_hand():
    even = [Counts(1, 0, 0)] * 10
    same = paired_bootstrap(even, even, resamples=200)
    assert (same.difference, same.low, same.high, same.p_not_better) == (0.0, 0.0, 0.0, 1.0)
    # B finds the entity A misses on half the records: a tie only on resamples without them, 2**-10 of them.
    worse = [Counts(0, 0, 1)] * 5 + [Counts(1, 0, 0)] * 5
    better = paired_bootstrap(worse, even, resamples=200)
    assert better.f1_b == 1.0 and better.f1_a == pytest.approx(2 / 3) and better.difference == pytest.approx(1 / 3)
    assert 0 < better.low <= better.difference <= better.high and better.p_not_better < 0.01
    # One record decides it: B wins on it, loses nothing elsewhere, so resamples without it are ties.
    one = paired_bootstrap([Counts(0, 0, 1)] + even[1:], even, resamples=2000, seed=1)
    assert one.low == 0.0 and one.high > 0 and 0.3 < one.p_not_better < 0.4  # (1 - 1/10)^10 = 0.35 miss it
    assert paired_bootstrap(worse, even, resamples=200, seed=3) == paired_bootstrap(worse, even, resamples=200, seed=3)
    with pytest.raises(ValueError, match="same non-empty records"):
        paired_bootstrap(even, even[:3])
