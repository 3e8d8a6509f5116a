"""One training job as the planner reads it: the scenario -> engine glue, in one place.

:func:`job_inputs` resolves a scenario's training entry once (training
precision, optimizer, sequence length, LoRA, the work and the rate it runs at);
:func:`search` runs the layout search with the planner's links; :func:`size`
sizes the job for target times (vectorized, the GPUs <-> goodput fixed point)
with its checkpoints. ``plan_training``, ``layout_candidates`` and
``gpus_vs_days`` all go through these, so they cannot drift apart.
"""

from __future__ import annotations

import contextvars
import dataclasses
import math
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from aisize import catalog, models
from aisize.compute import gpus_needed, training_flops, training_seconds
from aisize.fleet.failures import failure_rates
from aisize.plan import context as C
from aisize.precision import peak_flops_per_s
from aisize.storage import checkpoint as ck
from aisize.training import (TRAINING_FLOPS_PER_FORWARD_FLOP, ResolvedThroughput, TrainingLayout, recipe,
                             resolve_samples_per_s, search_layouts, transformer_memory_inputs)
from aisize.training import estimate as training_estimate
from aisize.training.layout import SearchSpace, grid_of
from aisize.training.parallel import Degrees, ModelSizes, data_parallel, holds
from aisize.training.schedules import SCHEDULE_CODES
from aisize.units import DAY, HOUR, MINUTE

DEFAULT_SEQ_LEN = 4096  # assumption when a scenario gives none (capped at the model's context)
# The training stack the planner assumes: the ZeRO paper's state profile (stages 0-3, as a
# scenario's layout names them) with fused kernels; aisize.training's efficiencies apply to it.
FRAMEWORK = "zero"
PASSES = 4  # GPUs <-> goodput fixed-point passes (converges in 2-3)
MIN_GOODPUT = 1e-3  # floor while sizing, so a job that never finishes still gets a GPU count
MAX_GPUS = 10**7  # the engines' limit on ranks (aisize.storage.checkpoint.checkpoint_size)


@dataclass(frozen=True)
class CheckpointResult:
    """Checkpointing of one job (sizes [B], rates [B/s], times [s]); arrays when sized for several targets."""

    checkpoint_bytes: float
    shard_bytes: float
    write_bytes_per_s: float  # achieved, N:N
    write_seconds: float
    interval_seconds: float  # the plan's one interval: Young/Daly, at most half the job (ck.interval_for_job)
    young_daly_seconds: float  # the Young/Daly optimum sqrt(2 x MTBF x write) at this size, capped or not
    mtbf_seconds: float
    restore_seconds: float  # RTO: read back + restart
    write_bytes_per_s_for_stall: float  # to keep writes under CHECKPOINT_MAX_STALL of the interval
    storage_bound: bool  # the storage, not the servers' NICs, limits the write


@dataclass(frozen=True)
class JobInputs:
    """A training job's inputs to the engine, resolved from the scenario and the hardware."""

    kind: str  # transformer | other
    model: object  # catalog Transformer or OtherModel
    dtype: str  # training precision the GPU runs (context.training_dtype)
    optimizer: str  # aisize.precision optimizer name
    peak_flops_per_s: float  # dense peak of the precision's GEMMs (its low-precision format, if any)
    seq_len: int | None  # tokens per sequence (transformers)
    method: str  # full | lora (qlora is lora with a 4-bit base)
    lora_rank: int | None
    qlora: bool
    tokens: float | None  # training tokens (transformers)
    samples: float | None  # training samples (other models)
    flops: float  # model FLOPs of the whole run [FLOP]
    work: float  # FLOPs (transformers) or samples (other models)
    rate: float  # per GPU: peak FLOP/s (transformers) or samples/s (other models)
    mfu: float  # share of ``rate`` achieved: the policy MFU, or 1 where the rate is achieved already
    checkpoint_params: float  # parameters whose training state a checkpoint holds
    throughput: ResolvedThroughput | None  # what the samples/s rest on (other models)
    dataset: object | None  # catalog Dataset read (other models)
    memory_precision: str  # precision the memory model of an other model uses
    calibration: object = None  # the training constants (C.training_calibration; None: the shipped ones)

    def lora(self) -> dict:
        """LoRA keyword arguments of the memory and layout engines (empty for full training)."""
        return {} if self.lora_rank is None else {"lora_rank": self.lora_rank, "qlora": self.qlora}


def _throughput(w, model, acc, precision, peak, per_server, policies) -> ResolvedThroughput:
    """The scenario's samples/s per GPU if given, else aisize.storage.demand.resolve_samples_per_s."""
    if w.samples_per_s_per_gpu:
        rate = float(w.samples_per_s_per_gpu)
        eff = rate * TRAINING_FLOPS_PER_FORWARD_FLOP * model.forward_per_sample_flops / peak
        # no words here: the plan's ThroughputBasis carries the rate (rule "scenario") and
        # aisize.present.training_text words it
        return ResolvedThroughput(rate, rate, rate, eff, "scenario", "", None)
    return resolve_samples_per_s(model, acc, precision=precision, gpus=w.gpus or per_server,
                                 efficiency=policies.mfu)


@lru_cache(maxsize=256)
def job_inputs(w, ctx: C.HardwareContext, policies) -> JobInputs:
    """Resolve a :class:`~aisize.scenario.Training` entry on the hardware (cached; inputs are frozen)."""
    acc = ctx.accelerator
    dtype = C.training_dtype(acc, w.precision)
    opt = C.SCENARIO_OPTIMIZERS[w.optimizer]
    r = recipe(dtype, acc)  # a format the GPU has no tensor cores for is refused here, by name
    peak = peak_flops_per_s(acc, r.low_dtype or r.high_dtype)
    if not (isinstance(w.model, str) and w.model in catalog.other_models):
        arch = models.resolve(w.model)
        pc = C.params_of(arch)
        seq = w.seq_len or min(arch.max_seq, DEFAULT_SEQ_LEN)
        tokens = w.tokens_billion * 1e9 if w.tokens_billion is not None else \
            catalog.datasets[w.dataset].tokens * 1e9 * w.epochs
        method = "full" if w.method == "full" else "lora"
        rank = None if method == "full" else w.lora_rank
        flops = training_flops(pc.active, tokens, layers=arch.layers, attention_dim=models.attention_dim(arch),
                               seq_len=seq, method=method)
        trainable = pc.total
        if rank is not None:  # a LoRA checkpoint holds the adapters' training state only
            share = transformer_memory_inputs(arch, lora_rank=rank)["trainable_share"]
            trainable = share * pc.total / (1.0 - share)
        return JobInputs(kind="transformer", model=arch, dtype=dtype, optimizer=opt, peak_flops_per_s=peak,
                         seq_len=seq, method=method, lora_rank=rank, qlora=w.method == "qlora", tokens=tokens,
                         samples=None, flops=float(flops), work=float(flops), rate=peak, mfu=policies.mfu,
                         checkpoint_params=float(trainable), throughput=None, dataset=None, memory_precision=dtype,
                         calibration=C.training_calibration(policies))
    model = catalog.other_models[w.model]
    data = catalog.datasets[w.dataset or model.dataset]
    samples = data.samples * (w.epochs or 1.0)
    precision = dtype if dtype in ("fp32", "fp16", "bf16", "fp8") else "bf16"
    tp = _throughput(w, model, acc, precision, peak, ctx.server.gpus, policies)
    # time = samples / (GPUs x samples/s): training_seconds with the per-GPU rate in place of
    # peak x MFU (mfu=1), so one formula serves both kinds
    flops = TRAINING_FLOPS_PER_FORWARD_FLOP * model.forward_per_sample_flops * samples
    return JobInputs(kind="other", model=model, dtype=dtype, optimizer=opt, peak_flops_per_s=peak, seq_len=None,
                     method="full", lora_rank=None, qlora=False, tokens=None, samples=float(samples),
                     flops=float(flops), work=float(samples), rate=tp.samples_per_s_per_gpu, mfu=1.0,
                     checkpoint_params=float(model.params), throughput=tp, dataset=data, memory_precision=precision)


def scaleup(ctx: C.HardwareContext) -> tuple[str, float]:
    """(catalog link id, per GPU per direction [B/s]) of the link tensor-parallel traffic crosses.

    NVLink-class where the GPU has one, else its PCIe generation, else the scale-out NICs.
    """
    if ctx.scaleup_bytes_per_s:
        return ctx.accelerator.scaleup_link, ctx.scaleup_bytes_per_s
    if ctx.pcie_link:
        return ctx.pcie_link.id, ctx.pcie_link.bandwidth_per_direction_bytes_per_s
    return ctx.scale_out_link.id, ctx.scaleout_bytes_per_s


def scaleup_bytes_per_s(ctx: C.HardwareContext) -> float:
    """Per GPU, per direction, the scale-up rate of :func:`scaleup` [B/s]."""
    return scaleup(ctx)[1]


def global_batch(w, seq_len: int, gpus):
    """Sequences per step: the scenario's, else TOKENS_PER_STEP rounded up to a multiple of the GPUs."""
    if w.global_batch:
        return np.broadcast_to(w.global_batch, np.shape(gpus)) if np.ndim(gpus) else int(w.global_batch)
    gb = gpus * np.ceil(max(1, round(C.TOKENS_PER_STEP / seq_len)) / np.asarray(gpus))
    return gb.astype(np.int64) if np.ndim(gb) else int(gb)


def fixed_layout_divides(layout, gpus, gb):
    """(TP x PP x CP divides the GPUs, micro-batch x DP divides the global batch) of a given layout (vectorized)."""
    g = np.asarray(gpus, dtype=np.int64)
    tp_pp = layout.tensor_parallel * layout.pipeline_parallel * layout.context_parallel
    divides = g % tp_pp == 0
    dp = np.maximum(g // tp_pp, 1)
    return divides, divides & (np.asarray(gb, dtype=np.int64) % (layout.micro_batch * dp) == 0)


def fixed_layout_holds(job: JobInputs, layout, gpus, gb) -> np.ndarray:
    """Whether :func:`fixed_layout` builds at each GPU count and global batch (vectorized): every rule of
    :data:`aisize.training.parallel.RULES`, the ones :class:`~aisize.training.TrainingLayout` raises, ANDed
    over the counts (:func:`aisize.training.parallel.holds`), so a chart's "plannable" and plan() agree."""
    lay, m = layout, job.model
    g = np.asarray(gpus, dtype=np.int64)
    b = np.broadcast_to(np.asarray(gb, dtype=np.int64), g.shape)
    tp, pp, cp = lay.tensor_parallel, lay.pipeline_parallel, lay.context_parallel
    dp = data_parallel(g, tp, pp, cp)
    flush = np.maximum(b // np.maximum(lay.micro_batch * dp, 1), 1)  # as fixed_layout splits the batch
    v = lay.virtual_stages if lay.schedule == "interleaved-1f1b" else 1
    d = Degrees(g, tp, pp, cp, dp, lay.expert_parallel, 1 if m.experts <= 1 else tp, SCHEDULE_CODES[lay.schedule],
                v, m.layers, 0, lay.micro_batch * flush, flush, b, job.seq_len)
    return np.broadcast_to(holds(d, ModelSizes.of(m)), g.shape)


def layouts_exist(job: JobInputs, ctx: C.HardwareContext, gpus, gb) -> np.ndarray:
    """Whether any consistent layout (:func:`aisize.training.layout_grid`) exists at each GPU count and batch.

    A derived global batch (a multiple of the GPUs) always admits one; a given one may not
    (2,048 sequences cannot be split over 8,464 GPUs in whole micro-batches).
    """
    k, domain = ModelSizes.of(job.model), ctx.accelerator.scaleup_domain
    pairs = zip(np.ravel(gpus), np.ravel(np.broadcast_to(gb, np.shape(gpus))))
    return np.array([_layout_exists(int(g), int(b), k, domain) for g, b in pairs], dtype=bool)


# the smallest search space that finds a layout wherever one exists (see _layout_exists)
_EXISTS = SearchSpace(stages=(0,), recomputes=("none",), micro_batches=(1,), context_parallel=(1,), schedules=("1f1b",))


@lru_cache(maxsize=4096)
def _layout_exists(gpus: int, gb: int, k: ModelSizes, domain: int) -> bool:
    # micro-batch 1 divides whatever a larger one divides; ZeRO stage, recompute, CP 1 and the
    # schedule do not constrain. A hybrid's Mamba-2 heads and groups constrain TP too
    # (parallel.RULES), as in the search's own grid.
    grid = grid_of(gpus, k, _EXISTS, global_batch=gb, seq_len=1, scaleup_domain=domain)
    return grid.count > 0


def search(job: JobInputs, ctx: C.HardwareContext, policies, gpus: int, gb: int, top: int):
    """:func:`aisize.training.search_layouts` for the job on ``gpus`` GPUs with the planner's links, fabric
    and headroom (framework :data:`FRAMEWORK`, compiled). Memoised on what the search reads, so a move of
    the tokens, the MFU or another policy does not search again (the frame is shared: do not modify it)."""
    return _search(job.model, job.seq_len, job.dtype, job.optimizer, job.lora_rank, job.qlora,
                   fabric_seen(ctx, gpus), policies.memory_headroom, gpus, gb, top, job.calibration)


def fabric_seen(ctx: C.HardwareContext, gpus: int) -> C.HardwareContext:
    """``ctx`` as a job on ``gpus`` GPUs sees it, the key of its memoised searches and estimates: the leaves'
    oversubscription slows only a group spanning more than ``switch_radix`` scale-up domains
    (:func:`aisize.training.comm.scaleout_rate`) and a group of n ranks spans at most n, so at most
    ``switch_radix`` GPUs every figure is the non-blocking fabric's and one search serves every oversubscription."""
    seen = _COUNTS.get()
    if seen is not None:
        seen.append(gpus)
    if gpus > ctx.switch_radix or ctx.oversubscription <= 1.0:
        return ctx
    return _non_blocking(ctx)


_COUNTS: contextvars.ContextVar = contextvars.ContextVar("aisize.plan.job.counts", default=None)


@contextmanager
def counts_seen():
    """The GPU counts every :func:`search` and :func:`estimate` inside the block ran at, as a list filled as they run
    (a memoised caller's hit runs none: an empty list says nothing)."""
    token = _COUNTS.set([])
    try:
        yield _COUNTS.get()
    finally:
        _COUNTS.reset(token)


@lru_cache(maxsize=16)
def _non_blocking(ctx: C.HardwareContext) -> C.HardwareContext:
    return dataclasses.replace(ctx, oversubscription=1.0)  # one object per context: memo keys compare by identity first


@lru_cache(maxsize=256)
def _search(model, seq_len, dtype, optimizer, lora_rank, qlora, ctx, headroom, gpus, gb, top, calibration):
    lora = {} if lora_rank is None else {"lora_rank": lora_rank, "qlora": qlora}
    return search_layouts(model, ctx.accelerator, gpus, global_batch=gb, seq_len=seq_len,
                          scaleout_bytes_per_s=ctx.scaleout_bytes_per_s, precision=dtype,
                          optimizer=optimizer, headroom=headroom, top=top,
                          scaleup_bytes_per_s=scaleup_bytes_per_s(ctx), framework=FRAMEWORK, compiled=True,
                          oversubscription=ctx.oversubscription, switch_radix=ctx.switch_radix,
                          calibration=calibration, **lora)


def fixed_layout(job: JobInputs, layout, gpus: int, gb: int) -> TrainingLayout:
    """The :class:`~aisize.training.TrainingLayout` of a scenario's given layout (a
    :class:`~aisize.scenario.Layout`) of the job on ``gpus`` GPUs with global batch ``gb``.

    As in the search (:meth:`TrainingLayout.from_search`), the scenario's ``micro_batch`` is the
    pipeline micro-batch and a data-parallel rank's share of the global batch runs as one pipeline
    flush of gb / (micro_batch x DP) micro-batches, with or without PP: a given layout and the same
    layout found by the search are one layout with one step time. Raises the
    :class:`~aisize.training.parallel.LayoutError` of the first rule it breaks.
    """
    lay = layout
    dp = gpus // (lay.tensor_parallel * lay.pipeline_parallel * lay.context_parallel)
    flush = max(gb // max(lay.micro_batch * dp, 1), 1)
    return TrainingLayout(
        model=job.model, gpus=gpus, tensor_parallel=lay.tensor_parallel, pipeline_parallel=lay.pipeline_parallel,
        context_parallel=lay.context_parallel, expert_parallel=lay.expert_parallel,
        expert_tensor_parallel=1 if job.model.experts <= 1 else None,  # no experts: 1, as the search records it
        schedule=lay.schedule,
        virtual_stages=lay.virtual_stages if lay.schedule == "interleaved-1f1b" else None,
        micro_batch=lay.micro_batch * flush, pipeline_microbatches=flush, global_batch=gb, seq_len=job.seq_len,
        recompute=lay.recompute, framework=FRAMEWORK, zero_stage=lay.zero_stage)


def estimate(job: JobInputs, ctx: C.HardwareContext, layout: TrainingLayout):
    """:func:`aisize.training.estimate` of the job at one :class:`~aisize.training.TrainingLayout` (the search's
    chosen row, :func:`aisize.training.chosen_layout`, or :func:`fixed_layout`) with the planner's links,
    fabric and training constants, as :func:`search` evaluates layouts. The plan's one step-time and memory
    estimate: every surface reads it from the :class:`~aisize.plan.TrainingPlan` (memoised)."""
    return _estimate(job, fabric_seen(ctx, layout.gpus), layout)


@lru_cache(maxsize=256)
def _estimate(job: JobInputs, ctx: C.HardwareContext, layout: TrainingLayout):
    return training_estimate(job.model, ctx.accelerator, layout=layout, precision=job.dtype, compiled=True,
                             optimizer=job.optimizer, scaleup_bytes_per_s=scaleup_bytes_per_s(ctx),
                             scaleout_bytes_per_s=ctx.scaleout_bytes_per_s, oversubscription=ctx.oversubscription,
                             switch_radix=ctx.switch_radix, calibration=job.calibration, **job.lora())


def checkpoints(params, gpus, servers, ctx: C.HardwareContext, policies, running_seconds=None) -> CheckpointResult:
    """N:N checkpoints of a job on ``gpus`` GPUs in ``servers`` servers (vectorized over both).

    ``running_seconds``: the job's compute time [s]; the "auto" interval is then at most half of it
    (:func:`aisize.storage.checkpoint.interval_for_job`: a job shorter than the Young/Daly interval still
    checkpoints once). A scenario's own interval is kept as given."""
    size = ck.checkpoint_size(params, bytes_per_param=policies.checkpoint_bytes_per_param, ranks=gpus)
    # a server without storage NICs of its own (0) reaches the storage over one compute NIC
    nic = max(ctx.server.storage_nics, 1) * ctx.storage_nic_link.bandwidth_per_direction_bytes_per_s
    supply_read, supply_write = C.storage_supply(ctx, servers)
    write = ck.checkpoint_write(size.total_bytes, nic, supply_write, writers=servers, pattern="N:N")
    if policies.failure_rates == "node-mtbf":
        mtbf = ck.cluster_mtbf(policies.node_mtbf_hours * HOUR, servers)
    else:  # a published fleet's interruptions per GPU-hour and per server-hour (aisize.fleet.failures)
        mtbf = failure_rates(policies.failure_rates).mtbf_seconds(gpus, servers)
    optimum = ck.young_daly_interval(mtbf, write.seconds)
    if policies.checkpoint_interval_minutes == "auto":
        interval = optimum
        if running_seconds is not None:
            interval = ck.interval_for_job(interval, running_seconds)
    else:
        interval = policies.checkpoint_interval_minutes * MINUTE
    interval = np.maximum(interval, write.seconds)  # cannot start the next before the last is written
    rto = ck.restore_seconds(size.total_bytes, np.minimum(servers * nic, supply_read),
                             restart_seconds=policies.restart_minutes * MINUTE)
    need = ck.write_bandwidth_for_stall(size.total_bytes, interval, C.CHECKPOINT_MAX_STALL)
    return CheckpointResult(size.total_bytes, size.shard_bytes, write.bytes_per_s, write.seconds, interval,
                            optimum, mtbf, rto, need, write.storage_bound)


def goodput(cp: CheckpointResult | None):
    """Share of wall time making progress (Daly, first order); 1 without checkpoints."""
    if cp is None:
        return 1.0
    return ck.goodput(cp.mtbf_seconds, cp.interval_seconds, cp.write_seconds, cp.restore_seconds)


@dataclass(frozen=True)
class Sizing:
    """GPUs, servers, checkpoints and time of a job (arrays over target times, or scalars)."""

    gpus: np.ndarray
    servers: np.ndarray
    checkpoint: CheckpointResult | None
    goodput: np.ndarray
    running_seconds: np.ndarray  # compute time at goodput 1 [s]
    seconds: np.ndarray  # wall time: running / goodput (inf where goodput is 0) [s]


FEASIBLE_SEARCH_SERVERS = 256  # how many extra servers to try for a count the batch can split over


def _next_splittable(job: JobInputs, w, ctx: C.HardwareContext, gpus, per: int, max_gpus):
    """Round each GPU count up, a server at a time, to one the scenario's global batch can be
    split over by some layout: a deadline met with 600 GPUs is met with 640 when 2,048
    sequences cannot be divided among 600. A fixed layout is left as given (plan() says why it
    does not divide), as are counts with no such neighbour."""
    if not isinstance(job.model, catalog.Transformer) or not w.global_batch or not isinstance(w.layout, str):
        return gpus  # a derived batch is a multiple of the GPUs: always splittable
    out = np.array(gpus, dtype=float)
    k, domain = ModelSizes.of(job.model), ctx.accelerator.scaleup_domain
    for i, g in np.ndenumerate(out):
        tried = FEASIBLE_SEARCH_SERVERS + 1  # the count and the servers added to it, within max_gpus
        if max_gpus is not None:
            tried = min(tried, (int(max_gpus) - int(g)) // per + 1) if max_gpus >= int(g) else 0
        found = _first_splittable(int(g), per, tried, int(w.global_batch), k, domain)
        if found is not None:
            out[i] = found
    return out


_SPLITTABLE_CHUNK = 16  # counts asked at once after the first (doubling): most counts split at once or soon


@lru_cache(maxsize=4096)
def _first_splittable(gpus: int, per: int, tried: int, gb: int, k: ModelSizes, domain: int) -> int | None:
    """The first of ``gpus``, ``gpus + per``, ... (``tried`` counts) that some layout splits ``gb`` sequences over,
    or None: :func:`_layout_exists` at the first, then the rest a chunk at a time in one grid (its "gpus" rule
    keeps each count's own layouts: a divisor of another count fails it), the same answers as one by one."""
    if tried <= 0:
        return None
    if _layout_exists(gpus, gb, k, domain):
        return gpus
    step, size = 1, _SPLITTABLE_CHUNK
    while step < tried:
        end = min(step + size, tried, (MAX_GPUS - gpus) // per + 1)
        if end <= step:  # past the engines' limit: refused as one count alone is
            _layout_exists(gpus + per * step, gb, k, domain)
        counts = gpus + per * np.arange(step, end)
        grid = grid_of(counts, k, _EXISTS, global_batch=gb, seq_len=1, scaleup_domain=domain)
        hit = np.flatnonzero(np.reshape(grid.valid, (len(counts), -1)).any(axis=1))
        if hit.size:
            return int(counts[hit[0]])
        step, size = step + size, 2 * size
    return None


def size(job: JobInputs, w, ctx: C.HardwareContext, policies, target_seconds=None, max_gpus=None) -> Sizing:
    """GPUs (whole servers) for target times [s], iterating GPUs <-> goodput; or the scenario's GPUs.

    ``target_seconds`` None: the job runs on ``w.gpus`` (or its own target_days). ``max_gpus``:
    cap the GPUs (a target that needs more is missed: its time comes out longer); None, as
    ``plan()`` uses it, lets an engine refuse a count beyond its limits.

    References
    ----------
    .. [1] :func:`aisize.compute.gpus_needed` (inverse of FLOPs / (GPUs x peak x MFU)), then
       :func:`aisize.storage.checkpoint.goodput` (Daly 2006) at that size, repeated.
    """
    per = ctx.server.gpus
    if target_seconds is None and w.gpus is not None:
        gpus = np.asarray(float(w.gpus))
    else:
        t = np.asarray(w.target_days * DAY if target_seconds is None else target_seconds, dtype=float)
        gp, gpus = np.ones(t.shape), np.full(t.shape, float(per))
        for _ in range(PASSES):
            gpus = np.ceil(gpus_needed(job.work, t, job.rate, mfu=job.mfu, goodput=gp) / per) * per
            if max_gpus is not None:
                gpus = np.minimum(gpus, max_gpus)
            if w.checkpoint:
                running = training_seconds(job.work, gpus, job.rate, mfu=job.mfu, goodput=1.0)
                gp = np.maximum(goodput(checkpoints(job.checkpoint_params, gpus, np.ceil(gpus / per), ctx,
                                                    policies, running)), MIN_GOODPUT)
        gpus = _next_splittable(job, w, ctx, gpus, per, max_gpus)
    servers = np.ceil(gpus / per)
    running = np.asarray(training_seconds(job.work, gpus, job.rate, mfu=job.mfu, goodput=1.0))
    cp = checkpoints(job.checkpoint_params, gpus, servers, ctx, policies, running) if w.checkpoint else None
    gp = np.asarray(goodput(cp), dtype=float) * np.ones(np.shape(gpus))
    with np.errstate(divide="ignore"):
        seconds = np.where(gp > 0, running / np.where(gp > 0, gp, 1.0), math.inf)
    return Sizing(gpus, servers, cp, gp, running, seconds)
