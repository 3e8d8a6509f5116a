"""How many replicas of which shape a service needs, as the plan estimates them (aisize.plan.inference sizes a
service with these; split from it to keep each file small).

The sizing screen (:func:`aisize.serving.sizing.choose_fleet`) ranks shapes on a light model; here its best shapes
are sized again with the estimate the plan reports: the fewest replicas that meet the TTFT and TPOT targets at
their statistic (bisection), then short of the latency knee (:func:`aisize.plan.knee.below_knee`), or a stated
miss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from aisize.plan import context as C
from aisize.plan.knee import (LEARN_SHARES, SCREEN_AFTER, SCREEN_AHEAD, TOP_UP_SHARE, TOP_UP_STEPS, _ELASTICITIES,
                              _KEPT_ELASTICITIES, _STEPPED, _at_rate, _below_knee_seen, _knee_screen, _remember,
                              below_knee, elasticity_at)  # noqa: F401 (below_knee, elasticity_at: read here by others)
from aisize.plan.kvtiers import plan_kv_tiers, serving_extras
from aisize.plan.rate_bounds import BOUND_MARGIN, RateBounds as _Bounds, seedable, seed  # noqa: F401 (tests)
from aisize.plan.slo_reason import UnmetTargets
from aisize.serving.estimate import candidate_replicas, estimate_capacity, probe, replica_estimate
from aisize.serving.sizing import FleetChoice
from aisize.serving.tails import STATISTIC_SUFFIX

FALLBACK_UTILISATION = 0.7  # assumption: replicas' load when no shape meets the targets


def _one(w, shape, kw, engine, cal) -> dict:
    """:func:`aisize.serving.estimate`'s arguments for one replica of ``shape`` (its rate apart)."""
    return dict(tensor_parallel=shape.tensor_parallel, **kw, pipeline_parallel=shape.pipeline_parallel,
                attention_dp=shape.attention_dp, stage_link_bytes_per_s=shape.stage_link_bytes_per_s,
                length_cv=w.length_cv, engine=engine, calibration=cal, **serving_extras(w))


REFINE_SHAPES = 6  # the screen's best shapes sized again with the full estimate
GUESS_UTILISATION = 0.9  # the bisection's first probe: replicas this busy (saves probes; the result is the same)


@dataclass(frozen=True)
class EstimatedFleet(FleetChoice):
    """The screen's choice sized again with the estimate the plan reports (:func:`_sized_by_estimate`), with the
    targets it misses where no shape meets them as estimated."""

    unmet: UnmetTargets | None = None


def _sized_by_estimate(w, ctx, policies, arch, fleet, kw, engine, cal, ttft_t, tpot_t):
    """(:class:`EstimatedFleet`, KV tiers, estimate) of the fewest GPUs that meet the targets as the plan
    estimates them.

    The screen (:func:`choose_fleet`) ranks the shapes on a model without speculation, output-length spread or KV
    tiers, so its replica counts are a start, not the answer: each of its best :data:`REFINE_SHAPES` shapes is
    sized again with the estimate the plan reports (bisection on the replicas between the capacity's bound and
    the screen's count, or steps up from it), and the fewest GPUs win (then the smaller replica). When no shape
    meets the targets with the estimate, the screen's choice is kept at the replicas that come nearest, and the
    plan states by how much it misses (:class:`UnmetTargets`)."""
    best, nearest = None, None
    ranked = fleet.ranked[:REFINE_SHAPES]
    cut = _likely_first(w, ctx, policies, arch, ranked, kw, engine, cal, ttft_t, tpot_t)
    for shape, n, _ in ranked:
        floor = min(best[0] if best else math.inf, cut)
        if shape.gpus >= floor:  # one replica already needs the GPUs of the best: _fewest_replicas says None
            continue
        one = _one(w, shape, kw, engine, cal)
        if floor < math.inf and _screened_out(w, arch, fleet, shape, one, floor):
            continue
        got = _fewest_replicas(w, ctx, policies, arch, shape, n, one, ttft_t, tpot_t, floor)
        if got is None:
            continue
        replicas, kv, est, met = got
        key = (replicas * shape.gpus, shape.gpus)
        if met and (best is None or key < best[:2]):
            best = key + (shape, replicas, kv, est)
        if not met and nearest is None and shape == fleet.shape:
            nearest = (shape, replicas, kv, est)
    if best is None and nearest is None:  # nothing better than the screen's count: keep it as estimated
        one = _one(w, fleet.shape, kw, engine, cal)
        nearest = (fleet.shape, fleet.replicas) + _evaluate(w, ctx, policies, arch, fleet.shape, fleet.replicas, one)
    shape, replicas, kv, est = best[2:] if best else nearest
    _remember_winner(w, shape if best else None)
    knee_rate = fleet.knee_of(shape) if fleet.knee_of else fleet.knee_requests_per_s
    unmet = None if best else _missed(w, fleet, shape, replicas, est, ttft_t, tpot_t)
    kept = {f.name: getattr(fleet, f.name) for f in fields(FleetChoice)}
    return EstimatedFleet(**kept | dict(shape=shape, replicas=replicas, knee_requests_per_s=knee_rate),
                          unmet=unmet), kv, est


_WINNERS: dict = {}  # service -> the shape its last sizing chose (None: none met the targets)


def _remember_winner(w, shape) -> None:
    _WINNERS[w.name] = shape
    while len(_WINNERS) > _KEPT_ELASTICITIES:
        del _WINNERS[next(iter(_WINNERS))]


_remember_winner.cache_clear = _WINNERS.clear  # aisize.plan.clear_caches finds it (cold plans size as cold)


def _likely_first(w, ctx, policies, arch, ranked, kw, engine, cal, ttft_t, tpot_t) -> float:
    """GPUs below which the search of every shape runs as it would (a floor, :func:`_sized_by_estimate`): the last
    winner's sizing + 1, where that shape is among ``ranked`` but not first (else math.inf). A search's floor
    changes nothing of a shape whose result is below it (its probes, walks and limits stop at its result), and a
    shape that cannot get under it cannot win, so the ranked order and its ties are kept, while the shapes ranked
    before the likely winner stop at its GPUs instead of walking up from their screen counts (agentic-coding: TP 8
    with attention DP 8 from 21 to 33 replicas, seven reuse fixed points, before TP 8 wins at 15)."""
    likely = _WINNERS.get(w.name)
    if likely is None or not ranked or ranked[0][0] == likely or load_free(w, arch):
        return math.inf  # a load-free replica's counts are answered from its bounds and seeds: cheap, left as is
    n = next((n for shape, n, _ in ranked if shape == likely), None)
    if n is None:
        return math.inf
    got = _fewest_replicas(w, ctx, policies, arch, likely, n, _one(w, likely, kw, engine, cal), ttft_t, tpot_t)
    return got[0] * likely.gpus + 1 if got is not None and got[3] else math.inf


def _screened_out(w, arch, fleet, shape, one, floor: float) -> bool:
    """Whether the replicas carrying the rate at ``shape``'s capacity need ``floor`` GPUs or more by the screen's
    capacity: :func:`_fewest_meeting`'s None from the estimate's, the same to the bit without speculation or length
    spread (tests/test_slider_screen_capacity.py), read with a margin all the same, without estimate_capacity."""
    if (fleet.capacity_of is None or not load_free(w, arch) or one.get("length_distribution") is not None
            or one.get("speculative_method") is not None):
        return False
    cap = fleet.capacity_of(shape)
    return cap > 0 and math.isfinite(cap) and math.ceil(w.requests_per_s / (cap * (1 + 1e-9))) * shape.gpus >= floor


def _missed(w, fleet, shape, replicas, est, ttft_t, tpot_t) -> UnmetTargets | None:
    """Why the plan misses a target though the screen found shapes: the nearest as estimated, with its figures
    (None where it has none: it does not fit)."""
    if est is None or not est.feasible:
        return None
    ttft, tpot = _statistic(w, est)
    return UnmetTargets(
        shapes_tried=min(len(fleet.ranked), REFINE_SHAPES), top_up_steps=TOP_UP_STEPS, top_up_share=TOP_UP_SHARE,
        replicas=replicas, tensor_parallel=shape.tensor_parallel, pipeline_parallel=shape.pipeline_parallel,
        attention_dp=shape.attention_dp, statistic=w.slo_statistic, ttft_seconds=float(ttft),
        ttft_target_seconds=ttft_t, tpot_seconds=float(tpot), tpot_target_seconds=tpot_t)


def _fewest_replicas(w, ctx, policies, arch, shape, n, one, ttft_t, tpot_t, floor=math.inf):
    """(replicas, KV tiers, estimate, met) for ``shape``: the fewest replicas the estimate says meet the targets
    short of the latency knee, searched from the screen's ``n``; None where the shape does not fit or cannot beat
    ``floor`` GPUs. The targets are bisected first; the knee (one curve per shape, not one per probe) then adds
    replicas a step at a time where the count that meets them runs past it."""
    got = _fewest_meeting(w, ctx, policies, arch, shape, n, one, ttft_t, tpot_t, floor)
    if got is not None:  # above n, or not met: the screen's count missed the targets (the top-up searched)
        _missed_at_screen(w, shape, got[0] > n or not got[3])
    if got is None or not got[3]:
        return got
    if got[0] * shape.gpus > floor:  # met with more GPUs than the best shape's: the knee only adds replicas, and
        return None  # _sized_by_estimate would drop it (a tie may still win with a smaller replica)
    replicas, kv, est, _ = got  # est None: not made yet (a load-free replica's tests said it meets at `replicas`)
    free = load_free(w, arch)
    at, base = est, replicas  # the estimate the knee is read from, at `replicas`; the count `est` is made at
    curve = est  # an estimate the knee's curve is read from: est, or (load_free) one of the replica at another rate
    replica = _estimate_key(arch, ctx, shape, one) if free else None
    if free and est is not None:
        _curves.put(replica, est)
    walk = (w.name, shape)
    last = _STEPPED.pop(walk, 0)  # steps its last walk took: a long one is screened from the first count
    _STEPPED[walk] = steps = 0
    while len(_STEPPED) > _KEPT_ELASTICITIES:
        del _STEPPED[next(iter(_STEPPED))]
    knee_key = _knee_key(ctx, arch, shape, one, w) if free else None
    again = free and _seen.get(knee_key) is not None  # this replica was walked before (a rate or target move)
    knee = _bounds(knee_key) if free else None  # the knee by rate, as seen before
    screened = replicas - 1  # counts up to this one screened
    for _ in range(TOP_UP_STEPS):
        said = knee.says(w.requests_per_s / replicas) if free else None
        if said is None and at is None:  # a curve to solve this count on: the replica's kept one, else its estimate
            curve = _curves.get(replica)
            if curve is None:
                kv, est = _evaluate(w, ctx, policies, arch, shape, replicas, one)
                at, base, curve = est, replicas, est
                _curves.put(replica, est)
            else:
                at = _at_rate(curve, w.requests_per_s / replicas)
        if said is None and free and replicas > screened and not knee.bracketed() and (
                steps >= SCREEN_AFTER - 1 or steps == 0 and last >= SCREEN_AFTER):
            # a long walk: the next counts at once (from its first count where the shape's last walk was long);
            # not where the rates seen leave only a narrow band of counts to solve alone
            screened = _knee_screen(w, curve, shape, replicas, floor, curve is est and replicas == base,
                                    2 * SCREEN_AHEAD if steps else last + SCREEN_AHEAD, knee)
        if said if said is not None else _below_knee_seen(w, at, knee, w.requests_per_s / replicas):
            break
        _STEPPED[walk] = steps = steps + 1
        more = replicas + max(1, math.ceil(replicas * TOP_UP_SHARE))
        if more * shape.gpus >= floor:  # another shape already meets the targets short of its knee with fewer GPUs
            if said is None and again:  # the counts just above, for the next move (a rate move asks them)
                _knee_screen(w, curve, shape, replicas, math.inf, False, len(LEARN_SHARES), knee, True)  # learn
            return None
        if free:  # the fit and the curve are the same at any count (load_free): only the last count is estimated
            replicas, at = more, _at_rate(curve, w.requests_per_s / more) if curve is not None else None
            continue
        kv2, est2 = _evaluate(w, ctx, policies, arch, shape, more, one)
        if est2 is None or not est2.feasible:
            break
        replicas, kv, est, base = more, kv2, est2, more
        at = curve = est
    if est is None or base != replicas:
        kv, est = _evaluate(w, ctx, policies, arch, shape, replicas, one)
        known = _ELASTICITIES.get((id(at), float(at.requests_per_s), w.slo_statistic)) if at is not None else None
        if known is not None:  # the plan's figure: the same curve at the same rate
            _remember(est, at.requests_per_s, w.slo_statistic, known[1])
    if free:
        _curves.put(replica, est)
    return replicas, kv, est, True


def load_free(w, arch) -> bool:
    """Whether the service's replica, its capacity and fit, and so its latency curve are the same at any rate: no
    prompt reuse (its hits and tiers follow the rate) and a dense model (an MoE replica's expert-parallel layout is
    picked at the rate). A spread of lengths keeps it load-free: its capacity and the decoding context the curve
    reads come from the lengths alone (aisize.serving.reuse.ServingWorkload.settle without reuse). Then the estimate
    at one replica count reads the latency elasticity and the capacity of any other (aisize.serving.curves reads
    the replica, its capacity and limits, and that context)."""
    return w.prefix is None and w.kv_tiers is None and arch.experts <= 1


def _fewest_meeting(w, ctx, policies, arch, shape, n, one, ttft_t, tpot_t, floor=math.inf):
    """(replicas, KV tiers, estimate, met) for ``shape``: the fewest replicas the estimate says meet the targets,
    searched from the screen's ``n``; None where the shape does not fit or cannot beat ``floor`` GPUs. A load-free
    replica's tests are answered from the rates seen before where they decide them (:class:`_Bounds`); the
    estimate is then None where none was made at the count returned (:func:`_fewest_replicas` makes it)."""
    # with a floor set, most shapes stop at their capacity: it is worked out without a rate where not yet known
    free = load_free(w, arch)
    if free:
        _seed_first(w, ctx, arch, shape, n, one, floor, ttft_t, tpot_t)
    known = (_capacity(ctx, arch, shape, one) if floor < math.inf else
             _capacities.get(_estimate_key(arch, ctx, shape, one))) if free else None
    if known is not None and (not known[0] or (_low(w, known[1]) + 1) * shape.gpus >= floor):
        return None  # as the estimate at n would say: its fit and capacity are those of any count (load_free)
    seen = _bounds(_targets_key(ctx, arch, shape, one, w, ttft_t, tpot_t)) if free else None
    kv = est = None
    if seen is not None and seen.says(w.requests_per_s / n):  # n meets them, as the rates seen before say
        known = known or _capacity(ctx, arch, shape, one)  # the estimate's fit and capacity (load_free)
        if not known[0]:
            return None
        cap, met = known[1], True
    else:
        kv, est = _evaluate(w, ctx, policies, arch, shape, n, one)
        if est is None or not est.feasible:
            return None
        cap, met = est.max_requests_per_s, _meets_seen(w, est, ttft_t, tpot_t, seen, w.requests_per_s / n)
    low = _low(w, cap)
    if (low + 1) * shape.gpus >= floor:
        return None
    if (est is not None and met and n - low >= 2 and seen is not None and not seen.bracketed()
            and seedable(w, est) and _curves.get(_estimate_key(arch, ctx, shape, one)) is None):
        # a replica met for the first time (a target's move re-plans kept ones from kept probes): the counts the
        # search may try, from one batched solve (rate_bounds.seed)
        seed(w, est, shape.gpus, low, n, floor, TOP_UP_SHARE, seen, _bounds(_knee_key(ctx, arch, shape, one, w)),
             ttft_t, tpot_t)
        _curves.put(_estimate_key(arch, ctx, shape, one), est)
    if met:  # bisection: `low` misses (or is 0), n meets
        high = (n, kv, est)
        guess = math.ceil(low / GUESS_UTILISATION)  # first where busy replicas usually still meet their targets
        while high[0] - low > 1:
            mid = guess if low < guess < high[0] else (low + high[0]) // 2
            guess = 0
            said = seen.says(w.requests_per_s / mid) if seen is not None else None
            kv2 = est2 = None
            if said is None:
                kv2, est2 = _probe(w, ctx, policies, arch, shape, mid, one)
                said = est2 is not None and est2.feasible and _meets_seen(w, est2, ttft_t, tpot_t, seen,
                                                                          w.requests_per_s / mid)
            if said:
                high = (mid, kv2, est2)
            else:
                low = mid
        if high[0] == n or high[2] is None:  # the screen's count, estimated in full above (or said to meet them,
            return high + (True,)  # a load-free replica: estimated where the knee's walk stops)
        return high[:1] + _evaluate(w, ctx, policies, arch, shape, high[0], one) + (True,)  # the probe completed
    replicas, last = n, est
    for _ in range(TOP_UP_STEPS):  # steps up from the screen's count until the estimate meets the targets
        more = replicas + max(1, math.ceil(replicas * TOP_UP_SHARE))
        if more * shape.gpus >= floor:
            break
        kv2, est2 = _probe(w, ctx, policies, arch, shape, more, one)
        if est2 is None or not est2.feasible or _miss(w, est2, ttft_t, tpot_t) >= \
                _miss(w, last, ttft_t, tpot_t) * (1 - 1e-3):
            break  # more replicas no longer help: the light-load floor of this shape is above the target
        replicas, last = more, est2
        if meets_targets(w, est2, ttft_t, tpot_t):
            return (replicas,) + _evaluate(w, ctx, policies, arch, shape, replicas, one) + (True,)
    return n, kv, est, False  # missed at any count tried: the screen's count, not replicas that buy nothing


def _seed_first(w, ctx, arch, shape, n, one, floor, ttft_t: float, tpot_t: float) -> None:
    """Seeds (:func:`seed`) a load-free replica met for the first time from its replica flat out (:func:`_flat`:
    no queue solved), the screen's count ``n`` among the counts, before any probe: where the batch clears the
    targets at ``n``, :func:`_fewest_meeting` makes no probe there (a prompt or output move sizes two new replicas,
    each probed at its screen count before only to be seeded). Only where the capacity does not rule the shape
    out, and where counts are left to bisect below ``n`` or the shape's last knee walk took a step (the seed's
    knee verdicts then spare the walk's elasticities or screen: a walk of k steps solves k + 1 elasticities and
    the estimate at its stop besides the probe at ``n``)."""
    key, at_n, _ = _rate_key(w, arch, ctx, shape, n, one)
    if (one.get("length_cv") or one.get("length_distribution") is not None or _curves.get(key) is not None
            or _estimates.get(at_n) is not None or _probes.get(at_n) is not None):
        return  # walked or seeded before, probed at n already, or its probes are not the seed's to stand for
    tkey = _targets_key(ctx, arch, shape, one, w, ttft_t, tpot_t)
    seen = _seen.get(tkey)
    if seen is not None and (seen.bracketed() or seen.says(w.requests_per_s / n) is not None):
        return  # the rates seen answer n, or leave a narrow band to solve alone
    fits, cap = _capacity(ctx, arch, shape, one)
    src = _flats.get(key)
    low = _low(w, cap)
    if src is None or not fits or (low + 1) * shape.gpus >= floor or not seedable(w, src):
        return
    if _MISSED.get((w.name, shape)):
        return  # the last search missed the targets at the screen's count: the top-up probes n (a seed: a solve more)
    if n - low < 2 and not _STEPPED.get((w.name, shape)):
        # nothing to bisect, and the last walk stopped where it started: a probe at n and its elasticity (the
        # plan's figure) are one solve fewer than the seed, the estimate at n and its figure
        return
    seed(w, src, shape.gpus, low, n, floor, TOP_UP_SHARE, _bounds(tkey), _bounds(_knee_key(ctx, arch, shape, one, w)),
         ttft_t, tpot_t, n)  # through n
    _curves.put(key, src)


_MISSED: dict = {}  # (service, shape) -> whether its last search missed the targets at the screen's count


def _missed_at_screen(w, shape, missed: bool) -> None:
    """Notes whether the search of ``shape`` missed the targets at the screen's count (a tight target, where the
    screen's light model is optimistic): the next move of that service then probes there first (the top-up steps
    from a probe there; a seed would be a solve more)."""
    _MISSED[(w.name, shape)] = missed
    while len(_MISSED) > _KEPT_ELASTICITIES:
        del _MISSED[next(iter(_MISSED))]


_missed_at_screen.cache_clear = _MISSED.clear  # aisize.plan.clear_caches finds it (cold plans seed as cold)


def _bounds(key) -> _Bounds:
    got = _seen.get(key)
    if got is None:
        got = _Bounds()
        _seen.put(key, got)
    return got


def _targets_key(ctx, arch, shape, one, w, ttft_t: float, tpot_t: float) -> tuple:
    """:func:`_estimate_key` of the replica with what :func:`meets_targets` reads besides its estimate."""
    key = _estimate_key(arch, ctx, shape, one)
    return key[:2] + (key[2] + (("targets", repr((w.slo_statistic, ttft_t, tpot_t))),),) + key[3:]


def _knee_key(ctx, arch, shape, one, w) -> tuple:
    """:func:`_estimate_key` of the replica with what :func:`below_knee` reads besides its estimate."""
    key = _estimate_key(arch, ctx, shape, one)
    return key[:2] + (key[2] + (("knee", repr((w.slo_statistic, C.KNEE_ELASTICITY))),),) + key[3:]


def _meets_seen(w, est, ttft_t: float, tpot_t: float, seen, rate: float) -> bool:
    """:func:`meets_targets` of ``est`` (at ``rate`` per replica), shown to ``seen`` (:class:`_Bounds`) if given."""
    miss = _miss(w, est, ttft_t, tpot_t)
    if seen is not None:
        seen.saw(rate, miss - 1.0)
    return miss <= 1.0


def _low(w, cap: float) -> int:
    """Replicas that the capacity ``cap`` per replica [requests/s] says cannot carry the rate (the bisection's low
    end): one short of the rate at capacity."""
    return max(math.ceil(w.requests_per_s / cap) - 1, 0) if cap > 0 and math.isfinite(cap) else 0


def _evaluate(w, ctx, policies, arch, shape, replicas, one):
    """(KV tiers or None, estimate) of ``replicas`` of ``shape`` sharing the service's rate. An estimate made for
    the same arguments before is that one (a target's move re-plans at the same rates)."""
    if w.prefix is not None:  # reused prompts and KV tiers (aisize.plan.kvtiers)
        return _tiered(w, ctx, policies, arch, shape, replicas, one)
    key, at_rate, rate = _rate_key(w, arch, ctx, shape, replicas, one)
    est = _estimates.get(at_rate)
    if est is None:
        probed = _probes.get(at_rate)  # a probe of the same arguments completed: the same estimate, bit for bit
        est = (probed if probed is not None else _probed(arch, ctx, key, one, rate)).estimate()
        _estimates.put(at_rate, est)
    if load_free(w, arch):
        _capacities.put(key, (bool(est.feasible), est.max_requests_per_s))
    return None, est


def _tiered(w, ctx, policies, arch, shape, replicas, one):
    """:func:`aisize.plan.kvtiers.plan_kv_tiers` of ``replicas`` of ``shape``, kept by what it reads (the estimate's
    arguments and rate, the service's reuse and tiers, the server, storage and host-RAM ratio): a target's move
    re-plans at the same counts, each a reuse fixed point of ~20 ms on agentic-coding."""
    _, at_rate, _ = _rate_key(w, arch, ctx, shape, replicas, one)
    read = ("tiers", repr((w.prefix, w.kv_tiers, ctx.server, ctx.storage, policies.host_ram_ratio)))
    key = at_rate[:2] + (at_rate[2] + (read,),) + at_rate[3:]
    got = _tiers.get(key)
    if got is None:
        got = plan_kv_tiers(w, ctx, policies, arch, shape, replicas, one)
        _tiers.put(key, got)
    return got


def _probe(w, ctx, policies, arch, shape, replicas, one):
    """(KV tiers or None, the estimate or its :class:`~aisize.serving.estimate.LatencyProbe`) of ``replicas`` of
    ``shape``: what the search reads of a count it tries (fit, capacity, stability, latencies), the figures of
    :func:`_evaluate`'s estimate to the bit at about half its cost (docs/speed.md); with prompt reuse, the
    estimate (its KV tiers are planned per count)."""
    if w.prefix is not None:
        return _evaluate(w, ctx, policies, arch, shape, replicas, one)
    key, at_rate, rate = _rate_key(w, arch, ctx, shape, replicas, one)
    got = _estimates.get(at_rate)
    if got is None:
        got = _probes.get(at_rate)
    if got is None:
        got = _probed(arch, ctx, key, one, rate)
        _probes.put(at_rate, got)
    if load_free(w, arch):
        _capacities.put(key, (bool(got.feasible), got.max_requests_per_s))
    return None, got


def _probed(arch, ctx, key, one, rate):
    """The :func:`~aisize.serving.estimate.probe` of ``one`` at ``rate`` per replica, on the replicas of a probe of
    the same arguments at another rate or lengths where one is kept (built once, their capacities computed once)."""
    got = probe(arch, ctx.accelerator, **one, requests_per_s=rate, replicas=_replicas.get(_replica_key(key)))
    _replicas.put(_replica_key(key), got.replicas)
    return got


_LOAD_AND_WORKLOAD = ("length_cv", "length_distribution")  # of one's arguments, not the replica's (a CV move's)


def _replica_key(key) -> tuple:
    """:func:`_estimate_key` less what the candidate replicas do not depend on (the lengths' spread: the load's and
    the workload's, aisize.serving.estimate.candidate_replicas): a CV move probes the replicas kept."""
    return key[:2] + (tuple(kv for kv in key[2] if kv[0] not in _LOAD_AND_WORKLOAD),) + key[3:]


def _kept_replicas(arch, ctx, key, one) -> tuple:
    """The candidate replicas of ``one`` (:func:`~aisize.serving.estimate.candidate_replicas`), kept."""
    got = _replicas.get(_replica_key(key))
    if got is None:
        got = candidate_replicas(arch, ctx.accelerator, **one)
        _replicas.put(_replica_key(key), got)
    return got


def _rate_key(w, arch, ctx, shape, replicas, one) -> tuple:
    """(:func:`_estimate_key`, it with the rate per replica, that rate [requests/s]) of ``replicas`` of ``shape``."""
    rate = w.requests_per_s / replicas
    key = _estimate_key(arch, ctx, shape, one)
    return key, key[:2] + (key[2] + (("requests_per_s", repr(rate)),),) + key[3:], rate


def _capacity(ctx, arch, shape, one) -> tuple[bool, float]:
    """(fit, capacity [requests/s]) of a load-free replica of ``shape``: kept from an estimate at any rate, else
    its replica's flat out (:func:`_flat`) or, where there is none, the estimate's without a rate
    (:func:`aisize.serving.estimate.estimate_capacity`: no queue to settle and no latencies, which it would
    compute and this never reads): the same two figures (load_free; the same replica, the engine given as a
    record, so resolved alike)."""
    key = _estimate_key(arch, ctx, shape, one)
    known = _capacities.get(key)
    if known is None:
        src = _flat(arch, ctx, key, one)
        known = (bool(src.feasible), src.max_requests_per_s) if src is not None else \
            estimate_capacity(arch, ctx.accelerator, **one, replicas=_kept_replicas(arch, ctx, key, one))
        _capacities.put(key, known)
    return known


def _flat(arch, ctx, key, one):
    """:func:`~aisize.serving.estimate.replica_estimate` of ``one`` (kept; None where there is none), on the
    replicas a probe of it keeps: what the seed solves and the knee's walk reads the curve of, at no cost of a
    queue solved."""
    got = _flats.get(key)
    if got is None:
        got = replica_estimate(arch, ctx.accelerator, **one, replicas=_kept_replicas(arch, ctx, key, one))
        if got is None:
            return None
        _flats.put(key, got)
    return got


def _estimate_key(arch, ctx, shape, one) -> tuple:
    """What an estimate of ``one``'s arguments depends on, its rate apart: the model, GPU and calibration (by
    identity: an entry holds them), the shape and the other arguments, the engine's flags included (by value: a
    frozen record, made anew per plan). A load-free replica's fit and capacity depend on nothing else."""
    objects = (arch, ctx.accelerator, one["calibration"])
    rest = tuple((k, v if k == "engine" else repr(v)) for k, v in sorted(one.items()) if k != "calibration")
    return tuple(map(id, objects)), shape, rest, objects


class _Kept:
    """Values by :func:`_estimate_key`, the latest ``kept`` (a slider move re-plans with the same replicas): an entry
    holds the objects its key names by identity, so no other object takes their ids while it is kept."""

    def __init__(self, kept: int):
        self.kept, self._entries = kept, {}
        self.cache_clear = self._entries.clear  # on the entry, not the class: aisize.plan.clear_caches finds it

    def get(self, key):
        got = self._entries.get(key[:3])
        return got[1] if got is not None and all(a is b for a, b in zip(got[0], key[3])) else None

    def put(self, key, value) -> None:
        self._entries[key[:3]] = (key[3], value)
        while len(self._entries) > self.kept:
            del self._entries[next(iter(self._entries))]


_capacities = _Kept(256)  # (fit, capacity [requests/s]) of load-free replicas
_estimates = _Kept(64)  # estimates by their arguments and rate
_tiers = _Kept(64)  # (KV tiers, estimate) of services with prompt reuse, as _estimates
_probes = _Kept(64)  # the bisection's probes (aisize.serving.estimate.LatencyProbe), as _estimates
_replicas = _Kept(64)  # the candidate replicas by their arguments but the rate and lengths (_replica_key)
_seen = _Kept(256)  # _Bounds of load-free replicas' tests (targets, knee) by their arguments but the rate
_curves = _Kept(64)  # an estimate of each load-free replica the knee's walk read, at any rate (its curve's)
_flats = _Kept(64)  # each load-free replica flat out (replica_estimate), for the seed before its first probe


# each SLO statistic's suffix in the names of the estimates' and the plan's latencies (ttft_p99_s, ttft_p99_seconds)
_SUFFIX = STATISTIC_SUFFIX


def _statistic(w, est) -> tuple[float, float]:
    """(TTFT, TPOT) of ``est`` (a replica's or the pools' estimate) at the service's SLO statistic [s]: read from
    the estimate, never computed again."""
    suffix = _SUFFIX[w.slo_statistic]
    return getattr(est, f"ttft{suffix}_s"), getattr(est, f"tpot{suffix}_s")


def _miss(w, est, ttft_t: float, tpot_t: float) -> float:
    """How far ``est`` is from the targets: the larger of TTFT / target and TPOT / target (<= 1: met)."""
    ttft, tpot = _statistic(w, est)
    return max(ttft / ttft_t, tpot / tpot_t) if est.stable else math.inf


def meets_targets(w, est, ttft_t: float, tpot_t: float) -> bool:
    """Whether ``est`` (a replica's estimate) meets the service's TTFT and TPOT targets at its SLO statistic."""
    return _miss(w, est, ttft_t, tpot_t) <= 1.0
