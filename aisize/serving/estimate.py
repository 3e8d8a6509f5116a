"""``aisize.serving.estimate``: one replica of a model on a GPU, at a request rate or flat out.

The one entry point the planner, app, report and validation use. It composes
the pieces of this package:

1. per-token costs of the model at its precisions (:mod:`.costs`);
2. the GPU's achieved rates for those precisions (:mod:`.hardware`, :mod:`.calibration`);
3. the engine's limits and the replica's KV pool (:mod:`.engine`, :mod:`.memory`);
4. the steady state at the largest admissible concurrency (:mod:`.throughput`) — the
   replica's capacity — and, at a given request rate, latencies under load (:mod:`.latency`).

For an MoE model the GPUs of a stage are mapped onto attention tensor/data
parallelism and expert parallelism (:mod:`.shapes`); unless told, the mapping with
the highest throughput is used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from aisize import checks, models
from aisize.serving.calibration import TRTLLM_1_0, Calibration
from aisize.serving.costs import model_costs
from aisize.serving.engine import ENGINES, TRTLLM_BENCH, Engine
from aisize.serving.hardware import device, scaleout_bytes_per_s
from aisize.serving.iteration import achieved_rates, iteration_time
from aisize.serving.latency import loaded_state
from aisize.serving.shapes import ReplicaShape, attention_dp_choices, check_shape
from aisize.serving.throughput import engine_limits, max_throughput

MAX_TOKENS = 10**8  # a longer request is a typo, not a workload


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
    weight_precision: str
    kv_precision: str
    gemm_dtype: str  # tensor-core dtype of the linear layers
    input_tokens: int
    output_tokens: int
    feasible: bool
    reason: str  # why not, when not feasible
    output_tokens_per_s: float  # at requests_per_s, or at capacity when it is None
    requests_per_s: float  # served rate
    max_requests_per_s: float  # capacity: the rate at the largest admissible concurrency
    max_output_tokens_per_s: float  # capacity in output tokens/s
    batch_size: float  # mean requests in flight
    max_concurrency: float  # requests in flight at capacity (batch limit, KV pool, token budget)
    max_batch_size: int  # engine's batch limit (per attention-DP group and stage)
    max_num_tokens: int  # engine's token budget per iteration
    limited_by: str  # what caps concurrency at capacity: batch size, KV cache or token budget
    utilisation: float  # requests_per_s / max_requests_per_s
    stable: bool
    ttft_s: float
    ttft_p95_s: float
    tpot_s: float
    tpot_p95_s: float
    queue_s: float  # mean wait for admission
    weights_per_gpu_bytes: float
    kv_pool_bytes: float  # per GPU
    kv_occupancy: float  # share of the KV pool the batch holds
    kv_bytes_per_token: float  # whole model, at the KV precision, while every layer's cache grows
    iteration_breakdown: dict  # a decode iteration at the batch, per kind of work [s]
    within_context: bool  # input + output fit the model's context window
    uncalibrated: bool  # the GPU's generation has no fitted efficiency
    notes: tuple = ()
    model_record: object = field(default=None, repr=False, compare=False)  # the Transformer used
    accelerator_record: object = field(default=None, repr=False, compare=False)  # the Accelerator used

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


def _scalar(name, check, value, **kw):
    """A checked single number (these entry points size one replica, not a sweep)."""
    return checks.scalar(name, check(name, value, **kw))


def estimate(model, accelerator, *, tensor_parallel, weight_precision="bf16", kv_precision="fp8",
             input_tokens, output_tokens, requests_per_s=None, pipeline_parallel=1, attention_dp=None,
             max_batch_size=None, max_num_tokens=None, length_cv=0.0, stage_link_bytes_per_s=None,
             engine: Engine | str = TRTLLM_BENCH, calibration: Calibration = TRTLLM_1_0) -> ServingEstimate:
    """Throughput, latencies and memory of one serving replica.

    Parameters
    ----------
    model : catalog id (e.g. ``"llama-3-70b"``) or a model from :func:`aisize.models.from_hf_config`
    accelerator : catalog accelerator id (e.g. ``"h100-sxm"``) or record
    tensor_parallel : GPUs per pipeline stage (the whole replica when ``pipeline_parallel`` is 1)
    weight_precision : linear-layer weight format (bf16, fp8, nvfp4, mxfp4, int8, int4-g128, ...)
    kv_precision : KV-cache format (fp8, bf16, fp16, fp32)
    input_tokens, output_tokens : mean prompt and output lengths [tokens]
    requests_per_s : arrival rate at this replica (Poisson); None: unbounded (max throughput)
    pipeline_parallel : stages; they may span servers (``stage_link_bytes_per_s``)
    attention_dp : attention data-parallel groups per stage (MoE); None picks the fastest
    max_batch_size, max_num_tokens : engine limits; None: the engine's own (or its heuristic)
    length_cv : coefficient of variation of the lengths, for the admission queue
    stage_link_bytes_per_s : link between pipeline stages per GPU per direction [B/s];
        None: NVLink when the replica fits one scale-up domain, else the GPU's scale-out NIC
    engine, calibration : scheduler settings (an :class:`Engine` or an ``ENGINES`` key) and fitted
        constants (default TensorRT-LLM 1.0)

    Returns
    -------
    :class:`ServingEstimate`. A model that does not fit gives ``feasible=False`` and the
    reason; a rate at or beyond capacity gives ``stable=False`` and infinite latencies.

    References
    ----------
    See the modules of :mod:`aisize.serving`; DESIGN.md section 2, "Serving (one replica)".
    """
    m = models.resolve(model)
    if isinstance(engine, str):
        engine = ENGINES[checks.choice("engine", engine, ENGINES)]
    i = int(_scalar("input_tokens", checks.integer, input_tokens, high=MAX_TOKENS))
    o = int(_scalar("output_tokens", checks.integer, output_tokens, high=MAX_TOKENS))
    tp = int(_scalar("tensor_parallel", checks.integer, tensor_parallel, high=4096))
    pp = int(_scalar("pipeline_parallel", checks.integer, pipeline_parallel, high=1024))
    if requests_per_s is not None:
        requests_per_s = _scalar("requests_per_s", checks.positive, requests_per_s, high=1e9)
    cv = _scalar("length_cv", checks.non_negative, length_cv, high=100.0)
    dev = device(accelerator, weight_precision, kv_precision)
    costs = model_costs(m, weight_precision, kv_precision)
    rates = achieved_rates(dev, calibration)
    link = stage_link_bytes_per_s
    if link is None and pp > 1 and tp * pp > dev.scaleup_domain:
        link = scaleout_bytes_per_s(dev.id)
    choices = [attention_dp] if attention_dp is not None else attention_dp_choices(m, tp)
    best = None
    for dp in choices:
        check_shape(m, tensor_parallel=tp, attention_dp=dp, pipeline_parallel=pp)
        shape = ReplicaShape(tp, dp, pp, link)
        limits = engine_limits(costs, dev, engine, weight_precision, input_tokens=i, output_tokens=o, shape=shape,
                               max_batch_size=max_batch_size, max_num_tokens=max_num_tokens)
        cap = max_throughput(costs, dev, rates, calibration, engine, limits, input_tokens=i, output_tokens=o,
                             shape=shape)
        score = float(cap.state.output_tokens_per_s) if bool(cap.memory.fits) else -1.0
        if best is None or score > best[0]:
            best = (score, shape, limits, cap)
    _, shape, limits, cap = best
    return _result(m, accelerator, dev, costs, rates, calibration, engine, (weight_precision, kv_precision), shape, limits, cap,
                   i, o, requests_per_s, cv)


def _result(m, acc, dev, costs, rates, calib, engine, precisions, shape, limits, cap, i, o, rate,
            cv) -> ServingEstimate:
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
        f"{m.id} at {dev.gemm_dtype} weights needs {float(cap.memory.weights_bytes) / 1e9:,.1f} GB of weights and "
        f"{float(cap.memory.runtime_bytes) / 1e9:,.1f} GB of runtime per GPU, leaving no KV room for one "
        f"{i + o:,}-token request in {dev.memory_bytes / 1e9:,.1f} GB: use more GPUs or a smaller precision")
    st = cap.state
    capacity_rps = float(st.requests_per_s) if fits else 0.0
    slots = float(st.concurrency)
    dp = shape.attention_dp * shape.pipeline_parallel
    if rate is None or not fits:
        batch, served, out = slots, capacity_rps, (float(st.output_tokens_per_s) if fits else 0.0)
        t_dec, t_mix = float(st.decode_iteration_seconds), float(st.prefill_iteration_seconds)
        mean_t = float(st.iteration_seconds)
        ttft = ttft95 = mean_t + t_mix  # from admission: wait for the next cohort, then its iteration
        tpot, tpot95 = mean_t, max(t_dec, mean_t) if o > 1 else 0.0
        util, stable, queue = (1.0 if fits else float("inf")), fits, 0.0
        if not fits:
            ttft = ttft95 = tpot = tpot95 = float("inf")
    else:
        ls = loaded_state(costs, rates, calib, requests_per_s=rate, capacity_requests_per_s=capacity_rps,
                          slots=slots, input_tokens=i, output_tokens=o, max_num_tokens=limits.max_num_tokens * dp,
                          chunked_prefill=engine.chunked_prefill, shape=shape, length_cv=cv)
        stable = bool(ls.stable)
        batch = float(ls.concurrency)
        served = float(rate) if stable else capacity_rps
        out = served * o
        ttft, ttft95 = float(ls.ttft_seconds), float(ls.ttft_p95_seconds)
        tpot, tpot95 = float(ls.tpot_seconds), float(ls.tpot_p95_seconds)
        util, queue = float(ls.utilisation), float(ls.queue_seconds)
        if not stable:
            notes.append(f"requests_per_s={rate:g} is at or beyond this replica's capacity of "
                         f"{capacity_rps:.3g} requests/s: the queue grows without bound")
    occupancy = 0.0
    if fits and np.isfinite(batch):
        occupancy = min(batch / max(float(cap.memory.sequences), 1.0), 1.0)
    breakdown = _breakdown(costs, rates, calib, shape, batch if np.isfinite(batch) else slots, i, o)
    return ServingEstimate(
        model=m.id, accelerator=dev.id, engine=engine.key, gpus=shape.gpus, tensor_parallel=shape.tensor_parallel,
        pipeline_parallel=shape.pipeline_parallel, attention_dp=shape.attention_dp,
        expert_parallel=shape.tensor_parallel if costs.moe_layers else 1, weight_precision=precisions[0],
        kv_precision=precisions[1], gemm_dtype=dev.gemm_dtype, input_tokens=i, output_tokens=o, feasible=fits, reason=reason,
        output_tokens_per_s=out, requests_per_s=served, max_requests_per_s=capacity_rps,
        max_output_tokens_per_s=capacity_rps * o, batch_size=batch, max_concurrency=slots, max_batch_size=int(limits.max_batch_size),
        max_num_tokens=int(limits.max_num_tokens), limited_by=cap.limited_by, utilisation=util, stable=stable,
        ttft_s=ttft, ttft_p95_s=ttft95, tpot_s=tpot, tpot_p95_s=tpot95, queue_s=queue,
        weights_per_gpu_bytes=float(cap.memory.weights_bytes), kv_pool_bytes=float(cap.memory.kv_pool_bytes),
        kv_occupancy=occupancy, kv_bytes_per_token=float(costs.kv_bytes_per_token_full + costs.kv_bytes_per_token_window),
        iteration_breakdown=breakdown, within_context=within, uncalibrated=rates.uncalibrated, notes=tuple(notes),
        model_record=m, accelerator_record=acc)


def _breakdown(costs, rates, calib, shape, batch, i, o) -> dict:
    """A decode iteration at the batch, split by kind of work [s]."""
    b = max(float(batch), 1.0)
    it = iteration_time(costs, rates, calib, decode_sequences=b, decode_context=i + 0.5 * o, prefill_tokens=0.0,
                        prefill_prompts=0.0, prompt_tokens=float(i), **shape.kwargs())
    keys = ("linear_seconds", "experts_seconds", "head_seconds", "elementwise_seconds", "decode_attention_seconds",
            "prefill_attention_seconds", "communication_seconds", "overhead_seconds", "host_seconds")
    return {k: float(getattr(it, k)) for k in keys}


def decode_step(model, accelerator, *, batch, context_tokens, tensor_parallel=1, weight_precision="bf16",
                kv_precision="fp8", calibration: Calibration = TRTLLM_1_0) -> dict:
    """One decode iteration of a static batch (no prefill in flight), by kind of work [s].

    What a static-batch benchmark measures between tokens: ``batch`` sequences at a
    mean context of ``context_tokens``, on ``tensor_parallel`` GPUs. The dict's
    ``seconds`` is the iteration; the other keys are its parts.
    """
    m = models.resolve(model)
    b = _scalar("batch", checks.positive, batch, high=1e7)
    ctx = _scalar("context_tokens", checks.non_negative, context_tokens, high=MAX_TOKENS)
    tp = int(_scalar("tensor_parallel", checks.integer, tensor_parallel, high=4096))
    check_shape(m, tensor_parallel=tp, attention_dp=1, pipeline_parallel=1)
    dev = device(accelerator, weight_precision, kv_precision)
    costs = model_costs(m, weight_precision, kv_precision)
    rates = achieved_rates(dev, calibration)
    it = iteration_time(costs, rates, calibration, decode_sequences=b, decode_context=ctx, prefill_tokens=0.0,
                        prefill_prompts=0.0, prompt_tokens=ctx, gpus=tp)
    parts = _breakdown(costs, rates, calibration, ReplicaShape(tp), b, ctx, 0)
    return {"seconds": float(it.seconds), "uncalibrated": rates.uncalibrated, **parts}
