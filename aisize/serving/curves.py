"""Latency against load for a replica: the curve an architect reads the knee and SLO headroom from.

:func:`latency_curve` evaluates the replica of a :class:`~aisize.serving.ServingEstimate`
at many request rates at once (:func:`~aisize.serving.latency.loaded_state`);
:func:`knee_requests_per_s` is the rate at which the mean request latency reaches a
multiple of its light-load value; :func:`latency_elasticity` how steeply latency rises with load at
an operating point; :func:`slo_requests_per_s` the highest rate at which a TTFT and a TPOT target
(p95 or mean) still hold.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import replace

import numpy as np
import pandas as pd

from aisize import checks
from aisize.serving.estimate import replica_of
from aisize.serving.latency import loaded_state, replica_ttft_quantiles
from aisize.serving.sizing import knee
from aisize.serving.tails import STATISTIC_SUFFIX


def _loaded(est, rates_per_s, calibration=None):
    """:func:`loaded_state` of the estimate's replica at each rate (per replica)."""
    r = replica_of(est, calibration)
    dp = r.groups
    # the prompt tokens reuse saves and the length-biased decoding context, as settled at the estimate's own rate
    cached = float(est.kv_reuse.tiers.cached_tokens) if est.kv_reuse is not None else 0.0
    context = float(est.lengths.decode_context_tokens) if est.lengths is not None else None
    prompt_cv = float(est.lengths.lengths.input.cv) if est.lengths is not None else 0.0
    ls = loaded_state(r.costs, r.rates, r.calibration,
                        requests_per_s=np.asarray(rates_per_s, dtype=float),
                        capacity_requests_per_s=est.max_requests_per_s, slots=est.max_concurrency,
                        input_tokens=est.input_tokens, output_tokens=est.output_tokens,
                        max_num_tokens=est.max_num_tokens * dp, chunked_prefill=r.engine.chunked_prefill,
                        shape=r.shape, launch=r.engine.launch(est.max_batch_size, dp), speculation=est.speculation,
                        cached_tokens=cached, decode_context_tokens=context, prompt_cv=prompt_cv)
    if est.kv_reuse is not None or est.lengths is not None:
        return ls  # its classes' tails come through the estimate (_through_the_estimate)
    # every prompt of the mean length: TTFT p95 and p99 from the iteration mixture at each rate, as the estimate's
    q95, q99 = replica_ttft_quantiles(r, requests_per_s=ls.requests_per_s, concurrency=ls.concurrency,
                                      iteration_seconds=ls.iteration_seconds,
                                      decode_iteration_seconds=ls.decode_iteration_seconds,
                                      prefill_iteration_seconds=ls.prefill_iteration_seconds,
                                      ttft_seconds=ls.ttft_seconds, ttft_p95_seconds=ls.ttft_p95_seconds,
                                      ttft_p99_seconds=ls.ttft_p99_seconds)
    stable = np.asarray(ls.stable, dtype=bool)
    return replace(ls, ttft_p95_seconds=np.where(stable, q95, np.inf), ttft_p99_seconds=np.where(stable, q99, np.inf))


def latency_curve(est, points: int = 50, *, replicas: int = 1) -> pd.DataFrame:
    """TTFT, TPOT and request latency (mean, p95 and p99) against the fleet's request rate.

    Parameters
    ----------
    est : a :class:`~aisize.serving.ServingEstimate` (its replica, engine and lengths)
    points : rates from 1 % to 99 % of the replica's capacity [count]
    replicas : replicas sharing the load evenly (the rates are the fleet's)

    Returns
    -------
    DataFrame: ``requests_per_s`` (fleet) [1/s], ``utilisation``, ``ttft_seconds``,
    ``ttft_p95_seconds``, ``tpot_seconds``, ``tpot_p95_seconds``, ``latency_mean_seconds``,
    ``latency_p95_seconds``, and the same at p99 (``ttft_p99_seconds``, ``tpot_p99_seconds``,
    ``latency_p99_seconds``) [s].
    """
    n = int(checks.integer("points", points, low=2, high=10**5))
    r = int(checks.integer("replicas", replicas, high=10**7))
    per = np.linspace(0.01, 0.99, n) * est.max_requests_per_s
    own = _passes_through(est)
    shared = _shared(est) if n == CURVE_POINTS else None
    # the estimate's own rate solved beside the curve's (one root for both): each point's root is its own alone
    # (littles_law_concurrency), so the curve's figures and the one it is scaled to are those of separate solves;
    # at the default points, the solve the elasticity at the estimate's rate made of both (_shared)
    if shared is not None:
        ls, curve, at = shared[1], slice(len(_RISES) + 1, None), slice(0, 1)  # the rate itself comes first
    else:
        ls, curve, at = _loaded(est, np.append(per, est.requests_per_s) if own else per), slice(0, n), slice(n, None)
    o = est.output_tokens
    cols = {k: np.broadcast_to(getattr(ls, k), ls.requests_per_s.shape) for k in _OWN}
    cols = _through_the_estimate(est, {k: v[curve] for k, v in cols.items()}, {k: v[at] for k, v in cols.items()}
                                 if own else None)
    out = {"requests_per_s": per * r, "utilisation": np.broadcast_to(ls.utilisation, ls.requests_per_s.shape)[curve],
           **cols}
    for stat, suffix in (("mean", "_seconds"), ("p95", "_p95_seconds"), ("p99", "_p99_seconds")):
        out[f"latency_{stat}_seconds"] = out[f"ttft{suffix}"] + (o - 1) * out[f"tpot{suffix}"]
    keys = ("requests_per_s", "utilisation", "ttft_seconds", "ttft_p95_seconds", "tpot_seconds", "tpot_p95_seconds",
            "latency_mean_seconds", "latency_p95_seconds", "ttft_p99_seconds", "tpot_p99_seconds",
            "latency_p99_seconds")
    return pd.DataFrame({k: np.array(out[k], dtype=float) for k in keys})  # copies: a kept solve's are shared


_OWN = {"ttft_seconds": "ttft_s", "ttft_p95_seconds": "ttft_p95_s", "ttft_p99_seconds": "ttft_p99_s",
        "tpot_seconds": "tpot_s", "tpot_p95_seconds": "tpot_p95_s", "tpot_p99_seconds": "tpot_p99_s"}  # est's names


def _passes_through(est) -> bool:
    """Whether the curve is scaled through the estimate's own figures (:func:`_through_the_estimate`)."""
    return (est.kv_reuse is not None or est.lengths is not None) and bool(est.stable) and est.requests_per_s > 0


def curve_reads(est) -> tuple:
    """What :func:`latency_curve` reads of ``est`` beyond its replica's model, GPU, formats, engine, shape,
    lengths' means, capacity, slots and speculation (a caller keeping a curve keys on those): the reused prompt
    tokens, the decoding context and the prompts' spread its solve reads, and where the curve passes through
    the estimate (:func:`_through_the_estimate`) the rate and the figures it is scaled to."""
    own = (est.requests_per_s,) + tuple(getattr(est, name) for name in _OWN.values()) if _passes_through(est) else ()
    return (float(est.kv_reuse.tiers.cached_tokens) if est.kv_reuse is not None else 0.0,
            float(est.lengths.decode_context_tokens) if est.lengths is not None else None,
            float(est.lengths.lengths.input.cv) if est.lengths is not None else 0.0,
            est.max_num_tokens, est.max_batch_size) + own


def _through_the_estimate(est, cols: dict, at: dict | None = None) -> dict:
    """With prompt reuse or a length distribution the estimate's latencies mix classes of requests (hits and
    misses, short and long prompts: :mod:`aisize.serving.reuse`), which the curve's single class of request does
    not; each latency column is scaled so that the curve passes through the estimate's own figure at its rate
    (one figure on the card and the chart), keeping the curve's shape in load [s]. ``at``: the columns at the
    estimate's rate where the caller solved them already ({column: 1-element array}), else solved here."""
    if not _passes_through(est):
        return cols
    if at is None:
        ls = _loaded(est, np.array([est.requests_per_s]))
        at = {k: getattr(ls, k) for k in _OWN}
    out = dict(cols)
    for k, name in _OWN.items():
        figure = getattr(est, name)
        base = float(np.ravel(at[k])[0])
        if np.isfinite(figure) and np.isfinite(base) and base > 0:
            out[k] = np.asarray(cols[k], dtype=float) * (figure / base)
    return out


def knee_requests_per_s(est, factor: float = 2.0, points: int = 48) -> float:
    """Per-replica rate at which mean request latency reaches ``factor`` x its light-load value [1/s]
    (interpolated on a curve of ``points`` rates; the top of the curve when it never gets there)."""
    f = checks.number("factor", factor, low=1.0, high=1e3, low_inclusive=False)
    curve = latency_curve(est, points)
    return knee(curve.requests_per_s.to_numpy(), curve.latency_mean_seconds.to_numpy(), f)


LOAD_RISE = 0.10  # the "small rise in load" an elasticity is measured over


def elasticity(latency_now_s: float, latency_after_s: float, rise: float = LOAD_RISE) -> float:
    """Relative rise of latency per relative rise of load, (L(λ(1+r)) / L(λ) - 1) / r: 1 where latency grows as
    fast as the load, ρ/(1-ρ) for an M/M/1 queue at utilisation ρ; inf where the raised load overloads."""
    if not (latency_now_s > 0 and math.isfinite(latency_now_s)):
        return math.inf
    return (latency_after_s / latency_now_s - 1.0) / rise if math.isfinite(latency_after_s) else math.inf


def rise_within(requests_per_s: float, capacity_requests_per_s: float, rise: float = LOAD_RISE) -> float:
    """The load rise an elasticity is measured over: ``rise``, or half the way to capacity when that is nearer
    (10 % more load on a replica 95 % busy has no steady state to compare with); 0 at or past capacity."""
    if not capacity_requests_per_s > requests_per_s > 0:
        return 0.0
    return min(rise, 0.5 * (capacity_requests_per_s / requests_per_s - 1.0))


def latency_elasticity(est, requests_per_s, *, rise: float = LOAD_RISE, statistic: str = "mean") -> float:
    """:func:`elasticity` of the request latency (``statistic``: "mean", "p95" or "p99") of the estimate's replica
    at ``requests_per_s`` (per replica) against ``rise`` more load: the knee as a property of the operating point."""
    lam = float(checks.positive("requests_per_s", requests_per_s, high=1e9))
    asked, rise = rise, rise_within(lam, est.max_requests_per_s, rise)
    if rise <= 0:
        return math.inf  # at or past capacity already
    rises = rise * _RISES
    shared = _shared(est) if asked == LOAD_RISE and lam == _own_rate(est) else None
    ls = shared[1] if shared is not None else _loaded(est, lam * np.concatenate([[1.0], 1.0 + rises]))
    o = est.output_tokens
    suffix = STATISTIC_SUFFIX[checks.choice("statistic", statistic, tuple(STATISTIC_SUFFIX))]
    ttft, tpot = getattr(ls, f"ttft{suffix}_seconds"), getattr(ls, f"tpot{suffix}_seconds")
    total = np.asarray(ttft, dtype=float) + (o - 1) * np.asarray(tpot, dtype=float)
    for after, r in zip(total[1:len(rises) + 1], rises):
        if math.isfinite(after):
            return elasticity(float(total[0]), float(after), float(r))
    return math.inf


_RISES = np.array([1.0, 1 / 4, 1 / 16, 1 / 64])  # an elasticity's rises, as shares of its rise: nearer ones where a
# limit below the capacity binds first
CURVE_POINTS = 50  # the app's and plan.latency_curve's points
_SHARED: OrderedDict = OrderedDict()  # id(est) -> (est, (rates, LoadedState)), latest last
_KEPT_SHARED = 8  # a move plans a few services; the app draws the shown one's curve after its plan


def _own_rate(est) -> float:
    r = getattr(est, "requests_per_s", None)
    return float(r) if isinstance(r, (int, float, np.number)) and r > 0 else math.nan


def _shared(est):
    """(rates, :func:`_loaded` at them) for the estimate's own rate λ: λ and its elasticity's rises
    (:func:`latency_elasticity` at λ), then the :data:`CURVE_POINTS` rates of its :func:`latency_curve`, in one
    solve (each point's root is the one it has alone: littles_law_concurrency), so that a move's elasticity and
    the app's curve of the same replica are one root; None where λ has no rise within capacity (the elasticity
    is inf and solves nothing). The same rates whoever asks first, so the figures do not depend on the order.
    Kept by the estimate's identity (the entry holds it)."""
    got = _SHARED.get(id(est))
    if got is not None and got[0] is est:
        _SHARED.move_to_end(id(est))
        return got[1]
    lam = _own_rate(est)
    rise = rise_within(lam, est.max_requests_per_s) if lam > 0 else 0.0
    if not rise > 0:
        return None
    rates = np.concatenate([lam * np.concatenate([[1.0], 1.0 + rise * _RISES]),
                            np.linspace(0.01, 0.99, CURVE_POINTS) * est.max_requests_per_s])
    _SHARED[id(est)] = (est, (rates, _loaded(est, rates)))
    while len(_SHARED) > _KEPT_SHARED:
        _SHARED.popitem(last=False)
    return _SHARED[id(est)][1]


_shared.cache_clear = _SHARED.clear  # aisize.plan.clear_caches finds it (cold-plan benchmarks)


SCREEN_MARGIN = 1e-3  # latency ratio a screened elasticity must clear the threshold by: 1000 x the root's tolerance


def above_threshold(est, rates_per_s, threshold: float, *, statistic: str = "mean", rise: float = LOAD_RISE,
                    margin: float = SCREEN_MARGIN) -> list:
    """For each per-replica rate: whether :func:`latency_elasticity` of ``est`` there is above ``threshold``,
    screened with one solve for all the rates (a walk up the replica counts asks this at each count in turn).

    A batched solve settles each root to the solver's tolerance (1e-6 relative, while a rate alone stops at its
    own settling) and may pick another Erlang B method, so its figures differ from those of each rate alone in the
    last digits: the answer is True or False only where the latency ratio of the first rise clears the
    threshold's by ``margin`` and the raised load stays short of saturation; None where it is too near to tell
    (the caller solves that rate alone). A rate at or past capacity is above it (inf, as alone)."""
    return screen_rates(est, (), rates_per_s, threshold, statistic=statistic, rise=rise, margin=margin)[1]


def screen_rates(est, target_rates_per_s, knee_rates_per_s, threshold: float, *, statistic: str = "mean",
                 rise: float = LOAD_RISE, margin: float = SCREEN_MARGIN) -> tuple:
    """((stable, TTFT, TPOT at ``statistic`` [s]) arrays at each of ``target_rates_per_s``, :func:`above_threshold`'s
    verdicts at each of ``knee_rates_per_s``), all from one batched solve of the estimate's replica (per-replica
    rates): the replica count's bisection and knee walk ask both of one replica at many counts. The latencies are
    those of each rate alone to the solver's rounding only (see :func:`above_threshold`): a caller compares them
    with a margin, never shows them."""
    lams = [float(checks.positive("requests_per_s", x, high=1e9)) for x in knee_rates_per_s]
    targets = np.array([float(checks.positive("requests_per_s", x, high=1e9)) for x in target_rates_per_s])
    rises = [rise_within(lam, est.max_requests_per_s, rise) for lam in lams]
    out = [True if r <= 0 else None for r in rises]
    todo = [k for k, r in enumerate(rises) if r > 0]
    suffix = STATISTIC_SUFFIX[checks.choice("statistic", statistic, tuple(STATISTIC_SUFFIX))]
    none = np.zeros(0)
    if not todo and not targets.size:
        return (none.astype(bool), none, none), out
    points = np.array([[lams[k], lams[k] * (1.0 + rises[k])] for k in todo])  # the operating point, the first rise
    ls = _loaded(est, np.concatenate([targets, points.ravel()]))
    t = targets.size
    ttft, tpot = (np.asarray(getattr(ls, f"{n}{suffix}_seconds"), dtype=float) for n in ("ttft", "tpot"))
    stable = np.broadcast_to(np.asarray(ls.stable, dtype=bool), ttft.shape)
    at_targets = (stable[:t], ttft[:t], tpot[:t])
    if not todo:
        return at_targets, out
    total = (ttft[t:] + (est.output_tokens - 1) * tpot[t:]).reshape(-1, 2)
    util = np.asarray(ls.utilisation, dtype=float)[t:].reshape(-1, 2)
    for j, k in enumerate(todo):
        now, after = total[j]
        if not (now > 0 and math.isfinite(now) and math.isfinite(after) and util[j, 1] < 1.0 - margin):
            continue  # alone: inf, or a smaller rise
        gap = (after / now - 1.0) - threshold * rises[k]  # the latency ratio against the threshold's
        if abs(gap) > margin:
            out[k] = bool(gap > 0)
    return at_targets, out
