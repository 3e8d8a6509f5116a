"""Calibration of the serving model: the few achieved fractions and overheads it needs.

The iteration model (:mod:`aisize.serving.iteration`) is a roofline over
datasheet peaks and bandwidths from the catalog, times the shares of them real
kernels reach, plus fixed costs that do no useful work. Those shares and costs
are the only calibrated numbers in serving; the same values serve every model.

Sourced (not fitted):

- ``memory_efficiency`` 0.8: AIConfigurator's empirical HBM scaling
  (``mem_bw_empirical_scaling_factor: 0.8``, ai-dynamo/aiconfigurator systems/*.yaml);
- ``attention_efficiency`` 0.6: FlashAttention-3 reaches about 1.2 PFLOP/s in FP8
  (61 % of H100's 1,979) and up to 75 % in BF16 (Shah et al. 2024, arXiv:2407.08608);
- ``link_efficiency`` 0.8: :data:`aisize.network.collectives.DEFAULT_EFFICIENCY`.

Fitted by least squares on the log error of the 118 public rows of
``reference/serving_throughput.csv`` (TensorRT-LLM 1.0, PyTorch backend, max
throughput), and nothing else: ``benchmarks/fit_serving.py`` repeats the fit and
prints the constants and every row's error. A hardware generation gets its own
GEMM efficiency because FP8 GEMMs on Hopper and NVFP4 GEMMs on Blackwell are
different kernels on different silicon; Grace-hosted superchips get a host factor
because the engine's scheduler runs on their Arm cores.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType

from aisize.network.collectives import DEFAULT_EFFICIENCY


@dataclass(frozen=True)
class Calibration:
    """Achieved shares of peak and fixed overheads of one engine [dimensionless, s, B].

    Attributes
    ----------
    name, source : what the values describe and where they come from
    gemm_efficiency : share of the dense tensor peak (at the GEMM dtype) that the
        linear layers reach, per hardware generation; ``fallback_generation`` stands in
        for a GPU of an uncalibrated generation (results are then flagged)
    expert_gemm_efficiency : the routed experts' grouped GEMMs reach this share of
        the dense GEMMs' rate
    attention_efficiency : share of the attention peak prefill attention reaches
    memory_efficiency : share of the HBM bandwidth streaming kernels reach
    link_efficiency : share of the scale-up/scale-out link rate collectives reach
    elementwise_bytes_per_token : HBM traffic of the non-GEMM work (norms, rotary,
        activation, quantization, residual adds) per token, per layer, per unit of
        hidden size [B]
    expert_bytes_per_token : HBM traffic of routing one token to one expert and back
        (permute, quantize, un-permute, weighted sum) per MoE layer, per unit of hidden
        size [B]
    layer_overhead_seconds : fixed GPU time per layer per iteration (the ramp and tail of
        every kernel a layer launches, even from a CUDA graph) [s]
    moe_layer_overhead_seconds : additional fixed time per MoE layer (routing, top-k,
        permutation and grouped-GEMM setup kernels) [s]
    host_seconds_per_sequence : host time per scheduled sequence per iteration; the
        host prepares the next iteration while the GPU runs this one [s]
    grace_host_factor : host time multiplier on Grace-hosted superchips
    """

    name: str
    source: str
    gemm_efficiency: MappingProxyType
    fallback_generation: str
    expert_gemm_efficiency: float
    attention_efficiency: float
    memory_efficiency: float
    link_efficiency: float
    elementwise_bytes_per_token: float
    expert_bytes_per_token: float
    layer_overhead_seconds: float
    moe_layer_overhead_seconds: float
    host_seconds_per_sequence: float
    grace_host_factor: float
    fitted: tuple = field(default=())  # names of the fitted attributes

    def with_(self, **changes) -> "Calibration":
        """A copy with some values changed (for sensitivity studies and the fit)."""
        if "gemm_efficiency" in changes:
            changes["gemm_efficiency"] = MappingProxyType(dict(changes["gemm_efficiency"]))
        return replace(self, **changes)

    def as_table(self) -> list[dict]:
        """Every constant with its value and whether it was fitted or sourced (for the user)."""
        rows = []
        for name in ("gemm_efficiency", "expert_gemm_efficiency", "attention_efficiency", "memory_efficiency",
                     "link_efficiency", "elementwise_bytes_per_token", "expert_bytes_per_token",
                     "layer_overhead_seconds", "moe_layer_overhead_seconds", "host_seconds_per_sequence",
                     "grace_host_factor"):
            value = getattr(self, name)
            values = value.items() if isinstance(value, MappingProxyType) else [(None, value)]
            for key, v in values:
                rows.append({"constant": name if key is None else f"{name}[{key}]", "value": v,
                             "origin": "fitted" if name in self.fitted else "sourced"})
        return rows


TRTLLM_1_0 = Calibration(
    name="TensorRT-LLM 1.0, PyTorch backend",
    source="fitted on reference/serving_throughput.csv (118 rows, perf-overview.md @00f37686) by "
           "benchmarks/fit_serving.py; sourced values as in the module docstring",
    gemm_efficiency=MappingProxyType({"hopper": 0.5692, "blackwell": 0.3956}),
    fallback_generation="hopper",
    expert_gemm_efficiency=0.3571,
    attention_efficiency=0.6,
    memory_efficiency=0.8,
    link_efficiency=DEFAULT_EFFICIENCY,
    elementwise_bytes_per_token=23.39,
    expert_bytes_per_token=29.59,
    layer_overhead_seconds=94.13e-6,
    moe_layer_overhead_seconds=257.7e-6,
    host_seconds_per_sequence=25.11e-6,
    grace_host_factor=1.822,
    fitted=("gemm_efficiency", "expert_gemm_efficiency", "elementwise_bytes_per_token", "expert_bytes_per_token",
            "layer_overhead_seconds", "moe_layer_overhead_seconds", "host_seconds_per_sequence",
            "grace_host_factor"),
)
