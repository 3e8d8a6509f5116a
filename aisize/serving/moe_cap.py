"""The roofline's routed-expert time, capped by the engine's own MoE operator as measured on the GPU.

The roofline times a replica's routed experts as tile-padded grouped GEMMs at ``expert_gemm_efficiency`` of the
dense GEMM rate, one fitted share for every MoE shape. The public runs that identify it have small or finely split
experts (DeepSeek-R1: 256 experts of 2,048 columns, split 8 ways at TP 8; Llama 4 Scout FP8 at TP 4), where NVIDIA's
measured operators [1] run at 10 to 50 % of the FP8 peak; Mixtral 8x7B's 8 whole experts of 14,336 columns run at
about 73 % of it on H100 from 4,096 tokens up (TensorRT-LLM 1.3.0rc20 ``moe_torch_flow_cutlass``), so the fitted
share makes them 2.8 to 3.9 times slower than the silicon from 1,024 tokens up (docs/calibration-mixtral-mlperf.md).

With ``calib.moe_source == "kernel_cap"`` the FP8 or BF16 routed experts (:data:`CAPPED_FORMATS`) of a replica of
one GPU (every expert whole on it: TP 1, EP 1) take the smaller of the roofline and the engine's measured operator for the same GPU, model shape
(hidden, expert size, top-k, routed experts) and weight format (:func:`aisize.serving.kernel_moe.experts_seconds`,
AIConfigurator's routing skew). There the measured operator is the whole MoE layer (routing, permutation, grouped
GEMMs, combine) with no other GPU to wait for, so the silicon bounds the time the same kernel takes inside a step;
the roofline keeps whatever its fitted constants carry where it is the shorter one. On several GPUs a layer waits
for its busiest rank and its exchange, which one GPU's table does not measure, and capping them there loses public
runs (DeepSeek-R1 at EP 8, Llama 4 Scout FP8 at TP 4: docs/calibration-mixtral-mlperf.md), so the roofline stays.
Where no table covers the case the roofline stands alone. No constant is fitted.

With ``calib.moe_source == "kernel_cap_split"`` TensorRT-LLM's NVFP4 routed experts are capped on every split as
well, where more than 128 tokens go through a MoE layer (its CUTLASS kernel), by the engine's operator measured at
the replica's own split (``moe_tp x moe_ep``, the tokens of the whole expert-parallel group; :data:`SPLIT_CAPPED`).
The roofline's one share for every format reaches NVFP4 through the datasheet's 2x FP4 peak alone; at DeepSeek-R1's
prefill iterations on GB200 and GB300 (16,384 tokens a rank, EP 4 or 2) the measured NVFP4 operator takes 0.62 to
0.65 of the roofline, and the disaggregated prefill pools carried 1.13 to 1.30 of the roofline's capacity. The
default since 2026-12-06: every public check line holds or improves, and held out it gains 13 and 12 tokens/s runs
and 7 TPOT runs leaving a model out, losing 3 TPOT runs leaving a GPU out (docs/calibration-nvfp4-prefill.md). FP8
on splits stays on the roofline (capping it loses public runs, as above).

References
----------
.. [1] ``aiconfigurator-core`` 0.12.0 (Apache-2.0), ``systems/data/<gpu>/moe/<engine>/<version>/moe_perf.parquet``,
       distilled into ``data/kernels/<gpu>/<engine>/moe.npz`` (docs/kernels.md).
"""

from __future__ import annotations

import numpy as np

from aisize.serving.kernel_moe import LOW_LATENCY_MAX_TOKENS, experts_seconds

#: expert formats whose measured operator is one kernel at every token count (TensorRT-LLM's CUTLASS grouped GEMM,
#: ``moe_torch_flow_cutlass``); its NVFP4 MoE switches to a low-latency twin up to 128 tokens and has TRTLLM-Gen
#: kernels the tables do not measure, and its one-GPU NVFP4 sweeps on B200 and GB200 differ from each other by
#: more than the public runs do (docs/calibration-history.md, 2026-12-05)
CAPPED_FORMATS = ("fp8", "bf16")
#: expert format -> engine keys whose measured operator caps the roofline on every split (moe_source
#: "kernel_cap_split"): TensorRT-LLM's NVFP4 MoE, its low-latency twin up to 128 tokens and CUTLASS above (kernel_moe)
SPLIT_CAPPED = {"nvfp4": ("trtllm", "trtllm-bench")}
#: ... only where more tokens than this go through a MoE layer: the CUTLASS kernel, not its low-latency twin (capping
#: the twin as well loses 9 runs leaving one model out: docs/calibration-nvfp4-prefill.md)
SPLIT_CAP_ABOVE_TOKENS = LOW_LATENCY_MAX_TOKENS


def capped_experts_seconds(costs, gpu: str, engine_key: str, tokens, gpus, ep, roofline_seconds, split=False):
    """``roofline_seconds`` (the roofline's routed-expert time of ``tokens`` on a replica of ``gpus`` GPUs with its
    experts over ``ep`` of them), never above the engine's measured operator on a replica of one GPU, where a table
    covers the model's shape; unchanged on several GPUs (see the module docstring); with ``split``, the formats and
    engines of :data:`SPLIT_CAPPED` never above the operator measured at the replica's own split (broadcast) [s]."""
    if split and engine_key in SPLIT_CAPPED.get(costs.formats.experts, ()):
        measured = experts_seconds(costs, gpu, engine_key, tokens, gpus, ep, lambda: np.inf)
        return np.where(np.asarray(tokens) > SPLIT_CAP_ABOVE_TOKENS, np.minimum(roofline_seconds, measured),
                        roofline_seconds)
    alone = np.asarray(gpus) == 1
    if costs.formats.experts not in CAPPED_FORMATS or not np.any(alone):
        return roofline_seconds
    measured = experts_seconds(costs, gpu, engine_key, tokens, 1.0, 1.0, lambda: np.inf)
    return np.where(alone, np.minimum(roofline_seconds, measured), roofline_seconds)


def capped_roofline(costs, rates, tokens, gpus, ep, roofline):
    """``roofline`` (a callable of no arguments, the roofline's routed-expert time), capped by
    :func:`capped_experts_seconds` where the rates say so (``rates.kernel_moe_cap``), else ``roofline`` itself."""
    if not rates.kernel_moe_cap or rates.kernel_moe is None or not costs.moe_layers:  # (a dense model's 0.0 as is)
        return roofline
    return lambda: capped_experts_seconds(costs, *rates.kernel_moe, tokens, gpus, ep, roofline(),
                                          rates.kernel_moe_cap_split)
