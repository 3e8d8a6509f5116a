"""A training layout as one value: degrees, schedule, batches, recompute and ZeRO stage, checked once.

:class:`TrainingLayout` plays the part of torchtitan's ``ParallelDims``: it holds the degrees
(TP, PP, VP, CP, DP, EP, expert TP), checks them once where it is built, against a model and a
GPU count, and derives the rest (DP, the non-data-parallel size, expert DP, the pipeline
micro-batch, gradient accumulation). :func:`aisize.training.estimate` builds one (or takes one),
the layout search's rows turn into one (:meth:`TrainingLayout.from_search`), and the planner can
pass the chosen one on.

The consistency rules are written once, in :data:`RULES`: each is a predicate that takes numpy
arrays or scalars alike, with the message a refused layout gets. :class:`TrainingLayout` raises
the first rule a layout breaks; :func:`aisize.training.layout.layout_grid` ANDs them all over a
broadcast grid (:func:`holds`). So the search and the estimate cannot disagree on a layout.

Batch conventions (torchtitan's): ``micro_batch`` is the sequences one data-parallel rank runs
forward and backward at once (its local batch), split into ``pipeline_microbatches`` for the
pipeline; ``global_batch`` over ``micro_batch`` x DP is the gradient-accumulation steps.
The value, who builds it and who reads it: docs/training-layout.md.

References
----------
.. [1] pytorch/torchtitan ``torchtitan/distributed/parallel_dims.py`` (``ParallelDims``: the
   degrees validated once, ``dp_shard = world_size / (dp_replicate x cp x tp x pp)``,
   ``non_data_parallel_size``, the expert mesh folded onto the dense one).
.. [2] Narayanan et al. 2021, arXiv:2104.04473, sec. 2-3 (TP, PP, interleaving, micro-batches).
.. [3] Liu et al. 2025, arXiv:2504.14960 (MoE parallel folding: EP x expert-TP x expert-DP
   splits the TP x CP x DP GPUs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import reduce
from typing import Callable, NamedTuple

import numpy as np

from aisize import checks
from aisize.memory.states import FRAMEWORK_STAGES
from aisize.training.dims import resolve
from aisize.training.moe import DISPATCHERS
from aisize.training.recompute import check_modules, full_share
from aisize.training.schedules import SCHEDULE_CODES, SCHEDULES
from aisize.training.setup import DEFAULT_GRAD_REDUCE, GRAD_REDUCE_PRECISIONS

RECOMPUTE = ("none", "selective", "full")
FRAMEWORKS = ("fsdp", "megatron", "zero", "deepspeed")
DEFAULT_ZERO_STAGE = {"fsdp": 3, "megatron": 1, "zero": 1, "deepspeed": 2}
DEFAULT_VIRTUAL_STAGES = 2  # torchtitan's default for looped schedules (stages per rank)
INTERLEAVED = SCHEDULE_CODES["interleaved-1f1b"]


class ModelSizes(NamedTuple):
    """What the layout rules read of a model."""

    id: str
    layers: int
    heads: int
    mamba_heads: int  # 0 without Mamba-2 layers
    mamba_groups: int
    experts: int  # routed experts (1: dense)
    expert_ffn: int  # one routed expert's inner size (0 if dense)

    @classmethod
    def of(cls, m) -> "ModelSizes":
        hybrid = bool(m.mamba_layers)
        return cls(m.id, m.layers, m.heads, (m.mamba_heads or 0) if hybrid else 0,
                   (m.mamba_groups or 0) if hybrid else 0, m.experts, m.moe_ffn_hidden or 0)

    @property
    def tensor_parallel_units(self) -> int:
        """What TP must divide (the heads; a hybrid's Mamba-2 heads and groups too)."""
        return math.gcd(self.heads, self.mamba_heads, self.mamba_groups)


class Degrees(NamedTuple):
    """One layout's or a grid's degrees and batches (ints or broadcastable int arrays)."""

    gpus: object
    tp: object
    pp: object
    cp: object
    dp: object  # gpus // (tp pp cp); 0 where that does not divide
    ep: object
    etp: object
    schedule: object  # code in aisize.training.schedules.SCHEDULES
    v: object  # model chunks per stage
    slots: object  # pipeline layers: transformer layers (+1 embedding, +1 loss when counted)
    extra_slots: object  # embedding and loss slots counted in the pipeline split
    micro_batch: object  # sequences per data-parallel rank per forward/backward
    microbatches: object  # pipeline micro-batches the local batch is split into
    global_batch: object
    seq_len: object


class Rule(NamedTuple):
    topic: str  # what the rule is about: gpus, pipeline, context, tensor, experts, schedule, batch
    holds: Callable  # (Degrees, ModelSizes) -> bool or bool array
    says: Callable  # (Degrees, ModelSizes) -> the refusal, naming the parameter, value and allowed range


RULES = (
    Rule("gpus", lambda d, k: d.gpus % (d.tp * d.pp * d.cp) == 0,
         lambda d, k: f"gpus={d.gpus} is not allowed: it must be a multiple of tensor_parallel x pipeline_parallel "
                      f"x context_parallel = {d.tp * d.pp * d.cp}"),
    Rule("pipeline", lambda d, k: d.pp <= k.layers,
         lambda d, k: f"pipeline_parallel={d.pp} is not allowed: at most the {k.layers} layers"),
    Rule("context", lambda d, k: d.seq_len % d.cp == 0,
         lambda d, k: f"context_parallel={d.cp} is not allowed: it must divide seq_len={d.seq_len}"),
    Rule("tensor", lambda d, k: k.heads % d.tp == 0,
         lambda d, k: f"tensor_parallel={d.tp} is not allowed: it must divide the {k.heads} attention heads"),
    # Megatron-LM MambaMixer: "nheads / ngroups must be evenly divisible by tp_size"
    Rule("tensor", lambda d, k: (k.mamba_heads % d.tp == 0) & (k.mamba_groups % d.tp == 0),
         lambda d, k: f"tensor_parallel={d.tp} is not allowed: it must divide the {k.mamba_heads} Mamba-2 heads "
                      f"and the {k.mamba_groups} Mamba-2 groups (Megatron-LM splits both over TP); allowed: the "
                      f"divisors of {k.tensor_parallel_units}"),
    Rule("context", lambda d, k: (k.mamba_heads // d.tp) % d.cp == 0,
         lambda d, k: f"context_parallel={d.cp} is not allowed: with tensor_parallel={d.tp} it must divide the "
                      f"{k.mamba_heads // d.tp} Mamba-2 heads per TP rank (Megatron-LM's MambaContextParallel "
                      f"splits the heads over CP: 'nheads must be evenly divisible by tp_size * cp_size')"),
    Rule("experts", lambda d, k: (d.ep == 1) | (k.experts > 1),
         lambda d, k: f"expert_parallel={d.ep} is not allowed: {k.id} has no routed experts"),
    Rule("experts", lambda d, k: (k.experts <= 1) | (k.experts % d.ep == 0),
         lambda d, k: f"expert_parallel={d.ep} is not allowed: it must divide the {k.experts} routed experts"),
    Rule("experts", lambda d, k: (d.tp * d.cp * d.dp) % (d.ep * d.etp) == 0,  # MoE parallel folding [3]
         lambda d, k: f"expert_parallel={d.ep} x expert_tensor_parallel={d.etp} is not allowed: it must divide "
                      f"tensor_parallel x context_parallel x data parallel = {d.tp} x {d.cp} x {d.dp} (the expert "
                      "layers fold onto the same GPUs)"),
    Rule("experts", lambda d, k: (k.experts <= 1) | (k.expert_ffn % d.etp == 0),
         lambda d, k: f"expert_tensor_parallel={d.etp} is not allowed: it must divide the experts' inner size "
                      f"{k.expert_ffn}"),
    Rule("schedule", lambda d, k: (d.extra_slots == 0) | (d.pp > 1),
         lambda d, k: "embedding_in_pipeline_split / loss_in_pipeline_split=True is not allowed with "
                      "pipeline_parallel=1: they count as layers of a pipeline split"),
    Rule("schedule", lambda d, k: (d.schedule == INTERLEAVED) | (d.v == 1),
         lambda d, k: f"virtual_stages={d.v} is not allowed with schedule={SCHEDULES[d.schedule]!r}: only "
                      "'interleaved-1f1b' splits a stage into chunks (use 1)"),
    Rule("schedule", lambda d, k: (d.schedule != INTERLEAVED) | (d.pp >= 2),
         lambda d, k: f"schedule='interleaved-1f1b' is not allowed with pipeline_parallel={d.pp}: interleaving "
                      "needs at least 2 pipeline stages"),
    Rule("schedule", lambda d, k: (d.schedule != INTERLEAVED) | (d.v >= 2),
         lambda d, k: f"virtual_stages={d.v} is not allowed with schedule='interleaved-1f1b': give 2 or more "
                      "model chunks per stage"),
    # Megatron-LM's rule: where PP divides the layers, VP divides the layers per stage
    Rule("schedule", lambda d, k: (d.schedule != INTERLEAVED) | (d.slots % d.pp != 0) | ((d.slots // d.pp) % d.v == 0),
         lambda d, k: f"virtual_stages={d.v} is not allowed: it must divide the {d.slots // d.pp} layers per "
                      f"pipeline stage ({d.slots} layers over pipeline_parallel={d.pp})"),
    Rule("schedule", lambda d, k: (d.schedule != INTERLEAVED) | (d.slots >= d.pp * d.v),
         lambda d, k: f"virtual_stages={d.v} is not allowed: {d.slots} layers cannot fill "
                      f"pipeline_parallel x virtual_stages = {d.pp * d.v} chunks"),
    Rule("batch", lambda d, k: ((d.micro_batch * d.dp > 0)
                                & (d.global_batch % np.maximum(d.micro_batch * d.dp, 1) == 0)),
         lambda d, k: f"global_batch={d.global_batch} is not allowed: it must be a multiple of micro_batch x data "
                      f"parallel = {d.micro_batch} x {d.dp}"),
    Rule("batch", lambda d, k: d.micro_batch % d.microbatches == 0,
         lambda d, k: f"pipeline_microbatches={d.microbatches} is not allowed: it must divide "
                      f"micro_batch={d.micro_batch}"),
)


class LayoutError(ValueError):
    """A layout that breaks a rule; ``rule`` is the one it broke first."""

    def __init__(self, message: str, rule: Rule):
        super().__init__(message)
        self.rule = rule


def check(d: Degrees, k: ModelSizes, topics=None) -> None:
    """Raise the :class:`LayoutError` of the first rule (of ``topics``, default all) one layout breaks."""
    for rule in RULES:
        if (topics is None or rule.topic in topics) and not rule.holds(d, k):
            raise LayoutError(rule.says(d, k), rule)


def holds(d: Degrees, k: ModelSizes):
    """Whether each layout of ``d`` keeps every rule (a bool, or a bool array at the broadcast shape of
    the rules' results; the smaller ones are combined first, so a large grid is touched once per rule)."""
    results = [r for r in (rule.holds(d, k) for rule in RULES) if np.ndim(r) or not r]  # a scalar True adds nothing
    return reduce(np.logical_and, sorted(results, key=np.size), True)


def data_parallel(gpus, tp, pp, cp):
    """DP = GPUs / (TP x PP x CP) [count]; 0 where that does not divide (torchtitan's ``dp_shard``)."""
    tpc = tp * pp * cp
    return np.where(gpus % tpc == 0, gpus // tpc, 0)


def chunk_layers(slots, pp, virtual_stages):
    """Layers of one model chunk: ceil(slots / (PP x VP)) (uneven stages allowed)."""
    return -(-slots // (pp * virtual_stages))


def _int(name, value, high, low=1):
    return int(checks.scalar(name, checks.integer(name, value, low=low, high=high)))


@dataclass(frozen=True, kw_only=True)
class TrainingLayout:
    """One consistent training layout of one model on ``gpus`` GPUs (see the module's docstring).

    ``None`` fields take their defaults where the layout is built: expert TP = TP (Megatron-Core's),
    2 chunks per stage for "interleaved-1f1b", one pipeline micro-batch per stage, the framework's
    ZeRO stage and gradient-reduction precision, sequence parallelism where TP > 1, Megatron's
    ``("core_attn",)`` selective recompute. ``moe_dispatcher`` None: the hardware's default,
    resolved by :func:`aisize.training.estimate`. The parameters are those of
    :func:`aisize.training.estimate`; an inconsistent layout is a ``ValueError`` naming the
    parameter, its value and what is allowed.
    """

    model: object = field(repr=False)  # catalog id or Transformer record; kept as the resolved record
    gpus: int
    micro_batch: int  # sequences per data-parallel rank per forward/backward
    global_batch: int  # sequences per optimizer step
    seq_len: int  # tokens per sequence
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    context_parallel: int = 1
    expert_parallel: int = 1
    expert_tensor_parallel: int | None = None
    schedule: str = "1f1b"
    virtual_stages: int | None = None
    pipeline_microbatches: int | None = None
    recompute: str = "selective"
    recompute_layers: int | None = None  # full recompute: layers per model chunk (None: all)
    recompute_modules: tuple | None = None  # selective recompute: Megatron-Core's modules
    framework: str = "fsdp"
    zero_stage: int | None = None
    sequence_parallel: bool | None = None
    embedding_in_pipeline_split: bool = False
    loss_in_pipeline_split: bool = False
    activation_offload_layers: int = 0  # layers per stage whose activations wait in host memory
    grad_reduce_precision: str | None = None
    moe_dispatcher: str | None = None
    data_parallel: int = field(init=False)
    accumulation: int = field(init=False)  # gradient-accumulation steps per optimizer step
    recompute_share: float = field(init=False)  # share of a chunk's layers full recompute re-runs

    def __post_init__(self):
        put = object.__setattr__
        m = resolve(self.model)
        put(self, "model", m)
        n = _int("gpus", self.gpus, 10**7)
        tp = _int("tensor_parallel", self.tensor_parallel, 10**4)
        pp = _int("pipeline_parallel", self.pipeline_parallel, 10**4)
        cp = _int("context_parallel", self.context_parallel, 10**5)
        ep = _int("expert_parallel", self.expert_parallel, 10**5)
        etp = tp if self.expert_tensor_parallel is None else _int("expert_tensor_parallel",
                                                                  self.expert_tensor_parallel, 10**4)
        s = _int("seq_len", self.seq_len, 10**8)
        b = _int("micro_batch", self.micro_batch, 10**6)
        gb = _int("global_batch", self.global_batch, 10**9)
        schedule = checks.choice("schedule", self.schedule, SCHEDULES)
        embed = bool(checks.flag("embedding_in_pipeline_split", self.embedding_in_pipeline_split))
        loss = bool(checks.flag("loss_in_pipeline_split", self.loss_in_pipeline_split))
        v = self.virtual_stages
        v = _int("virtual_stages", (DEFAULT_VIRTUAL_STAGES if schedule == "interleaved-1f1b" else 1)
                 if v is None else v, 10**3)
        n_pipe = self.pipeline_microbatches
        n_pipe = _int("pipeline_microbatches", (pp if pp > 1 else 1) if n_pipe is None else n_pipe, 10**6)
        recompute = checks.choice("recompute", self.recompute, RECOMPUTE)
        framework = checks.choice("framework", self.framework, FRAMEWORKS)
        dp = n // (tp * pp * cp)
        k = ModelSizes.of(m)
        d = Degrees(n, tp, pp, cp, dp, ep, etp, SCHEDULE_CODES[schedule], v, m.layers + embed + loss,
                    embed + loss, b, n_pipe, gb, s)
        check(d, k)
        share = full_share(recompute, self.recompute_layers, int(chunk_layers(d.slots, pp, v)))
        modules = check_modules(recompute, self.recompute_modules, moe=m.experts > 1, mla=m.attention == "mla")
        default = check_modules(recompute, None, moe=False, mla=False)
        if self.recompute_modules is not None and framework == "fsdp" and modules != default:
            raise ValueError(f"recompute_modules={modules!r} is not allowed with framework='fsdp': PyTorch's "
                             "selective recompute is op-level (torchtitan); modules are Megatron-Core's")
        stage = DEFAULT_ZERO_STAGE[framework] if self.zero_stage is None else _int("zero_stage", self.zero_stage,
                                                                                    3, low=0)
        if stage not in FRAMEWORK_STAGES[framework]:
            raise ValueError(f"zero_stage={stage} is not allowed: framework {framework!r} offers stages "
                             f"{FRAMEWORK_STAGES[framework]}")
        sp = tp > 1 if self.sequence_parallel is None else checks.flag("sequence_parallel", self.sequence_parallel)
        offload = self.activation_offload_layers
        offload = _int("activation_offload_layers", offload, 10**5) if offload else 0
        per_stage = -(-m.layers // pp)
        if offload >= per_stage:
            raise ValueError(f"activation_offload_layers={offload} is not allowed: at most {per_stage - 1} of the "
                             f"{per_stage} layers of a pipeline stage (one stays on the GPU for backward)")
        grad_reduce = DEFAULT_GRAD_REDUCE[framework] if self.grad_reduce_precision is None else checks.choice(
            "grad_reduce_precision", self.grad_reduce_precision, GRAD_REDUCE_PRECISIONS)
        dispatcher = None if self.moe_dispatcher is None else checks.choice("moe_dispatcher", self.moe_dispatcher,
                                                                            DISPATCHERS)
        for name, value in (("gpus", n), ("tensor_parallel", tp), ("pipeline_parallel", pp),
                            ("context_parallel", cp), ("expert_parallel", ep), ("expert_tensor_parallel", etp),
                            ("seq_len", s), ("micro_batch", b), ("global_batch", gb), ("virtual_stages", v),
                            ("pipeline_microbatches", n_pipe), ("schedule", schedule), ("recompute", recompute),
                            ("recompute_layers", None if self.recompute_layers is None else int(self.recompute_layers)),
                            ("recompute_modules", modules), ("framework", framework), ("zero_stage", stage),
                            ("sequence_parallel", bool(sp)), ("embedding_in_pipeline_split", embed),
                            ("loss_in_pipeline_split", loss), ("activation_offload_layers", offload),
                            ("grad_reduce_precision", grad_reduce), ("moe_dispatcher", dispatcher),
                            ("data_parallel", dp), ("accumulation", gb // (b * dp)), ("recompute_share", share)):
            put(self, name, value)

    # torchtitan ParallelDims-like short names and derived sizes
    @property
    def tp(self) -> int:
        return self.tensor_parallel

    @property
    def pp(self) -> int:
        return self.pipeline_parallel

    @property
    def vp(self) -> int:
        """Model chunks per pipeline stage (1 without interleaving)."""
        return self.virtual_stages

    @property
    def cp(self) -> int:
        return self.context_parallel

    @property
    def dp(self) -> int:
        return self.data_parallel

    @property
    def ep(self) -> int:
        return self.expert_parallel

    @property
    def etp(self) -> int:
        return self.expert_tensor_parallel

    @property
    def non_data_parallel_size(self) -> int:
        """TP x PP x CP: the GPUs one data-parallel replica spans (torchtitan's name)."""
        return self.tensor_parallel * self.pipeline_parallel * self.context_parallel

    @property
    def expert_data_parallel(self) -> int:
        """Expert DP: TP x CP x DP / (EP x expert TP), the replicas of each expert shard (folding [3])."""
        return self.tensor_parallel * self.context_parallel * self.data_parallel // (
            self.expert_parallel * self.expert_tensor_parallel)

    @property
    def pipeline_micro_batch(self) -> int:
        """Sequences per pipeline micro-batch: micro_batch / pipeline_microbatches."""
        return self.micro_batch // self.pipeline_microbatches

    @property
    def chunk_layers(self) -> int:
        """Pipeline layers of one model chunk, rounded up."""
        slots = self.model.layers + self.embedding_in_pipeline_split + self.loss_in_pipeline_split
        return int(chunk_layers(slots, self.pipeline_parallel, self.virtual_stages))

    @property
    def model_id(self) -> str:
        return self.model.id

    @classmethod
    def from_search(cls, row, model, *, framework: str = "fsdp") -> "TrainingLayout":
        """The layout of one row of :func:`aisize.training.search_layouts` (a Series or a mapping).

        The search counts ``micro_batch`` per pipeline micro-batch and runs the global batch as
        one pipeline flush of ``microbatches``; as a layout that is a local batch of
        micro_batch x microbatches split into ``microbatches`` (no gradient accumulation), so
        :func:`aisize.training.estimate` of it evaluates what the search evaluated.
        """
        r = {name: row[name] for name in ("gpus", "global_batch", "seq_len", "tp", "pp", "cp", "ep",
                                           "expert_tensor_parallel", "schedule", "virtual_stages", "micro_batch",
                                           "microbatches", "zero_stage", "recompute", "recompute_layers")}
        full = r["recompute"] == "full"
        return cls(model=model, gpus=int(r["gpus"]), tensor_parallel=int(r["tp"]), pipeline_parallel=int(r["pp"]),
                   context_parallel=int(r["cp"]), expert_parallel=int(r["ep"]),
                   expert_tensor_parallel=int(r["expert_tensor_parallel"]), schedule=str(r["schedule"]),
                   virtual_stages=int(r["virtual_stages"]),
                   micro_batch=int(r["micro_batch"]) * int(r["microbatches"]),
                   pipeline_microbatches=int(r["microbatches"]), global_batch=int(r["global_batch"]),
                   seq_len=int(r["seq_len"]), recompute=str(r["recompute"]),
                   recompute_layers=int(r["recompute_layers"]) if full else None, framework=framework,
                   zero_stage=int(r["zero_stage"]))
