"""What a GPU offers a serving precision: the peak its GEMMs run at, bandwidth, memory, links.

A weight format decides which tensor-core peak the linear layers use: FP8
weights run FP8 GEMMs where the GPU has them; NVFP4/MXFP4 run FP4 GEMMs on
Blackwell (weights and activations in FP4) and fall back to FP8 (W4A8) or 16-bit
(W4A16) elsewhere; INT4 group-quantized weights are dequantized into 16-bit
GEMMs [1, 2]. Prefill attention runs at FP8 when the KV cache is FP8 and the GPU
has FP8 tensor cores (FP8 context attention [1, 3]), else at 16 bits.

The achieved rates are these peaks times the engine's calibrated efficiencies
(:mod:`aisize.serving.calibration`), chosen by the GPU's generation.

References
----------
.. [1] NVIDIA TensorRT-LLM documentation, "Numerical precision" (FP8, NVFP4 W4A4 on
       Blackwell, INT4 AWQ W4A16, W4A8) and ``TrtllmAttention`` (FP8 context FMHA with FP8 KV).
.. [2] Lin et al. 2023, "AWQ", arXiv:2306.00978 (W4A16 dequantizes into 16-bit GEMMs).
.. [3] Shah et al. 2024, "FlashAttention-3", arXiv:2407.08608 (FP8 attention on Hopper).
"""

from __future__ import annotations

from dataclasses import dataclass

from aisize import catalog, checks
from aisize.precision import BITS_PER_ELEMENT
from aisize.units import bidirectional_to_per_direction

# Weight format -> compute dtypes to try, best first (the first peak the GPU publishes wins).
GEMM_DTYPES = {
    "fp32": ("tf32", "fp32"), "bf16": ("bf16", "fp16"), "fp16": ("fp16", "bf16"),
    "fp8": ("fp8", "bf16", "fp16"), "int8": ("int8", "bf16", "fp16"),
    "nvfp4": ("fp4", "fp8", "bf16", "fp16"), "mxfp4": ("fp4", "fp8", "bf16", "fp16"),
    "fp4": ("fp4", "fp8", "bf16", "fp16"),
    "int4": ("bf16", "fp16"), "int4-g128": ("bf16", "fp16"), "int4-g128-zp": ("bf16", "fp16"),
    "nf4": ("bf16", "fp16"),
}
WEIGHT_PRECISIONS = tuple(GEMM_DTYPES)
KV_PRECISIONS = ("fp32", "bf16", "fp16", "fp8")

# Generations with calibrated efficiencies, by catalog id prefix (longest match wins).
GENERATIONS = {"h100": "hopper", "h200": "hopper", "h20": "hopper", "gh200": "hopper",
               "b200": "blackwell", "gb200": "blackwell", "b300": "blackwell", "gb300": "blackwell",
               "rtx-pro-6000": "blackwell"}
# Grace-hosted superchips schedule from an Arm host (see Calibration.host_factor).
GRACE_HOSTED = ("gh200", "gb200", "gb300")


@dataclass(frozen=True)
class Device:
    """One GPU's datasheet figures for a serving precision (peaks DENSE) [FLOP/s, B/s, B]."""

    id: str
    generation: str | None  # None: no calibrated generation (efficiencies fall back, flagged)
    gemm_dtype: str  # the tensor-core dtype the linear layers run at
    gemm_peak_flops_per_s: float
    attention_peak_flops_per_s: float
    memory_bandwidth_bytes_per_s: float
    memory_bytes: float  # usable (what nvidia-smi shows, where the catalog has it)
    link_bytes_per_s: float  # scale-up link per direction (PCIe peer-to-peer where there is no NVLink)
    scaleup_domain: int
    grace_hosted: bool


def _peak(acc, dtype):
    return getattr(acc, f"{dtype}_flops_per_s", None)


def generation(accelerator_id: str) -> str | None:
    """The calibrated hardware generation of a catalog accelerator id, or None."""
    keys = sorted((k for k in GENERATIONS if accelerator_id.startswith(k)), key=len, reverse=True)
    return GENERATIONS[keys[0]] if keys else None


def device(accelerator, weight_precision: str, kv_precision: str) -> Device:
    """The :class:`Device` view of a catalog accelerator (id or record) for a precision pair."""
    if isinstance(accelerator, str):
        if accelerator not in catalog.accelerators:
            raise ValueError(f"accelerator={accelerator[:60]!r} is not in the catalog; known: "
                             f"{', '.join(catalog.accelerators.ids())}")
        acc = catalog.accelerators[accelerator]
    elif hasattr(accelerator, "memory_bandwidth_bytes_per_s"):
        acc = accelerator
    else:
        raise ValueError(f"accelerator={accelerator!r} is not allowed: give a catalog accelerator id or record")
    wp = checks.choice("weight_precision", weight_precision, WEIGHT_PRECISIONS)
    kv = checks.choice("kv_precision", kv_precision, KV_PRECISIONS)
    checks.choice("weight_precision", wp, BITS_PER_ELEMENT)
    dtype = next((d for d in GEMM_DTYPES[wp] if _peak(acc, d)), None)
    if dtype is None:
        raise ValueError(f"weight_precision={wp!r} is not allowed on accelerator {acc.id!r}: it publishes none "
                         f"of the peaks {GEMM_DTYPES[wp]} (catalog row {acc.id!r})")
    attention = "fp8" if kv == "fp8" and _peak(acc, "fp8") else next(
        (d for d in ("bf16", "fp16", "tf32", "fp32") if _peak(acc, d)))
    if acc.scaleup_bidirectional_bytes_per_s:
        link = bidirectional_to_per_direction(acc.scaleup_bidirectional_bytes_per_s)
    else:  # no NVLink-class link: GPUs exchange activations peer-to-peer over PCIe
        pcie = catalog.links.get(f"pcie-gen{acc.pcie_gen}-x16")
        link = pcie.bandwidth_per_direction_bytes_per_s if pcie else 0.0
    return Device(acc.id, generation(acc.id), dtype, float(_peak(acc, dtype)), float(_peak(acc, attention)),
                  float(acc.memory_bandwidth_bytes_per_s), float(acc.memory_visible_bytes or acc.memory_bytes),
                  float(link), int(acc.scaleup_domain), acc.id.startswith(GRACE_HOSTED))


def scaleout_bytes_per_s(accelerator_id: str) -> float:
    """Scale-out rate per GPU per direction of the catalog's first server with this GPU [B/s]:
    compute NICs x their rate / GPUs (e.g. DGX H100: 8 x 400 Gb/s / 8 = 50 GB/s)."""
    servers = catalog.servers.filter(accelerator=accelerator_id)
    if not servers:
        raise ValueError(f"accelerator {accelerator_id!r} is in no catalog server, so its scale-out link is unknown: "
                         f"pass stage_link_bytes_per_s")
    s = servers[0]
    return s.compute_nics * catalog.links[s.compute_nic_link].bandwidth_per_direction_bytes_per_s / s.gpus
