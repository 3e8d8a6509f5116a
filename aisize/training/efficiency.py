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
  kernel's share of peak on the generation (:data:`ATTENTION_EFFICIENCY`) times the
  share of a causal tile sweep that is not wasted on the masked half of the
  diagonal tiles of size :data:`FLASH_TILE_TOKENS` [2][3].
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

import numpy as np

GENERATIONS = ("volta", "ampere", "hopper", "blackwell")

# Share of the dense peak that large GEMMs reach, by generation and number format
# ("16": bf16/fp16, "8": fp8/mxfp8, "4": nvfp4). Fitted jointly on the torchtitan and
# Megatron-Core rows (benchmarks/fit_training.py): Ampere on the torchtitan A100 rows; Hopper
# on both (torchtitan's H100s are 500 W parts the tools map to the 700 W H100 SXM, so these are
# a compromise between the two); Blackwell fp8 on the Megatron B200/GB200/GB300 rows. Volta is
# assumed equal to Ampere; Blackwell 16-bit follows its fp8 at Hopper's 16/8-bit ratio (only MoE
# rows run it) and fp4 equals fp8 (no published run): replace when runs exist.
GEMM_EFFICIENCY = {
    ("volta", "16"): 0.830, ("ampere", "16"): 0.830,
    ("hopper", "16"): 0.634, ("hopper", "8"): 0.702,
    ("blackwell", "16"): 0.725, ("blackwell", "8"): 0.802, ("blackwell", "4"): 0.802,
}
# Attention kernels' share of the 16-bit peak on their matmuls, long sequences, by generation and
# kernel family: "fa2" (FlashAttention-2's algorithm: PyTorch SDPA's flash backend, which
# torchtitan's runs use; fitted on the torchtitan rows; FlashAttention-2's own figures are
# 50-73 % on A100 and 35 % on H100 [2][3]) and "fa3" (asynchronous, warp-specialized kernels:
# FlashAttention-3 / cuDNN fused attention as Transformer Engine runs them in Megatron-Core on
# Hopper, cuDNN on Blackwell; fitted on the Megatron-Core rows). The softmax exponentials are
# timed separately on the special-function units (:func:`attention_seconds`), so one "fa3"
# value serves Hopper, Blackwell and Blackwell Ultra: their differences are the catalog's peaks
# and exponential rates.
ATTENTION_EFFICIENCY = {("volta", "fa2"): 0.619, ("ampere", "fa2"): 0.619, ("hopper", "fa2"): 0.267,
                        ("hopper", "fa3"): 0.649, ("blackwell", "fa3"): 0.444}
# FlashAttention-2 tiles queries in blocks of 128 rows (head dim 128); with a causal
# mask the diagonal tiles are half wasted: useful share s / (s + 128) [2].
FLASH_TILE_TOKENS = 128.0
# Share of HBM bandwidth memory-bound kernels (elementwise, reductions, casts, optimizer)
# sustain, launch gaps included. Fitted jointly (benchmarks/fit_training.py) within [0.55, 0.95]:
# the fit sits at the lower bound.
HBM_EFFICIENCY = 0.55
# Coefficient of variation of one rank's step time (jitter, stragglers). Fitted on the
# torchtitan Llama 3.1 8B rows on 8 vs 128 GPUs (same per-GPU work, 2-3 % slower at 128),
# the only reference rows that isolate it: 1 + 0.031 sqrt(2 ln n) is 6 % on 8 GPUs, 10 % on
# 128, 14 % on 16,384.
STEP_TIME_CV = 0.031
# Backward of an elementwise op reads its saved input and the incoming gradient and
# writes the outgoing one: about twice the forward's bytes.
BACKWARD_BYTES_RATIO = 2.0
# FlashAttention backward runs 5 matmuls to the forward's 2 (it recomputes the scores):
# 2.5x the forward FLOPs, the convention of its benchmarks [2].
ATTENTION_BACKWARD_RATIO = 2.5

CONSTANT_SOURCES = {
    "GEMM_EFFICIENCY": "fitted jointly on reference/training_torchtitan.csv and training_megatron.csv "
                       "(Ampere, Hopper, Blackwell fp8); Volta = Ampere, Blackwell 16-bit at Hopper's 16/8 ratio, "
                       "fp4 = fp8 assumed",
    "ATTENTION_EFFICIENCY": "fa2: fitted on reference/training_torchtitan.csv; fa3: fitted on "
                            "reference/training_megatron.csv (benchmarks/fit_training.py); FlashAttention-2/3 "
                            "papers for scale",
    "FLASH_TILE_TOKENS": "FlashAttention-2 block size (arXiv:2307.08691)",
    "HBM_EFFICIENCY": "fitted jointly on reference/training_torchtitan.csv and training_megatron.csv",
    "STEP_TIME_CV": "fitted on reference/training_torchtitan.csv (8 vs 128 GPUs)",
    "BACKWARD_BYTES_RATIO": "assumption: backward reads input and gradient, writes gradient",
    "ATTENTION_BACKWARD_RATIO": "FlashAttention backward: 5 matmuls vs 2 (arXiv:2307.08691)",
}


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


def gemm_efficiency(gen: str, bits: str) -> float:
    """Share of the dense peak large GEMMs reach on ``gen`` at ``bits`` ("16", "8", "4")."""
    key = (gen, bits)
    if key not in GEMM_EFFICIENCY:
        raise ValueError(f"bits={bits!r} is not allowed on a {gen}-class GPU: its tensor cores have no such format")
    return GEMM_EFFICIENCY[key]


def gemm_seconds(tokens, n_in, n_out, peak_flops_per_s, efficiency, hbm_bytes_per_s, element_bytes=2.0):
    """Time of one GEMM (tokens x n_in) @ (n_in x n_out) on its roofline [s].

    max(2·tokens·n_in·n_out / (peak x efficiency), bytes / (HBM x HBM_EFFICIENCY)) with
    bytes = element_bytes x (tokens·n_in + n_in·n_out + tokens·n_out). Broadcasts.

    References
    ----------
    .. [1] NVIDIA Matrix Multiplication Background User's Guide (arithmetic intensity).
    """
    flops = 2.0 * tokens * n_in * n_out
    moved = element_bytes * (tokens * n_in + n_in * n_out + tokens * n_out)
    return np.maximum(flops / (peak_flops_per_s * efficiency), moved / (hbm_bytes_per_s * HBM_EFFICIENCY))


def recipe_gemm_seconds(tokens, n_in, n_out, recipe, *, high_peak, low_peak, e_high, e_low, hbm_bytes_per_s):
    """:func:`gemm_seconds` under a precision recipe: the share ``recipe.low_share`` of the GEMM's work in the
    recipe's low precision (FP8, MXFP8, NVFP4) at ``low_peak`` and ``e_low``, the rest in 16-bit [s]."""
    high = gemm_seconds(tokens, n_in, n_out, high_peak, e_high, hbm_bytes_per_s)
    if not recipe.low_share:
        return high
    low = gemm_seconds(tokens, n_in, n_out, low_peak, e_low, hbm_bytes_per_s, recipe.element_bytes)
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


def attention_efficiency(gen: str, seq_len, kernel: str = "fa2"):
    """FlashAttention share of the 16-bit peak at a (causal) sequence length [ratio].

    References
    ----------
    .. [2] Dao 2023, arXiv:2307.08691; [3] Shah et al. 2024, arXiv:2407.08608.
    """
    return ATTENTION_EFFICIENCY[(gen, kernel)] * seq_len / (seq_len + FLASH_TILE_TOKENS)


def attention_seconds(flops, exponentials, gen: str, kernel: str, chunk, peak_flops_per_s, exp_per_s):
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
    return t / attention_efficiency(gen, chunk, kernel)


def memory_seconds(moved_bytes, hbm_bytes_per_s):
    """Time of memory-bound work that moves ``moved_bytes`` through HBM [s]."""
    return moved_bytes / (hbm_bytes_per_s * HBM_EFFICIENCY)


def straggler_factor(ranks):
    """Expected slowest-of-n step over the mean step: 1 + CV·sqrt(2 ln n) (1 for one rank).

    References
    ----------
    .. [4] Dean & Barroso 2013; [5] Gumbel 1958 (maximum of n normal variables).
    """
    n = np.maximum(np.asarray(ranks, dtype=float), 1.0)
    return 1.0 + STEP_TIME_CV * np.sqrt(2.0 * np.log(n))


def efficiency_constants() -> list[dict]:
    """Every efficiency constant with its value and source, for the user to see."""
    rows = []
    for (gen, bits), v in GEMM_EFFICIENCY.items():
        rows.append({"name": f"GEMM_EFFICIENCY[{gen}, {bits}-bit]", "value": v,
                     "source": CONSTANT_SOURCES["GEMM_EFFICIENCY"]})
    for (gen, kernel), v in ATTENTION_EFFICIENCY.items():
        rows.append({"name": f"ATTENTION_EFFICIENCY[{gen}, {kernel}]", "value": v,
                     "source": CONSTANT_SOURCES["ATTENTION_EFFICIENCY"]})
    for name in ("FLASH_TILE_TOKENS", "HBM_EFFICIENCY", "STEP_TIME_CV", "BACKWARD_BYTES_RATIO",
                 "ATTENTION_BACKWARD_RATIO"):
        rows.append({"name": name, "value": globals()[name], "source": CONSTANT_SOURCES[name]})
    return rows
