"""Disaggregated serving: separate prefill and decode pools, the KV cache shipped between them.

DistServe [1], Splitwise [2], Mooncake and NVIDIA Dynamo run prompts on one pool
of GPUs and generation on another, so a long prefill never stalls other
requests' tokens and each pool gets the shape that suits it. Per request:

- prefill: the prompt runs in an iteration of up to ``budget`` tokens (``q = budget // I``
  prompts batched together); a prefill replica serves ``q / T_p`` requests per second.
  The pool is a queue of ``n_p`` replicas with deterministic service (M/D/c through
  Allen-Cunneen [3]): TTFT = wait + the prefill iteration + the KV transfer;
- KV transfer: ``I`` tokens of KV cache (every layer, at the KV precision) leave the
  prefill GPUs over their scale-out NICs, each GPU its own shard, at the link efficiency;
- decode: decode-only iterations at a batch ``B`` and mean context ``I + O/2``: TPOT is
  that iteration (no prefill interference), a decode replica serves ``B / (O·T_d)``
  requests per second, and B is the largest batch whose iteration meets the TPOT target
  and whose KV cache fits.

The ratio of prefill to decode GPUs follows from the traffic mix: GPU-seconds per
request of each phase. Targets bound the mean, p95 or p99: the prefill queue's wait at that
statistic plus the running iteration's residual at it. The chosen pools are a :class:`PoolPair`,
two :class:`~aisize.serving.replica.Replica` s and their KV link (docs/serving-replica.md).

References
----------
.. [1] Zhong et al. 2024, "DistServe", OSDI'24, arXiv:2401.09670, sec. 3-4.
.. [2] Patel et al. 2024, "Splitwise", ISCA'24, arXiv:2311.18677, sec. 4.
.. [3] Allen 1990, "Probability, Statistics and Queueing Theory", sec. 6.4 (G/G/c).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from aisize import checks
from aisize.queueing import ggc
from aisize.serving.costs import model_costs
from aisize.serving.engine import GRAPHED, Launch
from aisize.serving.hardware import device
from aisize.serving.iteration import achieved_rates, iteration_time
from aisize.serving.latency import littles_law_concurrency
from aisize.serving.memory import replica_memory
from aisize.serving.replica import Replica
from aisize.serving.shapes import ReplicaShape, ShapeGrid
from aisize.serving.tails import STATISTIC_SUFFIX
from aisize.serving.throughput import EngineLimits

PREFILL_BUDGET = 8192  # tokens per prefill iteration (and at least one whole prompt)
DECODE_BATCHES = np.array([2.0 ** k for k in range(13)])  # 1 .. 4096
# the rest of the prefill iteration running at an arrival is uniform on (0, T) (every iteration of a prefill pool
# carries prompts): its mean is T/2 and its q-quantile q·T (aisize.serving.tails.residual_quantile at a prefill
# share of 1); a request's TTFT adds its own iteration: (1 + share) x T
RESIDUAL_SHARE = {"mean": 0.5, "p95": 0.95, "p99": 0.99}


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
class PoolPair:
    """One disaggregated deployment's prefill and decode replicas and the KV link between them, built once: what
    every latency of its pools is computed from (docs/serving-replica.md) [count, s, B, B/s].

    The two replicas share the model's costs, the GPU's achieved rates, the calibration and the mean lengths;
    each has its own shape and limits (prefill: prompts and tokens per iteration; decode: its batch limit)."""

    prefill: Replica
    decode: Replica  # with the speculative decoding in force
    decode_launch: Launch  # how decode iterations launch (the sizing screen: every one graphed, host overlapped)
    prefill_prompts: int  # whole prompts a full prefill iteration carries, whole replica
    prefill_seconds: float  # that full prefill iteration [s]
    lone_prefill_seconds: float  # an iteration of one prompt [s]
    decode_slots: float  # sequences a decode replica holds at most (its batch limit and KV pool) [count]
    kv_bytes_per_request: float  # the prompt's KV cache, whole model [B]
    kv_link: str  # scale-up, scale-out or given
    kv_link_bytes_per_s: float  # achieved rate per prefill GPU, one direction (the link efficiency applied) [B/s]
    kv_transfer_seconds: float  # one request's KV cache over its prefill GPUs' links [s]

    @property
    def calibration(self):
        return self.decode.calibration

    @property
    def input_tokens(self):
        return self.decode.input_tokens

    @property
    def output_tokens(self):
        return self.decode.output_tokens

    @property
    def tokens_per_step(self) -> float:
        """Tokens a decode step emits: 1, or the speculative acceptance length."""
        spec = self.decode.speculation
        return 1.0 if spec is None else spec.acceptance_length

    @property
    def decode_steps(self) -> float:
        """A request's decode iterations, first token included (prefill emits it) [count]."""
        return max(1.0 + (self.output_tokens - 1.0) / self.tokens_per_step, 1.0)

    @property
    def head_seconds(self) -> float:
        """What every request's TTFT holds beside the prefill queue and iterations: time outside the GPU and
        its KV transfer [s]."""
        return self.calibration.request_seconds + self.kv_transfer_seconds

    def decode_seconds(self, batch):
        """A decode-only iteration of ``batch`` sequences at the mean context ``I + O/2`` (vectorized) [s]."""
        rep, b = self.decode, np.asarray(batch, dtype=float)
        i, o = rep.input_tokens, rep.output_tokens
        return iteration_time(rep.costs, rep.rates, rep.calibration, decode_sequences=b, decode_context=i + 0.5 * o,
                              prefill_tokens=0.0 * b, prefill_prompts=0.0 * b, prompt_tokens=float(i),
                              graphed=self.decode_launch.graphed(b, b, False), overlap=self.decode_launch.overlap,
                              speculation=rep.speculation, **rep.shape.kwargs()).seconds


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
    tpot_s: float  # mean: the decode-only iteration (at the sized batch, until the plan evaluates the pools)
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
    """The fewest GPUs of prefill and decode pools that serve ``requests_per_s`` within the targets.

    Parameters
    ----------
    model, accelerator : model record and catalog accelerator id
    weight_precision, kv_precision : formats
    input_tokens, output_tokens : mean lengths [tokens]
    requests_per_s : λ [1/s]; ttft_target_s, tpot_target_s : targets [s]
    statistic : what the targets bound: "mean", "p95" or "p99" (TTFT: the prefill queue's wait at that
        statistic, plus the residual of the running iteration, :data:`RESIDUAL_SHARE`, plus its own; TPOT: the
        decode-only iteration at the batch limit, which bounds every statistic)
    shapes : candidate :class:`~aisize.serving.shapes.ReplicaShape` s for either pool
    engine, calibration : as for :func:`aisize.serving.estimate`
    scaleout_bytes_per_s : NIC rate per GPU per direction that carries the KV cache [B/s]
    """
    checks.choice("statistic", statistic, tuple(STATISTIC_SUFFIX))
    lam = checks.positive("requests_per_s", requests_per_s, high=1e9)
    i, o = float(input_tokens), float(output_tokens)
    dev = device(accelerator, weight_precision, kv_precision)
    costs = model_costs(model, weight_precision, kv_precision)
    rates = achieved_rates(dev, calibration, engine)
    grid = ShapeGrid.of(shapes, dev.link_bytes_per_s)
    gpus = np.array([s.gpus for s in shapes], dtype=float)
    nic = checks.positive("scaleout_bytes_per_s", scaleout_bytes_per_s) * calibration.link_efficiency
    # prefill pool: per shape, the batch of whole prompts a budget holds, then the fewest replicas meeting TTFT
    q = max(math.floor(max(PREFILL_BUDGET, i) / i), 1)
    fits = replica_memory(costs, engine, dev.memory_bytes, sequence_tokens=i + 1.0, max_num_tokens=q * i,
                          gpus=grid.tensor_parallel, attention_dp=grid.attention_dp,
                          pipeline_parallel=grid.pipeline_parallel).fits.ravel()
    t_pre = prefill_iteration_seconds(costs, rates, calibration, grid, prompts=float(q), input_tokens=i).ravel()
    transfer = kv_transfer_seconds(costs, i, nic, gpus)
    service = t_pre / q  # per prompt, batching q of them
    best_p = None
    for k in np.flatnonzero(fits):
        c = max(math.ceil(lam * service[k] * 1.05), 1)
        for _ in range(64):  # add replicas until the prefill queue's TTFT meets the target
            g = ggc(lam, service[k], c, service_cv=0.0)
            ttft = _prefill_ttft(g, calibration.request_seconds + transfer[k], t_pre[k])
            if bool(g.stable) and ttft[statistic] <= ttft_target_s:
                if best_p is None or c * gpus[k] < best_p[1] * gpus[best_p[0]]:
                    best_p = (k, c, ttft)
                break
            c += max(1, c // 8)
    # decode pool: per shape and batch, the decode-only iteration; keep batches meeting TPOT and fitting
    b = DECODE_BATCHES[None, :]
    t_dec = decode_iteration_seconds(costs, rates, calibration, grid, batch=b, input_tokens=i, output_tokens=o)
    mem = replica_memory(costs, engine, dev.memory_bytes, sequence_tokens=i + o, max_num_tokens=b,
                         gpus=grid.tensor_parallel,
                         attention_dp=grid.attention_dp, pipeline_parallel=grid.pipeline_parallel)
    ok = (t_dec <= tpot_target_s) & (mem.sequences >= b)
    per_gpu = np.where(ok, b / (o * t_dec) / gpus[:, None], 0.0)  # requests/s per decode GPU
    if best_p is None or not ok.any():
        why = []
        if best_p is None:
            why.append(f"no prefill pool meets the TTFT {statistic} target {ttft_target_s * 1e3:,.4g} ms")
        if not ok.any():
            why.append(f"no decode batch meets the TPOT target {tpot_target_s * 1e3:,.4g} ms (best "
                       f"{float(np.min(t_dec)) * 1e3:,.4g} ms)")
        return _infeasible(" and ".join(why))
    kd, kb = np.unravel_index(int(np.argmax(per_gpu)), per_gpu.shape)
    d_batch, td = float(b[0, kb]), float(t_dec[kd, kb])
    n_d = max(math.ceil(lam * o * td / d_batch), 1)
    kp, n_p, ttft = best_p
    p_shape, d_shape = shapes[kp], shapes[kd]
    kv_req = float(costs.kv_bytes(i))
    link = lam * kv_req

    def rep(shape, limits):
        return Replica(model=model, accelerator=accelerator, device=dev, costs=costs, rates=rates,
                       calibration=calibration, engine=engine, speculation=None, shape=shape, limits=limits,
                       kv_precision=kv_precision, input_tokens=input_tokens, output_tokens=output_tokens)

    pair = PoolPair(prefill=rep(p_shape, EngineLimits(q, q * i)), decode=rep(d_shape, EngineLimits(d_batch, d_batch)),
                    decode_launch=GRAPHED, prefill_prompts=q, prefill_seconds=float(t_pre[kp]),
                    lone_prefill_seconds=float(t_pre[kp]), decode_slots=d_batch, kv_bytes_per_request=kv_req,
                    kv_link="scale-out", kv_link_bytes_per_s=float(nic), kv_transfer_seconds=float(transfer[kp]))
    return DisaggregatedPools(
        True, "", p_shape.tensor_parallel, p_shape.pipeline_parallel, d_shape.tensor_parallel,
        d_shape.pipeline_parallel, d_shape.attention_dp, n_p, n_d, int(n_p * gpus[kp]), int(n_d * gpus[kd]), q,
        int(d_batch), kv_req, float(transfer[kp]), link, link / (n_p * gpus[kp] * nic), ttft["mean"], ttft["p95"],
        td, td, ttft[statistic], td, pair, ttft["p99"], td)


def _prefill_ttft(g, head, t_pre) -> dict:
    """TTFT by statistic of a prefill pool whose queue is ``g`` (:func:`~aisize.queueing.ggc`): the time outside
    the GPU and the KV transfer (``head``), the wait, the rest of the running iteration and its own [s]."""
    waits = {"mean": g.wait_mean_seconds, "p95": g.wait_p95_seconds, "p99": g.wait_p99_seconds}
    return {k: head + np.asarray(w, dtype=float) + (1.0 + RESIDUAL_SHARE[k]) * t_pre for k, w in waits.items()}


def pools_latency(pools: DisaggregatedPools, requests_per_s):
    """TTFT and TPOT (mean, p95 and p99) of fixed pools as the request rate changes (vectorized) [s].

    Returns a dict of arrays: ``utilisation`` (the busier pool's), ``ttft_seconds``, ``ttft_p95_seconds``,
    ``ttft_p99_seconds``, ``tpot_seconds``, ``tpot_p95_seconds``, ``tpot_p99_seconds``; inf where a pool is
    overloaded. TPOT is the decode-only iteration at the batch Little's law gives, capped by the batch limit, so
    its statistics are one figure.
    """
    pair = pools.pair
    lam = np.asarray(requests_per_s, dtype=float)
    g = ggc(np.maximum(lam, 1e-12), pair.prefill_seconds / pair.prefill_prompts, pools.prefill_replicas,
            service_cv=0.0)
    ttft = _prefill_ttft(g, pair.calibration.request_seconds + pools.kv_transfer_s, pair.prefill_seconds)
    ttft = {k: np.where(g.stable, v, np.inf) for k, v in ttft.items()}
    # decode: B = (λ / replicas)·O·T_d(B) (Little's law), at most the decode batch
    o = float(pair.output_tokens)
    b = littles_law_concurrency(lam / pools.decode_replicas * o, pair.decode_seconds, float(pools.decode_batch))
    t = pair.decode_seconds(b)
    util_d = lam / pools.decode_replicas * o * t / pools.decode_batch  # >= 1: saturated
    util = np.maximum(np.asarray(g.utilisation, dtype=float), util_d)
    ok = util < 1.0
    tpot = np.where(ok, t, np.inf)
    out = {"utilisation": util}
    for stat, suffix in STATISTIC_SUFFIX.items():
        out[f"ttft{suffix}_seconds"] = np.where(ok, ttft[stat], np.inf)
        out[f"tpot{suffix}_seconds"] = tpot
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


__all__ = ["DisaggregatedPools", "PoolPair", "size_pools", "pools_latency", "pools_curve",
           "prefill_iteration_seconds", "decode_iteration_seconds", "kv_transfer_seconds"]
