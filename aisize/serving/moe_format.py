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

References
----------
.. [1] ``aiconfigurator-core`` 0.12.0 (Apache-2.0), ``systems/data/<gpu>/moe/<engine>/<version>/moe_perf.parquet``,
       distilled into ``data/kernels/<gpu>/<engine>/moe.npz`` (docs/kernels.md); read by
       :func:`aisize.serving.kernel_moe.curve`.
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


def _split_ratio(gpu, engine_key, expert_format, shape, g: float, e: float) -> float:
    if e < 1 or g % e:
        return 1.0
    return ratio(gpu, engine_key, expert_format, shape, int(g // e), int(e))
