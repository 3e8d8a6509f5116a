"""One training job's plan: GPUs, layout, memory, time, storage demand, checkpoints, host RAM.

Glue only: every formula is an engine call (aisize.compute, aisize.layout,
aisize.memory, aisize.step_time, aisize.storage, aisize.host).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache

from aisize import catalog
from aisize.architecture import attention_dim
from aisize.compute import chinchilla, energy_joules, gpu_hours, gpus_needed, training_flops, training_seconds
from aisize.host import host_for_server
from aisize.layout import search_layouts
from aisize.memory.training import fits, other_model_training_memory, transformer_memory_inputs, \
    transformer_training_memory
from aisize.plan import context as C
from aisize.precision import peak_flops_per_s, training_precision
from aisize.step_time import step_time
from aisize.storage import checkpoint as ck
from aisize.storage.demand import TRAINING_FLOPS_PER_FORWARD_FLOP, ResolvedThroughput, read_demand, \
    resolve_samples_per_s
from aisize.storage.io import io_profile_for_format
from aisize.units import DAY, HOUR, MINUTE
from aisize.validation.ranges import mfu_range, time_range

DEFAULT_SEQ_LEN = 4096  # assumption when a scenario gives none (capped at the model's context)
PASSES = 4  # GPUs <-> goodput fixed-point passes (converges in 2-3)


@dataclass(frozen=True)
class LayoutChoice:
    """The parallel layout a job runs with (searched or given)."""

    tensor_parallel: int
    pipeline_parallel: int
    data_parallel: int
    expert_parallel: int
    zero_stage: int
    micro_batch: int
    recompute: str
    global_batch: int
    searched: bool


@dataclass(frozen=True)
class CheckpointResult:
    """Checkpointing of one job (sizes [B], rates [B/s], times [s])."""

    checkpoint_bytes: float
    shard_bytes: float
    write_bytes_per_s: float  # achieved, N:N
    write_seconds: float
    interval_seconds: float
    mtbf_seconds: float
    restore_seconds: float  # RTO: read back + restart
    write_bytes_per_s_for_stall: float  # to keep writes under CHECKPOINT_MAX_STALL of the interval
    storage_bound: bool  # the storage, not the servers' NICs, limits the write


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
    mfu_assumed: float  # MFU the time rests on: the policy (LLMs) or what the throughput implies (others)
    mfu_predicted: float | None  # from aisize.step_time (full training only)
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
    throughput_basis: str  # what samples_per_s_per_gpu (or the MFU) rests on, in words
    throughput_source: str | None  # the measurement's source, where one is used
    days_low: float  # fastest plausible time (see _days_range) [days]
    days_high: float  # slowest plausible time [days]
    days_range_basis: str  # how days_low / days_high were obtained


def _checkpoint(params, gpus, servers, ctx: C.HardwareContext, policies) -> CheckpointResult:
    size = ck.checkpoint_size(params, bytes_per_param=policies.checkpoint_bytes_per_param, ranks=gpus)
    nic = ctx.server.storage_nics * ctx.storage_nic_link.bandwidth_per_direction_bytes_per_s
    supply_read, supply_write = C.storage_supply(ctx, servers)
    write = ck.checkpoint_write(size.total_bytes, nic, supply_write, writers=servers, pattern="N:N")
    mtbf = ck.cluster_mtbf(policies.node_mtbf_hours * HOUR, servers)
    if policies.checkpoint_interval_minutes == "auto":
        interval = float(ck.young_daly_interval(mtbf, write.seconds))
    else:
        interval = policies.checkpoint_interval_minutes * MINUTE
    interval = max(interval, float(write.seconds))  # cannot start the next before the last is written
    rto = ck.restore_seconds(size.total_bytes, min(servers * nic, supply_read),
                             restart_seconds=policies.restart_minutes * MINUTE)
    need = ck.write_bandwidth_for_stall(size.total_bytes, interval, C.CHECKPOINT_MAX_STALL)
    return CheckpointResult(size.total_bytes, size.shard_bytes, float(write.bytes_per_s), float(write.seconds),
                            interval, float(mtbf), float(rto), float(need), bool(write.storage_bound))


def _goodput(cp: CheckpointResult | None) -> float:
    if cp is None:
        return 1.0
    return float(ck.goodput(cp.mtbf_seconds, cp.interval_seconds, cp.write_seconds, cp.restore_seconds))


def _size(work, target_seconds, rate, ckpt_params, w, ctx, policies, mfu):
    """GPUs (whole servers) for a target time, iterating GPUs <-> goodput; or the given GPUs."""
    per = ctx.server.gpus
    if w.gpus is not None:
        gpus = w.gpus
    else:
        gp, gpus = 1.0, per
        for _ in range(PASSES):
            gpus = math.ceil(gpus_needed(work, target_seconds, rate, mfu=mfu, goodput=gp) / per) * per
            cp = _checkpoint(ckpt_params, gpus, math.ceil(gpus / per), ctx, policies) if w.checkpoint else None
            gp = max(_goodput(cp), 1e-3)
    servers = math.ceil(gpus / per)
    cp = _checkpoint(ckpt_params, gpus, servers, ctx, policies) if w.checkpoint else None
    return gpus, servers, cp


def _fixed_transformer_layout(arch, w, gpus, gb, dtype, opt, lora):
    lay = w.layout
    tp, pp, ep = lay.tensor_parallel, lay.pipeline_parallel, lay.expert_parallel
    if gpus % (tp * pp):
        raise ValueError(f"layout: tensor_parallel x pipeline_parallel = {tp * pp} is not allowed for "
                         f"workload {w.name!r}: it must divide gpus={gpus}")
    dp = gpus // (tp * pp)
    if gb % (lay.micro_batch * dp):
        raise ValueError(f"global_batch={gb} is not allowed for workload {w.name!r}: it must be a multiple "
                         f"of micro_batch x data_parallel = {lay.micro_batch * dp}")
    mem = transformer_training_memory(
        arch, seq_len=w.seq_len or min(arch.max_seq, DEFAULT_SEQ_LEN), micro_batch=lay.micro_batch, tp=tp,
        pp=pp, dp=dp, ep=ep, sequence_parallel=True, recompute=lay.recompute, zero_stage=lay.zero_stage,
        precision=dtype, optimizer=opt, num_microbatches=gb // (lay.micro_batch * dp), **lora)
    return LayoutChoice(tp, pp, dp, ep, lay.zero_stage, lay.micro_batch, lay.recompute, gb, False), mem


def _transformer_layout(arch, w, gpus, seq, gb, dtype, opt, ctx, policies, lora):
    """(LayoutChoice, memory dict, predicted mfu, predicted step seconds)."""
    pc = C.params_of(arch)
    up = ctx.scaleup_bytes_per_s or (ctx.pcie_link.bandwidth_per_direction_bytes_per_s if ctx.pcie_link else
                                     ctx.scaleout_bytes_per_s)
    if w.layout == "auto":
        df = search_layouts(arch, ctx.accelerator, gpus, global_batch=gb, seq_len=seq,
                            scaleout_bytes_per_s=ctx.scaleout_bytes_per_s, precision=dtype, optimizer=opt,
                            headroom=policies.memory_headroom, top=1, scaleup_bytes_per_s=up, **lora)
        if len(df):
            r = df.iloc[0]
            lay = LayoutChoice(int(r.tp), int(r.pp), int(r.dp), int(r.ep), int(r.zero_stage), int(r.micro_batch),
                               str(r.recompute), gb, True)
            mem = {k: float(r[k]) for k in ("weights_bytes", "gradients_bytes", "master_weights_bytes",
                                            "optimizer_moments_bytes", "activations_bytes",
                                            "temporary_buffers_bytes", "communication_buffers_bytes",
                                            "cuda_context_bytes", "fragmentation_bytes", "host_bytes",
                                            "total_bytes")}
            mfu = None if lora else float(r.mfu)
            return lay, mem, mfu, None if lora else float(r.step_seconds)
        # nothing fits: show the most memory-frugal layout inside one server, to say by how much
        tp = max(t for t in (1, 2, 4, 8, 16, 32, 64) if t <= min(ctx.server.gpus, gpus) and arch.heads % t == 0
                 and gpus % t == 0)
        w = w.model_copy(update={"layout": _frugal(tp)})
    lay, m = _fixed_transformer_layout(arch, w, gpus, gb, dtype, opt, lora)
    st = step_time(active_params=pc.active, total_params=pc.total, layers=arch.layers, hidden=arch.hidden,
                   attention_dim=attention_dim(arch),
                   seq_len=seq, global_batch=gb, micro_batch=lay.micro_batch,
                   peak_flops_per_s=peak_flops_per_s(ctx.accelerator, training_precision(dtype).compute_dtype),
                   scaleup_bytes_per_s=up, scaleout_bytes_per_s=ctx.scaleout_bytes_per_s,
                   scaleup_domain=ctx.accelerator.scaleup_domain, tp=lay.tensor_parallel,
                   pp=lay.pipeline_parallel, dp=lay.data_parallel, ep=lay.expert_parallel,
                   recompute=lay.recompute, sequence_parallel=True, zero_stage=lay.zero_stage)
    lora_run = bool(lora)
    return lay, m.as_dict(), None if lora_run else float(st.mfu), None if lora_run else float(st.step_seconds)


def _days_range(days: float, policy_mfu: float, gpus: int, tp: ResolvedThroughput | None):
    """(low, high, basis) around ``days``.

    Transformers (``tp`` None): time scales as policy MFU / m over the MFUs of
    published runs of a similar scale (aisize.validation.ranges). Measured or
    calibrated throughput: time scales as rate / r over the spread of the
    measurements (frameworks; multi-GPU rows for multi-GPU jobs), not by MFU.
    A given or policy-MFU throughput has no evidence of a spread: low = high.
    """
    if not math.isfinite(days):
        return days, days, "no range: the job does not finish"
    if tp is None:
        r = dataclasses.replace(mfu_range(gpus), expected=policy_mfu)
        low, _, high = time_range(days, r)
        return float(low), float(high), (f"MFU {r.low:.0%}-{r.high:.0%} of {len(r.cases)} published runs "
                                          f"({r.rule}) against the assumed {policy_mfu:.0%}")
    if tp.rule in ("measured", "calibrated"):
        rate = tp.samples_per_s_per_gpu
        return (days * rate / tp.high_samples_per_s_per_gpu, days * rate / tp.low_samples_per_s_per_gpu,
                f"spread of measured throughputs ({tp.low_samples_per_s_per_gpu:,.0f}-"
                f"{tp.high_samples_per_s_per_gpu:,.0f} samples/s per GPU across frameworks), not MFU-based")
    return days, days, ("no range: throughput given by the scenario" if tp.rule == "scenario" else
                        "no range: no measurement to spread the assumed MFU (published MFU ranges are of LLM runs)")


def _throughput(w, model, acc, precision, peak, per_server, policies) -> ResolvedThroughput:
    """The scenario's samples/s per GPU if given, else aisize.storage.demand.resolve_samples_per_s."""
    if w.samples_per_s_per_gpu:
        rate = float(w.samples_per_s_per_gpu)
        eff = rate * TRAINING_FLOPS_PER_FORWARD_FLOP * model.forward_per_sample_flops / peak
        return ResolvedThroughput(rate, rate, rate, eff, "scenario",
                                  f"given by the scenario: {rate:,.0f} samples/s per GPU", None)
    return resolve_samples_per_s(model, acc, precision=precision, gpus=w.gpus or per_server,
                                 efficiency=policies.mfu)


def _frugal(tp: int):
    from aisize.scenario import Layout

    return Layout(tensor_parallel=tp, zero_stage=3, micro_batch=1, recompute="full")


@lru_cache(maxsize=256)
def plan_training(w, ctx: C.HardwareContext, policies) -> TrainingPlan:
    """Plan one :class:`~aisize.scenario.Training` job on the resolved hardware under the policies."""
    acc, per = ctx.accelerator, ctx.server.gpus
    dtype = C.training_dtype(acc, w.precision)
    opt = C.SCENARIO_OPTIMIZERS[w.optimizer]
    peak = peak_flops_per_s(acc, training_precision(dtype).compute_dtype)
    target = w.target_days * DAY if w.target_days is not None else None
    if w.model in catalog.transformers:
        arch = catalog.transformers[w.model]
        pc = C.params_of(arch)
        seq = w.seq_len or min(arch.max_seq, DEFAULT_SEQ_LEN)
        tokens = w.tokens_billion * 1e9 if w.tokens_billion is not None else \
            catalog.datasets[w.dataset].tokens * 1e9 * w.epochs
        lora = {} if w.method == "full" else {"lora_rank": w.lora_rank, "qlora": w.method == "qlora"}
        method = "full" if w.method == "full" else "lora"
        flops = training_flops(pc.active, tokens, layers=arch.layers, attention_dim=attention_dim(arch), seq_len=seq,
                               method=method)
        trainable = pc.total
        if lora:
            share = transformer_memory_inputs(arch, lora_rank=w.lora_rank)["trainable_share"]
            trainable = share * pc.total / (1.0 - share)
        gpus, servers, cp = _size(flops, target, peak, trainable, w, ctx, policies, policies.mfu)
        gb = w.global_batch or gpus * math.ceil(max(1, round(C.TOKENS_PER_STEP / seq)) / gpus)
        lay, mem, mfu_pred, step_pred = _transformer_layout(arch, w, gpus, seq, gb, dtype, opt, ctx, policies, lora)
        gp = _goodput(cp)
        tp, mfu_used = None, policies.mfu
        running = float(training_seconds(flops, gpus, peak, mfu=policies.mfu, goodput=1.0))
        seconds = running / gp if gp else math.inf
        per_gpu_rate = tokens / running / gpus  # tokens/s per GPU while running
        sample_bytes = 2.0 if arch.vocab < 65_536 else 4.0  # DESIGN.md "Datasets"
        fmt, batch_bytes, samples = "tfrecord", lay.micro_batch * seq * sample_bytes, None
        note = chinchilla(pc.total, tokens).note if method == "full" and tokens >= C.PRETRAINING_TOKENS else ""
        params, kind, dataset_id = float(pc.total), "transformer", w.dataset
        dataset_bytes = tokens * sample_bytes
    else:
        model = catalog.other_models[w.model]
        data = catalog.datasets[w.dataset or model.dataset]
        epochs = w.epochs or 1.0
        samples = data.samples * epochs
        precision = dtype if dtype in ("fp32", "fp16", "bf16", "fp8") else "bf16"
        tp = _throughput(w, model, acc, precision, peak, per, policies)
        rate, mfu_used = tp.samples_per_s_per_gpu, tp.efficiency
        flops = TRAINING_FLOPS_PER_FORWARD_FLOP * model.forward_per_sample_flops * samples
        # time = samples / (GPUs x samples/s) / goodput: training_seconds with the per-GPU
        # rate in place of peak x MFU (mfu=1), so one formula serves both
        gpus, servers, cp = _size(samples, target, rate, model.params, w, ctx, policies, 1.0)
        gp = _goodput(cp)
        seconds = float(training_seconds(samples, gpus, rate, mfu=1.0, goodput=1.0)) / gp if gp else math.inf
        lay_in = w.layout if w.layout != "auto" else None
        mb = lay_in.micro_batch if lay_in else model.default_batch
        stage = lay_in.zero_stage if lay_in else 0
        m = other_model_training_memory(model, micro_batch=mb, precision=precision, optimizer=opt,
                                        zero_stage=stage, dp=gpus)
        mem = m.as_dict()
        lay = LayoutChoice(1, 1, gpus, 1, stage, mb, "none", mb * gpus, lay_in is None)
        mfu_pred = step_pred = None
        per_gpu_rate = rate
        sample_bytes = data.record_sample_bytes or data.sample_bytes
        fmt = "tfrecord" if data.record_sample_bytes else "files"
        batch_bytes, tokens, note = mb * model.input_sample_bytes, None, ""
        params = trainable = float(model.params)
        kind, dataset_bytes, dataset_id = "other", data.samples * sample_bytes, data.id
    fit = fits(mem["total_bytes"], ctx.gpu_memory_bytes, headroom=policies.memory_headroom)
    demand = read_demand(per_gpu_rate, sample_bytes, gpus=gpus, target_utilisation=policies.target_gpu_utilisation)
    io = io_profile_for_format(fmt, per_gpu_rate * gpus, sample_bytes, io_bytes=C.READ_IO_BYTES)
    host = host_for_server(ctx.server, acc, ratio=policies.host_ram_ratio, batch_bytes_per_gpu=batch_bytes,
                           checkpoint_shard_bytes=cp.shard_bytes if cp else 0.0,
                           offloaded_optimizer_bytes=mem.get("host_bytes", 0.0) * min(per, gpus))
    hm = host.memory
    days = seconds / DAY
    low, high, range_basis = _days_range(days, policies.mfu, int(gpus), tp)
    return TrainingPlan(
        w.name, w.team, w.model, kind, dataset_id, w.method, int(gpus), int(servers), params, float(trainable),
        tokens, samples,
        float(flops), float(peak), float(mfu_used), mfu_pred, step_pred,
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
        throughput_rule=tp.rule if tp else "policy-mfu",
        throughput_basis=tp.basis if tp else f"FLOPs at the assumed MFU {policies.mfu:.0%}",
        throughput_source=tp.source if tp else None,
        days_low=float(low), days_high=float(high), days_range_basis=range_basis)
