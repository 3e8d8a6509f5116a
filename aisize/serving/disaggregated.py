"""Disaggregated serving: separate prefill and decode pools, the KV cache shipped between them.

DistServe [1], Splitwise [2], Mooncake and NVIDIA Dynamo run prompts on one pool
of GPUs and generation on another, so a long prefill never stalls other
requests' tokens and each pool gets the shape that suits it.

:func:`size_pools` buys the fewest GPUs of prefill and decode pools that meet the targets, and evaluates
every candidate with the model that evaluates given pools (:func:`aisize.serving.estimate_disaggregated`, scored
on published runs): per candidate shape it builds the estimate's :class:`~aisize.serving.pool_pair.PoolPair`
(the engine's token budget and batch limit, the KV transfer over the given link, the decode slots), then reads
:func:`~aisize.serving.pool_pair.pools_state` over candidate counts at once:

- prefill: a queue of ``replicas x prompts per iteration`` slots with deterministic service (M/D/c through
  Allen-Cunneen [3]); a prompt arriving at an idle replica runs alone (the lone iteration), near saturation in
  full ones. TTFT = time outside the GPU + the iteration + the KV transfer + the wait at the statistic;
- decode: decode-only iterations at the batch Little's law gives on a replica's share of the requests (up to its
  slots), at p95/p99 the Poisson batch ``B + z·sqrt(B)``. TPOT is that iteration over the tokens a step emits.

The prefill and decode figures are separable (a prefill pool's TTFT does not depend on the decode pool and the
other way round), so each side's cheapest shape and count are found on their own. At the counts bought the
sizing's TTFT and TPOT at the target's statistic ARE the estimate's (tests/test_disaggregated_one_model.py).

References
----------
.. [1] Zhong et al. 2024, "DistServe", OSDI'24, arXiv:2401.09670, sec. 3-4.
.. [2] Patel et al. 2024, "Splitwise", ISCA'24, arXiv:2311.18677, sec. 4.
.. [3] Allen 1990, "Probability, Statistics and Queueing Theory", sec. 6.4 (G/G/c).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from aisize import checks, models
from aisize.queueing.analytic import MAX_SERVERS
from aisize.serving.iteration import iteration_time
from aisize.serving.pool_pair import PoolPair, pools_state
from aisize.serving.pools import estimate_disaggregated
from aisize.serving.shapes import ReplicaShape
from aisize.serving.tails import STATISTIC_SUFFIX

STATE_KEYS = {"mean": ("ttft", "tpot"), "p95": ("ttft95", "tpot95"), "p99": ("ttft99", "tpot99")}
# candidate counts per shape beyond the fewest that are stable: every count up to +COUNT_STEPS, then geometric
# up to COUNT_SPAN x (TTFT and TPOT fall monotonically with the count, so the first that meets a target is the
# fewest)
COUNT_STEPS, COUNT_SPAN = 256, 64


def prefill_iteration_seconds(costs, rates, calib, shape, *, prompts, input_tokens):
    """An iteration of ``prompts`` whole prompts of ``input_tokens`` and no decoding [s]."""
    return iteration_time(costs, rates, calib, decode_sequences=0.0 * prompts, decode_context=float(input_tokens),
                          prefill_tokens=prompts * input_tokens, prefill_prompts=prompts,
                          prompt_tokens=float(input_tokens), **shape.kwargs()).seconds


def decode_iteration_seconds(costs, rates, calib, shape, *, batch, input_tokens, output_tokens):
    """A decode-only iteration of ``batch`` sequences at the mean context ``I + O/2`` [s]."""
    return iteration_time(costs, rates, calib, decode_sequences=batch,
                          decode_context=input_tokens + 0.5 * output_tokens,
                          prefill_tokens=0.0 * batch, prefill_prompts=0.0 * batch, prompt_tokens=float(input_tokens),
                          **shape.kwargs()).seconds


def kv_transfer_seconds(costs, input_tokens, nic_bytes_per_s, prefill_gpus):
    """Time to ship one request's KV cache (``I`` tokens) from its prefill GPUs [s]."""
    return costs.kv_bytes(float(input_tokens)) / (nic_bytes_per_s * prefill_gpus)


@dataclass(frozen=True)
class DisaggregatedPools:
    """Prefill and decode pools for a request rate [count, s, B]."""

    feasible: bool
    reason: str
    prefill_tensor_parallel: int
    prefill_pipeline_parallel: int
    decode_tensor_parallel: int
    decode_pipeline_parallel: int
    decode_attention_dp: int
    prefill_replicas: int
    decode_replicas: int
    prefill_gpus: int
    decode_gpus: int
    prefill_batch: int  # prompts per prefill iteration
    decode_batch: int  # sequences per decode iteration
    kv_bytes_per_request: float
    kv_transfer_s: float
    kv_link_bytes_per_s: float  # KV traffic of the whole service
    kv_link_utilisation: float  # of the prefill pool's NICs
    ttft_s: float
    ttft_p95_s: float
    tpot_s: float  # mean, as estimate_disaggregated gives it at the rate sized for
    tpot_p95_s: float
    ttft_statistic_s: float
    tpot_statistic_s: float
    # the two replicas and their KV link (None: infeasible): what the latency curve reads; not exported
    pair: PoolPair | None = field(default=None, repr=False, compare=False, metadata={"export": False})
    ttft_p99_s: float = math.inf
    tpot_p99_s: float = math.inf

    @property
    def prefill_shape(self) -> ReplicaShape | None:
        """A prefill replica's shape (None: infeasible)."""
        return None if self.pair is None else self.pair.prefill.shape

    @property
    def decode_shape(self) -> ReplicaShape | None:
        """A decode replica's shape (None: infeasible)."""
        return None if self.pair is None else self.pair.decode.shape

    @property
    def gpus(self) -> int:
        return self.prefill_gpus + self.decode_gpus

    @property
    def prefill_share(self) -> float:
        return self.prefill_gpus / self.gpus if self.gpus else 0.0


def size_pools(model, accelerator, *, weight_precision, kv_precision, input_tokens, output_tokens, requests_per_s,
               ttft_target_s, tpot_target_s, statistic="p95", shapes, engine, calibration,
               scaleout_bytes_per_s) -> DisaggregatedPools:
    """The fewest GPUs of prefill and decode pools that serve ``requests_per_s`` within the targets, evaluated
    with :func:`aisize.serving.estimate_disaggregated`'s model (one model: the figures returned are the estimate's
    at the counts bought).

    Parameters
    ----------
    model, accelerator : model record and catalog accelerator id
    weight_precision, kv_precision : formats
    input_tokens, output_tokens : mean lengths [tokens]
    requests_per_s : λ [1/s]; ttft_target_s, tpot_target_s : targets [s]
    statistic : what the targets bound: "mean", "p95" or "p99" of TTFT and of TPOT
    shapes : candidate :class:`~aisize.serving.shapes.ReplicaShape` s for either pool
    engine, calibration : as for :func:`aisize.serving.estimate` (the engine's own token budget and batch limit)
    scaleout_bytes_per_s : link rate per prefill GPU per direction that carries the KV cache [B/s]
    """
    checks.choice("statistic", statistic, tuple(STATISTIC_SUFFIX))
    lam = float(checks.scalar("requests_per_s", checks.positive("requests_per_s", requests_per_s, high=1e9)))
    link = float(checks.scalar("scaleout_bytes_per_s", checks.positive("scaleout_bytes_per_s", scaleout_bytes_per_s)))
    m = models.resolve(model)
    shapes = tuple(shapes)
    if not shapes:
        return _infeasible("no candidate shape for the pools")
    common = dict(weight_precision=weight_precision, kv_precision=kv_precision, input_tokens=input_tokens,
                  output_tokens=output_tokens, engine=engine, kv_link_bytes_per_s=link, calibration=calibration)
    pre, dec = (cheapest_pool(m, accelerator, side, shapes=shapes, requests_per_s=lam, target_s=target,
                              statistic=statistic, **common)
                for side, target in (("prefill", ttft_target_s), ("decode", tpot_target_s)))
    if pre.shape is None or dec.shape is None:
        return _infeasible(" and ".join(c.reason for c in (pre, dec) if c.shape is None))
    est = estimate_disaggregated(m, accelerator, prefill=pool_spec(m, pre.shape, pre.replicas),
                                 decode=pool_spec(m, dec.shape, dec.replicas), requests_per_s=lam,
                                 **common)  # the pools bought, by the model that evaluates them
    pair, p_shape, d_shape = est.pair, pre.shape, dec.shape
    return DisaggregatedPools(
        True, "", p_shape.tensor_parallel, p_shape.pipeline_parallel, d_shape.tensor_parallel,
        d_shape.pipeline_parallel, d_shape.attention_dp, pre.replicas, dec.replicas, est.prefill.gpus,
        est.decode.gpus, pair.prefill_prompts, max(math.ceil(est.decode_batch), 1), est.kv_bytes_per_request,
        est.kv_transfer_s, est.kv_link_bytes_per_s, est.kv_link_utilisation, est.ttft_s, est.ttft_p95_s, est.tpot_s,
        est.tpot_p95_s, {"mean": est.ttft_s, "p95": est.ttft_p95_s, "p99": est.ttft_p99_s}[statistic],
        {"mean": est.tpot_s, "p95": est.tpot_p95_s, "p99": est.tpot_p99_s}[statistic], pair, est.ttft_p99_s,
        est.tpot_p99_s)


@dataclass(frozen=True)
class PoolChoice:
    """One side's fewest GPUs meeting its target at a rate, or why no shape does [count, s]."""

    side: str  # prefill or decode
    shape: ReplicaShape | None  # None: no shape meets the target
    replicas: int
    figure_s: float  # TTFT (prefill) or TPOT (decode) at the statistic, at those replicas; inf: none
    best_s: float  # the lowest figure any shape reached at any count tried
    reason: str  # why none meets it ("" when one does)
    pair: PoolPair | None = field(default=None, repr=False, compare=False)  # this side's, opposite the widest shape

    @property
    def gpus(self) -> int:
        return 0 if self.shape is None else self.replicas * self.shape.gpus


def cheapest_pool(model, accelerator, side: str, *, shapes, requests_per_s: float, target_s: float, statistic: str,
                  max_utilisation: float = 1.0, **estimate_kwargs) -> PoolChoice:
    """The fewest GPUs of one side's pool (``side``: prefill or decode) whose TTFT or TPOT at ``statistic`` meets
    ``target_s`` at ``requests_per_s``, over ``shapes`` and replica counts, each evaluated with
    :func:`aisize.serving.estimate_disaggregated`'s pair and :func:`~aisize.serving.pool_pair.pools_state`.

    A side's pair is built opposite the widest shape (the most memory per weight), so a side that fits is never
    rejected for the other's sake; a prefill pool's figures do not depend on the decode pool's, nor back.
    ``max_utilisation`` (0, 1] caps the pool's busy share (a headroom the caller states; 1: stable).
    ``estimate_kwargs``: weight_precision, kv_precision, input_tokens, output_tokens, engine, kv_link_bytes_per_s,
    calibration, as for :func:`~aisize.serving.estimate_disaggregated`."""
    checks.choice("side", side, ("prefill", "decode"))
    u = float(checks.scalar("max_utilisation", checks.fraction("max_utilisation", max_utilisation)))
    m, shapes, lam = models.resolve(model), tuple(shapes), float(requests_per_s)
    kt, kd = STATE_KEYS[statistic]
    count = _prefill_count if side == "prefill" else _decode_count
    big = max(shapes, key=lambda s: s.gpus)
    best, lowest, unfit = None, math.inf, ""
    for shape in shapes:
        p, d = (shape, big) if side == "prefill" else (big, shape)
        try:
            est = estimate_disaggregated(m, accelerator, prefill=pool_spec(m, p), decode=pool_spec(m, d),
                                         requests_per_s=lam, if_infeasible="result", **estimate_kwargs)
        except ValueError as e:  # a shape the engine does not run for this model (its message says why)
            unfit = str(e)
            continue
        if est.pair is None:
            other = "decode" if side == "prefill" else "prefill"
            if shape is big and f"the {other} pool" in est.reason:
                return PoolChoice(side, None, 0, math.inf, math.inf, est.reason)  # the widest holds no other side
            unfit = est.reason
            continue
        n, figure = count(est.pair, lam, kt if side == "prefill" else kd, u)
        lowest = min(lowest, float(np.min(figure)))
        ok = np.flatnonzero(figure <= target_s)
        if ok.size and (best is None or int(n[ok[0]]) * shape.gpus < best.gpus):
            best = PoolChoice(side, shape, int(n[ok[0]]), float(figure[ok[0]]), math.inf, "", est.pair)
    if best is not None:
        return replace(best, best_s=lowest)
    what = "TTFT" if side == "prefill" else "TPOT"
    return PoolChoice(side, None, 0, math.inf, lowest,
                      f"no {side} pool meets the {what} {statistic} target {target_s * 1e3:,.4g} ms (best "
                      f"{lowest * 1e3:,.4g} ms)" + (f"; {unfit}" if unfit else ""))


def pool_spec(model, shape: ReplicaShape, replicas: int = 1) -> dict:
    """A pool of ``replicas`` of ``shape`` as :func:`~aisize.serving.estimate_disaggregated` takes it, the way the
    planner hands it the pools bought (plan/inference.py): experts over the replica's tensor-parallel GPUs."""
    return dict(replicas=replicas, tensor_parallel=shape.tensor_parallel, attention_dp=shape.attention_dp,
                pipeline_parallel=shape.pipeline_parallel, stage_link_bytes_per_s=shape.stage_link_bytes_per_s,
                expert_parallel=shape.tensor_parallel if model.experts > 1 else 1)


def _counts(fewest: int) -> np.ndarray:
    """Candidate replica counts from the fewest stable one: each up to +COUNT_STEPS, then geometric [count]."""
    steps = fewest + np.arange(COUNT_STEPS)
    far = np.unique(np.ceil(fewest * np.geomspace(1.0, COUNT_SPAN, 64)).astype(np.int64))
    return np.unique(np.concatenate([steps, far[far > steps[-1]]]))


def _prefill_capacity(pair: PoolPair) -> float:
    """Requests/s one prefill replica serves flat out (full iterations) [1/s]."""
    return pair.prefill_prompts / pair.prefill_seconds


def _decode_capacity(pair: PoolPair) -> float:
    """Requests/s one decode replica serves flat out (its slots full) [1/s]; inf when no token is decoded."""
    steps = pair.decode_steps
    if steps <= 1.0:
        return math.inf
    return pair.decode_slots / ((steps - 1.0) * float(pair.decode_seconds(pair.decode_slots)))


def _prefill_count(pair: PoolPair, lam: float, key: str, utilisation: float = 1.0):
    """Prefill replica counts busy less than ``utilisation`` and their TTFT at ``key``'s statistic
    (:func:`pools_state`) [count, s]."""
    cap = _prefill_capacity(pair)
    n = _counts(max(math.floor(lam / (cap * utilisation)) + 1, 1))
    n = n[n * pair.prefill_prompts <= MAX_SERVERS]
    s = pools_state(pair, n, 1, lam, slot_wait=False)  # the decode pool is not chosen yet: its slots' wait apart
    stable = np.asarray(s["ok"], dtype=bool) & (lam < n * cap * (1.0 - 1e-9))
    return n, np.where(stable, np.asarray(s[key], dtype=float) * np.ones(n.shape), np.inf)


def _decode_count(pair: PoolPair, lam: float, key: str, utilisation: float = 1.0):
    """Decode replica counts busy less than ``utilisation`` and their TPOT at ``key``'s statistic
    (:func:`pools_state`) [count, s]."""
    cap = _decode_capacity(pair)
    n = _counts(max(math.floor(lam / (cap * utilisation)) + 1, 1) if math.isfinite(cap) else 1)
    n = n[n <= MAX_SERVERS]
    s = pools_state(pair, 1, n, lam)
    stable = lam < n * cap * (1.0 - 1e-9)
    return n, np.where(stable, np.asarray(s[key], dtype=float) * np.ones(n.shape), np.inf)


def pools_latency(pools: DisaggregatedPools, requests_per_s):
    """TTFT and TPOT (mean, p95 and p99) of fixed pools as the request rate changes (vectorized) [s]:
    :func:`~aisize.serving.pool_pair.pools_state`, the estimate's model, on the pools' pair.

    Returns a dict of arrays: ``utilisation`` (the busier pool's), ``ttft_seconds``, ``ttft_p95_seconds``,
    ``ttft_p99_seconds``, ``tpot_seconds``, ``tpot_p95_seconds``, ``tpot_p99_seconds``; inf where a pool is
    overloaded.
    """
    pair = pools.pair
    lam = np.asarray(requests_per_s, dtype=float)
    s = pools_state(pair, pools.prefill_replicas, pools.decode_replicas, np.maximum(lam, 1e-12))
    util = np.maximum(lam / (pools.prefill_replicas * _prefill_capacity(pair)),
                      lam / (pools.decode_replicas * _decode_capacity(pair)))
    ok = (util < 1.0 - 1e-9) & np.asarray(s["ok"], dtype=bool)
    out = {"utilisation": util}
    for stat, suffix in STATISTIC_SUFFIX.items():
        kt, kd = STATE_KEYS[stat]
        out[f"ttft{suffix}_seconds"] = np.where(ok, np.asarray(s[kt], dtype=float), np.inf)
        out[f"tpot{suffix}_seconds"] = np.where(ok, np.asarray(s[kd], dtype=float), np.inf)
    return out


def pools_curve(pools: DisaggregatedPools, requests_per_s: float, points: int = 48) -> dict:
    """:func:`pools_latency` from 1 % to 99 % of the rate that fills the busier pool (found from its
    utilisation at ``requests_per_s``), with the request's mean, p95 and p99 latency [1/s, s]."""
    busy = float(pools_latency(pools, np.array([requests_per_s]))["utilisation"][0])
    top = requests_per_s / max(busy, 1e-9)
    rates = np.linspace(0.01, 0.99, points) * top
    lat = pools_latency(pools, rates)
    o = pools.pair.output_tokens
    return {"requests_per_s": rates, **lat,
            **{f"latency{s or '_mean'}_seconds": lat[f"ttft{s}_seconds"] + (o - 1) * lat[f"tpot{s}_seconds"]
               for s in STATISTIC_SUFFIX.values()}}


def _infeasible(reason: str) -> DisaggregatedPools:
    inf = math.inf
    return DisaggregatedPools(False, reason, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.0, inf, 0.0, 0.0, inf, inf, inf, inf,
                              inf, inf)


__all__ = ["DisaggregatedPools", "PoolPair", "size_pools", "cheapest_pool", "PoolChoice", "pool_spec", "pools_state", "pools_latency", "pools_curve",
           "prefill_iteration_seconds", "decode_iteration_seconds", "kv_transfer_seconds"]
