"""What a GPU offers a serving precision: the peak its GEMMs run at, bandwidth, memory, links.

A weight format decides which tensor-core peak the linear layers use, each kind of
layer (attention, dense MLP, routed experts) at its own format: FP8 weights run FP8
GEMMs where the GPU has them; NVFP4/MXFP4 run FP4 GEMMs on Blackwell and CDNA4
(weights and activations in FP4) and are dequantized into 16-bit GEMMs (W4A16)
elsewhere, as INT4 group-quantized weights are [1, 2]. Prefill attention runs at FP8 when
the KV cache is FP8 and the GPU has FP8 tensor cores (FP8 context attention [1, 3]), else at
16 bits.

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
from aisize.units import bidirectional_to_per_direction

# Weight format -> compute dtypes to try, best first (the first peak the GPU publishes wins). A 4-bit
# format runs FP4 GEMMs where the GPU has them and is dequantized into 16-bit GEMMs (W4A16) where it
# does not, as TensorRT-LLM, vLLM and SGLang run MXFP4 on Hopper [1, 2].
GEMM_DTYPES = {
    "fp32": ("tf32", "fp32"), "bf16": ("bf16", "fp16"), "fp16": ("fp16", "bf16"),
    "fp8": ("fp8", "bf16", "fp16"), "int8": ("int8", "bf16", "fp16"),
    "nvfp4": ("fp4", "bf16", "fp16"), "mxfp4": ("fp4", "bf16", "fp16"), "fp4": ("fp4", "bf16", "fp16"),
    "int4": ("bf16", "fp16"), "int4-g128": ("bf16", "fp16"), "int4-g128-zp": ("bf16", "fp16"),
    "nf4": ("bf16", "fp16"),
}
WEIGHT_PRECISIONS = tuple(GEMM_DTYPES)
KV_PRECISIONS = ("fp32", "bf16", "fp16", "fp8")

# Architectures the serving calibration has efficiencies for (catalog column ``architecture``); any other
# GPU is uncalibrated: its efficiencies fall back and its estimates carry a range (Calibration.fallback_generation).
GENERATIONS = ("hopper", "blackwell", "cdna3", "cdna4")
# Grace-hosted superchips schedule from an Arm host (see Calibration.host_factor).
GRACE_HOSTED = ("gh200", "gb200", "gb300")


@dataclass(frozen=True)
class Device:
    """One GPU's datasheet figures for a serving precision (peaks DENSE) [FLOP/s, B/s, B]."""

    id: str
    generation: str | None  # None: no calibrated generation (efficiencies fall back, flagged)
    gemm_dtypes: tuple  # the tensor-core dtype of (attention, dense, experts) linear layers
    gemm_peaks_flops_per_s: tuple  # their peaks, in the same order
    attention_peak_flops_per_s: float
    head_peak_flops_per_s: float  # 16-bit: the output head stays bf16
    memory_bandwidth_bytes_per_s: float
    memory_bytes: float  # usable (what nvidia-smi shows, where the catalog has it)
    link_bytes_per_s: float  # scale-up link per direction (PCIe peer-to-peer where there is no NVLink)
    scaleup_domain: int
    grace_hosted: bool

    @property
    def gemm_dtype(self) -> str:
        """The dtype most of the work runs at: the experts' for MoE formats, else one name."""
        kinds = dict(zip(("attention", "dense", "experts"), self.gemm_dtypes))
        return kinds["experts"] if len(set(self.gemm_dtypes)) == 1 else " / ".join(
            f"{k} {v}" for k, v in kinds.items())


def _peak(acc, dtype):
    return getattr(acc, f"{dtype}_flops_per_s", None)


def generation(accelerator) -> str | None:
    """The calibrated generation of an accelerator (catalog id or record): its catalog ``architecture``
    where the serving calibration covers it, else None (uncalibrated)."""
    if isinstance(accelerator, str):
        accelerator = catalog.accelerators.get(accelerator)
    arch = getattr(accelerator, "architecture", None)
    return arch if arch in GENERATIONS else None


def _gemm_dtype(acc, fmt: str, kind: str) -> str:
    dtype = next((d for d in GEMM_DTYPES[fmt] if _peak(acc, d)), None)
    if dtype is None:
        raise ValueError(f"weight_precision={fmt!r} ({kind}) is not allowed on accelerator {acc.id!r}: it publishes "
                         f"none of the peaks {GEMM_DTYPES[fmt]} (catalog row {acc.id!r})")
    return dtype


def device(accelerator, weight_precision, kv_precision: str) -> Device:
    """The :class:`Device` view of a catalog accelerator (id or record) for a precision pair.

    ``weight_precision`` is a format name or a :class:`~aisize.serving.costs.WeightFormats`.
    """
    from aisize.serving.costs import weight_formats

    if isinstance(accelerator, str):
        if accelerator not in catalog.accelerators:
            raise ValueError(f"accelerator={accelerator[:60]!r} is not in the catalog; known: "
                             f"{', '.join(catalog.accelerators.ids())}")
        acc = catalog.accelerators[accelerator]
    elif hasattr(accelerator, "memory_bandwidth_bytes_per_s"):
        acc = accelerator
    else:
        raise ValueError(f"accelerator={accelerator!r} is not allowed: give a catalog accelerator id or record")
    fmt = weight_formats(weight_precision)
    for kind in ("attention", "dense", "experts"):
        checks.choice("weight_precision", getattr(fmt, kind), WEIGHT_PRECISIONS)
    kv = checks.choice("kv_precision", kv_precision, KV_PRECISIONS)
    dtypes = tuple(_gemm_dtype(acc, getattr(fmt, k), k) for k in ("attention", "dense", "experts"))
    attention = "fp8" if kv == "fp8" and _peak(acc, "fp8") else next(
        (d for d in ("bf16", "fp16", "tf32", "fp32") if _peak(acc, d)))
    if acc.scaleup_bidirectional_bytes_per_s:
        link = bidirectional_to_per_direction(acc.scaleup_bidirectional_bytes_per_s)
    else:  # no NVLink-class link: GPUs exchange activations peer-to-peer over PCIe
        pcie = catalog.links.get(f"pcie-gen{acc.pcie_gen}-x16")
        link = pcie.bandwidth_per_direction_bytes_per_s if pcie else 0.0
    return Device(acc.id, generation(acc), dtypes, tuple(float(_peak(acc, d)) for d in dtypes),
                  float(_peak(acc, attention)), float(_peak(acc, _gemm_dtype(acc, "bf16", "head"))),
                  float(acc.memory_bandwidth_bytes_per_s),
                  float(acc.memory_visible_bytes or acc.memory_bytes), float(link), int(acc.scaleup_domain),
                  acc.id.startswith(GRACE_HOSTED))


def scaleout_bytes_per_s(accelerator_id: str) -> float:
    """Scale-out rate per GPU per direction of the catalog's first server with this GPU [B/s]:
    compute NICs x their rate / GPUs (e.g. DGX H100: 8 x 400 Gb/s / 8 = 50 GB/s)."""
    servers = catalog.servers.filter(accelerator=accelerator_id)
    if not servers:
        raise ValueError(f"accelerator {accelerator_id!r} is in no catalog server, so its scale-out link is unknown: "
                         f"pass stage_link_bytes_per_s")
    s = servers[0]
    return s.compute_nics * catalog.links[s.compute_nic_link].bandwidth_per_direction_bytes_per_s / s.gpus
