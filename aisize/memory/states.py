"""Model states per GPU: weights, gradients, fp32 master copy, optimizer moments.

A framework profile says which per-parameter components it keeps and from
which ZeRO stage each is sharded over the data-parallel group (N_d) or becomes
transient (gathered only while a layer runs; :mod:`aisize.training.memory`
books that as a temporary buffer). Stage k shards: 1 the optimizer side
(master + moments), 2 also gradients, 3 also weights.

======== ========================================= ======================== ===============
profile  components [B/param, mixed precision Adam] stages                   source
======== ========================================= ======================== ===============
zero     w 2, g 2, master 4, moments 8 (16 total)  0 16, 1 4+12/N_d,        ZeRO paper
                                                   2 2+14/N_d, 3 16/N_d     (arXiv:1910.02054 sec. 5, Fig. 1)
megatron w 2, fp32 main-grad 4, master 4, m 8     0 18, 1 6+12/N_d          Megatron-LM docs
         (18 total; a bf16 main-grad: 2, 16 total)  (distributed optimizer)  distrib_optimizer.md
deepspeed w 2, g16 2, fp32 grad 4, master 4, m 8   2: 2+18/N_d, 3: 18/N_d   DeepSpeed stage_1_and_2.py /
                                                   (+ 4 x largest layer)    stage3.py memory estimators
fsdp     bf16 copy 2, fp32 grad 4, fp32 param 4,   0 18, 2 2+16/N_d         PyTorch FSDP MixedPrecision
         m 8                                       3 16/N_d (+ gathered)    (fp32 flat params, fp32 grads)
======== ========================================= ======================== ===============

Offload (ZeRO-Offload, arXiv:2101.06840; ZeRO-Infinity, arXiv:2104.07857):
optimizer offload moves the fp32 side (master, moments, fp32 gradients) to
host RAM; parameter offload (stage 3 only) moves weights and gradients too.
LoRA/QLoRA (Hu et al. 2021, arXiv:2106.09685; Dettmers et al. 2023,
arXiv:2305.14314): the frozen base is stored at its dtype, no gradients or
optimizer state; the adapters carry the full training components.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from aisize import checks
from aisize.precision import optimizer as _optimizer
from aisize.precision import bytes_per_element, training_precision

NEVER = 99  # a stage no framework reaches: "never sharded" / "never transient"

# (breakdown field, byte source, shard from stage, transient from stage)
_COMPONENTS: dict[str, tuple[tuple[str, str, int, int], ...]] = {
    "zero": (("weights", "weight", 3, NEVER), ("gradients", "grad", 2, NEVER),
             ("master_weights", "master", 1, NEVER), ("optimizer_moments", "moments", 1, NEVER)),
    "megatron": (("weights", "weight", NEVER, NEVER), ("gradients", "main_grad", NEVER, NEVER),
                 ("master_weights", "master", 1, NEVER), ("optimizer_moments", "moments", 1, NEVER)),
    "deepspeed": (("weights", "weight", 3, NEVER), ("gradients", "grad", 2, 3),
                  ("gradients", "grad32_extra", 1, NEVER), ("master_weights", "master", 1, NEVER),
                  ("optimizer_moments", "moments", 1, NEVER)),
    "fsdp": (("weights", "weight_if_mixed", 3, 3), ("gradients", "main_grad", 2, NEVER),
             ("master_weights", "master_or_weight", 2, NEVER), ("optimizer_moments", "moments", 2, NEVER)),
}
FRAMEWORK_STAGES: dict[str, tuple[int, ...]] = {
    "zero": (0, 1, 2, 3), "megatron": (0, 1), "deepspeed": (0, 1, 2, 3), "fsdp": (0, 2, 3)}
FRAMEWORKS = tuple(_COMPONENTS)
_OFFLOADED_BY_OPTIMIZER = ("master_weights", "optimizer_moments", "grad32_extra")
_OFFLOADED_BY_PARAMS = ("weights", "gradients")


def tidy(obj) -> None:
    """Turn 0-d arrays and numpy scalars in a frozen result dataclass into floats."""
    for f in fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, (np.ndarray, np.generic)) and np.ndim(v) == 0 and not isinstance(v, np.bool_):
            object.__setattr__(obj, f.name, float(v))


@dataclass(frozen=True)
class ModelStates:
    """Model-state bytes on one GPU, and what offload puts in host RAM [B]."""

    weights_bytes: float
    gradients_bytes: float
    master_weights_bytes: float
    optimizer_moments_bytes: float
    host_bytes: float  # offloaded states, per GPU (host RAM per server = this x GPUs)

    def __post_init__(self):
        tidy(self)

    @property
    def total_bytes(self):
        """GPU bytes: weights + gradients + master + moments (host_bytes excluded)."""
        return self.weights_bytes + self.gradients_bytes + self.master_weights_bytes + self.optimizer_moments_bytes

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {"total_bytes": self.total_bytes}


def per_param_bytes(precision: str, optimizer: str, framework: str, main_grad_bytes: float = 4.0) -> dict[str, float]:
    """Bytes per trainable parameter of each component a framework keeps.

    Parameters
    ----------
    precision : a key of :data:`aisize.precision.TRAINING_PRECISIONS`
    optimizer : a key of :data:`aisize.precision.OPTIMIZERS`
    framework : one of :data:`FRAMEWORKS`
    main_grad_bytes : the gradient buffer Megatron-Core and FSDP accumulate and reduce in
        (4: fp32, ``grad_reduce_in_fp32``; 2: bf16, Megatron-Core's default)

    Returns
    -------
    {byte source: bytes per parameter} for this framework's components.

    References
    ----------
    .. [1] see the module docstring table.
    """
    p = training_precision(precision)
    o = _optimizer(optimizer)
    checks.choice("framework", framework, FRAMEWORKS)
    mixed = p.master_bytes > 0
    return {"weight": p.weight_bytes, "grad": p.gradient_bytes, "main_grad": float(main_grad_bytes),
            "grad32_extra": 4.0 if mixed else 0.0, "master": p.master_bytes,
            "weight_if_mixed": p.weight_bytes if mixed else 0.0,
            "master_or_weight": p.master_bytes if mixed else p.weight_bytes,
            "moments": o.moment_bytes}


def state_factors(dp, stage, *, framework, unit, trainable_share=1.0, frozen_bytes=0.0,
             offload_optimizer=False, offload_params=False) -> dict:
    """Vectorized core: bytes per parameter of the shard, per breakdown field and on the host.

    Model states are linear in the parameter count, so callers multiply these
    factors by the parameters of any shard. A share ``1 - trainable_share`` of the
    parameters is frozen (weights only, at ``frozen_bytes``).
    """
    share, kept = {}, {}
    out = {"weights": 0.0, "gradients": 0.0, "master_weights": 0.0, "optimizer_moments": 0.0, "host": 0.0}
    for field, source, shard_from, transient_from in _COMPONENTS[framework]:
        per_param = unit[source] * trainable_share
        if source in ("weight", "weight_if_mixed"):
            per_param = per_param + (1.0 - trainable_share) * frozen_bytes
        if np.all(per_param == 0.0):  # per_param is an array when the parameter counts are
            continue
        if shard_from not in share:
            share[shard_from] = np.where(stage >= shard_from, 1.0 / dp, 1.0) if shard_from < NEVER else 1.0
        factor = per_param * share[shard_from]
        if transient_from < NEVER:
            if transient_from not in kept:
                kept[transient_from] = stage < transient_from
            factor = factor * kept[transient_from]
        on_host = (offload_optimizer and (field in _OFFLOADED_BY_OPTIMIZER or source == "grad32_extra")) \
            or (offload_params and field in _OFFLOADED_BY_PARAMS)
        key = "host" if on_host else field
        out[key] = out[key] + factor
    return out


def states_of(params, factors: dict) -> ModelStates:
    """Model states of a shard of ``params`` parameters from :func:`state_factors`."""
    return ModelStates(params * factors["weights"], params * factors["gradients"],
                       params * factors["master_weights"], params * factors["optimizer_moments"],
                       params * factors["host"])


def model_states(trainable_params, *, precision: str = "bf16", optimizer: str = "adamw",
                 framework: str = "zero", zero_stage=0, dp=1, frozen_params=0.0,
                 frozen_dtype: str = "bf16", offload_optimizer: bool = False,
                 offload_params: bool = False) -> ModelStates:
    """Model-state memory of one GPU's model-parallel shard, ZeRO/FSDP-sharded over dp.

    Parameters
    ----------
    trainable_params : parameters this GPU's TP/PP/EP shard trains [count], > 0
    precision : fp32 | bf16 | fp16 | fp8 (mixed)
    optimizer : adamw | sgd | adam8bit | lion | adafactor
    framework : zero (paper, default) | megatron | deepspeed | fsdp
    zero_stage : 0-3, restricted to what the framework offers (megatron 0/1 =
        distributed optimizer off/on; fsdp 0 NO_SHARD, 2 SHARD_GRAD_OP, 3 FULL_SHARD)
    dp : data-parallel degree N_d that shards the states [count]
    frozen_params : frozen base parameters of a LoRA/QLoRA shard [count], >= 0
    frozen_dtype : storage dtype of the frozen base (bf16 for LoRA, nf4 for QLoRA)
    offload_optimizer : master, moments and fp32 gradients live in host RAM
    offload_params : weights and gradients live in host RAM too (stage 3 only)

    Returns
    -------
    :class:`ModelStates` [B per GPU]

    References
    ----------
    .. [1] Rajbhandari et al. 2020, "ZeRO", arXiv:1910.02054, sec. 5 and Fig. 1.
    .. [2] NVIDIA Megatron-LM, docs/source/api-guide/dist_optimizer.md (18 B vs 6 + 12/d).
    .. [3] microsoft/DeepSpeed, deepspeed/runtime/zero/stage_1_and_2.py,
       ``estimate_zero2_model_states_mem_needs`` (2N + 18N/N_d).
    .. [4] Ren et al. 2021, "ZeRO-Offload", arXiv:2101.06840, sec. 4.1.
    .. [5] Dettmers et al. 2023, "QLoRA", arXiv:2305.14314, sec. 3.
    """
    unit = per_param_bytes(precision, optimizer, framework)
    trainable = checks.positive("trainable_params", trainable_params)
    frozen = checks.non_negative("frozen_params", frozen_params)
    frozen_bytes = bytes_per_element(frozen_dtype, name="frozen_dtype")
    dp = checks.integer("dp", dp, high=10**7)
    stage = checks.integer("zero_stage", zero_stage, low=0, high=3)
    offload_optimizer = checks.flag("offload_optimizer", offload_optimizer)
    offload_params = checks.flag("offload_params", offload_params)
    allowed = FRAMEWORK_STAGES[framework]
    if not np.all(np.isin(stage, allowed)):
        raise ValueError(f"zero_stage={zero_stage!r} is not allowed: framework {framework!r} offers "
                         f"stages {allowed}")
    if offload_params and not np.all(stage == 3):
        raise ValueError(f"offload_params=True is not allowed with zero_stage={zero_stage!r}: "
                         "parameter offload needs stage 3")
    total = trainable + frozen
    factors = state_factors(dp, stage, framework=framework, unit=unit, trainable_share=trainable / total,
                       frozen_bytes=frozen_bytes, offload_optimizer=offload_optimizer,
                       offload_params=offload_params)
    return states_of(total, factors)


def lora_adapter_params(rank, layers, matrix_shapes) -> float:
    """Trainable LoRA parameters: r x (d_in + d_out) per adapted matrix per layer.

    Parameters
    ----------
    rank : LoRA rank r [count], >= 1
    layers : layers carrying adapters [count]
    matrix_shapes : (d_in, d_out) of each adapted matrix in one layer, e.g.
        [(h, h), (h, k_v d_h), (h, k_v d_h), (h, h)] for q, k, v, o

    Returns
    -------
    parameters [count]

    References
    ----------
    .. [1] Hu et al. 2021, "LoRA", arXiv:2106.09685, sec. 4 (W + BA, B: d x r, A: r x k).
    """
    r = checks.integer("rank", rank, high=10**6)
    n = checks.integer("layers", layers, high=10**6)
    total = 0.0
    for d_in, d_out in matrix_shapes:
        total = total + checks.positive("matrix_shapes", d_in) + checks.positive("matrix_shapes", d_out)
    if total == 0.0:
        raise ValueError("matrix_shapes=[] is not allowed: must name at least one adapted matrix")
    return r * n * total
