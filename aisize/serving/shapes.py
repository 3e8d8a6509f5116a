"""Replica shapes: how a replica's GPUs are split into tensor, pipeline, expert and attention-DP groups.

A replica of ``tensor_parallel x pipeline_parallel`` GPUs runs ``pipeline_parallel``
stages of ``tensor_parallel`` GPUs. Inside a stage, attention and dense layers are
tensor-parallel over ``tensor_parallel / attention_dp`` GPUs, repeated in
``attention_dp`` data-parallel groups that each serve their own sequences, and the
routed experts of an MoE model spread over all the stage's GPUs (expert
parallelism, DeepSeek-V3's and TensorRT-LLM's "attention DP" layout [1, 2]).

Tensor parallelism needs the heads to split evenly; it should stay inside one
scale-up (NVLink) domain, and pipeline stages may cross servers: their activations
then travel over the scale-out network [3].

References
----------
.. [1] DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", arXiv:2412.19437, sec. 3.4
       (attention DP with expert parallelism for decoding).
.. [2] TensorRT-LLM documentation, "Expert parallelism" and ``enable_attention_dp``.
.. [3] Narayanan et al. 2021, arXiv:2104.04473, sec. 3 (TP inside a server, PP across).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from aisize import checks


@dataclass(frozen=True)
class ReplicaShape:
    """GPUs per stage, attention data-parallel groups, stages, and the link between stages."""

    tensor_parallel: int  # GPUs per pipeline stage
    attention_dp: int = 1
    pipeline_parallel: int = 1
    stage_link_bytes_per_s: float | None = None  # None: the scale-up link
    expert_parallel: int | None = None  # GPUs of a stage the routed experts spread over (None: all)
    scaleup_domain: int | None = None  # set where a stage spans servers: GPUs per scale-up domain
    scaleout_bytes_per_s: float | None = None  # and their scale-out rate per GPU per direction

    @property
    def gpus(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def attention_tp(self) -> int:
        return self.tensor_parallel // self.attention_dp

    def kv_split(self, kv_heads: int) -> int:
        """GPUs of an attention-DP rank one token's KV is split over: its attention TP, up to the KV heads
        (beyond them heads are replicated; an MLA latent has one)."""
        return min(self.attention_tp, kv_heads)

    def kwargs(self) -> dict:
        """Keyword arguments of the iteration model."""
        return dict(gpus=self.tensor_parallel, attention_dp=self.attention_dp,
                    pipeline_parallel=self.pipeline_parallel, stage_link_bytes_per_s=self.stage_link_bytes_per_s,
                    expert_parallel=self.expert_parallel, scaleup_domain=self.scaleup_domain,
                    scaleout_bytes_per_s=self.scaleout_bytes_per_s)

    @property
    def experts_over(self):
        """GPUs the routed experts spread over (expert parallelism) [count]."""
        return self.tensor_parallel if self.expert_parallel is None else self.expert_parallel


class ShapeGrid(ReplicaShape):
    """A :class:`ReplicaShape` whose fields are arrays, to evaluate many shapes in one call."""

    def __init__(self, tensor_parallel, attention_dp, pipeline_parallel, stage_link_bytes_per_s=None,
                 expert_parallel=None):  # noqa: D107
        object.__setattr__(self, "tensor_parallel", tensor_parallel)
        object.__setattr__(self, "attention_dp", attention_dp)
        object.__setattr__(self, "pipeline_parallel", pipeline_parallel)
        object.__setattr__(self, "stage_link_bytes_per_s", stage_link_bytes_per_s)
        object.__setattr__(self, "expert_parallel", expert_parallel)

    @classmethod
    def of(cls, shapes, nvlink_bytes_per_s: float) -> "ShapeGrid":
        """A column grid (n x 1 arrays) of a list of shapes; stages on NVLink get ``nvlink_bytes_per_s``."""
        def col(field):
            return np.array([getattr(s, field) for s in shapes], dtype=float)[:, None]

        links = np.array([s.stage_link_bytes_per_s or nvlink_bytes_per_s for s in shapes], dtype=float)[:, None]
        return cls(col("tensor_parallel"), col("attention_dp"), col("pipeline_parallel"), links)


def placed(shape: ReplicaShape, scaleup_domain: int, scaleout_bytes_per_s) -> ReplicaShape:
    """``shape`` on servers of ``scaleup_domain`` GPUs: a stage wider than the domain spans servers, and its
    collectives cross their NICs (``scaleout_bytes_per_s`` per GPU; a callable is asked only then)."""
    if shape.tensor_parallel <= scaleup_domain:
        return shape
    rate = scaleout_bytes_per_s() if callable(scaleout_bytes_per_s) else scaleout_bytes_per_s
    return replace(shape, scaleup_domain=int(scaleup_domain), scaleout_bytes_per_s=float(rate))


def check_shape(model, *, tensor_parallel, attention_dp, pipeline_parallel, expert_parallel=None) -> None:
    """Raise a clear ValueError when a shape cannot hold the model."""
    tp = checks.integer("tensor_parallel", tensor_parallel, high=4096)
    dp = checks.integer("attention_dp", attention_dp, high=4096)
    pp = checks.integer("pipeline_parallel", pipeline_parallel, high=1024)
    if expert_parallel is not None:
        ep = checks.integer("expert_parallel", expert_parallel, high=4096)
        if tp % ep:
            raise ValueError(f"expert_parallel={expert_parallel!r} is not allowed: must divide tensor_parallel="
                             f"{tensor_parallel} (the GPUs of a stage the experts spread over)")
        if ep > 1 and ep > model.experts:
            raise ValueError(f"expert_parallel={expert_parallel!r} is not allowed for {model.id!r}: at most its "
                             f"{model.experts} routed experts (each rank holds at least one)")
        if ep > 1 and model.experts <= 1:
            raise ValueError(f"expert_parallel={expert_parallel!r} is not allowed for {model.id!r}: a dense model "
                             f"has no routed experts (use 1)")
    if tp % dp:
        raise ValueError(f"attention_dp={attention_dp!r} is not allowed: must divide tensor_parallel={tensor_parallel}")
    if model.heads % (tp // dp):
        raise ValueError(f"tensor_parallel={tensor_parallel!r} is not allowed for {model.id!r}: attention is split "
                         f"over {tp // dp} GPUs, which must divide its {model.heads} heads")
    if pp > model.layers:
        raise ValueError(f"pipeline_parallel={pipeline_parallel!r} is not allowed: must be at most the "
                         f"model's {model.layers} layers")


def expert_slots(experts, expert_parallel):
    """Expert slots over ``expert_parallel`` ranks: the routed experts, or, where EP does not divide them,
    the next multiple of EP, the extra slots holding redundant copies of the busiest experts (SGLang's
    ``--ep-num-redundant-experts`` with its expert-parallel load balancer, EPLB [1]; DeepSeek serves its 256
    experts in 288 slots [2]). Each rank holds ``slots / EP`` experts and the router spreads a hot expert's
    tokens over its copies, so the load per slot is the tokens' expert assignments over the slots [count].

    .. [1] SGLang server arguments, ``--ep-num-redundant-experts`` and ``--enable-eplb``
           (docs.sglang.ai, "Server Arguments", expert parallelism).
    .. [2] DeepSeek-V3 technical report, arXiv:2412.19437, sec. 3.4 (redundant experts in decoding) and
           deepseek-ai/EPLB README (redundant experts, 288 physical slots in its example of 256 + 32).
    """
    e = np.asarray(experts, dtype=float)
    ep = np.maximum(np.asarray(expert_parallel, dtype=float), 1.0)
    return np.ceil(e / ep) * ep


def attention_dp_choices(model, tensor_parallel: int) -> list[int]:
    """Attention-DP degrees worth trying: 1 for dense models; for MoE the two layouts engines ship,
    attention tensor-parallel over the stage (1) or data-parallel over it (every GPU its own group)."""
    if model.experts <= 1:
        return [1]
    return sorted({d for d in (1, tensor_parallel) if model.heads % (tensor_parallel // d) == 0})


def expert_parallel_choices(model, tensor_parallel: int) -> list[int]:
    """Expert-parallel degrees worth trying: 1 for dense models; for MoE the two layouts engines default
    to, every expert split over the stage (expert TP, 1) or whole experts spread over it (EP = the stage),
    where the experts divide evenly."""
    if model.experts <= 1:
        return [1]
    return sorted({d for d in (1, tensor_parallel) if model.experts % d == 0})


@dataclass(frozen=True)
class EngineLayouts:
    """How an engine's published deployment recipes lay a replica out (docs/engine-shapes.md): the flags that
    give an MoE model data-parallel attention with expert parallelism, and pipeline stages across servers."""

    attention_dp: str  # the launch flags of attention DP + EP (an MoE model's other layout is TP + EP)
    pipeline: str  # the launch flag of pipeline stages, each stage one server's (scale-up domain's) TP group
    source: str


# the layouts engines publish for MoE and multi-server models (docs/engine-shapes.md lists the recipes); TP stays
# inside one scale-up domain in every recipe, and no recipe pipelines the GPUs of one server or combines
# attention DP with pipeline stages
ENGINE_LAYOUTS = {
    "vllm": EngineLayouts(
        "--data-parallel-size N --enable-expert-parallel", "--pipeline-parallel-size (one stage per node)",
        "vLLM recipes, DeepSeek-V3/R1 usage guide (TP8+EP or DP8+EP on 8 GPUs); vLLM docs, parallelism and "
        "scaling (TP inside a node, PP across nodes)"),
    "sglang": EngineLayouts(
        "--tp N --dp N --enable-dp-attention (--ep N)", "--pp-size",
        "SGLang docs, DeepSeek V3/V3.1/R1 usage (--tp 8 on 8 x H200/B200; --enable-dp-attention for throughput)"),
    "trtllm": EngineLayouts(
        "enable_attention_dp: true, moe_expert_parallel_size N", "pipeline_parallel_size",
        "TensorRT-LLM deployment guide for DeepSeek R1 (B200: TP8 + EP8, attention DP for max throughput, TP8 "
        "without it for min latency)"),
}
ENGINE_LAYOUTS["trtllm-bench"] = ENGINE_LAYOUTS["trtllm"]


def engine_runs(shape: ReplicaShape, widest_tensor_parallel: int) -> bool:
    """Whether ``shape`` is a layout the engines' recipes run (:data:`ENGINE_LAYOUTS`): pipeline stages only
    at the widest tensor parallelism the scale-up domain allows (``widest_tensor_parallel``: a stage is a
    whole server's TP group, as vLLM's ``TP 8 x PP 2`` over two nodes), and attention DP only without
    pipeline stages. A replica that fits one scale-up domain is TP (or attention DP + EP) over it, never
    pipelined across its own GPUs."""
    if shape.pipeline_parallel > 1 and shape.tensor_parallel < widest_tensor_parallel:
        return False
    return not (shape.attention_dp > 1 and shape.pipeline_parallel > 1)


def pipeline_for_capacity(shapes, fits) -> np.ndarray:
    """``fits`` (which ``shapes`` hold the model) less the pipelined shapes where one stage holds it: the engines
    add pipeline stages for a model too large for one node, not for throughput (vLLM, "Parallelism and scaling":
    TP inside a node, PP across nodes when the model does not fit one; docs/engine-shapes.md)."""
    fits = np.asarray(fits, dtype=bool)
    staged = np.array([s.pipeline_parallel > 1 for s in shapes], dtype=bool)
    return fits & ~staged if (fits & ~staged).any() else fits


def divisors(n: int) -> np.ndarray:
    k = np.arange(1, n + 1)
    return k[n % k == 0]
