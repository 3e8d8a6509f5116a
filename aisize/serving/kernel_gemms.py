"""Time of a replica's attention projections and dense MLPs from GEMMs measured on the GPU.

NVIDIA's AIConfigurator measures each serving engine's GEMM kernels on each GPU by dtype and
(m, n, k) [1]; aisize keeps them as surfaces under ``data/kernels/`` (:mod:`aisize.kernels`). A
layer's linear work on one GPU of a tensor-parallel group is a handful of GEMMs whose shapes follow
from the architecture [2]: QKV (``k = hidden``, ``n = (heads + 2·kv_heads)·head_dim / tp``), the
output projection (``n = hidden``, ``k = heads·head_dim / tp``), and the MLP's gate/up
(``n = 2·ffn / tp`` for gated MLPs, ``ffn / tp`` otherwise) and down projections, with MoE models'
shared experts as one more MLP. The time of ``m`` tokens through them is read, not modelled:
the measured kernel (its launch, its tiles, its memory-bound floor at small m and its
compute-bound slope at large m) is the engine's own.

Each (GPU, engine, formats, shapes) gives one curve of seconds over m on a grid of powers of two
(1 to 32,768 tokens, the measured range), read once and cached; an iteration interpolates it in
(ln m, ln seconds), so a search's many shapes cost one vectorized interpolation. Where no table
covers a case (another engine, a weight format without a measured kernel such as int4 or mxfp4, a
GPU without tables, MLA or Mamba layers, shapes outside the measured n and k), :func:`curve`
returns None and the iteration keeps its roofline; :func:`coverage` says which.

References
----------
.. [1] ``aiconfigurator-core`` 0.12.0 (Apache-2.0), ``systems/data/<gpu>/gemm/<engine>/<version>/
       gemm_perf.parquet``; docs/kernels.md (the import, its versions and its accuracy).
.. [2] Shoeybi et al. 2019 (Megatron-LM), arXiv:1909.08053, sec. 3 (column-parallel QKV and
       gate/up, row-parallel output and down projections).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from aisize.kernels.api import GEMM_DTYPES

#: engine key -> the engine whose kernel tables it runs (trtllm-bench is TensorRT-LLM's own benchmark).
ENGINE_TABLES = {"trtllm": "trtllm", "trtllm-bench": "trtllm", "vllm": "vllm", "sglang": "sglang"}
DTYPES = GEMM_DTYPES  # weight format -> the measured GEMM dtypes (aisize.kernels.api)
M_GRID = 2.0 ** np.arange(0, 16)  # 1 ... 32,768 tokens: the tables' measured range of m
MIN_MEASURED_M = 1024.0  # a curve must be measured up to here (past it, time ~ m: compute-bound)


def layer_gemms(model, tp: int) -> tuple:
    """(kind, n, k, per_model) of one GPU's GEMMs for ``model`` with attention and dense layers split over
    ``tp`` GPUs; ``per_model`` counts the layers that run it. None when the architecture has layers no GEMM
    table describes (MLA, Mamba) or the split is not whole."""
    if model.attention not in ("mha", "gqa", "mqa") or getattr(model, "mamba_layers", 0):
        return None
    h, d, L = model.hidden, model.head_dim, model.layers
    if model.heads % tp or model.ffn_hidden % tp:
        return None
    kv = max(model.kv_heads // tp, 1)  # KV heads are replicated when fewer than the GPUs
    gated = 2 if model.ffn_type == "swiglu" else 1
    out = [("attention", (model.heads // tp + 2 * kv) * d, h, L), ("attention", h, model.heads * d // tp, L)]
    dense_layers = L if model.experts <= 1 else model.dense_layers
    if dense_layers:
        out += [("dense", gated * model.ffn_hidden // tp, h, dense_layers),
                ("dense", h, model.ffn_hidden // tp, dense_layers)]
    shared = (model.shared_ffn_hidden or (model.shared_experts or 0) * (model.moe_ffn_hidden or 0))
    if model.experts > 1 and shared:
        if shared % tp:
            return None
        moe_layers = L - model.dense_layers
        out += [("dense", gated * shared // tp, h, moe_layers), ("dense", h, shared // tp, moe_layers)]
    return tuple(out)


def _dtype(gpu: str, engine: str, weight_format: str) -> str | None:
    from aisize import kernels

    try:
        t = kernels.table(gpu, engine, "gemm")
    except kernels.KernelDataMissing:
        return None
    measured = {dict(zip(t.cats, v)).get("dtype") for v in t.variants}
    return next((d for d in DTYPES.get(weight_format, ()) if d in measured), None)


@lru_cache(maxsize=1024)
def curve(gpu: str, engine_key: str, attention_format: str, dense_format: str, gemms: tuple):
    """(ln m, ln seconds) on :data:`M_GRID` of one GPU's attention-projection and dense-MLP GEMMs over every
    layer, or None where a table does not cover them (see the module docstring)."""
    from aisize import kernels

    engine = ENGINE_TABLES.get(engine_key)
    if engine is None or gemms is None:
        return None
    dtypes = {"attention": _dtype(gpu, engine, attention_format), "dense": _dtype(gpu, engine, dense_format)}
    if None in dtypes.values():
        return None
    total = np.zeros_like(M_GRID)
    for kind, n, k, count in gemms:
        total = total + count * kernels.gemm_seconds(gpu, engine, dtypes[kind], M_GRID, n, k, out_of_range="nan")
    # some sweeps stop below 32,768 tokens (A100's at 8,192): keep the measured prefix, which must reach
    # MIN_MEASURED_M (a decode batch); beyond it time grows with m, as compute-bound GEMMs do (seconds())
    finite = np.isfinite(total)
    upto = int(np.argmin(finite)) if not finite.all() else len(total)
    if upto == 0 or M_GRID[upto - 1] < MIN_MEASURED_M:
        return None
    return np.log(M_GRID[:upto]), np.log(total[:upto])


def seconds(lookup, tokens):
    """Interpolate a :func:`curve` at ``tokens`` (vectorized); beyond the grid, time grows with m [s]."""
    log_m, log_t = lookup
    m = np.maximum(np.asarray(tokens, dtype=float), 1.0)
    x = np.log(m)
    inside = np.exp(np.interp(x, log_m, log_t))
    return np.where(x > log_m[-1], np.exp(log_t[-1]) * m / np.exp(log_m[-1]), inside)


def linear_seconds(costs, gpu: str, engine_key: str, tokens, tp, roofline):
    """The measured linear time of ``tokens`` per attention group over ``tp`` GPUs, where tables cover the
    case, else ``roofline`` (broadcast) [s]."""
    tps = np.asarray(tp, dtype=float)
    result = np.asarray(roofline, dtype=float)
    for t in np.unique(tps):
        lookup = curve(gpu, engine_key, costs.formats.attention, costs.formats.dense, layer_gemms(costs.model, int(t)))
        if lookup is None:
            continue
        result = np.where(tps == t, seconds(lookup, tokens), result)
    return result


def coverage(costs, gpu: str, engine_key: str, tp: int) -> str:
    """Where a replica's linear time comes from, in words."""
    gemms = layer_gemms(costs.model, int(tp))
    if gemms is None:
        return f"roofline ({costs.model.id}: layers without a measured GEMM form, or a split over {tp} GPUs)"
    if curve(gpu, engine_key, costs.formats.attention, costs.formats.dense, gemms) is None:
        return (f"roofline (no measured {costs.formats.attention}/{costs.formats.dense} GEMMs for {gpu} under "
                f"{engine_key}, or shapes outside them)")
    return f"measured GEMMs ({gpu}, {ENGINE_TABLES[engine_key]}, data/kernels)"
