"""The :class:`ServingEstimate` record and how it is read off an evaluated replica (:func:`result`): its figures,
notes and reason, the KV-full rate and a decode iteration's breakdown (split from :mod:`.estimate`, which asks and
evaluates the replica, to keep each file small)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from aisize.serving.iteration import iteration_time
from aisize.serving.replica import Replica, ReplicaState
from aisize.serving.steady import steady_state
from aisize.units import GiB


def _sig(x) -> str:
    """``x`` to 3 significant figures, thousands separated, for a reason's or a note's text ("1,017", "0.448";
    "unbounded" for inf). A formula does not import presentation (aisize.format), whose ``sig`` reads the same."""
    x = float(x)
    if not math.isfinite(x):
        return "unbounded" if math.isinf(x) else "—"
    if x == 0:
        return "0"
    decimals = max(0, 2 - math.floor(math.log10(abs(x))))
    rounded = round(x, decimals)
    if rounded != 0 and math.floor(math.log10(abs(rounded))) != math.floor(math.log10(abs(x))):
        decimals = max(0, decimals - 1)  # 9.996 -> "10.0", not "10.00"
    return f"{x:,.{decimals}f}"


def _gib(b) -> str:
    """GPU memory in GiB, the one unit of GPU memory on every surface ("72.0 GiB")."""
    return f"{_sig(float(b) / GiB)} GiB"


@dataclass(frozen=True)
class ServingEstimate:
    """One replica's throughput, latencies and memory (per replica unless said) [s, tokens/s, B]."""

    model: str
    accelerator: str
    engine: str  # ENGINES key
    gpus: int
    tensor_parallel: int  # GPUs per pipeline stage
    pipeline_parallel: int
    attention_dp: int
    expert_parallel: int  # GPUs the routed experts spread over (1 for dense models)
    weight_precision: str  # the formats' label (one name, or per layer kind)
    kv_precision: str
    gemm_dtype: str  # tensor-core dtype of the linear layers
    input_tokens: int
    output_tokens: int
    feasible: bool
    reason: str  # why not, when not feasible
    output_tokens_per_s: float  # at requests_per_s or concurrency, or at capacity when neither is given
    requests_per_s: float  # served rate
    max_requests_per_s: float  # capacity: the rate at the largest admissible concurrency
    max_output_tokens_per_s: float  # capacity in output tokens/s
    batch_size: float  # mean requests in the engine's batch
    max_concurrency: float  # requests in flight at capacity (batch limit, KV pool, token budget)
    max_batch_size: int  # engine's batch limit (per attention-DP group and stage)
    max_num_tokens: int  # engine's token budget per iteration (per attention-DP group and stage)
    limited_by: str  # what caps concurrency at capacity: batch size, KV cache or token budget
    utilisation: float  # served rate / capacity
    stable: bool
    ttft_s: float
    ttft_p95_s: float
    tpot_s: float
    tpot_p95_s: float
    ttft_p99_s: float
    tpot_p99_s: float
    queue_s: float  # mean wait for admission (a slot)
    weights_per_gpu_bytes: float
    kv_pool_bytes: float  # per GPU
    kv_occupancy: float  # share of the KV pool the batch holds
    preemption_requests_per_s: float  # rate at which the cache in use (mean context) fills the pool: beyond it an
    #                                   engine that does not reserve whole requests preempts, one that does queues
    kv_bytes_per_token: float  # whole model, at the KV precision, while every layer's cache grows
    iteration_breakdown: dict  # a decode iteration at the batch, per kind of work [s]
    within_context: bool  # input + output fit the model's context window
    uncalibrated: bool  # the GPU's generation has no fitted efficiency
    concurrency: float = float("inf")  # requests in flight: given (closed loop) or Little's law at the rate (inf:
    # the replica does not fit, so nothing is served and arrivals only queue)
    calibration: str = ""  # the calibration's name
    speculative_method: str | None = None
    speculative_tokens: int = 0  # k drafted per step
    acceptance_length: float = 1.0  # τ: tokens a decode step emits per sequence
    kv_reuse: object = None  # prefix reuse and KV tiers (aisize.serving.reuse.ReuseEstimate), when prefix is given
    lengths: object = None  # lengths from a distribution (aisize.serving.reuse.LengthEffects), when given
    notes: tuple = ()
    # an uncalibrated GPU: (low, high) of the figure under each calibrated generation's efficiencies, the point
    # among them (:func:`_uncalibrated_range`); empty on a calibrated GPU
    output_tokens_per_s_range: tuple = ()
    max_output_tokens_per_s_range: tuple = ()  # the capacity's (at a given rate the served figure is the rate's)
    ttft_range_s: tuple = ()  # over the generations whose efficiencies keep the load stable
    tpot_range_s: tuple = ()
    overloaded_under: tuple = ()  # generations under whose efficiencies the load asked for overloads the replica
    weight_formats: object = field(default=None, repr=False, compare=False)  # the WeightFormats used
    speculation: object = field(default=None, repr=False, compare=False)  # the Speculation used (or None)
    model_record: object = field(default=None, repr=False, compare=False)  # the Transformer used
    accelerator_record: object = field(default=None, repr=False, compare=False)  # the Accelerator used
    calibration_record: object = field(default=None, repr=False, compare=False)  # the Calibration used
    engine_record: object = field(default=None, repr=False, compare=False)  # the Engine used (a variant included)
    # the Replica evaluated (aisize.serving.replica) and its ReplicaState under the load (None: no fit); not
    # exported: the figures above are read from them
    replica: object = field(default=None, repr=False, compare=False, metadata={"export": False})
    state: object = field(default=None, repr=False, compare=False, metadata={"export": False})

    @property
    def e2e_s(self) -> float:
        """Mean time from arrival to the last token [s]."""
        return self.ttft_s + (self.output_tokens - 1) * self.tpot_s

    @property
    def output_tokens_per_s_per_gpu(self) -> float:
        return self.output_tokens_per_s / self.gpus

    @property
    def output_tokens_per_s_per_user(self) -> float:
        return 1.0 / self.tpot_s if self.tpot_s > 0 else float("inf")


def _result(rep: Replica, cap, state: ReplicaState | None) -> ServingEstimate:
    m, dev, costs, rates, calib, engine, shape, limits, spec = (rep.model, rep.device, rep.costs, rep.rates,
                                                                rep.calibration, rep.engine, rep.shape, rep.limits,
                                                                rep.speculation)
    i, o = rep.input_tokens, rep.output_tokens
    notes = []
    within = i + o <= m.max_seq
    if not within:
        notes.append(f"input_tokens + output_tokens = {i + o:,} exceeds {m.id}'s context window of "
                     f"{m.max_seq:,} tokens")
    if rates.uncalibrated:
        notes.append(f"{dev.id}: no calibrated efficiencies for its generation; {calib.fallback_generation}'s "
                     f"are used (uncalibrated)")
    fits = bool(cap.memory.fits)
    reason = "" if fits else (
        f"{m.id} at {dev.gemm_dtype} weights needs {_gib(float(cap.memory.weights_bytes))} of weights and "
        f"{_gib(float(cap.memory.runtime_bytes))} of runtime per GPU, leaving no KV room for one "
        f"{i + o:,}-token request in {_gib(dev.memory_bytes)}: use more GPUs or a smaller precision")
    st = cap.state
    capacity_rps = float(st.requests_per_s) if fits else 0.0
    slots = float(st.concurrency)
    inf = float("inf")
    _, stable, ttft, ttft95, ttft99, tpot, tpot95, tpot99 = _latencies(cap, state)
    if fits:
        served, batch = state.requests_per_s, state.batch
        util, queue, in_flight = state.utilisation, state.queue_seconds, state.concurrency
        if not stable:
            notes.append(f"requests_per_s={served:g} is at or beyond this replica's capacity of "
                         f"{_sig(capacity_rps)} requests/s: the queue grows without bound")
            served = capacity_rps
    else:
        served, batch, util, queue, in_flight = 0.0, slots, inf, 0.0, inf  # nothing served: the queue never drains
    occupancy, preempt = 0.0, 0.0
    if fits and np.isfinite(batch):
        occupancy = min(batch / max(float(cap.memory.sequences), 1.0), 1.0)
    if fits:
        preempt = _kv_full_rate(rep, cap)
    breakdown = _breakdown(costs, rates, calib, shape, batch if np.isfinite(batch) else slots, i, o, spec)
    if spec is not None:
        notes.append(f"speculative decoding ({spec.method}, {spec.draft_tokens} draft tokens): "
                     f"{_sig(spec.acceptance_length)} tokens per step ({spec.acceptance_source[:80]})")
    return ServingEstimate(
        model=m.id, accelerator=dev.id, engine=engine.key, gpus=shape.gpus, tensor_parallel=shape.tensor_parallel,
        pipeline_parallel=shape.pipeline_parallel, attention_dp=shape.attention_dp,
        expert_parallel=shape.experts_over if costs.moe_layers else 1, weight_precision=costs.formats.label,
        kv_precision=rep.kv_precision, gemm_dtype=dev.gemm_dtype, input_tokens=i, output_tokens=o, feasible=fits,
        reason=reason, output_tokens_per_s=served * o, requests_per_s=served, max_requests_per_s=capacity_rps,
        max_output_tokens_per_s=capacity_rps * o, batch_size=batch, max_concurrency=slots,
        max_batch_size=int(limits.max_batch_size), max_num_tokens=int(limits.max_num_tokens),
        limited_by=cap.limited_by, utilisation=util, stable=stable, ttft_s=ttft, ttft_p95_s=ttft95, tpot_s=tpot,
        tpot_p95_s=tpot95, ttft_p99_s=ttft99, tpot_p99_s=tpot99, queue_s=queue,
        weights_per_gpu_bytes=float(cap.memory.weights_bytes), kv_pool_bytes=float(cap.memory.kv_pool_bytes),
        kv_occupancy=occupancy, preemption_requests_per_s=preempt,
        kv_bytes_per_token=float(rep.kv_bytes_per_token),
        iteration_breakdown=breakdown, within_context=within, uncalibrated=rates.uncalibrated,
        concurrency=in_flight, calibration=calib.name, speculative_method=spec.method if spec else None,
        speculative_tokens=spec.draft_tokens if spec else 0, acceptance_length=spec.acceptance_length if spec else 1.0,
        kv_reuse=state.kv_reuse if state is not None else None, lengths=state.lengths if state is not None else None,
        notes=tuple(notes), weight_formats=costs.formats, speculation=spec, model_record=m,
        accelerator_record=rep.accelerator, calibration_record=calib, engine_record=engine, replica=rep, state=state)


def _latencies(cap, state: ReplicaState | None) -> tuple:
    """(fits, stable, TTFT mean, p95, p99, TPOT mean, p95, p99 [s]) of a replica's capacity and state, as the
    estimate reports them (infinite where it does not fit): the one reading of both :func:`_result` and
    :func:`probe`."""
    if not bool(cap.memory.fits):
        inf = float("inf")
        return False, False, inf, inf, inf, inf, inf, inf
    ttft, tpot = state.ttft, state.tpot
    return (True, state.stable, ttft.mean_seconds, ttft.p95_seconds, ttft.p99_seconds, tpot.mean_seconds,
            tpot.p95_seconds, tpot.p99_seconds)


def _kv_full_rate(rep: Replica, cap) -> float:
    """Request rate at which the KV cache in use, each sequence at its mean context ``I + O/2``, fills the
    pool (Little's law at that concurrency, random arrivals) [1/s]."""
    i, o = rep.input_tokens, rep.output_tokens
    per_token = float(cap.memory.kv_bytes_per_sequence) / float(
        np.ceil((i + o) / rep.engine.block_tokens) * rep.engine.block_tokens)
    groups = rep.groups
    full = groups * float(cap.memory.kv_pool_bytes) / (per_token * (i + 0.5 * o))
    st = steady_state(rep.costs, rep.rates, rep.calibration, concurrency=full, input_tokens=i, output_tokens=o,
                      max_num_tokens=rep.limits.max_num_tokens * groups, chunked_prefill=rep.engine.chunked_prefill,
                      shape=rep.shape, arrivals="poisson", launch=rep.launch, speculation=rep.speculation)
    return float(st.requests_per_s)


def _breakdown(costs, rates, calib, shape, batch, i, o, spec=None) -> dict:
    """A decode iteration at the batch, split by kind of work [s] (drafting counts as overhead)."""
    b = max(float(batch), 1.0)
    it = iteration_time(costs, rates, calib, decode_sequences=b, decode_context=i + 0.5 * o, prefill_tokens=0.0,
                        prefill_prompts=0.0, prompt_tokens=float(i), speculation=spec, **shape.kwargs())
    keys = ("linear_seconds", "experts_seconds", "head_seconds", "elementwise_seconds", "decode_attention_seconds",
            "prefill_attention_seconds", "communication_seconds", "overhead_seconds", "host_seconds")
    return {k: float(getattr(it, k)) for k in keys}
