"""What a pass/fail test of a load-free replica said at the per-replica rates it was computed at, to answer it at
other rates without a solve (:mod:`aisize.plan.replica_count`'s bisection and knee walk; split from it to keep each
file small)."""

from __future__ import annotations

import math

BOUND_MARGIN = 1e-3  # a test's figure must clear its threshold by this share for its rate to bound others


class RateBounds:
    """What one test (the targets met, or below the knee) said of a load-free replica at the per-replica rates it
    was computed at, to answer it at other rates without a solve. It takes the replica's latencies and latency
    elasticity to rise with its rate (Little's law's root, each queue's wait and the iteration time rise with the
    load; checked on grids of rates in tests/test_slider_rate_bounds.py, not proved), so that a rate below one
    that passed passes and a rate above one that failed fails: the replica count's bisection and the knee's walk
    ask these tests at count after count of one shape, and a rate move asks them again at counts whose rates lie
    between those of the last move. A rate is answered only where a pass above it or a fail below it cleared the
    threshold by :data:`BOUND_MARGIN` (a figure within a rounding of it is not relied on), and never once a pass
    was seen at or above a fail (then the test is not monotone here: every rate is computed, as before)."""

    __slots__ = ("passed", "failed", "clear_passed", "clear_failed")

    def __init__(self):
        self.passed = self.clear_passed = -math.inf  # the highest rate that passed (cleared the margin)
        self.failed = self.clear_failed = math.inf  # the lowest rate that failed (cleared the margin)

    def says(self, rate: float) -> bool | None:
        """True or False where the rates seen decide the test at ``rate`` per replica; None where it is computed."""
        if self.passed >= self.failed:
            return None
        return True if rate <= self.clear_passed else False if rate >= self.clear_failed else None

    def bracketed(self) -> bool:
        """Whether a clear pass and a clear fail were seen (only the rates between them are computed)."""
        return self.clear_passed > -math.inf and self.clear_failed < math.inf

    def saw(self, rate: float, gap: float) -> None:
        """The test computed at ``rate``: ``gap`` its figure over the threshold, less 1 (<= 0 passed)."""
        clear = abs(gap) > BOUND_MARGIN  # inf (unstable, at capacity) clears it; NaN does not
        if gap <= 0.0:
            self.passed = max(self.passed, rate)
            self.clear_passed = max(self.clear_passed, rate) if clear else self.clear_passed
        else:
            self.failed = min(self.failed, rate)
            self.clear_failed = min(self.clear_failed, rate) if clear else self.clear_failed
