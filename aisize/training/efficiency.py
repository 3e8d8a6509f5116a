"""How fast the kernels of a training step run: GEMMs, attention, memory-bound work, stragglers.

Compute efficiency is not one number. Each kind of work gets its own rate:

* **GEMMs** (every linear layer, forward, input-gradient and weight-gradient):
  the roofline of the matrix shapes, ``max(FLOPs / (peak x e_gemm), bytes / (HBM x e_hbm))``,
  where ``e_gemm`` is the share of the dense peak large GEMMs reach on the GPU's
  generation at that number format (:data:`GEMM_EFFICIENCY`). Thin matrices (small
  hidden size, a wide tensor-parallel split, few tokens) become memory-bound [1]. With
  ``gemm_source="kernels"`` the layers' GEMMs are read from measured tables instead and this
  roofline times only what no table covers (:mod:`aisize.training.kernel_gemms`, docs/training-kernels.md).
* **attention** (FlashAttention): ``FLOPs / (16-bit peak x e_attn x s/(s + B))``: the
  kernel's share of peak on the generation (:data:`ATTENTION_EFFICIENCY`) times how close
  a sequence of s tokens comes to it, B (:data:`ATTENTION_HALF_TOKENS`) the length at half
  speed, measured on the GPU's context-attention tables (docs/training-cv.md: 1,760 tokens
  on H100, 3,808 on B200; not FlashAttention's 128-row tile, which read 8k-token attention
  only 1.5 % slower than 32k-token attention, where the tables read 12-30 % slower) [2][3].
* **memory-bound work** (norms, residual adds, activation functions, rotary
  embeddings, low-precision casts, the loss, the optimizer): bytes moved / (HBM
  bandwidth x :data:`HBM_EFFICIENCY`) [1].
* **stragglers and jitter**: a synchronous step waits for the slowest of n ranks.
  If each rank's step time varies with coefficient of variation sigma, the
  expected maximum of n is about ``mean x (1 + sigma sqrt(2 ln n))`` (the
  Gaussian extreme-value approximation) [4][5], so efficiency falls with scale.

The generation of an accelerator is read from the formats its catalog row has a
dense peak for (fp4: Blackwell-class, fp8: Hopper-class (Ada, MI300 too), bf16:
Ampere-class, else Volta-class): no per-GPU constant. Blackwell Ultra (B300, GB300)
differs from Blackwell through its catalog figures (the special-function units'
exponential rate that softmax needs), not through a constant of its own.

Every constant is named below with where it comes from; :func:`efficiency_constants`
lists them for the user. The fitted ones were fitted once, jointly, on the rows of
``reference/training_torchtitan.csv`` and ``reference/training_megatron.csv`` (the same
values for every model; the script is ``benchmarks/fit_training.py``). torchtitan's H100
rows ran on 96 GB HBM2e parts capped at 500 W, NVIDIA's on 700 W DGX H100s; both are
estimated as the catalog's H100 SXM, so the Hopper efficiencies are a compromise.

References
----------
.. [1] NVIDIA, "Matrix Multiplication Background User's Guide" (Deep Learning
   Performance docs): arithmetic intensity, math- vs memory-limited GEMMs.
.. [2] Dao 2023, "FlashAttention-2", arXiv:2307.08691 (50-73 % of A100 peak; block sizes).
.. [3] Shah et al. 2024, "FlashAttention-3", arXiv:2407.08608 (FlashAttention-2 reaches
   35 % of H100 peak, FlashAttention-3 up to 75 %).
.. [4] Dean & Barroso 2013, "The Tail at Scale", CACM 56(2) (tail latency of fan-out).
.. [5] Gumbel 1958, "Statistics of Extremes": E[max of n N(0,1)] ~ sqrt(2 ln n).
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from aisize.training.calibration import CALIBRATION as SHIPPED
from aisize.training.calibration import CONSTANTS, GENERATIONS, TrainingCalibration

# The shipped values under their old names, read-only (tables and tests read them). Every code path
# reads the calibration it is given (the Engine's, aisize.training.setup.engine), never these; each
# constant's meaning, origin and source: aisize.training.calibration.CONSTANTS.
GEMM_EFFICIENCY = MappingProxyType({tuple(k.split(":")): v for k, v in SHIPPED.gemm_efficiency.items()})
ATTENTION_EFFICIENCY = MappingProxyType({tuple(k.split(":")): v for k, v in SHIPPED.attention_efficiency.items()})
ATTENTION_HALF_TOKENS = MappingProxyType({tuple(k.split(":")): v for k, v in SHIPPED.attention_half_tokens.items()})
HBM_EFFICIENCY = SHIPPED.hbm_efficiency
STEP_TIME_CV = SHIPPED.step_time_cv
BACKWARD_BYTES_RATIO = SHIPPED.backward_bytes_ratio
ATTENTION_BACKWARD_RATIO = SHIPPED.attention_backward_ratio

# old name -> the calibration's attribute (efficiency_constants keeps the names plans and findings key on)
_NAMES = {"GEMM_EFFICIENCY": "gemm_efficiency", "ATTENTION_EFFICIENCY": "attention_efficiency",
          "ATTENTION_HALF_TOKENS": "attention_half_tokens", "HBM_EFFICIENCY": "hbm_efficiency",
          "STEP_TIME_CV": "step_time_cv", "BACKWARD_BYTES_RATIO": "backward_bytes_ratio",
          "ATTENTION_BACKWARD_RATIO": "attention_backward_ratio"}


def generation(accelerator) -> str:
    """The calibrated generation a training step is timed at: the catalog ``architecture`` where training
    has constants for it (volta, ampere, hopper, blackwell), else the class of the newest tensor-core format
    the GPU has a dense peak for (fp4 -> blackwell, fp8 -> hopper, bf16 -> ampere, else volta): Ada and CDNA3
    run at Hopper's efficiencies, CDNA4 at Blackwell's (no published training run calibrates them).
    """
    arch = getattr(accelerator, "architecture", None)
    if arch in GENERATIONS:
        return arch
    if getattr(accelerator, "fp4_flops_per_s", None):
        return "blackwell"
    if getattr(accelerator, "fp8_flops_per_s", None):
        return "hopper"
    if getattr(accelerator, "bf16_flops_per_s", None):
        return "ampere"
    return "volta"


def gemm_efficiency(gen: str, bits: str, cal: TrainingCalibration = SHIPPED) -> float:
    """Share of the dense peak large GEMMs reach on ``gen`` at ``bits`` ("16", "8", "4")."""
    key = f"{gen}:{bits}"
    if key not in cal.gemm_efficiency:
        raise ValueError(f"bits={bits!r} is not allowed on a {gen}-class GPU: its tensor cores have no such format")
    return cal.gemm_efficiency[key]


def gemm_seconds(tokens, n_in, n_out, peak_flops_per_s, efficiency, hbm_bytes_per_s, element_bytes=2.0,
                 cal: TrainingCalibration = SHIPPED):
    """Time of one GEMM (tokens x n_in) @ (n_in x n_out) on its roofline [s].

    max(2·tokens·n_in·n_out / (peak x efficiency), bytes / (HBM x cal.hbm_efficiency)) with
    bytes = element_bytes x (tokens·n_in + n_in·n_out + tokens·n_out). Broadcasts.

    References
    ----------
    .. [1] NVIDIA Matrix Multiplication Background User's Guide (arithmetic intensity).
    """
    flops = 2.0 * tokens * n_in * n_out
    moved = element_bytes * (tokens * n_in + n_in * n_out + tokens * n_out)
    return np.maximum(flops / (peak_flops_per_s * efficiency), moved / (hbm_bytes_per_s * cal.hbm_efficiency))


def recipe_gemm_seconds(tokens, n_in, n_out, recipe, *, high_peak, low_peak, e_high, e_low, hbm_bytes_per_s,
                        cal: TrainingCalibration = SHIPPED):
    """:func:`gemm_seconds` under a precision recipe: the share ``recipe.low_share`` of the GEMM's work in the
    recipe's low precision (FP8, MXFP8, NVFP4) at ``low_peak`` and ``e_low``, the rest in 16-bit [s]."""
    high = gemm_seconds(tokens, n_in, n_out, high_peak, e_high, hbm_bytes_per_s, cal=cal)
    if not recipe.low_share:
        return high
    low = gemm_seconds(tokens, n_in, n_out, low_peak, e_low, hbm_bytes_per_s, recipe.element_bytes, cal)
    return recipe.low_share * low + (1.0 - recipe.low_share) * high


def attention_kernel(gen: str, te: bool) -> str:
    """The attention kernel family a kernel stack runs on a generation: "fa2" or "fa3".

    Transformer Engine (Megatron-Core, Megatron-FSDP: ``te``) runs cuDNN fused attention,
    warp-specialized from Hopper on; PyTorch SDPA (torchtitan) ran FlashAttention-2 on Hopper in
    the reference runs and selects cuDNN attention on Blackwell. Volta and Ampere have no
    warp-specialized kernels.
    """
    if gen in ("volta", "ampere"):
        return "fa2"
    if gen == "hopper" and not te:
        return "fa2"
    return "fa3"


def attention_efficiency(gen: str, seq_len, kernel: str = "fa2", cal: TrainingCalibration = SHIPPED):
    """FlashAttention share of the 16-bit peak at a (causal) sequence length [ratio].

    References
    ----------
    .. [2] Dao 2023, arXiv:2307.08691; [3] Shah et al. 2024, arXiv:2407.08608.
    """
    key = f"{gen}:{kernel}"
    return cal.attention_efficiency[key] * seq_len / (seq_len + cal.attention_half_tokens[key])


def attention_seconds(flops, exponentials, gen: str, kernel: str, chunk, peak_flops_per_s, exp_per_s,
                      cal: TrainingCalibration = SHIPPED):
    """Attention time [s]: matmul FLOPs at the 16-bit peak plus the softmax exponentials on the
    special-function units, both at the kernel's efficiency.

    Per attention score a FlashAttention forward runs 4·d matmul FLOPs (QK^T and PV) and one
    exponential; its backward 10·d FLOPs and one exponential (P is recomputed). Within a tile the
    second matmul waits for the softmax (NVIDIA, "Making Softmax More Efficient with NVIDIA
    Blackwell Ultra": the tensor cores idle while MUFU.EX2 normalizes the scores), so the two
    add. On H100 an exponential costs as much as 254 matmul FLOPs (989 TFLOP/s vs 3.9 T exp/s
    [3]); Blackwell doubles the matmul rate, not the exponential rate, and Blackwell Ultra doubles
    the exponential rate: the catalog's ``sfu_exp_per_s`` carries it (None: no term).

    References
    ----------
    .. [2] Dao 2023, arXiv:2307.08691; [3] Shah et al. 2024, arXiv:2407.08608, sec. 1 and 3.
    """
    t = flops / peak_flops_per_s
    if exp_per_s:
        t = t + exponentials / exp_per_s
    return t / attention_efficiency(gen, chunk, kernel, cal)


def memory_seconds(moved_bytes, hbm_bytes_per_s, cal: TrainingCalibration = SHIPPED):
    """Time of memory-bound work that moves ``moved_bytes`` through HBM [s]."""
    return moved_bytes / (hbm_bytes_per_s * cal.hbm_efficiency)


def straggler_factor(ranks, cal: TrainingCalibration = SHIPPED):
    """Expected slowest-of-n step over the mean step: 1 + CV·sqrt(2 ln n) (1 for one rank).

    References
    ----------
    .. [4] Dean & Barroso 2013; [5] Gumbel 1958 (maximum of n normal variables).
    """
    n = np.maximum(np.asarray(ranks, dtype=float), 1.0)
    return 1.0 + cal.step_time_cv * np.sqrt(2.0 * np.log(n))


def efficiency_constants(cal: TrainingCalibration = SHIPPED) -> list[dict]:
    """Every efficiency constant of the step's kernels with its value and source, under the names plans and
    findings key on ("GEMM_EFFICIENCY[hopper, 16-bit]"); the whole calibration: ``cal.as_table()``."""
    rows = []
    for old, name in _NAMES.items():
        value, source = getattr(cal, name), CONSTANTS[name][2]
        if isinstance(value, MappingProxyType):
            suffix = "-bit" if name == "gemm_efficiency" else ""
            rows += [{"name": f"{old}[{k.split(':')[0]}, {k.split(':')[1]}{suffix}]", "value": v, "source": source}
                     for k, v in value.items()]
        else:
            rows.append({"name": old, "value": value, "source": source})
    return rows
