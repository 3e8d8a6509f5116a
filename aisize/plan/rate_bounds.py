"""What a pass/fail test of a load-free replica said at the per-replica rates it was computed at, to answer it at
other rates without a solve (:mod:`aisize.plan.replica_count`'s bisection and knee walk; split from it to keep each
file small), and what one batched solve of a replica met for the first time shows them (:func:`seed`)."""

from __future__ import annotations

import math

from aisize.plan import context as C
from aisize.serving.curves import screen_rates

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


SEED_COUNTS = 32  # at most this many counts of the bisection's range seeded (evenly spread, its ends kept)
SEED_AHEAD = 6  # the knee seeded this many top-up steps above the screen's count as well


def seedable(w, est) -> bool:
    """Whether :func:`screen_rates` of ``est`` solves what a probe of its replica at another count solves (the
    same loaded_state arguments): no prompt reuse or length distribution (their latencies mix classes of
    requests; the curve's one class does not), no spread of the lengths (the curve leaves it out), and the limits
    the estimate reports as the replica runs them."""
    if getattr(est, "replica", None) is None:  # not an estimate of aisize.serving.estimate: nothing to solve
        return False
    lim = est.replica.limits
    return (est.kv_reuse is None and est.lengths is None and not w.length_cv
            and float(est.max_batch_size) == float(lim.max_batch_size)
            and float(est.max_num_tokens) == float(lim.max_num_tokens))


def seed(w, est, gpus: int, low: int, n: int, floor: float, step_share: float, seen, knee, ttft_t: float,
         tpot_t: float, through: int | None = None) -> None:
    """Shows ``seen`` (the targets) and ``knee`` (:class:`RateBounds` of a load-free replica met for the first time)
    what one batched solve of ``est`` (the estimate at the screen's count ``n``, which meets the targets) says at
    the counts the bisection may try (``low`` + 1 to ``n`` - 1) and the knee's walk may ask (those, ``n`` and
    :data:`SEED_AHEAD` steps above it): the bisection and the walk then solve alone only the counts whose figures
    lie within :data:`BOUND_MARGIN` of a threshold (a batched solve's figures are each rate's alone only to the
    solver's rounding: :func:`~aisize.serving.curves.screen_rates`), and the count the walk stops at is
    estimated, as before. A prompt or output move meets a new replica at every shape it sizes (a bisection probe
    and a knee screen or elasticity each, 1.5 to 2.5 ms). ``through``: the targets are seeded up to this count
    instead of ``n`` - 1 (``n`` itself, where no probe was made at ``n``: aisize.plan.replica_count._seed_first)."""
    top = n - 1 if through is None else through  # the highest count the targets are seeded at
    counts = list(range(low + 1, top + 1))
    if len(counts) > SEED_COUNTS:
        counts = sorted({round(low + 1 + (top - 1 - low) * k / (SEED_COUNTS - 1)) for k in range(SEED_COUNTS)})
    ahead, c = counts + [n], n
    for _ in range(SEED_AHEAD):
        c += max(1, math.ceil(c * step_share))
        if c * gpus >= floor:
            break
        ahead.append(c)
    rates = [w.requests_per_s / c for c in counts]
    knee_rates = [w.requests_per_s / c for c in ahead]
    (stable, ttft, tpot), verdicts = screen_rates(est, rates, knee_rates, C.KNEE_ELASTICITY,
                                                  statistic=w.slo_statistic)
    for rate, ok, a, b in zip(rates, stable, ttft, tpot):
        seen.saw(rate, (max(a / ttft_t, b / tpot_t) if ok else math.inf) - 1.0)  # as _miss reads a probe
    for rate, past in zip(knee_rates, verdicts):
        if past is not None:  # each clear of the threshold (screen_rates), as _knee_screen shows them
            knee.saw(rate, math.inf if past else -1.0)
