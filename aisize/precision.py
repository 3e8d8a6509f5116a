"""Bytes per element and optimizer-state bytes per parameter: published constants.

Everything here is a documented table, not a formula: the effective bits per
weight of each storage format (block scales included), what mixed-precision
training keeps per parameter, and what each optimizer keeps per parameter.
The memory modules look these up; no other module writes such a constant.

References
----------
.. [1] IEEE 754-2008 (fp32, fp16); Google bfloat16; Micikevicius et al. 2022,
   "FP8 Formats for Deep Learning", arXiv:2209.05433 (E4M3/E5M2, 1 byte).
.. [2] OCP Microscaling Formats (MX) Specification v1.0, 2023, section 5:
   MXFP4 = 32 FP4 (E2M1) elements share one 8-bit E8M0 scale -> 4 + 8/32 = 4.25 bits.
.. [3] NVIDIA, "Introducing NVFP4", 2025 (technical blog): 16 FP4 elements share
   one FP8 E4M3 scale -> 4 + 8/16 = 4.5 bits (plus one fp32 scale per tensor, negligible).
.. [4] Frantar et al. 2022, "GPTQ", arXiv:2210.17323; Lin et al. 2023, "AWQ",
   arXiv:2306.00978: group size 128 with an fp16 scale -> 4 + 16/128 = 4.125 bits,
   with an fp16 scale and zero point -> 4 + 32/128 = 4.25 bits.
.. [5] Dettmers et al. 2023, "QLoRA", arXiv:2305.14314, section 3: NF4 with double
   quantization costs 4 + 0.127 bits per parameter.
.. [6] Rajbhandari et al. 2020, "ZeRO", arXiv:1910.02054, section 3.1: mixed-precision
   Adam keeps 2 + 2 + K bytes per parameter with K = 12 (fp32 master, momentum, variance).
.. [7] Dettmers et al. 2021, "8-bit Optimizers via Block-wise Quantization",
   arXiv:2110.02861: 8-bit momentum and variance (2 B) beside the fp32 master copy.
.. [8] Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms" (Lion),
   arXiv:2302.06675, section 2: Lion tracks momentum only.
.. [9] Shazeer & Stern 2018, "Adafactor", arXiv:1804.04235, section 3: factored
   second moment (rows + columns per matrix, O(n + m)) and no first moment (beta1 = 0).
"""

from __future__ import annotations

from dataclasses import dataclass

from aisize import checks
from aisize.units import BITS_PER_BYTE

# Effective storage bits per element, block scales included (see References [1]-[5]).
BITS_PER_ELEMENT: dict[str, float] = {
    "fp32": 32.0,
    "tf32": 32.0,  # stored as fp32; TF32 is a tensor-core compute mode
    "bf16": 16.0,
    "fp16": 16.0,
    "fp8": 8.0,
    "int8": 8.0,
    "int4": 4.0,  # bare, no scales
    "fp4": 4.0,  # bare, no scales
    "mxfp4": 4.25,  # [2]
    "nvfp4": 4.5,  # [3]
    "int4-g128": 4.125,  # [4] fp16 scale per 128 weights
    "int4-g128-zp": 4.25,  # [4] fp16 scale + zero point per 128 weights
    "nf4": 4.127,  # [5] QLoRA NF4 with double quantization
}

# Training precisions: bytes per parameter of the working weights (what forward
# and backward read), of the gradients they produce, and of the fp32 master copy
# that mixed precision keeps for the optimizer update [6].
# fp8 mixed: Transformer Engine keeps bf16 weights and caches their fp8 cast
# across micro-batches (te.Linear ``is_first_microbatch``), +1 B/param; the
# update still runs on an fp32 master copy (Micikevicius et al. 2022, section 4).
# activation_scale multiplies the 16-bit activation counts of Korthikanti et al.
# (fp32 activations are twice as large; fp8 recipes keep most saved tensors in bf16).


@dataclass(frozen=True)
class TrainingPrecision:
    """What one parameter costs under a training precision [bytes]."""

    weight_bytes: float
    gradient_bytes: float
    master_bytes: float
    activation_scale: float
    compute_dtype: str  # which peak of the accelerator applies
    source: str


TRAINING_PRECISIONS: dict[str, TrainingPrecision] = {
    "fp32": TrainingPrecision(4.0, 4.0, 0.0, 2.0, "fp32", "IEEE 754 single precision throughout"),
    "bf16": TrainingPrecision(2.0, 2.0, 4.0, 1.0, "bf16", "ZeRO arXiv:1910.02054 sec. 3.1"),
    "fp16": TrainingPrecision(2.0, 2.0, 4.0, 1.0, "fp16", "ZeRO arXiv:1910.02054 sec. 3.1"),
    "fp8": TrainingPrecision(3.0, 2.0, 4.0, 1.0, "fp8",
                             "arXiv:2209.05433 sec. 4; Transformer Engine fp8 weight cache"),
}


@dataclass(frozen=True)
class Optimizer:
    """Optimizer state per trainable parameter beyond weights and gradients [bytes].

    ``moment_bytes`` excludes the fp32 master copy (that is the precision's
    ``master_bytes``), so K of the ZeRO paper is master_bytes + moment_bytes.
    """

    moment_bytes: float
    source: str


OPTIMIZERS: dict[str, Optimizer] = {
    "adamw": Optimizer(8.0, "fp32 momentum + variance; ZeRO arXiv:1910.02054 sec. 3.1 (K = 12 with master)"),
    "sgd": Optimizer(4.0, "fp32 momentum buffer (torch.optim.SGD momentum_buffer); 8 B with master"),
    # Megatron-Core's precision-aware optimizer (use_precision_aware_optimizer, exp_avg_dtype and
    # exp_avg_sq_dtype bf16), as NVIDIA's DeepSeek-V3 recipe runs it; the master stays fp32.
    "adamw-bf16": Optimizer(4.0, "bf16 momentum + variance: Megatron-Core precision-aware optimizer "
                                 "(Megatron-Bridge recipes/deepseek/deepseek_v3.py); 8 B with master"),
    "adam8bit": Optimizer(2.0, "8-bit momentum + variance, arXiv:2110.02861; 6 B with master"),
    "lion": Optimizer(4.0, "fp32 momentum only, arXiv:2302.06675 sec. 2; 8 B with master"),
    # Muon keeps one momentum buffer and orthogonalizes each update matrix with 5 Newton-Schulz
    # iterations (matrix work, aisize.training.dims.ModelDims.muon_flops_per_param); embeddings,
    # the output layer and norms use AdamW in practice (a few % of a large model's parameters).
    "muon": Optimizer(4.0, "fp32 momentum only: Jordan et al. 2024 (Muon); Liu et al. 2025, 'Muon is Scalable "
                           "for LLM Training', arXiv:2502.16982 sec. 2; 8 B with master"),
    # Factored second moment is O(rows + cols) per matrix: ~0 per parameter for
    # large matrices; beta1 = 0 (the paper's default) keeps no first moment.
    "adafactor": Optimizer(0.0, "factored 2nd moment, no 1st moment, arXiv:1804.04235 sec. 3; 4 B with master"),
}


def bits_per_element(dtype: str, *, name: str = "dtype") -> float:
    """Effective storage bits per element of ``dtype``, block scales included [bit].

    Parameters
    ----------
    dtype : a key of :data:`BITS_PER_ELEMENT`
    name : the caller's parameter name, shown if ``dtype`` is unknown

    References
    ----------
    .. [1] see the module docstring, [1]-[5].
    """
    return BITS_PER_ELEMENT[checks.choice(name, dtype, BITS_PER_ELEMENT)]


def bytes_per_element(dtype: str, *, name: str = "dtype") -> float:
    """Effective storage bytes per element of ``dtype`` [B] (bits / 8).

    References
    ----------
    .. [1] see the module docstring, [1]-[5].
    """
    return bits_per_element(dtype, name=name) / BITS_PER_BYTE


def training_precision(precision: str) -> TrainingPrecision:
    """The per-parameter costs of a training precision (fp32, bf16, fp16, fp8 mixed)."""
    return TRAINING_PRECISIONS[checks.choice("precision", precision, TRAINING_PRECISIONS)]


def optimizer(name: str) -> Optimizer:
    """The per-parameter state of an optimizer (adamw, sgd, adam8bit, lion, adafactor)."""
    return OPTIMIZERS[checks.choice("optimizer", name, OPTIMIZERS)]


_PEAK_FIELD = {"fp32": "fp32_flops_per_s", "tf32": "tf32_flops_per_s", "bf16": "bf16_flops_per_s",
               "fp16": "fp16_flops_per_s", "fp8": "fp8_flops_per_s", "int8": "int8_flops_per_s",
               "fp4": "fp4_flops_per_s"}


def peak_flops_per_s(accelerator, compute_dtype: str) -> float:
    """Dense peak of a catalog ``Accelerator`` for a compute dtype [FLOP/s].

    Raises ValueError when the accelerator has no such peak (e.g. bf16 on V100).

    References
    ----------
    .. [1] the accelerator's datasheet, as cited in its catalog row (``source``).
    """
    field = _PEAK_FIELD[checks.choice("compute_dtype", compute_dtype, _PEAK_FIELD)]
    value = getattr(accelerator, field, None)
    if value is None:
        raise ValueError(f"compute_dtype={compute_dtype!r} is not allowed for accelerator "
                         f"{getattr(accelerator, 'id', accelerator)!r}: it publishes no {field}")
    return float(value)
