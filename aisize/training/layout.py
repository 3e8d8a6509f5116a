"""Parallel layout search: TP x PP x CP x schedule x micro-batch x ZeRO stage x recompute (x EP x
expert TP) for a model on N GPUs, every combination evaluated at once with numpy broadcasting.

Each choice is one axis of a broadcast grid (:class:`Grid`); the memory and step-time
cores (:func:`aisize.training.evaluate.evaluate`) compute every term on only the axes
it depends on (a layer's time on TP, CP, micro-batch and recompute; data-parallel
traffic on TP, PP and CP), so the full grid is touched only by the final sums, the
validity mask and the ranking. No Python loop runs per configuration.

Search conventions (Megatron-LM's): ``micro_batch`` is the pipeline micro-batch, and
the global batch over micro-batch x DP is the number of micro-batches in one pipeline
flush (no separate gradient accumulation). Consistent layouts are those that keep every rule of
:data:`aisize.training.parallel.RULES`, the rules a :class:`~aisize.training.parallel.TrainingLayout`
is checked with (TP divides the heads, PP at most the layers, CP divides the sequence, TP x PP x CP
divides the GPUs, micro-batch x DP divides the global batch, EP and expert TP fold onto TP x CP x DP,
interleaving fits the layers); the search adds its own cuts (TP within one scale-up domain, no
duplicate points). Recompute is none, selective, or full on a share of each model chunk's layers
(Megatron's ``recompute_num_layers``, rounded to whole layers). :func:`chosen_layout` turns a row
into a TrainingLayout (docs/training-layout.md).

References
----------
.. [1] Narayanan et al. 2021, arXiv:2104.04473, sec. 3 (layout guidelines).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from aisize import checks
from aisize.memory.states import FRAMEWORK_STAGES
from aisize.training.calibration import resolve as resolve_calibration
from aisize.training.dims import resolve
from aisize.training.evaluate import evaluate
from aisize.training.memory import TrainingMemory
from aisize.training.moe import DISPATCHERS
from aisize.training.parallel import (RECOMPUTE, Degrees, ModelSizes, TrainingLayout, chunk_layers, data_parallel,
                                      holds)
from aisize.training.schedules import SCHEDULE_CODES, SCHEDULES
from aisize.training.setup import accelerator_record, default_links, engine
from aisize.training.step_time import PARTS, StepTime
from aisize.training.values import Layouts, Options, transformer_engine

AXES = ("gpus", "seq_len", "tp", "pp", "cp", "schedule", "micro_batch", "zero_stage", "recompute", "ep", "etp")
DEFAULT_RECOMPUTE_SHARES = (0.5, 1.0)  # shares of a chunk's layers tried with full recompute
EXPERT_TP_CHOICES = ("1", "tp")  # MoE models: experts folded without TP (1), or split like attention (TP)
DEFAULT_MICRO_BATCHES = tuple(2 ** np.arange(7))  # 1-64 sequences
DEFAULT_VIRTUAL_STAGES = (2, 4)
MAX_CONTEXT_PARALLEL = 64  # CP beyond 64 ranks is not used in published runs (Llama 3: 16)


@lru_cache(maxsize=1024)
def _divisors(n: int) -> np.ndarray:
    """The divisors of ``n`` in ascending order (read-only): each d <= sqrt(n) with its pair n // d, so a count of
    32,768 GPUs takes 181 trials, not 32,768 (a days curve asks hundreds of counts a move)."""
    k = np.arange(1, math.isqrt(n) + 1)
    low = k[n % k == 0]
    out = np.unique(np.concatenate((low, n // low)))
    out.flags.writeable = False
    return out


@dataclass(frozen=True)
class Grid:
    """Layouts as broadcast axes (each array has one non-unit dimension, in :data:`AXES` order).

    ``gpus`` and ``global_batch`` share the first axis; ``virtual_stages`` shares the schedule axis;
    ``recompute_share`` (the share of a chunk's layers full recompute re-runs) the recompute axis.
    """

    gpus: np.ndarray
    global_batch: np.ndarray
    seq_len: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    cp: np.ndarray
    schedule: np.ndarray  # codes of aisize.training.schedules.SCHEDULES
    virtual_stages: np.ndarray
    micro_batch: np.ndarray
    zero_stage: np.ndarray
    recompute: np.ndarray  # 0 none, 1 selective, 2 full
    recompute_share: np.ndarray  # share of each chunk's layers under full recompute (whole layers)
    ep: np.ndarray
    etp: np.ndarray  # expert tensor parallel
    dp: np.ndarray  # gpus // (tp pp cp), 0 where it does not divide
    microbatches: np.ndarray  # per pipeline flush (global batch // (micro-batch x DP); meaningful where valid)
    valid: np.ndarray  # full shape

    @property
    def shape(self) -> tuple:
        return self.valid.shape

    @property
    def count(self) -> int:
        """Consistent layouts in the grid."""
        return int(np.count_nonzero(self.valid))

    def layouts(self) -> Layouts:
        """The grid as the evaluation cores read it: one pipeline flush (no accumulation), sequence
        parallelism with TP; invalid points (DP or micro-batches 0) are clipped to 1 and stay garbage."""
        return Layouts(seq_len=self.seq_len, micro_batch=self.micro_batch, microbatches=np.maximum(self.microbatches, 1),
                       accumulation=1, tp=self.tp, pp=self.pp, cp=self.cp, dp=np.maximum(self.dp, 1), ep=self.ep,
                       etp=self.etp, virtual_stages=self.virtual_stages, schedule_code=self.schedule,
                       recompute=self.recompute, full_share=self.recompute_share, sp=self.tp > 1,
                       stage=self.zero_stage)


def _not_duplicate(schedule, pp, etp_code, tp):
    """Search-only cuts, not rules: without pipelining every schedule is 1F1B, and expert TP = TP is
    expert TP 1 where TP is 1 (each would rank the same layout twice)."""
    return ((schedule == SCHEDULE_CODES["1f1b"]) | (pp >= 2)) & ((etp_code == 0) | (tp > 1))


def _axis(values, k: int) -> np.ndarray:
    shape = [1] * len(AXES)
    shape[k] = -1
    return np.asarray(values).reshape(shape)


@dataclass(frozen=True)
class SearchSpace:
    """The values a layout search tries on each axis (see :func:`layout_grid`), checked where built."""

    stages: tuple = (0, 1, 2, 3)
    recomputes: tuple = RECOMPUTE
    micro_batches: object = None  # default DEFAULT_MICRO_BATCHES (1-64)
    context_parallel: object = None  # default: every divisor of the GPUs up to MAX_CONTEXT_PARALLEL
    schedules: tuple = ("1f1b", "interleaved-1f1b")
    virtual_stages: object = DEFAULT_VIRTUAL_STAGES
    recompute_shares: tuple = DEFAULT_RECOMPUTE_SHARES

    def __post_init__(self):
        for r in self.recomputes:
            checks.choice("recomputes", r, RECOMPUTE)
        for name in self.schedules:
            checks.choice("schedules", name, SCHEDULES)
        mbs = np.asarray(self.micro_batches if self.micro_batches is not None else DEFAULT_MICRO_BATCHES)
        checks.integer("micro_batches", mbs, high=10**6)
        # stored as checked (whole numbers as int64, shares as floats)
        vs = np.atleast_1d(checks.integer("virtual_stages", np.asarray(self.virtual_stages), low=2, high=10**3))
        object.__setattr__(self, "virtual_stages", vs)
        if self.context_parallel is not None:
            cps = np.atleast_1d(checks.integer("context_parallel", self.context_parallel, high=10**5))
            object.__setattr__(self, "context_parallel", cps)
        shares = tuple(float(checks.fraction("recompute_shares", x)) for x in self.recompute_shares)
        object.__setattr__(self, "recompute_shares", shares)


def layout_grid(gpus, *, heads: int, layers: int, global_batch, seq_len, scaleup_domain: int, experts: int = 1,
                stages=(0, 1, 2, 3), recomputes=RECOMPUTE, micro_batches=None, context_parallel=None,
                schedules=("1f1b", "interleaved-1f1b"), virtual_stages=DEFAULT_VIRTUAL_STAGES,
                recompute_shares=DEFAULT_RECOMPUTE_SHARES, expert_ffn: int = 0, mamba_heads: int = 0,
                mamba_groups: int = 0) -> Grid:
    """Every consistent layout for one or more GPU counts and sequence lengths, as a :class:`Grid`.

    Parameters
    ----------
    gpus : GPUs [count], one or several; global_batch : sequences per step (one, or one per GPU count)
    heads, layers : a, L; seq_len : tokens per sequence (one or several)
    scaleup_domain : GPUs per NVLink domain (TP stays inside it)
    experts : routed experts (1 = dense: EP fixed at 1)
    stages : ZeRO stages to try; recomputes : recompute modes to try
    micro_batches : pipeline micro-batch sizes to try (default 1-64)
    context_parallel : CP degrees to try (default: every divisor of the GPUs up to
        :data:`MAX_CONTEXT_PARALLEL` that divides the sequence)
    schedules : pipeline schedules to try (:data:`aisize.training.schedules.SCHEDULES`)
    virtual_stages : chunks per stage tried with "interleaved-1f1b"
    recompute_shares : shares of each model chunk's layers tried with full recompute (rounded to
        whole layers; 1 = every layer)
    expert_ffn : one routed expert's inner width; with it, MoE models try expert TP 1 (MoE parallel
        folding) and expert TP = TP (Megatron-Core's default, where TP divides the expert's width)
    mamba_heads, mamba_groups : a hybrid's Mamba-2 heads and groups (TP divides both; CP the heads per
        TP rank); 0 without Mamba-2 layers

    A point is valid where every rule of :data:`aisize.training.parallel.RULES` holds (the rules
    :class:`~aisize.training.parallel.TrainingLayout` checks one layout with) and it is not a
    duplicate of another point (:func:`_not_duplicate`).

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, sec. 3 (TP inside a server, PP across).
    """
    checks.integer("heads", heads, high=10**6)
    checks.integer("layers", layers, high=10**5)
    sizes = ModelSizes("", int(layers), int(heads), int(mamba_heads), int(mamba_groups), int(experts), int(expert_ffn))
    space = SearchSpace(tuple(stages), tuple(recomputes), micro_batches, context_parallel, tuple(schedules),
                        virtual_stages, tuple(recompute_shares))
    return grid_of(gpus, sizes, space, global_batch=global_batch, seq_len=seq_len, scaleup_domain=scaleup_domain)


def grid_of(gpus, sizes: ModelSizes, space: SearchSpace, *, global_batch, seq_len, scaleup_domain: int) -> Grid:
    """:func:`layout_grid` of a model's sizes (:class:`~aisize.training.parallel.ModelSizes`) over a
    :class:`SearchSpace` (both checked where built)."""
    n = np.atleast_1d(checks.integer("gpus", gpus, high=10**7))
    gb = np.broadcast_to(np.atleast_1d(checks.integer("global_batch", global_batch, high=10**9)), n.shape)
    s = np.atleast_1d(checks.integer("seq_len", seq_len, high=10**8))
    checks.integer("scaleup_domain", scaleup_domain, high=10**5)
    layers, experts, expert_ffn = sizes.layers, sizes.experts, sizes.expert_ffn
    stages, recomputes, context_parallel, schedules = (space.stages, space.recomputes, space.context_parallel,
                                                       space.schedules)
    mbs = np.asarray(space.micro_batches if space.micro_batches is not None else DEFAULT_MICRO_BATCHES)
    vs = space.virtual_stages
    divs = np.unique(np.concatenate([_divisors(int(x)) for x in n]))
    # axes cut to values some layout can take (the rules below decide), TP within one scale-up domain
    tps = divs[(sizes.tensor_parallel_units % divs == 0) & (divs <= scaleup_domain)]
    pps = divs[divs <= layers]
    if context_parallel is None:
        cps = divs[divs <= MAX_CONTEXT_PARALLEL]
    else:
        cps = context_parallel
    eps = divs[experts % divs == 0] if experts > 1 else np.array([1])
    etp_codes = np.arange(len(EXPERT_TP_CHOICES)) if experts > 1 and expert_ffn else np.array([0])
    sched = [(SCHEDULE_CODES[name], 1) for name in schedules if name != "interleaved-1f1b"]
    sched += [(SCHEDULE_CODES["interleaved-1f1b"], int(v)) for v in vs if "interleaved-1f1b" in schedules]
    shares = space.recompute_shares
    rec = [(2, x) for x in shares] if "full" in recomputes else []
    rec = [(RECOMPUTE.index(r), 0.0 if r == "none" else 1.0) for r in recomputes if r != "full"] + rec
    ax = [_axis(n, 0), _axis(s, 1), _axis(tps, 2), _axis(pps, 3), _axis(cps, 4),
          _axis([c for c, _ in sched], 5), _axis(mbs, 6), _axis(np.asarray(stages), 7),
          _axis([c for c, _ in rec], 8), _axis(eps, 9), _axis(etp_codes, 10)]
    N, S, T, P, C, K, B, Z, R, E, XC = ax
    X = np.where(XC == 1, T, 1)  # expert TP
    G, V = _axis(gb, 0), _axis([v for _, v in sched], 5)
    # whole layers of a chunk: ceil(L / (p v)) layers, round(share x chunk) of them recomputed
    chunk = chunk_layers(layers, P, V)
    share = np.where(R == 2, np.maximum(np.round(_axis([x for _, x in rec], 8) * chunk), 1) / chunk, 1.0)
    dp = data_parallel(N, T, P, C)
    # the search runs the global batch as one pipeline flush of m micro-batches of B sequences: as a
    # TrainingLayout, a local batch of B x m split into m (m rounded down: the batch rule refuses a remainder)
    m = G // np.maximum(B * dp, 1)
    d = Degrees(N, T, P, C, dp, E, X, K, V, layers, 0, B * m, np.maximum(m, 1), G, S)
    ok = holds(d, sizes)  # the rules TrainingLayout checks (aisize.training.parallel.RULES), all at once
    ok = ok & _not_duplicate(K, P, XC, T)
    ok = ok & np.ones(tuple(len(np.ravel(a)) for a in ax), dtype=bool)
    return Grid(N, G, S, T, P, C, K, V, B, Z, R, share, E, X, dp, m, ok)


GRID_FIELDS = ("gpus", "global_batch", "seq_len", "tp", "pp", "cp", "schedule", "virtual_stages", "micro_batch",
               "zero_stage", "recompute", "recompute_share", "ep", "etp", "dp", "microbatches")


def evaluate_grid(model, grid: Grid, eng, *, framework: str, compiled: bool, async_tp=False, cp_method="all-gather",
                  lora_rank=None, frozen_dtype_bytes=0.0, memory="peak") -> tuple[TrainingMemory, StepTime]:
    """Peak memory per GPU (or, ``memory="breakdown"``, its line items) and step time of every layout
    of ``grid`` (broadcast arrays; invalid points are garbage) under :func:`search_options`."""
    opt = search_options(eng, framework=framework, compiled=compiled, async_tp=async_tp, cp_method=cp_method,
                         lora_rank=lora_rank, frozen_dtype_bytes=frozen_dtype_bytes)
    return evaluate(model, eng, opt, grid.layouts(), memory=memory)


def search_options(eng, *, framework: str, compiled: bool, async_tp=False, cp_method="all-gather", lora_rank=None,
                   frozen_dtype_bytes=0.0) -> Options:
    """The :class:`~aisize.training.values.Options` a search evaluates its grid with: the MoE dispatcher
    is :func:`aisize.training.estimate`'s default for the links' scale-up domain."""
    flex = eng.links.scaleup_domain > 8
    return Options(framework=framework, compiled=compiled, te=transformer_engine(framework, cp_method),
                   async_tp=async_tp, cp_method=cp_method, dispatcher=DISPATCHERS.index("flex" if flex else "alltoall"),
                   lora_rank=lora_rank, frozen_dtype_bytes=frozen_dtype_bytes)


def _pick(a, multi, size):
    a = np.asarray(a)
    if a.ndim == 0:
        return np.full(size, a.item())
    return a[tuple(i if s > 1 else np.zeros_like(i) for i, s in zip(multi, a.shape))]


def rank_layouts(grid: Grid, mem, step: StepTime, usable_bytes, *, top: int):
    """Flat indices of the ``top`` fastest consistent layouts that fit, fastest first, and the seconds array.

    ``mem``: peak bytes per GPU, or a breakdown with ``total_bytes``.
    """
    seconds = step.step_seconds
    total = getattr(mem, "total_bytes", mem)
    keep = grid.valid & (total <= usable_bytes)
    flat = np.flatnonzero(keep)
    if flat.size == 0:
        return flat, seconds
    sec = np.broadcast_to(seconds, grid.shape).ravel()[flat] if np.ndim(seconds) else np.full(flat.size, seconds)
    k = min(top, flat.size)
    kth = np.partition(sec, k - 1)[k - 1]
    cand = np.flatnonzero(sec <= kth)  # ties at the cut are ranked too: the same layouts whatever ``top``
    order = cand[np.lexsort((flat[cand], sec[cand]))][:k]
    return flat[order], seconds


def layout_frame(model, grid: Grid, mem, step: StepTime, usable_bytes, eng, opt: Options, *, top: int):
    """The ``top`` fastest layouts that fit as a DataFrame: layout, step-time parts, MFU, tokens/s, memory.

    The chosen layouts are evaluated again, alone, with their memory breakdown (under ``opt``, the
    options the grid was evaluated with).
    """
    import pandas as pd

    best, _ = rank_layouts(grid, mem, step, usable_bytes, top=top)
    empty = best.size == 0
    if empty:  # nothing fits: the columns of one (unused) grid point, no rows
        best = np.zeros(1, dtype=np.int64)
    multi = np.unravel_index(best, grid.shape)
    size = best.size
    rows = Grid(**{name: _pick(getattr(grid, name), multi, size) for name in GRID_FIELDS},
                valid=np.ones(size, dtype=bool))
    mem_rows, step_rows = evaluate(model, eng, opt, rows.layouts(), memory="breakdown")
    cols = {name: getattr(rows, name) for name in
            ("gpus", "seq_len", "tp", "pp", "cp", "dp", "ep", "micro_batch", "zero_stage")}
    cols["schedule"] = np.asarray(SCHEDULES)[rows.schedule]
    cols["virtual_stages"] = rows.virtual_stages
    cols["microbatches"] = rows.microbatches
    cols["recompute"] = np.asarray(RECOMPUTE)[rows.recompute]
    chunk = chunk_layers(model.layers, rows.pp, rows.virtual_stages)
    cols["recompute_layers"] = np.where(rows.recompute == 2, np.round(rows.recompute_share * chunk), 0).astype(int)
    cols["expert_tensor_parallel"] = rows.etp
    cols["global_batch"] = rows.global_batch
    for name in ("step_seconds", "mfu", "tokens_per_s", "tokens_per_s_per_gpu", *PARTS):
        cols[name] = np.broadcast_to(getattr(step_rows, name), (size,))
    for name, value in mem_rows.as_dict().items():
        cols[name] = np.broadcast_to(value, (size,))
    frame = pd.DataFrame(cols)
    return frame.iloc[:0] if empty else frame


def search_layouts(model, accelerator, gpus: int, *, global_batch: int, seq_len: int, precision="bf16",
                   optimizer="adamw", framework="fsdp", compiled=True, micro_batches=None, stages=None,
                   recomputes=RECOMPUTE, context_parallel=None, schedules=("1f1b", "interleaved-1f1b"),
                   virtual_stages=DEFAULT_VIRTUAL_STAGES, headroom=0.05, top=10, scaleup_bytes_per_s=None,
                   scaleout_bytes_per_s=None, scaleup_domain=None, oversubscription=1.0, switch_radix=64,
                   async_tp=False, cp_method="all-gather", lora_rank=None, qlora=False, calibration=None):
    """The fastest layouts that fit, with their step-time parts and memory breakdowns, as a DataFrame.

    Parameters
    ----------
    model : catalog id or Transformer record; accelerator : catalog id or Accelerator record
    gpus : GPUs [count]; global_batch : sequences per step; seq_len : tokens per sequence
    precision, optimizer : see :func:`aisize.training.estimate`
    framework : fsdp (default: PyTorch FSDP2, stages 0/2/3) | megatron | zero | deepspeed
    compiled : fused kernels (torch.compile; Megatron-LM always fuses)
    micro_batches, stages, recomputes, context_parallel, schedules, virtual_stages : values to try
        (default: 1-64, the framework's stages, all recompute modes, CP up to 64 dividing the
        sequence, 1F1B and interleaved 1F1B with 2 or 4 chunks)
    headroom : share of GPU memory kept free
    top : rows returned
    scaleup_bytes_per_s, scaleout_bytes_per_s, scaleup_domain, oversubscription, switch_radix :
        links and fabric (default: the accelerator's NVLink, the catalog server's NICs)
    async_tp, cp_method : see :func:`aisize.training.estimate`
    lora_rank, qlora : LoRA adapters on all linear layers (memory counts the frozen base at
        bf16, nf4 with ``qlora``; the step skips the frozen weights' gradients, see ``estimate``)
    calibration : the fitted training constants (see :func:`aisize.training.estimate`; None: the shipped one)

    Returns
    -------
    DataFrame sorted by ``step_seconds``: layout columns (tp, pp, cp, dp, ep, expert_tensor_parallel,
    schedule, virtual_stages, micro_batch, microbatches, zero_stage, recompute, recompute_layers
    (full recompute: layers per model chunk)), the step-time parts
    (:data:`aisize.training.step_time.PARTS`), ``mfu``, ``tokens_per_s`` and every memory line
    item [B]; empty if nothing fits.

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473 (layout guidelines, sec. 3).
    """
    from aisize.precision import bytes_per_element

    m = resolve(model)
    acc = accelerator_record(accelerator)
    room = checks.number("headroom", headroom, low=0.0, high=1.0, high_inclusive=False)
    top = int(checks.scalar("top", checks.integer("top", top, high=10**6)))
    n = int(checks.scalar("gpus", checks.integer("gpus", gpus, high=10**7)))
    gb = int(checks.scalar("global_batch", checks.integer("global_batch", global_batch, high=10**9)))
    compiled = checks.flag("compiled", compiled)
    if qlora and lora_rank is None:
        raise ValueError("qlora=True is not allowed without lora_rank: QLoRA trains LoRA adapters")
    links = default_links(acc, scaleup_bytes_per_s=scaleup_bytes_per_s, scaleout_bytes_per_s=scaleout_bytes_per_s,
                          scaleup_domain=scaleup_domain, oversubscription=oversubscription, switch_radix=switch_radix)
    eng = engine(acc, precision=precision, framework=framework, optimizer=optimizer, links=links,
                 calibration=resolve_calibration(calibration))
    k = ModelSizes.of(m)
    units = k.tensor_parallel_units  # TP divides the heads (a hybrid's Mamba-2 heads and groups too)
    stages = FRAMEWORK_STAGES[framework] if stages is None or not len(stages) else tuple(stages)
    for z in stages:
        if z not in FRAMEWORK_STAGES[framework]:
            raise ValueError(f"stages={stages!r} is not allowed: framework {framework!r} offers ZeRO stages "
                             f"{FRAMEWORK_STAGES[framework]}")
    space = SearchSpace(stages, tuple(recomputes), micro_batches, context_parallel, tuple(schedules), virtual_stages)
    grid = grid_of(n, k, space, global_batch=gb, seq_len=seq_len, scaleup_domain=links.scaleup_domain)
    if grid.count == 0:
        what = "the heads and Mamba-2 heads and groups" if m.mamba_layers else "the heads"
        raise ValueError(f"global_batch={gb!r} is not allowed for gpus={n!r}: no TP x PP x CP x DP layout splits it "
                         f"into whole micro-batches (DP must divide the global batch; TP must divide "
                         f"{units}, {what}; CP the sequence)")
    frozen = bytes_per_element("nf4" if qlora else "bf16") if lora_rank is not None else 0.0
    opt = search_options(eng, framework=framework, compiled=compiled, async_tp=async_tp, cp_method=cp_method,
                         lora_rank=lora_rank, frozen_dtype_bytes=frozen)
    peak, step = evaluate(m, eng, opt, grid.layouts(), memory="peak")
    usable = (acc.memory_visible_bytes or acc.memory_bytes) * (1.0 - room)
    frame = layout_frame(m, grid, peak, step, usable, eng, opt, top=top)
    frame.attrs.update(model=m, framework=framework)  # what chosen_layout needs to rebuild a row's layout
    return frame


def chosen_layout(frame, i: int = 0) -> TrainingLayout:
    """Row ``i`` (0: the fastest) of a :func:`search_layouts` frame as a
    :class:`~aisize.training.parallel.TrainingLayout`, to pass to ``estimate(..., layout=...)``."""
    if not 0 <= i < len(frame):
        raise ValueError(f"i={i!r} is not allowed: the search returned {len(frame)} layouts (0 to {len(frame) - 1})")
    return TrainingLayout.from_search(frame.iloc[i], frame.attrs["model"], framework=frame.attrs["framework"])
