"""Time of a replica's routed experts from the MoE kernels measured on the GPU.

NVIDIA's AIConfigurator measures each serving engine's fused MoE operator (routing permutation,
the grouped gate/up and down GEMMs, the weighted combine) on each GPU by weight format, model
shape (hidden, expert intermediate, top-k, routed experts), MoE tensor and expert parallel sizes,
token count and routing skew [1]; aisize keeps those sweeps as surfaces under ``data/kernels/``
(:mod:`aisize.kernels`). The table's ``tokens`` are the tokens entering the MoE layer of the whole
expert-parallel group (before routing), its time that of one GPU's share: the tensor-parallel split
of each expert (``tp = gpus / ep``) and its ``experts / ep`` local experts [1, 2].

So one iteration's routed-expert time per GPU is ``moe_layers x t(tokens)``, read from the engine's
own measured operator (its tile padding, its memory-bound floor at few tokens, its load imbalance
under the measured routing skew), where the roofline needs a fitted efficiency for each. Routing
follows AIConfigurator's own model choice [3]: a power law of exponent 1.01 for DeepSeek-family
models (MLA attention) and 1.2 for the other MoE models (the balanced sweep where no skewed one was
measured).

Each (GPU, engine, format, shape, split) gives one curve of seconds over tokens on powers of two (1 to
16,384, the measured range), read once and cached; an iteration interpolates it in (ln tokens,
ln seconds), so a search's many batches cost one vectorized interpolation. Where no table covers a
case (another engine, a format without a measured kernel, a GPU without tables, a shape or split
outside the sweeps), :func:`curve` returns None and the iteration keeps its roofline;
:func:`coverage` says which.

References
----------
.. [1] ``aiconfigurator-core`` 0.12.0 (Apache-2.0), ``systems/data/<gpu>/moe/<engine>/<version>/
       moe_perf.parquet``; docs/kernels.md (the import, its versions and its accuracy).
.. [2] TensorRT-LLM ``MoeConfig`` / SGLang ``--ep-size``: experts split over ``moe_ep_size`` GPUs and
       each expert over ``moe_tp_size = tp / moe_ep_size`` of them.
.. [3] ``aiconfigurator-core`` 0.12.0, ``sdk/models/moe.py`` (``_power_law_alpha = 1.2``) and
       ``sdk/models/deepseek.py`` (``1.01``), with ``sdk/config.py`` ``workload_distribution =
       "power_law"``; docs/kernels.md.
.. [4] ``aiconfigurator-core`` 0.12.0, ``sdk/operations/moe.py`` (the ``moe_torch_flow_min_latency`` rows form
       a low-latency twin table the engine selects by token count); evaluated through its engine for DeepSeek-R1
       NVFP4 on B200 at EP 8 it returns the twin's times up to 128 tokens and the regular table's from 129
       (docs/kernels.md).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from aisize.kernels.api import GEMM_DTYPES
from aisize.serving.kernel_gemms import ENGINE_TABLES, seconds  # the same log-log interpolation as GEMMs

#: expert weight format -> the measured MoE dtypes, in order of preference.
DTYPES = {**GEMM_DTYPES, "mxfp4": ("w4a16_mxfp4",), "int4": ("int4_wo",)}
#: DeepSeek-style (MLA) checkpoints store FP8 with 128x128 block scales (DeepSeek-V3 report, arXiv:2412.19437,
#: sec. 3.3), so their FP8 experts read the block-scaled sweep first.
BLOCK_FP8_FIRST = ("fp8_block", "fp8")
TOKEN_GRID = 2.0 ** np.arange(0, 15)  # 1 ... 16,384 tokens: the tables' measured range
MIN_MEASURED_TOKENS = 1024.0  # a curve must be measured up to here (past it, time ~ tokens)
LOW_LATENCY_KERNEL = "min_latency"  # TRT-LLM's low-latency NVFP4 MoE (TRTLLM-Gen kernels), a twin sweep
LOW_LATENCY_MAX_TOKENS = 128.0  # ... that AIConfigurator's engine reads up to here and the regular one above [4]


def distribution(model) -> str:
    """The routing skew AIConfigurator models for ``model`` [3]."""
    return "power_law_1.01" if model.attention == "mla" else "power_law_1.2"


def moe_shape(model) -> tuple | None:
    """(hidden, expert intermediate, top-k, routed experts, gated, routing skew, block-scaled FP8 first) of a MoE
    model, else None: the key of its :func:`curve`."""
    if model.experts <= 1 or not model.moe_ffn_hidden:
        return None
    return (int(model.hidden), int(model.moe_ffn_hidden), int(model.experts_per_token), int(model.experts),
            model.ffn_type == "swiglu", distribution(model), model.attention == "mla")


def _variants(table, dtype: str, gated: bool, dist: str):
    """Variant ids of ``dtype`` for a gated (or non-gated) MLP, the engine's default kernel first, skewed
    routing ``dist`` where measured, else balanced."""
    cats = table.cats
    counts = table.points_per_variant()
    out = []
    for want in (dist, "balanced"):
        ids = []
        for i, v in enumerate(table.variants):
            row = dict(zip(cats, v))
            kernel = row.get("kernel", "")
            if row.get("dtype") != dtype or row.get("distribution") != want:
                continue
            if LOW_LATENCY_KERNEL in kernel or ("nongated" in kernel) == gated:
                continue
            ids.append(i)
        out += sorted(ids, key=lambda i: -int(counts[i]))
    return out


@lru_cache(maxsize=1024)
def curve(gpu: str, engine_key: str, expert_format: str, shape: tuple | None, moe_tp: int, ep: int):
    """(ln tokens, ln seconds) on :data:`TOKEN_GRID` of one MoE layer's routed experts on one GPU, or None
    where no table covers them (see the module docstring)."""
    from aisize import kernels

    engine = ENGINE_TABLES.get(engine_key)
    if engine is None or shape is None:
        return None
    try:
        table = kernels.table(gpu, engine, "moe")
    except kernels.KernelDataMissing:
        return None
    hidden, inter, topk, experts, gated, dist, block_first = shape
    dtypes = DTYPES.get(expert_format, ())
    if block_first and expert_format == "fp8":
        dtypes = BLOCK_FP8_FIRST
    coords = np.stack(np.broadcast_arrays(float(hidden), float(inter), float(topk), float(experts),
                                          float(moe_tp), float(ep), TOKEN_GRID), axis=1)
    for dtype in dtypes:
        for vid in _variants(table, dtype, gated, dist):
            log_t, ok, _ = table.lookup_ids(np.full(len(TOKEN_GRID), vid), coords)
            log_t, ok = _low_latency(table, vid, coords, log_t, ok)
            # keep the measured prefix (some sweeps stop early); it must reach a decode batch's tokens
            upto = int(np.argmin(ok)) if not ok.all() else len(ok)
            if upto and TOKEN_GRID[upto - 1] >= MIN_MEASURED_TOKENS:
                return np.log(TOKEN_GRID[:upto]), log_t[:upto]
    return None


def _low_latency(table, vid, coords, log_t, ok):
    """Up to :data:`LOW_LATENCY_MAX_TOKENS`, the low-latency twin of variant ``vid`` where it was measured [4]."""
    row = dict(zip(table.cats, table.variants[vid]))
    twin = row["kernel"].replace("cutlass", LOW_LATENCY_KERNEL)
    if twin == row["kernel"]:
        return log_t, ok
    try:
        tid = table.resolve_variant(kernel=twin, dtype=row["dtype"], distribution=row["distribution"])
    except LookupError:
        return log_t, ok
    low = TOKEN_GRID <= LOW_LATENCY_MAX_TOKENS
    y, ok_low, _ = table.lookup_ids(np.full(int(low.sum()), tid), coords[low])
    if not ok_low.all():
        return log_t, ok
    return np.where(low, np.pad(y, (0, len(TOKEN_GRID) - len(y))), log_t), ok


def experts_seconds(costs, gpu: str, engine_key: str, tokens, gpus, ep, roofline):
    """The measured routed-expert time of ``tokens`` through every MoE layer of a replica whose experts
    spread over ``ep`` of its ``gpus``, where tables cover the case, else ``roofline()`` (a callable, only
    evaluated where some case is not covered; broadcast) [s]."""
    shape = moe_shape(costs.model)
    if shape is None or not costs.moe_layers:
        return roofline()
    g, e = np.asarray(gpus, dtype=float), np.asarray(ep, dtype=float)
    if g.size == 1 and e.size == 1:  # one split (an estimate's replica): no grouping needed
        lookup = _split_curve(gpu, engine_key, costs.formats.experts, shape, float(g), float(e))
        return roofline() if lookup is None else costs.moe_layers * seconds(lookup, tokens)
    g, e = np.broadcast_arrays(g, e)
    key = g * 4096.0 + e  # one number per (gpus, EP) split: EP is at most a few hundred
    result, uncovered = None, np.zeros(g.shape, bool)
    for k in np.unique(key):
        here = key == k
        lookup = _split_curve(gpu, engine_key, costs.formats.experts, shape, float(g[here].flat[0]),
                              float(e[here].flat[0]))
        if lookup is None:
            uncovered |= here
            continue
        t = costs.moe_layers * seconds(lookup, tokens)
        result = np.where(here, t, 0.0 if result is None else result)
    if result is None:
        return roofline()
    return np.where(uncovered, roofline(), result) if uncovered.any() else result


def fixed_seconds(costs, gpu: str, engine_key: str, gpus, ep, roofline_at):
    """The measured operator's fixed time through every MoE layer: its time for one token beyond the roofline's
    for that token, ``roofline_at(1.0)`` (a callable of tokens, all MoE layers, broadcast over the splits), not
    below zero; zero where no table covers a split [s].

    One token reads only its top-k experts' weights, so what the measured operator spends beyond the roofline
    there is the part no batch amortizes (routing, permutation, launches, the GEMMs' fixed cost): what a fitted
    ``moe_layer_seconds`` stands for, read from silicon (docs/calibration.md, 2026-12-05)."""
    shape = moe_shape(costs.model)
    g, e = np.broadcast_arrays(np.asarray(gpus, dtype=float), np.asarray(ep, dtype=float))
    if shape is None or not costs.moe_layers:
        return np.zeros(g.shape)
    one = np.zeros(g.shape)
    for gi, ei in set(zip(g.flat, e.flat)):
        lookup = _split_curve(gpu, engine_key, costs.formats.experts, shape, float(gi), float(ei))
        if lookup is not None:
            one = np.where((g == gi) & (e == ei), costs.moe_layers * float(np.exp(lookup[1][0])), one)
    roof = np.broadcast_to(np.asarray(roofline_at(1.0), dtype=float), g.shape)
    return np.where(one > 0, np.maximum(one - roof, 0.0), 0.0)


def _split_curve(gpu, engine_key, expert_format, shape, g: float, e: float):
    """:func:`curve` of a replica of ``g`` GPUs with experts over ``e`` of them (None if not a whole split)."""
    if e < 1 or g % e:
        return None
    return curve(gpu, engine_key, expert_format, shape, int(g // e), int(e))


def coverage(costs, gpu: str, engine_key: str, gpus: int, ep: int) -> str:
    """Where a replica's routed-expert time comes from, in words."""
    shape = moe_shape(costs.model)
    if shape is None:
        return f"none ({costs.model.id} has no routed experts)"
    if gpus % ep == 0 and curve(gpu, engine_key, costs.formats.experts, shape, gpus // ep, ep) is not None:
        return f"measured MoE kernels ({gpu}, {ENGINE_TABLES[engine_key]}, data/kernels)"
    return (f"roofline (no measured {costs.formats.experts} MoE kernel for {gpu} under {engine_key} at hidden "
            f"{shape[0]}, expert size {shape[1]}, top-{shape[2]} of {shape[3]}, TP {gpus // max(ep, 1)} x EP {ep})")


def engine_experts_seconds(costs, gpu: str, engine_key: str, formats: tuple, tokens, gpus, ep, roofline):
    """The routed-expert time of an engine whose own measured MoE operator times its ``formats`` under expert
    parallelism (:attr:`aisize.serving.engine.Engine.measured_ep_moe_formats`): :func:`experts_seconds` where the
    experts are spread over ``ep > 1`` GPUs, ``roofline()`` at EP 1, for other formats and where no table covers the
    shape (broadcast) [s].

    Why EP > 1 only: for DeepSeek-R1 on B200 at EP 1, SGLang's FP8 block-scaled operator
    (``sglang_flashinfer_trtllm_moe``) runs 10 to 27 % faster than TensorRT-LLM's (``deepgemm``) at 1,024 to 16,384
    tokens, where the roofline with its fitted constants stands for both engines; at EP 8 it takes 2.7 to 9.2 times
    TensorRT-LLM's time at 4,096 to 16,384 tokens, an engine difference the shared roofline cannot carry
    (docs/calibration-sglang-fp8.md)."""
    if costs.formats.experts not in formats or moe_shape(costs.model) is None or not costs.moe_layers:
        return roofline()
    e = np.asarray(ep, dtype=float)
    if not np.any(e > 1):
        return roofline()
    measured = experts_seconds(costs, gpu, engine_key, tokens, gpus, ep, roofline)
    return measured if np.all(e > 1) else np.where(e > 1, measured, roofline())


def engine_coverage(costs, gpu: str, engine_key: str, formats: tuple, gpus: int, ep: int) -> str:
    """Where :func:`engine_experts_seconds` takes a replica's routed-expert time from, in words."""
    if costs.formats.experts not in formats:
        return f"roofline ({engine_key} times only {'/'.join(formats) or 'no'} experts from its measured MoE operator)"
    if ep <= 1:
        return f"roofline (experts not spread by expert parallelism: EP {ep})"
    return coverage(costs, gpu, engine_key, gpus, ep)
