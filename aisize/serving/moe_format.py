"""The fitted MoE-layer fixed time scaled to the replica's expert weight format, by the measured MoE operators.

``moe_layer_seconds`` is one fitted time per MoE layer per GPU generation, whatever the experts' weight format;
the public runs say it depends on the format (docs/calibration.md, "NVFP4 decode on GB300 under the same build":
at Dynamo 0.8.1 on GB300 TP 8 x EP 8 the NVFP4 decode step reads 1.2 ms under the model where the FP8 one is
within 3 %). NVIDIA's measured MoE operators [1] time the same layer (same GPU, engine, model shape and split) in
each format, so with ``calib.moe_layer_source == "format_kernels"`` the fitted time is scaled by

    ratio = t_format(1..8 tokens) / t_reference(1..8 tokens),

each the geometric mean of the operator's time at 1, 2, 4 and 8 tokens entering the layer (the smallest decode
batches, where the fixed time is what no batch amortizes; beyond 8 tokens the reads of more distinct experts grow
with the batch and are the roofline's), and ``t_reference`` the operator in :data:`REFERENCE_FORMAT`, the format
the fitted value stands for. No new constant is fitted. Where the replica's engine has no table for the case,
another engine's table on the same GPU serves (:data:`FALLBACK_ENGINES`); where none does (another GPU, a shape
or split outside the sweeps, a format without a measured kernel) the ratio is 1.

With ``moe_layer_source == "low_latency_kernels"`` (not shipped) the ratio applies only where a low-latency kernel runs:
under :data:`LOW_LATENCY_ENGINES`, for experts in :data:`LOW_LATENCY_FORMATS`, in iterations whose MoE layers take at
most :data:`~aisize.serving.kernel_moe.LOW_LATENCY_MAX_TOKENS` tokens [2]; elsewhere the fitted time stands as it is
(docs/calibration-nvfp4.md: applied at every batch it loses the max-throughput check, with SGLang too SGLang's 2025
NVFP4 runs; so limited it holds every public check line but loses runs leaving one model out).

References
----------
.. [1] ``aiconfigurator-core`` 0.12.0 (Apache-2.0), ``systems/data/<gpu>/moe/<engine>/<version>/moe_perf.parquet``,
       distilled into ``data/kernels/<gpu>/<engine>/moe.npz`` (docs/kernels.md); read by
       :func:`aisize.serving.kernel_moe.curve`.
.. [2] ``aiconfigurator-core`` 0.12.0, ``sdk/operations/moe.py`` (the ``moe_torch_flow_min_latency`` rows, selected
       by token count up to 128); :data:`aisize.serving.kernel_moe.LOW_LATENCY_MAX_TOKENS`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from aisize.serving.kernel_moe import curve, moe_shape

#: the format the fitted ``moe_layer_seconds`` stands for: every Hopper MoE run with a TPOT is FP8
#: (DeepSeek-R1 on H200), and FP8 is the format whose Blackwell decode steps the shipped value meets
#: (docs/calibration.md, 2026-12-05)
REFERENCE_FORMAT = "fp8"
SMALL_TOKENS = 4  # the first points of kernel_moe.TOKEN_GRID: 1, 2, 4 and 8 tokens
#: ``moe_layer_source="low_latency_kernels"``: the engines whose NVFP4 MoE runs low-latency kernels at small batches
#: and the formats that have them: TensorRT-LLM's NVFP4 operator is measured twice [1], the regular sweep and a
#: low-latency twin (TRTLLM-Gen, ``moe_torch_flow_min_latency``) that AIConfigurator's TensorRT-LLM model reads up to
#: LOW_LATENCY_MAX_TOKENS tokens [2]; no other format and no other engine has such a twin
#: (docs/calibration-nvfp4.md)
LOW_LATENCY_ENGINES = frozenset({"trtllm", "trtllm-bench"})
LOW_LATENCY_FORMATS = frozenset({"nvfp4"})
#: engine key -> the others whose tables stand in on the same GPU, in order
FALLBACK_ENGINES = {"trtllm": ("sglang", "vllm"), "trtllm-bench": ("sglang", "vllm"),
                    "sglang": ("trtllm", "vllm"), "vllm": ("sglang", "trtllm")}


@lru_cache(maxsize=1024)
def ratio(gpu: str, engine_key: str, expert_format: str, shape: tuple | None, moe_tp: int, ep: int) -> float:
    """The measured operator's small-batch time in ``expert_format`` over that in :data:`REFERENCE_FORMAT`, on
    one GPU at one split, from the engine's table or, failing it, another engine's on the same GPU; 1 where none
    covers both formats."""
    if shape is None or expert_format == REFERENCE_FORMAT:
        return 1.0
    for engine in (engine_key,) + FALLBACK_ENGINES.get(engine_key, ()):
        mine = curve(gpu, engine, expert_format, shape, moe_tp, ep)
        ref = curve(gpu, engine, REFERENCE_FORMAT, shape, moe_tp, ep)
        if mine is not None and ref is not None:
            return float(np.exp(np.mean(mine[1][:SMALL_TOKENS]) - np.mean(ref[1][:SMALL_TOKENS])))
    return 1.0


def scale(costs, gpu: str, engine_key: str, gpus, ep):
    """:func:`ratio` for a replica of ``gpus`` GPUs with experts over ``ep`` of them (broadcast over splits;
    1 where the split is not whole)."""
    shape = moe_shape(costs.model)
    g, e = np.broadcast_arrays(np.asarray(gpus, dtype=float), np.asarray(ep, dtype=float))
    if shape is None or not costs.moe_layers or costs.formats.experts == REFERENCE_FORMAT:
        return 1.0
    if g.ndim == 0:
        return _split_ratio(gpu, engine_key, costs.formats.experts, shape, float(g), float(e))
    out = np.ones(g.shape)
    for gi, ei in set(zip(g.flat, e.flat)):
        out = np.where((g == gi) & (e == ei), _split_ratio(gpu, engine_key, costs.formats.experts, shape, gi, ei),
                       out)
    return out


def low_latency_scale(costs, gpu: str, engine_key: str, gpus, ep):
    """:func:`scale` where the replica's experts are in a :data:`LOW_LATENCY_FORMATS` format, else 1: the MoE layer's
    fixed time in the iterations the engine's low-latency kernels run (``moe_layer_source="low_latency_kernels"``)."""
    if costs.formats.experts not in LOW_LATENCY_FORMATS:
        return 1.0
    return scale(costs, gpu, engine_key, gpus, ep)


def _split_ratio(gpu, engine_key, expert_format, shape, g: float, e: float) -> float:
    if e < 1 or g % e:
        return 1.0
    return ratio(gpu, engine_key, expert_format, shape, int(g // e), int(e))
