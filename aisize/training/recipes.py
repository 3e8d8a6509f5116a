"""Training number formats: which GEMMs run in low precision, their peak, casts and extra state.

===========  ========================================  ===========  =====================================
precision    low-precision GEMMs                        peak used    source
===========  ========================================  ===========  =====================================
bf16, fp16   none                                       bf16 / fp16  mixed precision (Micikevicius 2018)
fp32         none                                       fp32         single precision throughout
fp8          every linear layer of the transformer      fp8          torchao Float8Linear (tensorwise,
             blocks: forward, input- and weight-grad;               dynamic scaling) as torchtitan runs it:
             the output layer and attention stay 16-bit             ``module_filter_fn: fqn != "output"``
mxfp8        as fp8, 32-element E8M0 block scales       fp8          OCP MX spec v1.0; Blackwell only
nvfp4        as fp8: every linear layer of the          fp4          Megatron-Bridge ``bf16_with_nvfp4_mixed``
             transformer blocks (Megatron-Core's                     (fp4 e2m1, recipe nvfp4); Megatron-Core
             default: no bf16 first / last layers)                   ``first_last_layers_bf16=False``
===========  ========================================  ===========  =====================================

Casts are memory-bound work, counted per element of every linear layer's input
(forward) and output gradient (backward): dynamic tensorwise scaling reads the
tensor once for its amax and once to cast (eager; fused into the producer under
torch.compile), then writes the low-precision copy; the weight-gradient GEMM needs
the operands in the other major order, one more read and write of the low-precision
copies (Micikevicius et al. 2022, arXiv:2209.05433 sec. 4; torchao float8 README).
Block-scaled formats (MX, NVFP4) quantize in both orders, which costs the same.
Master weights, gradients and optimizer states stay fp32 in every recipe.

NVFP4 keeps no bf16 layers: NVIDIA's convergence recipe (arXiv:2509.25149 sec. 4) runs the last
~15 % of the blocks in bf16, but Megatron-Bridge's general NVFP4 recipe, used by its published
performance runs and NVIDIA's MLPerf v5.1 NeMo submissions, leaves Megatron-Core's
``first_last_layers_bf16`` off (only the Nemotron 3 Super recipe turns it on). On a GB300 a bf16
GEMM runs 6x slower than an fp4 one, so a 15 % bf16 share read those runs 16-25 % slow
(docs/training-cv.md, "Held-out classes by mechanism").
"""

from __future__ import annotations

from dataclasses import dataclass

from aisize import checks

PRECISIONS = ("bf16", "fp16", "fp32", "fp8", "mxfp8", "nvfp4")


@dataclass(frozen=True)
class Recipe:
    """What a training precision runs in low precision and what it costs."""

    name: str
    high_dtype: str  # format of attention, the output layer and the rest ("bf16" | "fp16" | "fp32")
    low_dtype: str | None  # catalog peak of the low-precision GEMMs ("fp8" | "fp4"), None for 16-bit
    low_bits: str  # efficiency class of the low-precision GEMMs ("16", "8", "4")
    low_share: float  # share of the transformer-block linear layers run in low precision
    element_bytes: float  # bytes of one low-precision element, block scales included
    needs_blackwell: bool
    source: str


RECIPES = {
    "bf16": Recipe("bf16", "bf16", None, "16", 0.0, 2.0, False, "16-bit mixed precision"),
    "fp16": Recipe("fp16", "fp16", None, "16", 0.0, 2.0, False, "16-bit mixed precision"),
    "fp32": Recipe("fp32", "fp32", None, "16", 0.0, 4.0, False, "fp32 throughout (PyTorch's default matmul "
                   "precision: no TF32), at the non-tensor fp32 peak"),
    "fp8": Recipe("fp8", "bf16", "fp8", "8", 1.0, 1.0, False,
                  "torchao Float8Linear tensorwise / Transformer Engine; arXiv:2209.05433"),
    "mxfp8": Recipe("mxfp8", "bf16", "fp8", "8", 1.0, 1.0 + 1.0 / 32.0, True,
                    "OCP Microscaling Formats v1.0 (32 x E4M3 + E8M0 scale)"),
    "nvfp4": Recipe("nvfp4", "bf16", "fp4", "4", 1.0, 0.5 + 1.0 / 16.0, True,
                    "Megatron-Bridge bf16_with_nvfp4_mixed / TE NVFP4BlockScaling (16 x E2M1 + E4M3 scale, "
                    "arXiv:2509.25149); every block linear layer in fp4"),
}
# Reading for the amax, reading to cast (16-bit input) and writing the low-precision copy;
# compiled: the amax is fused into the producer of the tensor.
CAST_READS_EAGER = 2
CAST_READS_COMPILED = 1


def recipe(precision: str, accelerator) -> Recipe:
    """The :class:`Recipe` of ``precision``, checked against what the accelerator can run.

    Raises ValueError naming ``precision`` when the GPU has no peak for its formats
    (fp8 on an A100, nvfp4 on an H100) or a block-scaled format is asked of a GPU
    before Blackwell.
    """
    r = RECIPES[checks.choice("precision", precision, PRECISIONS)]
    name = getattr(accelerator, "id", accelerator)
    for dtype in (r.high_dtype, r.low_dtype):
        if dtype and not getattr(accelerator, f"{dtype}_flops_per_s", None):
            raise ValueError(f"precision={precision!r} is not allowed on {name}: the catalog has no dense "
                             f"{dtype} peak for it (no {dtype} tensor cores)")
    if r.needs_blackwell and not getattr(accelerator, "fp4_flops_per_s", None):
        raise ValueError(f"precision={precision!r} is not allowed on {name}: block-scaled formats need "
                         "Blackwell-class tensor cores (the catalog lists no fp4 peak for it)")
    return r


def cast_bytes_per_element(r: Recipe, compiled) -> float:
    """HBM bytes of quantizing one 16-bit element for a low-precision GEMM, both major orders [B]."""
    if r.low_dtype is None:
        return 0.0
    reads = CAST_READS_COMPILED if compiled else CAST_READS_EAGER
    return 2.0 * reads + r.element_bytes + 2.0 * r.element_bytes
