"""One training job's plan: GPUs, layout, memory, time, storage demand, checkpoints, host RAM.

Glue only: every formula is an engine call (aisize.compute, aisize.training,
aisize.storage, aisize.host); reading the
scenario entry and sizing the job live in :mod:`aisize.plan.job`, shared with
``layout_candidates`` and ``gpus_vs_days``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from aisize import models
from aisize.compute import chinchilla, energy_joules, gpu_hours
from aisize.host import host_for_server
from aisize.plan import context as C
from aisize.plan import job as J
from aisize.plan.job import DEFAULT_SEQ_LEN, CheckpointResult  # noqa: F401  (part of this module's API)
from aisize.storage.demand import read_demand
from aisize.precision import peak_flops_per_s
from aisize.training import (PARTS, ResolvedThroughput, TrainingEstimate, TrainingLayout, chosen_layout, fits,
                             other_model_training_memory, recipe)
from aisize.training.parallel import ModelSizes
from aisize.storage.io import io_profile_for_format
from aisize.units import DAY
from aisize.validation.ranges import MfuRange, step_time_range, time_range


@dataclass(frozen=True)
class ThroughputBasis:
    """What a job's rate (``samples_per_s_per_gpu``, or its MFU) rests on, as a rule and the figures it states
    (the words: :func:`aisize.present.training_text.throughput_basis_text`)."""

    rule: str  # scenario | measured | calibrated (aisize.storage.demand) | step-time | policy-mfu
    mfu: float | None = None  # step-time: the model's MFU at the chosen layout; policy-mfu: policies.mfu
    qlora: bool = False  # policy-mfu: the step-time model does not predict QLoRA (its 4-bit base dequantization)
    given: str | None = None  # measured | calibrated: the resolved throughput's own basis and source
    samples_per_s_per_gpu: float | None = None  # scenario: the rate the scenario gives [samples/s per GPU]


def _throughput_basis(tp, step_pred, mfu_used: float, policy_mfu: float, qlora: bool) -> ThroughputBasis:
    """The basis of a job's rate: the resolved throughput's (a scenario's rate is kept as a number), else the
    step-time model's MFU at the chosen layout, else the MFU policy."""
    if tp is not None:
        if tp.rule == "scenario":
            return ThroughputBasis("scenario", samples_per_s_per_gpu=float(tp.samples_per_s_per_gpu))
        return ThroughputBasis(tp.rule, given=tp.basis)
    if step_pred is not None:
        return ThroughputBasis("step-time", mfu=float(mfu_used))
    return ThroughputBasis("policy-mfu", mfu=float(policy_mfu), qlora=bool(qlora))


@dataclass(frozen=True)
class DaysRangeBasis:
    """How ``days_low`` / ``days_high`` were obtained (the words: :func:`aisize.present.training_text.days_range_text`).

    ``kind``: unfinished (the job never ends: no range), step-time (the step-time model's own error on published
    runs, ``STEP_TIME_SPREAD``), mfu (published MFUs of runs of a similar scale, ``mfu_range``, against the plan's
    MFU, its ``expected``), measured-spread (measured or calibrated rates, slowest to fastest [samples/s per GPU]),
    given (the scenario gives the throughput: no range), no-spread (an assumed MFU with no measurement to spread)."""

    kind: str
    mfu_range: MfuRange | None = None
    low_samples_per_s_per_gpu: float | None = None
    high_samples_per_s_per_gpu: float | None = None


@dataclass(frozen=True)
class LayoutChoice:
    """The parallel layout a job runs with (searched or given), as the surfaces read it.

    A transformer's is a view of the plan's one :class:`~aisize.training.TrainingLayout` (``value``, the layout
    the plan's step time and memory were estimated at): :meth:`of` reads every field off it, so the layout
    shown is the layout estimated. ``micro_batch`` is the pipeline micro-batch (sequences per forward and
    backward of one stage, Megatron-LM's micro-batch size), as the search ranks it; a data-parallel rank runs
    ``global_batch`` / (``micro_batch`` x DP) of them per step (docs/training-layout.md). Other models (data
    parallel only) have no TrainingLayout (``value`` None).
    """

    tensor_parallel: int
    pipeline_parallel: int
    data_parallel: int
    expert_parallel: int
    zero_stage: int
    micro_batch: int
    recompute: str
    global_batch: int
    searched: bool
    context_parallel: int = 1
    schedule: str = "1f1b"
    virtual_stages: int = 1
    value: TrainingLayout | None = field(default=None, compare=False, repr=False, metadata={"export": False})

    @classmethod
    def of(cls, layout: TrainingLayout, searched: bool) -> "LayoutChoice":
        """The view of one TrainingLayout (TP x PP x CP x DP = its GPUs)."""
        return cls(layout.tp, layout.pp, layout.dp, layout.ep, layout.zero_stage, layout.pipeline_micro_batch,
                   layout.recompute, layout.global_batch, searched, layout.cp, layout.schedule, layout.vp,
                   value=layout)


@dataclass(frozen=True)
class TrainingPlan:
    """A training job's plan. Per-GPU memory in ``memory_bytes``; host RAM per server in ``host_bytes``."""

    name: str
    team: str
    model: str
    model_kind: str  # transformer | other
    dataset: str | None  # catalog id of the dataset read (None: tokens of an unnamed corpus)
    method: str
    gpus: int
    servers: int
    params: float
    trainable_params: float
    tokens: float | None
    samples: float | None
    model_flops: float
    peak_flops_per_s: float
    mfu_assumed: float  # MFU the time rests on: the step-time model's (a transformer's full training), the
    # policy's (adapters), or what the throughput implies (other models)
    mfu_predicted: float | None  # from aisize.training's step time, against peak_flops_per_s (full training only)
    step_seconds_predicted: float | None
    goodput: float
    training_seconds: float
    training_days: float
    target_days: float | None
    gpu_hours: float
    energy_joules: float
    layout: LayoutChoice
    memory_bytes: dict
    gpu_memory_bytes: float
    gpu_memory_usable_bytes: float
    memory_fits: bool
    chinchilla_note: str
    samples_per_s_per_gpu: float  # tokens/s per GPU for transformers
    sample_bytes: float  # bytes read per sample (per token)
    ideal_read_bytes_per_s: float  # all GPUs at 100 % utilisation
    read_bytes_per_s: float  # at the target utilisation
    read_iops: float
    metadata_ops_per_s: float
    read_io_bytes: float
    dataset_bytes: float
    checkpoint: CheckpointResult | None
    host_bytes: dict
    host_memory_needed_bytes: float
    server_host_memory_bytes: float
    host_memory_fits: bool
    throughput_rule: str  # scenario | measured | calibrated | policy-mfu (aisize.storage.demand)
    throughput_basis: ThroughputBasis  # what samples_per_s_per_gpu (or the MFU) rests on
    throughput_source: str | None  # the measurement's source, where one is used
    days_low: float  # fastest plausible time (see days_range) [days]
    days_high: float  # slowest plausible time [days]
    days_range_basis: DaysRangeBasis  # how days_low / days_high were obtained
    days_range_mfu: MfuRange | None  # the published MFUs behind an MFU-based range (expected: the assumed MFU)
    seq_len: int | None  # tokens per sequence the job trains at (transformers; None for other models)
    step_parts_seconds: dict | None = None  # predicted step time by part (aisize.training.step_time.PARTS)
    training_days_predicted: float | None = None  # at the predicted step time on the plan's GPUs, after goodput
    # the one aisize.training.estimate of a transformer's layout (layout.value): its step time, MFU, parts and
    # memory are the plan's (None for other models); not exported (the figures above are)
    estimate: TrainingEstimate | None = field(default=None, compare=False, repr=False, metadata={"export": False})


def _predicts(job: J.JobInputs) -> bool:
    """Whether the step-time model predicts the job's time: full training and LoRA (no weight gradients for the
    frozen base; validated on MLPerf Training's Llama 2 70B LoRA runs, tests/test_training_mlperf.py), not QLoRA
    (it does not time dequantizing the 4-bit base)."""
    return not job.qlora


def _fixed_transformer_layout(job: J.JobInputs, w, gpus, gb, ctx):
    """(LayoutChoice, aisize.training.estimate) of the scenario's own layout (:func:`aisize.plan.job.fixed_layout`)."""
    lay = w.layout
    tp, pp, cp = lay.tensor_parallel, lay.pipeline_parallel, lay.context_parallel
    divides, batch_ok = J.fixed_layout_divides(lay, gpus, gb)
    if not divides:
        raise ValueError(f"layout: tensor_parallel x pipeline_parallel x context_parallel = {tp * pp * cp} is not "
                         f"allowed for workload {w.name!r}: it must divide gpus={gpus}")
    dp = gpus // (tp * pp * cp)
    if not batch_ok:
        raise ValueError(f"global_batch={gb} is not allowed for workload {w.name!r}: it must be a multiple "
                         f"of micro_batch x data_parallel = {lay.micro_batch * dp}")
    try:
        value = J.fixed_layout(job, lay, gpus, gb)
        est = J.estimate(job, ctx, value)
    except ValueError as exc:
        raise ValueError(f"layout of workload {w.name!r}: {exc}") from None
    return LayoutChoice.of(value, False), est


def _transformer_layout(job: J.JobInputs, w, gpus, gb, ctx, policies):
    """(LayoutChoice, TrainingEstimate): the search's fastest fitting layout (``auto``,
    :func:`aisize.training.chosen_layout`) or the given one, estimated once at that TrainingLayout."""
    if w.layout == "auto":
        df = J.search(job, ctx, policies, gpus, gb, top=1)
        if len(df):
            value = chosen_layout(df, 0)
            return LayoutChoice.of(value, True), J.estimate(job, ctx, value)
        # nothing fits: show the most memory-frugal layout inside one server, to say by how much
        units = ModelSizes.of(job.model).tensor_parallel_units  # a hybrid's Mamba-2 heads and groups too
        tp = max(t for t in (1, 2, 4, 8, 16, 32, 64) if t <= min(ctx.server.gpus, gpus) and units % t == 0
                 and gpus % t == 0)
        w = w.model_copy(update={"layout": _frugal(tp)})
    return _fixed_transformer_layout(job, w, gpus, gb, ctx)


STEP_TIME_PASSES = 4  # GPUs <-> predicted MFU steps toward a target (the count settles in 1-2)
DOWNWARD_CANDIDATES = 5  # rounder counts tried below the first that meets (the time is not monotone in GPUs)


@dataclass(frozen=True)
class _Timed:
    sizing: J.Sizing
    layout: LayoutChoice
    estimate: TrainingEstimate
    mfu: float  # predicted, against the plan's peak


def _timed_at(job: J.JobInputs, w, ctx, policies, gpus: int) -> _Timed | None:
    """The job on exactly ``gpus`` GPUs, its time the step-time model's (None where it predicts nothing)."""
    fixed = w.model_copy(update={"gpus": gpus})
    sz = J.size(job, fixed, ctx, policies)  # servers, checkpoints and goodput at this count
    lay, est = _transformer_layout(job, fixed, gpus, J.global_batch(w, job.seq_len, gpus), ctx, policies)
    step_pred = float(est.step_seconds)
    if not _predicts(job) or not math.isfinite(step_pred) or step_pred <= 0:
        return None
    mfu_pred = float(est.mfu) * peak_flops_per_s(ctx.accelerator, recipe(job.dtype, ctx.accelerator).high_dtype) \
        / job.peak_flops_per_s  # the engine measures MFU against the 16-bit peak; the plan against its own
    running = job.tokens / (lay.global_batch * job.seq_len) * step_pred
    # the checkpoint interval is capped at half this running time (not the MFU policy's): the plan's one interval
    cp = J.checkpoints(job.checkpoint_params, gpus, sz.servers, ctx, policies, running) if w.checkpoint else None
    goodput = float(J.goodput(cp))
    seconds = running / goodput if goodput > 0 else math.inf
    sz = dataclasses.replace(sz, checkpoint=cp, goodput=np.asarray(goodput), running_seconds=np.asarray(running),
                             seconds=np.asarray(seconds))
    return _Timed(sz, lay, est, float(mfu_pred))


def _rounder_counts(gpus: int, per: int) -> list[int]:
    """Counts below ``gpus`` that are multiples of ever more servers (1,136, 1,120, 1,088, 1,024 below 1,152 on
    8-GPU servers), largest first: a batch splits over them as people deploy, where the count just below a
    good one often splits badly (2,048 sequences over 1,136 GPUs take 330 days against 189 on 1,024)."""
    out = sorted({(gpus - 1) // (per * 2 ** k) * (per * 2 ** k) for k in range(1, 12)} - {0}, reverse=True)
    return out[:DOWNWARD_CANDIDATES]


def _sized_by_step_time(job: J.JobInputs, w, ctx, policies, sz: J.Sizing):
    """(Sizing, LayoutChoice, TrainingEstimate, predicted MFU) of a transformer job timed by the
    step-time model at the layout it chooses (aisize.training.estimate, validated on published runs); None where
    the model predicts nothing (QLoRA, no layout), and the MFU policy's sizing ``sz`` stands.

    GPUs given: the time at that count. A target time: the fewest GPUs found to meet it. The time is not monotone
    in the GPU count (2,048 sequences over 1,152 GPUs split worse than over 1,024), so the search steps from the
    MFU policy's count along the predicted MFU, up a splittable count at a time when no count met the target yet,
    then tries :data:`DOWNWARD_CANDIDATES` rounder counts below the best (:func:`_rounder_counts`).
    """
    timed: dict[int, _Timed | None] = {}

    def at(g: int) -> _Timed | None:
        if g not in timed:
            try:
                timed[g] = _timed_at(job, w, ctx, policies, g)
            except ValueError:  # a count searched around the first: no layout there (a given one does not divide)
                timed[g] = None
        return timed[g]

    g = int(sz.gpus)
    timed[g] = _timed_at(job, w, ctx, policies, g)  # the policy's count: its errors are the plan's
    if timed[g] is None:
        return None
    if w.gpus is None:
        target = w.target_days * DAY * (1 + 1e-9)
        per = ctx.server.gpus
        for _ in range(STEP_TIME_PASSES):
            t = at(g)
            implied = job.flops / (float(t.sizing.running_seconds) * g * job.peak_flops_per_s)
            nxt = int(J.size(dataclasses.replace(job, mfu=min(float(implied), 1.0)), w, ctx, policies).gpus)
            if nxt in timed:
                break
            g = nxt
        met = sorted(k for k, t in timed.items() if t is not None and float(t.sizing.seconds) <= target)
        if not met:  # up a splittable count at a time
            g = max(k for k, t in timed.items() if t is not None)
            for _ in range(STEP_TIME_PASSES):
                g = int(J._next_splittable(job, w, ctx, np.array([float(g + per)]), per, J.MAX_GPUS)[0])
                t = at(g)
                if t is not None and float(t.sizing.seconds) <= target:
                    met = [g]
                    break
        best = met[0] if met else min((k for k, t in timed.items() if t is not None),
                                      key=lambda k: float(timed[k].sizing.seconds))
        for lower in _rounder_counts(best, per):
            t = at(lower)
            if t is not None and float(t.sizing.seconds) <= target:
                best = lower
        g = best
    t = at(g)
    return t.sizing, t.layout, t.estimate, t.mfu


def days_range(days: float, policy_mfu: float, gpus: int, tp: ResolvedThroughput | None, *,
               step_time: bool = False):
    """(low, high, :class:`DaysRangeBasis`, MfuRange or None) around ``days``.

    ``step_time``: the step-time model sets ``days``; the range is its own error on published runs
    (:func:`aisize.validation.ranges.step_time_range`), not the spread of other runs' MFUs.
    Transformers (``tp`` None): ``policy_mfu`` is the MFU ``days`` rests on (the step-time model's, or the
    policy's where it predicts nothing); time scales as that MFU / m over the MFUs of
    published runs of a similar scale (aisize.validation.ranges). Measured or
    calibrated throughput: time scales as rate / r over the spread of the
    measurements (frameworks; multi-GPU rows for multi-GPU jobs), not by MFU.
    A given or policy-MFU throughput has no evidence of a spread: low = high.

    References
    ----------
    .. [1] :func:`aisize.validation.ranges.time_range` (time inversely proportional to MFU).
    """
    if not math.isfinite(days):
        return days, days, DaysRangeBasis("unfinished"), None
    if tp is None and step_time:
        low, high = step_time_range(days)
        return float(low), float(high), DaysRangeBasis("step-time"), None
    if tp is None:
        r = dataclasses.replace(C.mfu_range_for(gpus), expected=policy_mfu)
        low, _, high = time_range(days, r)
        return float(low), float(high), DaysRangeBasis("mfu", mfu_range=r), r
    if tp.rule in ("measured", "calibrated"):
        rate = tp.samples_per_s_per_gpu
        return (days * rate / tp.high_samples_per_s_per_gpu, days * rate / tp.low_samples_per_s_per_gpu,
                DaysRangeBasis("measured-spread", low_samples_per_s_per_gpu=tp.low_samples_per_s_per_gpu,
                               high_samples_per_s_per_gpu=tp.high_samples_per_s_per_gpu), None)
    return days, days, DaysRangeBasis("given" if tp.rule == "scenario" else "no-spread"), None


def _model_name(model) -> str:
    """A workload's model as a name: its catalog id, else the id of the record it builds (never a config dict)."""
    return model if isinstance(model, str) else models.resolve(model).id


def _frugal(tp: int):
    from aisize.scenario import Layout

    return Layout(tensor_parallel=tp, zero_stage=3, micro_batch=1, recompute="full")


def _scalar_checkpoint(cp: CheckpointResult | None) -> CheckpointResult | None:
    if cp is None:
        return None
    values = [float(getattr(cp, f.name)) for f in dataclasses.fields(cp)]
    return CheckpointResult(*values[:-1], bool(cp.storage_bound))


@lru_cache(maxsize=256)
def plan_training(w, ctx: C.HardwareContext, policies) -> TrainingPlan:
    """Plan one :class:`~aisize.scenario.Training` job on the resolved hardware under the policies."""
    acc, per = ctx.accelerator, ctx.server.gpus
    job = J.job_inputs(w, ctx, policies)
    sz = J.size(job, w, ctx, policies)
    gpus, servers, cp = int(sz.gpus), int(sz.servers), _scalar_checkpoint(sz.checkpoint)
    gp, seconds = float(sz.goodput), float(sz.seconds)
    if job.kind == "transformer":
        arch, seq, tokens = job.model, job.seq_len, job.tokens
        # the step-time model times full training unless the scenario overrides it with the MFU policy
        timed = _sized_by_step_time(job, w, ctx, policies, sz) if policies.training_time == "step-time" else None
        if timed is not None:  # the step-time model sets the GPUs (for a target) and the time
            sz, lay, est, mfu_pred = timed
            step_pred, parts = float(est.step_seconds), {k: float(getattr(est.step, k)) for k in PARTS}
            gpus, servers, cp = int(sz.gpus), int(sz.servers), _scalar_checkpoint(sz.checkpoint)
            gp, seconds = float(sz.goodput), float(sz.seconds)
            mfu_used = job.flops / (float(sz.running_seconds) * gpus * job.peak_flops_per_s)
        else:  # QLoRA, the MFU override, or no layout: the MFU policy
            lay, est = _transformer_layout(job, w, gpus, J.global_batch(w, seq, gpus), ctx, policies)
            mfu_pred = step_pred = parts = None
            mfu_used = policies.mfu
        mem = est.memory.as_dict()
        tp = None
        per_gpu_rate = tokens / float(sz.running_seconds) / gpus  # tokens/s per GPU while running
        sample_bytes = 2.0 if arch.vocab < 65_536 else 4.0  # docs/DESIGN.md "Datasets"
        fmt, batch_bytes, samples = "tfrecord", lay.micro_batch * seq * sample_bytes, None
        params, kind, dataset_id = float(C.params_of(arch).total), "transformer", w.dataset
        note = chinchilla(params, tokens).note if job.method == "full" and tokens >= C.PRETRAINING_TOKENS else ""
        dataset_bytes = tokens * sample_bytes
    else:
        model, data, tp = job.model, job.dataset, job.throughput
        rate, mfu_used = tp.samples_per_s_per_gpu, tp.efficiency
        lay_in = w.layout if w.layout != "auto" else None
        mb = lay_in.micro_batch if lay_in else model.default_batch
        stage = lay_in.zero_stage if lay_in else 0
        m = other_model_training_memory(model, micro_batch=mb, precision=job.memory_precision,
                                        optimizer=job.optimizer, zero_stage=stage, dp=gpus)
        mem = m.as_dict()
        lay = LayoutChoice(1, 1, gpus, 1, stage, mb, "none", mb * gpus, lay_in is None)
        mfu_pred = step_pred = parts = est = None
        per_gpu_rate = rate
        sample_bytes = data.record_sample_bytes or data.sample_bytes
        fmt = "tfrecord" if data.record_sample_bytes else "files"
        batch_bytes, tokens, samples, note = mb * model.input_sample_bytes, None, job.samples, ""
        params = float(model.params)
        kind, dataset_bytes, dataset_id = "other", data.samples * sample_bytes, data.id
    fit = fits(mem["total_bytes"], ctx.gpu_memory_bytes, headroom=policies.memory_headroom)
    demand = read_demand(per_gpu_rate, sample_bytes, gpus=gpus, target_utilisation=policies.target_gpu_utilisation)
    io = io_profile_for_format(fmt, per_gpu_rate * gpus, sample_bytes, io_bytes=C.READ_IO_BYTES)
    host = host_for_server(ctx.server, acc, ratio=policies.host_ram_ratio, batch_bytes_per_gpu=batch_bytes,
                           checkpoint_shard_bytes=cp.shard_bytes if cp else 0.0,
                           offloaded_optimizer_bytes=mem.get("host_bytes", 0.0) * min(per, gpus))
    hm = host.memory
    days = seconds / DAY
    low, high, range_basis, range_mfu = days_range(days, mfu_used if tp is None else policies.mfu, gpus, tp,
                                                   step_time=tp is None and step_pred is not None)
    predicted_days = days if step_pred is not None and gp else None  # the headline itself, when the model sets it
    return TrainingPlan(
        w.name, w.team, _model_name(w.model), kind, dataset_id, w.method, gpus, servers, params, job.checkpoint_params,
        tokens, samples,
        job.flops, float(job.peak_flops_per_s), float(mfu_used), mfu_pred, step_pred,
        gp, seconds, days, w.target_days,
        float(gpu_hours(gpus, seconds)) if gp else math.inf,
        float(energy_joules(gpus, seconds, acc.tdp_watts)) if gp else math.inf, lay, mem, float(ctx.gpu_memory_bytes),
        float(fit.usable_bytes), bool(fit.fits), note, float(per_gpu_rate), float(sample_bytes),
        float(demand.ideal_per_gpu_bytes_per_s * gpus), float(demand.cluster_bytes_per_s),
        float(io.read_iops * policies.target_gpu_utilisation),
        float(io.metadata_ops_per_s * policies.target_gpu_utilisation),
        float(io.mean_io_bytes),
        float(dataset_bytes), cp,
        {k: float(v) for k, v in vars(hm).items()}, float(hm.total_bytes), float(ctx.server.host_memory_bytes),
        bool(host.memory_fits),
        throughput_rule=tp.rule if tp else "step-time" if step_pred is not None else "policy-mfu",
        throughput_basis=_throughput_basis(tp, step_pred, mfu_used, policies.mfu, job.qlora),
        throughput_source=tp.source if tp else None,
        days_low=float(low), days_high=float(high), days_range_basis=range_basis, days_range_mfu=range_mfu,
        seq_len=job.seq_len, step_parts_seconds=parts, training_days_predicted=predicted_days, estimate=est)
