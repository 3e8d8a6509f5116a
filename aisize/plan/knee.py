"""Whether a replica count sits short of the latency knee, and the caches that answer it fast
(:mod:`aisize.plan.replica_count`'s top-up walk asks it count after count; split from it to keep each file small):
:func:`below_knee`, the latency elasticity computed once per estimate and rate (:func:`elasticity_at`), and the
batched screen of the walk's next counts (:func:`_knee_screen`)."""

from __future__ import annotations

import math
from dataclasses import replace

from aisize.plan import context as C
from aisize.serving.curves import above_threshold, latency_elasticity

TOP_UP_STEPS = 16  # replicas added, a step at a time, until the estimate meets the targets
TOP_UP_SHARE = 0.05  # each step adds this share of the fleet (at least one replica)


SCREEN_AFTER = 3  # a walk this many steps long is screened (fewer: a screen would cost what it saves)
SCREEN_AHEAD = 3  # counts screened beyond the length of the last walk, or half as many as a screen in a walk


def _knee_screen(w, est, shape, start, floor, own, counts, knee=None, learn=False) -> int:
    """Screens the next ``counts`` counts of the top-up walk from ``start`` (a load-free replica's: its curve is
    that of any count) with one batched solve (:func:`aisize.serving.curves.above_threshold`), keeping in
    :data:`_PAST_KNEE` those clearly past the knee: :func:`below_knee` answers for them without a solve each. The
    count the walk stops at, and any too near the knee to tell, are solved alone, so the plan's figure and every
    stop are those of the walk without the screen. ``own``: ``est`` is the estimate at ``start`` (the walk's first
    count); else each count's is ``est`` at its rate (:func:`_at_rate`). ``knee``: the replica's
    :class:`~aisize.plan.rate_bounds.RateBounds`, shown every verdict (and the counts it answers already are not
    screened). ``learn``: instead, ``knee`` is shown the verdicts at :data:`LEARN_SHARES` of the rate at ``start``,
    where a walk lost past the knee (the next rate move asks the walk a rate a little below). Returns the last count
    screened."""
    if learn:
        rates = [w.requests_per_s / start * share for share in LEARN_SHARES]
        if knee.says(rates[-1]) is None:
            for r, past in zip(rates, above_threshold(est, rates, C.KNEE_ELASTICITY, statistic=w.slo_statistic)):
                if past is not None:  # each as alone (above_threshold): clear of the threshold
                    knee.saw(r, math.inf if past else -1.0)
        return start
    asked, n = [], start
    while len(asked) < counts and n * shape.gpus < floor and w.requests_per_s / n > 0:
        asked.append(n)
        n += max(1, math.ceil(n * TOP_UP_SHARE))
    if len(asked) < 2:  # one count: its solve is the figure; a screen would add one
        return start
    if knee is not None and all(knee.says(w.requests_per_s / c) is not None for c in asked):
        return asked[-1]

    def at(c):  # the object the walk asks about at count c
        return est if own and c == start else _at_rate(est, w.requests_per_s / c)
    first = at(start)
    key = (id(first), float(first.requests_per_s), w.slo_statistic)
    if (_ELASTICITIES.get(key, (None,))[0] is first) or _PAST_KNEE.get(key) is first:
        return asked[-1]  # this walk ran before (a target's move, the same kept estimate): its answers are kept
    rates = [first.requests_per_s] + [w.requests_per_s / c for c in asked[1:]]  # as the walk asks (_at_rate)
    verdicts = above_threshold(est, rates, C.KNEE_ELASTICITY, statistic=w.slo_statistic)
    for c, v in zip(asked, verdicts):
        if knee is not None and v is not None:  # each as alone (above_threshold): clear of the threshold
            knee.saw(w.requests_per_s / c, math.inf if v else -1.0)
        if v:
            one = at(c)
            _PAST_KNEE[(id(one), float(one.requests_per_s), w.slo_statistic)] = one
    while len(_PAST_KNEE) > _KEPT_ELASTICITIES:
        del _PAST_KNEE[next(iter(_PAST_KNEE))]
    return asked[-1]


LEARN_SHARES = (0.96, 0.92, 0.88, 0.84, 0.8)  # of a rate where a walk lost past the knee: screened for the next move


def below_knee(w, est) -> bool:
    """Whether a replica's request latency (at the targets' statistic) rises at most KNEE_ELASTICITY times as fast
    as its load at the estimate's rate: a fleet sized only to meet its targets can sit at the knee (agentic-coding
    at 92 % busy: 10 % more load, 42 % more latency), meeting them on paper and missing them at the first rise."""
    if not est.requests_per_s:
        return True
    if _PAST_KNEE.get((id(est), float(est.requests_per_s), w.slo_statistic)) is est:
        return False  # screened clearly past it (_knee_screen)
    return elasticity_at(est, est.requests_per_s, w.slo_statistic) <= C.KNEE_ELASTICITY


def _below_knee_seen(w, at, knee, rate: float) -> bool:
    """:func:`below_knee` of ``at`` (at ``rate`` per replica), the figure it read shown to ``knee``
    (:class:`~aisize.plan.rate_bounds.RateBounds`) if given: the screen's verdict or the elasticity it computed,
    where they agree with it."""
    below = below_knee(w, at)
    if knee is not None and at.requests_per_s:
        key = (id(at), float(at.requests_per_s), w.slo_statistic)
        known = _ELASTICITIES.get(key)
        if _PAST_KNEE.get(key) is at and not below:
            knee.saw(rate, math.inf)
        elif known is not None and known[0] is at and (known[1] <= C.KNEE_ELASTICITY) == below:
            knee.saw(rate, known[1] / C.KNEE_ELASTICITY - 1.0)
    return below


_ELASTICITIES: dict = {}  # (id of the estimate, rate, statistic) -> (the estimate, its elasticity)
_KEPT_ELASTICITIES = 64  # a move tries up to replica_count.REFINE_SHAPES shapes, each at a few counts
_AT_RATE: dict = {}  # (id of the estimate, rate) -> (the estimate, it at that rate)
_PAST_KNEE: dict = {}  # (id of an estimate, rate, statistic) -> that estimate, screened past the knee there
_STEPPED: dict = {}  # (service, shape) -> steps its last knee walk took (whether to screen from its first count)


def _at_rate(est, requests_per_s: float):
    """``est`` at another rate per replica (a load-free replica's: its fit and curve are those of any rate), one
    object per (estimate, rate) while kept: a target's move re-plans from the same kept estimates
    (aisize.plan.replica_count's kept estimates) at the same counts, and :func:`elasticity_at` finds the figure it
    computed for this one."""
    key = (id(est), repr(float(requests_per_s)))
    got = _AT_RATE.get(key)
    if got is None or got[0] is not est:
        got = _AT_RATE[key] = (est, replace(est, requests_per_s=requests_per_s))
        while len(_AT_RATE) > _KEPT_ELASTICITIES:
            del _AT_RATE[next(iter(_AT_RATE))]
    return got[1]


def _remember(est, requests_per_s: float, statistic: str, value: float) -> None:
    _ELASTICITIES[(id(est), float(requests_per_s), statistic)] = (est, value)
    while len(_ELASTICITIES) > _KEPT_ELASTICITIES:
        del _ELASTICITIES[next(iter(_ELASTICITIES))]


def elasticity_at(est, requests_per_s: float, statistic: str) -> float:
    """:func:`latency_elasticity` of ``est`` at ``requests_per_s`` per replica, computed once: the knee check and
    the plan's figure (aisize.plan.inference) read it of the same estimate at the same rate (one curve, not two).
    The entry holds the estimate, so its id names no other while it is kept."""
    key = (id(est), float(requests_per_s), statistic)
    got = _ELASTICITIES.get(key)
    if got is None or got[0] is not est:
        got = (est, latency_elasticity(est, requests_per_s, statistic=statistic))
        _remember(est, requests_per_s, statistic, got[1])
    return got[1]


def _clear_elasticities() -> None:
    _ELASTICITIES.clear()
    _AT_RATE.clear()
    _PAST_KNEE.clear()
    _STEPPED.clear()


elasticity_at.cache_clear = _clear_elasticities  # aisize.plan.clear_caches finds it (cold-plan benchmarks)
