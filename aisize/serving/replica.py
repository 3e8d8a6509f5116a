"""A serving replica as a value, and what it does under a load.

A :class:`Replica` is everything a replica's figures are computed from: the model and its per-token
costs at its formats, the GPU and its achieved rates under a calibration, the engine as it runs
(speculating or not) with its limits, the shape (TP, PP, attention DP, EP, the link between stages)
and the mean lengths. :func:`aisize.serving.replica` builds it once from the arguments
:func:`aisize.serving.estimate` takes; the estimate, its curves and its simulations all read that one
value (docs/serving-replica.md).

A load is a Poisson rate (an open loop), a closed loop's concurrency, or neither (flat out, every
request waiting from the start). :func:`evaluate` gives the replica's :class:`ReplicaState` under one:
batch, iteration times, TTFT and TPOT as :class:`Latency` (mean, p95, p99) and memory by part. The
models are those of :mod:`.throughput` (capacity), :mod:`.latency` (open loop) and :mod:`.closed`
(closed loop); this module only routes a replica's fields into them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

import numpy as np

from aisize.serving import calibration as _calibration
from aisize.serving.calibration import CALIBRATION, Calibration
from aisize.serving.closed import closed_loop_state
from aisize.serving.costs import model_costs, weight_formats
from aisize.serving.engine import Engine
from aisize.serving.hardware import device
from aisize.serving.iteration import achieved_rates
from aisize.serving.latency import loaded_state, replica_ttft_quantiles
from aisize.serving.shapes import ReplicaShape
from aisize.serving.speculative import speculation
from aisize.serving.throughput import EngineLimits, MaxThroughput, max_throughput


def resolve_calibration(calibration, estimate=None) -> Calibration:
    """A :class:`Calibration` from one, the path of a calibration file, or None: the one ``estimate`` (a
    :class:`~aisize.serving.ServingEstimate` evaluated again at other loads) was made with, else the default."""
    if calibration is None and estimate is not None and estimate.calibration_record is not None:
        return estimate.calibration_record
    if calibration is None:
        return CALIBRATION
    if isinstance(calibration, Calibration):
        return calibration
    if isinstance(calibration, (str, Path)):
        return _calibration.load(calibration)
    raise ValueError(f"calibration={calibration!r} is not allowed: give a Calibration, a calibration file's "
                     f"path, or None")


def parts(m, accelerator, weight_precision, kv_precision, calib, engine, **speculative):
    """(device, costs, rates, speculation, engine as it runs) of model ``m`` on a GPU: what every evaluation of
    a replica or a pool starts from; ``speculative`` as for :func:`~aisize.serving.speculative.speculation`."""
    formats = weight_formats(weight_precision)
    dev = device(accelerator, formats, kv_precision)
    costs = model_costs(m, formats, kv_precision)
    spec = speculation(m, formats, kv_precision, **speculative)
    return dev, costs, achieved_rates(dev, calib, engine), spec, engine.speculating(spec)


@dataclass(frozen=True)
class Latency:
    """One latency's statistics over requests [s]."""

    mean_seconds: float
    p95_seconds: float
    p99_seconds: float


@dataclass(frozen=True)
class Load:
    """What a replica is asked to serve: a Poisson rate, a closed loop's concurrency, or neither (flat out)."""

    requests_per_s: float | None = None  # arrivals at this replica (an open loop) [1/s]
    concurrency: float | None = None  # requests a closed-loop client holds in flight [count]
    length_cv: float = 0.0  # coefficient of variation of the lengths, for the admission queue


@dataclass(frozen=True)
class ReplicaState:
    """A replica under a load (per replica) [1/s, count, s]; ``memory`` per GPU [B]."""

    score: float  # what the shape choice maximises: the served rate in a closed loop, else the capacity
    requests_per_s: float  # served (the asked rate, or the capacity where it overloads)
    batch: float  # mean requests in the engine's batch
    concurrency: float  # requests in flight (given, or Little's law at the rate; inf when unstable)
    stable: bool
    utilisation: float  # served rate / capacity
    ttft: Latency
    tpot: Latency
    queue_seconds: float  # mean wait for admission (a slot)
    decode_iteration_seconds: float  # an iteration without prefill work
    prefill_iteration_seconds: float  # an iteration carrying prefill work
    memory: object  # weights, runtime and KV pool per GPU (aisize.serving.memory.ReplicaMemory)
    kv_reuse: object = None  # prefix reuse and KV tiers (aisize.serving.reuse.ReuseEstimate), when asked
    lengths: object = None  # lengths from a distribution (aisize.serving.reuse.LengthEffects), when asked


@dataclass(frozen=True)
class Replica:
    """One serving replica, built once (:func:`aisize.serving.replica`): what every figure of it is computed from."""

    model: object  # the Transformer
    accelerator: object  # as given: a catalog id or an Accelerator record
    device: object  # the GPU's peaks at the formats (aisize.serving.hardware.Device)
    costs: object  # per-token costs at the formats (aisize.serving.costs)
    rates: object  # the GPU's achieved rates under the calibration
    calibration: Calibration
    engine: Engine  # as it runs (an engine that turns its overlap off to speculate, without it)
    speculation: object  # aisize.serving.speculative.Speculation, or None
    shape: ReplicaShape  # placed on the GPU's scale-up domain (a stage wider than it spans servers)
    limits: EngineLimits  # the engine's batch and token limits in force, per attention-DP rank
    kv_precision: str
    input_tokens: int  # mean prompt [tokens]
    output_tokens: int  # mean output [tokens]

    @property
    def formats(self):
        """The weight formats (aisize.serving.costs.WeightFormats)."""
        return self.costs.formats

    @property
    def groups(self) -> int:
        """Independently scheduled batches: attention-DP ranks x pipeline stages (the limits apply to each)."""
        return self.shape.attention_dp * self.shape.pipeline_parallel

    @property
    def launch(self):
        """How the engine launches iterations at its batch limit (aisize.serving.engine.Launch)."""
        return self.engine.launch(self.limits.max_batch_size, self.groups)

    @property
    def kv_split(self) -> int:
        """GPUs of an attention-DP rank one token's KV is split over (beyond the KV heads they replicate)."""
        return self.shape.kv_split(self.costs.kv_heads)

    @property
    def kv_bytes_per_token(self) -> float:
        """Whole model, at the KV precision, while every layer's cache grows [B]."""
        return self.costs.kv_bytes_per_token_full + self.costs.kv_bytes_per_token_window

    @cached_property
    def capacity(self) -> MaxThroughput:
        """The replica at the largest concurrency its limits and memory allow (computed once)."""
        return capacity(self)

    @property
    def pool_tokens(self) -> float:
        """The KV pool in tokens, whole replica [tokens]."""
        mem = float(self.capacity.memory.kv_pool_bytes)
        return mem * (self.kv_split * self.shape.pipeline_parallel) * self.shape.attention_dp / self.kv_bytes_per_token

    def with_calibration(self, calibration: Calibration) -> Replica:
        """This replica's limits and shape with another calibration's achieved rates (its capacity recomputed)."""
        if calibration is self.calibration:
            return self
        # the engine's kernel tables are keyed by its name, which speculating does not change
        return replace(self, calibration=calibration, rates=achieved_rates(self.device, calibration, self.engine))


def capacity(rep: Replica, cached_tokens=0.0, decode_context_tokens=None) -> MaxThroughput:
    """:func:`~aisize.serving.throughput.max_throughput` of the replica; a cached prompt prefix and the decoding
    context as for :func:`~aisize.serving.steady.steady_state`. Computed once per replica and scalar arguments
    (by type and value): a replica probed at several rates with a length distribution asks the same capacity at
    each (aisize.serving.reuse settles every probe on it), as :attr:`Replica.capacity` is kept."""
    key = (_scalar_key(cached_tokens), _scalar_key(decode_context_tokens))
    kept = rep.__dict__.setdefault("_capacities", {})  # beside Replica.capacity's (a cached_property's) own entry
    got = kept.get(key) if None not in key else None
    if got is None:
        got = max_throughput(rep.costs, rep.device, rep.rates, rep.calibration, rep.engine, rep.limits,
                             input_tokens=rep.input_tokens, output_tokens=rep.output_tokens, shape=rep.shape,
                             speculation=rep.speculation, cached_tokens=cached_tokens,
                             decode_context_tokens=decode_context_tokens)
        if None not in key:
            while len(kept) >= KEPT_CAPACITIES:
                del kept[next(iter(kept))]
            kept[key] = got
    return got


KEPT_CAPACITIES = 8  # capacities kept per replica (a CV move settles each replica at one context)


def _scalar_key(value):
    """A plain number or None by its type and repr (1 and 1.0 are kept apart: max_throughput may compute them
    differently); None for anything else (an array: computed each time)."""
    if value is None or isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return (type(value).__name__, repr(value))
    return None


def evaluate(rep: Replica, load: Load, cap: MaxThroughput | None = None, cached_tokens=0.0,
             decode_context_tokens=None, prompt_cv=0.0) -> ReplicaState | None:
    """The replica's state under ``load`` (None where the model does not fit its GPUs).

    ``cap`` is its capacity (default: :attr:`Replica.capacity`; with a cached prefix, the capacity with it);
    ``cached_tokens``, ``decode_context_tokens`` and ``prompt_cv`` as for
    :func:`~aisize.serving.latency.loaded_state`.
    """
    cap = rep.capacity if cap is None else cap
    if not bool(cap.memory.fits):
        return None
    if load.concurrency is not None:
        return closed_loop(rep, cap, load.concurrency, cached_tokens, decode_context_tokens)
    if load.requests_per_s is None:
        return flat_out(rep, cap)
    return open_loop(rep, cap, load.requests_per_s, load.length_cv, cached_tokens, decode_context_tokens,
                     prompt_cv)


def closed_loop(rep: Replica, cap: MaxThroughput, concurrency, cached_tokens=0.0,
                decode_context_tokens=None) -> ReplicaState:
    """Under a closed loop of ``concurrency`` requests (:func:`~aisize.serving.closed.closed_loop_state`)."""
    cl = closed_loop_state(rep.costs, rep.rates, rep.calibration, concurrency=concurrency,
                           slots=float(cap.state.concurrency), input_tokens=rep.input_tokens,
                           output_tokens=rep.output_tokens, max_num_tokens=rep.limits.max_num_tokens * rep.groups,
                           chunked_prefill=rep.engine.chunked_prefill, shape=rep.shape, launch=rep.launch,
                           speculation=rep.speculation, cached_tokens=cached_tokens,
                           decode_context_tokens=decode_context_tokens)
    served = float(cl.requests_per_s)
    return ReplicaState(
        score=served, requests_per_s=served, batch=float(cl.batch), concurrency=concurrency, stable=True,
        utilisation=served / float(cap.state.requests_per_s),
        ttft=Latency(float(cl.ttft_seconds), float(cl.ttft_p95_seconds), float(cl.ttft_p99_seconds)),
        tpot=Latency(float(cl.tpot_seconds), float(cl.tpot_p95_seconds), float(cl.tpot_p99_seconds)),
        queue_seconds=float(cl.queue_seconds), decode_iteration_seconds=float(cl.decode_iteration_seconds),
        prefill_iteration_seconds=float(cl.prefill_iteration_seconds), memory=cap.memory)


def flat_out(rep: Replica, cap: MaxThroughput) -> ReplicaState:
    """Every request waiting from the start: from admission, the wait for the next cohort, then its iteration."""
    st = cap.state
    slots, capacity_rps = float(st.concurrency), float(st.requests_per_s)
    t_dec, t_mix, mean_t = (float(st.decode_iteration_seconds), float(st.prefill_iteration_seconds),
                            float(st.iteration_seconds))
    tau = st.tokens_per_step
    ttft = rep.calibration.request_seconds + mean_t + t_mix
    # flat out the model spreads TTFT over nothing and TPOT up to a decode-only iteration: p99 = p95
    tail = max(t_dec, mean_t) / tau if rep.output_tokens > 1 else 0.0
    return ReplicaState(score=capacity_rps, requests_per_s=capacity_rps, batch=slots, concurrency=slots, stable=True,
                        utilisation=1.0, ttft=Latency(ttft, ttft, ttft), tpot=Latency(mean_t / tau, tail, tail),
                        queue_seconds=0.0, decode_iteration_seconds=t_dec, prefill_iteration_seconds=t_mix,
                        memory=cap.memory)


def open_loop(rep: Replica, cap: MaxThroughput, requests_per_s, length_cv=0.0, cached_tokens=0.0,
              decode_context_tokens=None, prompt_cv=0.0) -> ReplicaState:
    """Under Poisson arrivals at ``requests_per_s`` (:func:`~aisize.serving.latency.loaded_state`)."""
    capacity_rps = float(cap.state.requests_per_s)
    ls = loaded_state(rep.costs, rep.rates, rep.calibration, requests_per_s=requests_per_s,
                      capacity_requests_per_s=capacity_rps, slots=float(cap.state.concurrency),
                      input_tokens=rep.input_tokens, output_tokens=rep.output_tokens,
                      max_num_tokens=rep.limits.max_num_tokens * rep.groups, chunked_prefill=rep.engine.chunked_prefill,
                      shape=rep.shape, length_cv=length_cv, launch=rep.launch, speculation=rep.speculation,
                      cached_tokens=cached_tokens, decode_context_tokens=decode_context_tokens, prompt_cv=prompt_cv)
    stable = bool(ls.stable)
    ttft = float(ls.ttft_seconds)
    ttft95, ttft99 = float(ls.ttft_p95_seconds), float(ls.ttft_p99_seconds)
    if stable and cached_tokens == 0 and decode_context_tokens is None and prompt_cv == 0:
        # every prompt of the mean length: the tails of the iteration mixture, as the latency curve draws them
        ttft95, ttft99 = (float(v[0]) for v in replica_ttft_quantiles(
            rep, requests_per_s=ls.requests_per_s, concurrency=ls.concurrency, iteration_seconds=ls.iteration_seconds,
            decode_iteration_seconds=ls.decode_iteration_seconds,
            prefill_iteration_seconds=ls.prefill_iteration_seconds, ttft_seconds=ls.ttft_seconds,
            ttft_p95_seconds=ls.ttft_p95_seconds, ttft_p99_seconds=ls.ttft_p99_seconds))
    e2e = ttft + (rep.output_tokens - 1) * float(ls.tpot_seconds)
    return ReplicaState(
        score=capacity_rps, requests_per_s=float(requests_per_s) if stable else capacity_rps,
        batch=float(ls.concurrency), concurrency=requests_per_s * e2e if stable else float("inf"), stable=stable,
        utilisation=float(ls.utilisation),
        ttft=Latency(ttft, ttft95, ttft99),
        tpot=Latency(float(ls.tpot_seconds), float(ls.tpot_p95_seconds), float(ls.tpot_p99_seconds)),
        queue_seconds=float(ls.queue_seconds), decode_iteration_seconds=float(ls.decode_iteration_seconds),
        prefill_iteration_seconds=float(ls.prefill_iteration_seconds), memory=cap.memory)
