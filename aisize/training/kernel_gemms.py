"""Training GEMMs timed from NVIDIA's measured kernel tables: forward, input-gradient and weight-gradient.

A linear layer ``Y = X·W`` with ``X`` of T tokens x n_in and ``W`` of n_in x n_out runs three GEMMs
per micro-batch [1]:

* **forward** ``Y = X·W``: the table's ``[m, k] x [k, n]`` with m = T, k = n_in, n = n_out;
* **input gradient** (dgrad) ``dX = dY·Wᵀ``: m = T, k = n_out, n = n_in;
* **weight gradient** (wgrad) ``dW = Xᵀ·dY``: m = n_in, k = T, n = n_out (the tokens are the
  reduction dimension).

Their FLOPs are equal (2·T·n_in·n_out each, so the three make 3x the forward), their times are not: a
GEMM's efficiency depends on its shape (a wide tensor-parallel split, a thin K/V projection, a reduction
over 8,192 tokens). Each is read from the measured surfaces of ``data/kernels/<gpu>/<engine>/gemm.npz``
(:mod:`aisize.kernels`, docs/kernels.md) [2]. Those sweeps were taken for inference engines; a GEMM of a
shape and dtype is the same cuBLAS/CUTLASS problem in training, so the TensorRT-LLM table of the GPU is
used (vLLM's where TensorRT-LLM has no table of that dtype). What no table measures stays on the roofline
x fitted efficiency of :func:`aisize.training.efficiency.gemm_seconds`, GEMM by GEMM: a GPU without
tables (AMD, TPUs), fp32, a dtype the GPU's tables lack (fp8 on A100), or a shape outside the measured
range (A100's m stops at 8,192; an output layer wider than 65,536); :func:`coverage` says which share
came from tables.

The layers' GEMMs on one tensor-parallel rank are those of :func:`aisize.training.work._linears`
(Megatron column-parallel Q, K, V and MLP inputs, row-parallel output and down projections [3]).
Transformer Engine (Megatron-Core) fuses Q/K/V into one GEMM and the gated MLP's two inputs into one
(``linear_qkv``, ``linear_fc1``); PyTorch's torchtitan model runs them as separate ``nn.Linear``
layers: the shapes follow the framework. Low-precision recipes run ``recipe.low_share`` of the work
in the recipe's format (fp8 per-tensor, else block-scaled fp8; nvfp4), the rest in bf16. The engines'
fp8 and nvfp4 timings include quantizing the activation on every call (a cost that does not grow with
n); training's casts are timed apart (:mod:`aisize.training.work`), so that share is taken out
(:func:`input_quantization_seconds`).

The switch: ``gemm_source`` "roofline" (the fitted efficiency, the default) or "kernels"
(:data:`GEMM_SOURCES`); :func:`aisize.training.estimate` takes it as a keyword, else reads
:data:`DEFAULT_GEMM_SOURCE`. Judged against the published runs in docs/training-kernels.md.

References
----------
.. [1] Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
   Megatron-LM", arXiv:2104.04473, sec. 3.1 (a linear layer's backward: two GEMMs of the forward's size).
.. [2] ``aiconfigurator-core`` 0.12.0 (Apache-2.0), ``systems/data/<gpu>/gemm/<engine>/<version>/
   gemm_perf.parquet``; docs/kernels.md.
.. [3] Shoeybi et al. 2019 (Megatron-LM), arXiv:1909.08053, sec. 3.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from aisize import checks
from aisize.kernels.api import GEMM_DTYPES
from aisize.training import efficiency as E
from aisize.training.calibration import CALIBRATION as SHIPPED
from aisize.training.calibration import TrainingCalibration
from aisize.training.dims import ModelDims
from aisize.training.recipes import Recipe
from aisize.training.work import LayerTimes, _linears

GEMM_SOURCES = ("roofline", "kernels")
#: what :func:`aisize.training.estimate` uses when no ``gemm_source`` is given (see docs/training-kernels.md
#: for why the roofline stays the default).
DEFAULT_GEMM_SOURCE = "roofline"
#: tables in order of preference: TensorRT-LLM's ``torch_flow`` GEMMs (bf16, fp8, fp8_block, nvfp4 on
#: Hopper and Blackwell), then vLLM's.
TABLE_ENGINES = ("trtllm", "vllm")
#: catalog peak format of a recipe's GEMMs -> the measured dtypes, in order of preference (training's
#: fp8 is per-tensor scaled; block-scaled fp8 where only that was measured).
TABLE_DTYPES = {**{k: v for k, v in GEMM_DTYPES.items() if k != "nvfp4"}, "fp4": GEMM_DTYPES["nvfp4"]}

#: measured dtypes whose inference timings include quantizing the activation (:func:`input_quantization_seconds`).
QUANTIZED_DTYPES = ("fp8", "fp8_block", "nvfp4")
QUANT_PROBE_N = (1024.0, 4096.0)  # n at which the quantization intercept is read (4 x apart)

_ACTIVE = ContextVar("aisize_training_gemm_source", default=None)


@dataclass(frozen=True)
class GemmSource:
    """Where a step's GEMM times come from: ``source`` in :data:`GEMM_SOURCES` for the GPU ``gpu``."""

    gpu: str | None
    source: str = "roofline"


def check_source(gemm_source) -> str:
    """``gemm_source`` checked (None: :data:`DEFAULT_GEMM_SOURCE`)."""
    return checks.choice("gemm_source", DEFAULT_GEMM_SOURCE if gemm_source is None else gemm_source, GEMM_SOURCES)


@contextmanager
def using(gpu: str | None, gemm_source: str):
    """Time the training GEMMs evaluated inside the block from ``gemm_source`` for ``gpu``.

    A context, not an argument, only because the evaluation layer (aisize.training.evaluate) does not
    carry the GPU's id down to the step; :func:`active` reads it there.
    """
    token = _ACTIVE.set(GemmSource(gpu, check_source(gemm_source)))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def active() -> GemmSource:
    """The :class:`GemmSource` in force (outside :func:`using`: the roofline)."""
    return _ACTIVE.get() or GemmSource(None, "roofline")


def resolve_source(gemm_source) -> str:
    """``gemm_source`` checked; None: the source of the :func:`using` block around the call, else
    :data:`DEFAULT_GEMM_SOURCE` (the same rule as :func:`aisize.training.kernel_moe.resolve_source`)."""
    held = _ACTIVE.get()
    return check_source(held.source if gemm_source is None and held is not None else gemm_source)


def _table_dtype(gpu: str, dtype: str | None) -> tuple[str, str] | None:
    """(engine, measured dtype) of the first table that measured ``dtype`` on ``gpu``, else None."""
    return _table_dtype_cached(gpu, dtype) if dtype else None


@lru_cache(maxsize=256)
def _table_dtype_cached(gpu: str, dtype: str):
    from aisize import kernels

    for engine in TABLE_ENGINES:
        try:
            t = kernels.table(gpu, engine, "gemm")
        except kernels.KernelDataMissing:
            continue
        measured = {dict(zip(t.cats, v)).get("dtype") for v in t.variants}
        found = next((d for d in TABLE_DTYPES.get(dtype, ()) if d in measured), None)
        if found:
            return engine, found
    return None


def gemm3_shapes(tokens, n_in, n_out) -> tuple:
    """The table's (m, n, k) of a linear layer's forward, dgrad and wgrad GEMMs (module docstring)."""
    return ((tokens, n_out, n_in), (tokens, n_in, n_out), (n_in, n_out, tokens))


@lru_cache(maxsize=65536)
def gemm3_seconds(gpu: str, engine: str, dtype: str, tokens: float, n_in: float, n_out: float) -> tuple:
    """(forward, dgrad, wgrad) seconds of one linear layer of ``tokens`` x n_in -> n_out, read from the
    measured table (NaN where a GEMM's shape is outside it) [s]."""
    from aisize import kernels

    m, n, k = (np.array(axis, dtype=float) for axis in zip(*gemm3_shapes(tokens, n_in, n_out)))
    t = kernels.gemm_seconds(gpu, engine, dtype, m, n, k, out_of_range="nan")
    if dtype in QUANTIZED_DTYPES:
        # the intercept is a difference of two readings: never below the tensor cores' dense peak
        floor = 2.0 * m * n * k / _dense_peak(gpu, dtype)
        t = np.maximum(t - input_quantization_seconds(gpu, engine, dtype, m, k), floor)
    return tuple(float(x) for x in t)


def _dense_peak(gpu: str, dtype: str) -> float:
    """The catalog's dense peak of a measured low-precision dtype on ``gpu`` [FLOP/s]."""
    from aisize import catalog

    return float(getattr(catalog.accelerators[gpu], "fp4_flops_per_s" if dtype == "nvfp4" else "fp8_flops_per_s"))


def input_quantization_seconds(gpu: str, engine: str, dtype: str, m, k):
    """The part of a low-precision table's time that does not grow with n: the engine's quantization of the
    m x k activation, timed with each inference call [s].

    Read off the table itself as the intercept in n of the time at n = 1,024 and 4,096 (compute grows
    linearly in n at fixed m, k): ``(4·t(1024) - t(4096)) / 3``, at least 0. On H100 (TensorRT-LLM, fp8,
    m = 8,192, k = 4,096) it is about 97 us whatever n, and leaves the fp8 GEMM at n = 1,024 1.9x faster
    than bf16 instead of 1.6x slower. Training quantizes its operands in separate casts that
    :mod:`aisize.training.work` already times, so the tables' share is taken out, not counted twice.
    """
    from aisize import kernels

    lo, hi = (kernels.gemm_seconds(gpu, engine, dtype, m, n, k, out_of_range="nan") for n in QUANT_PROBE_N)
    q = (4.0 * lo - hi) / 3.0
    return np.where(np.isfinite(q), np.maximum(q, 0.0), 0.0)


def layer_shapes(d: ModelDims, tp: float, fused: bool) -> tuple:
    """((group, n_in, n_out), ...) of one layer's GEMMs outside the routed experts on one TP rank; group is
    "attention" or "mlp". ``fused``: Transformer Engine's fused QKV and gated-MLP input GEMMs."""
    lin = _linears(d, tp)
    attn, mlp = lin[:4], lin[4:]
    if fused:
        h = d.hidden
        attn = [(h, sum(o for _, o in attn[:3])), attn[3]]
        mlp = [(h, sum(o for _, o in mlp[:-1])), mlp[-1]]
    return tuple(("attention", i, o) for i, o in attn) + tuple(("mlp", i, o) for i, o in mlp)


@dataclass(frozen=True)
class LinearTimes:
    """One layer's GEMMs for one micro-batch on one GPU [s] (arrays broadcast), by pass and group, with the
    share of their FLOPs read from measured tables (``covered``, 0..1) and the roofline of the same GEMMs."""

    forward: object
    dgrad: object
    wgrad: object
    attention_forward: object
    mlp_forward: object
    roofline_forward: object
    roofline_attention: object
    roofline_mlp: object
    roofline_redo: object  # every second matmul of work.py's order (op-level selective checkpointing)
    covered: object


def _pass_times(gpu, dtype, shapes, tokens, roofline):
    """Per shape: (fwd, dgrad, wgrad) arrays over ``tokens`` (unique values looked up once) and covered."""
    table = _table_dtype(gpu, dtype) if gpu else None
    out = []
    for (_, n_in, n_out), r in zip(shapes, roofline):
        if table is None:
            out.append((r, r, r, np.zeros_like(r)))
            continue
        flat = np.asarray(tokens, dtype=float)
        uniq, inv = np.unique(flat, return_inverse=True)
        looked = np.array([gemm3_seconds(gpu, *table, float(t), float(n_in), float(n_out)) for t in uniq])
        three = [looked[inv.reshape(flat.shape), j] for j in range(3)]
        ok = [np.isfinite(x) for x in three]
        out.append(tuple(np.where(o, x, r) for o, x in zip(ok, three)) + (sum(o * 1.0 for o in ok) / 3.0,))
    return out


def linear_times(d: ModelDims, *, gpu: str | None, recipe: Recipe, tokens, tp, fused: bool, high_peak, low_peak,
                 e_high, e_low, hbm_bytes_per_s, cal: TrainingCalibration = SHIPPED) -> LinearTimes:
    """The GEMMs of one layer outside the routed experts, read from the tables where they cover them (see the
    module docstring). ``tp`` scalar or array; each distinct TP degree is looked up once."""
    tps = np.asarray(tp, dtype=float)
    tok = np.broadcast_to(np.asarray(tokens, dtype=float), np.broadcast(tokens, tps).shape)
    fields = None
    for t in np.unique(tps):
        part = _linear_times_tp(d, gpu, recipe, tok, float(t), fused, high_peak, low_peak, e_high, e_low,
                                hbm_bytes_per_s, cal)
        fields = part if fields is None else [np.where(tps == t, p, f) for p, f in zip(part, fields)]
    return LinearTimes(*fields)


def _linear_times_tp(d, gpu, recipe, tokens, tp, fused, high_peak, low_peak, e_high, e_low, hbm, cal):
    shapes = layer_shapes(d, tp, fused)
    listed = sum(i * o for _, i, o in shapes) * tp
    scale = d.dense_gemm_params / listed  # MLA, biases, routers: the parameter count's FLOPs (as work.py)

    def roofline(i, o, peak, eff, elem):
        return E.gemm_seconds(tokens, i, o, peak, eff, hbm, elem, cal)

    high_r = [roofline(i, o, high_peak, e_high, 2.0) for _, i, o in shapes]
    high = _pass_times(gpu, recipe.high_dtype if recipe.high_dtype != "fp32" else None, shapes, tokens, high_r)
    if recipe.low_share:
        low_r = [roofline(i, o, low_peak, e_low, recipe.element_bytes) for _, i, o in shapes]
        low = _pass_times(gpu, recipe.low_dtype, shapes, tokens, low_r)
        s = recipe.low_share
        mixed = [tuple(s * lo + (1.0 - s) * hi for lo, hi in zip(a, b)) for a, b in zip(low, high)]
    else:
        mixed = high

    def mixed_roofline(i, o):
        hi = roofline(i, o, high_peak, e_high, 2.0)
        if not recipe.low_share:
            return hi
        return recipe.low_share * roofline(i, o, low_peak, e_low, recipe.element_bytes) + (1.0 - recipe.low_share) * hi

    redo = scale * sum(mixed_roofline(i, o) for i, o in _linears(d, tp)[1::2])
    flops = np.array([i * o for _, i, o in shapes])
    covered = sum(w * m[3] for w, m in zip(flops / flops.sum(), mixed))
    attn = [g == "attention" for g, _, _ in shapes]

    def total(j, only=None):
        return scale * sum(m[j] for m, a in zip(mixed, attn) if only is None or a == only)

    # what work.layer_times charged (its unfused order), so that swapping the GEMMs leaves the rest exact
    charged = [mixed_roofline(i, o) for i, o in _linears(d, tp)]
    r_attn, r_mlp = scale * sum(charged[:4]), scale * sum(charged[4:])
    return [total(0), total(1), total(2), total(0, True), total(0, False), r_attn + r_mlp, r_attn, r_mlp,
            redo, covered]


@dataclass(frozen=True)
class KernelLayerTimes(LayerTimes):
    """:class:`aisize.training.work.LayerTimes` with the backward GEMMs timed apart (dgrad and wgrad differ in
    shape from the forward) and the share of the GEMM FLOPs read from tables."""

    gemm_dgrad: object = 0.0
    gemm_wgrad: object = 0.0
    covered: object = 0.0

    @property
    def backward(self):
        return self.gemm_dgrad + self.gemm_wgrad + self.attention_backward + self.memory_backward


def with_kernel_gemms(lt: LayerTimes, k: LinearTimes) -> KernelLayerTimes:
    """``lt`` (timed on the roofline by :func:`aisize.training.work.layer_times`) with its GEMMs replaced by
    the measured ones: each part that holds GEMMs swaps the roofline GEMMs for the table's."""
    ratio_all = k.forward / k.roofline_forward
    ratio_attn = k.attention_forward / k.roofline_attention
    return KernelLayerTimes(
        gemm_forward=k.forward, attention_forward=lt.attention_forward, attention_backward=lt.attention_backward,
        memory_forward=lt.memory_forward, memory_backward=lt.memory_backward, norm_forward=lt.norm_forward,
        mla_up_forward=lt.mla_up_forward * ratio_attn,
        mlp_forward=lt.mlp_forward - k.roofline_mlp + k.mlp_forward,
        # op-level selective checkpointing re-runs every second matmul: those at the layer's mean ratio
        sac_redo=lt.sac_redo + k.roofline_redo * (ratio_all - 1.0),
        gemm_dgrad=k.dgrad, gemm_wgrad=k.wgrad, covered=k.covered)


def head_gemm_seconds(d: ModelDims, *, gpu: str | None, tokens, tp, high_peak, e_high, hbm_bytes_per_s,
                      cal: TrainingCalibration = SHIPPED):
    """(measured - roofline) seconds of the output layer's three bf16 GEMMs (tokens x hidden -> vocab/tp),
    0 where no table covers them: what to add to :func:`aisize.training.work.head_seconds`."""
    table = _table_dtype(gpu, "bf16") if gpu else None
    if table is None:
        return 0.0 * np.asarray(tokens, dtype=float)
    tok = np.asarray(tokens, dtype=float)
    tps = np.asarray(tp, dtype=float)
    tok, tps = np.broadcast_arrays(tok, tps)
    out = np.zeros(tok.shape)
    pairs = np.unique(np.stack([tok.ravel(), tps.ravel()], axis=1), axis=0)
    for t, p in pairs:
        r = float(E.gemm_seconds(t, d.hidden, d.vocab / p, high_peak, e_high, hbm_bytes_per_s, cal=cal))
        three = gemm3_seconds(gpu, *table, float(t), float(d.hidden), float(d.vocab / p))
        measured = sum(x if np.isfinite(x) else r for x in three)
        out = np.where((tok == t) & (tps == p), measured - 3.0 * r, out)
    return out


def coverage(d: ModelDims, gpu: str | None, recipe: Recipe, tokens: float, tp: int, fused: bool = True) -> str:
    """Where a layer's GEMM times come from, in words."""
    if not gpu:
        return "roofline x fitted efficiency (no GPU given for the measured tables)"
    dtypes = [recipe.high_dtype] + ([recipe.low_dtype] if recipe.low_share else [])
    missing = [x for x in dtypes if _table_dtype(gpu, x) is None]
    if missing:
        return f"roofline x fitted efficiency ({gpu}: no measured {'/'.join(missing)} GEMM table)"
    k = linear_times(d, gpu=gpu, recipe=recipe, tokens=tokens, tp=tp, fused=fused, high_peak=1.0, low_peak=1.0,
                     e_high=1.0, e_low=1.0, hbm_bytes_per_s=1.0)
    share = float(np.asarray(k.covered))
    where = ", ".join(f"{x}: {'/'.join(_table_dtype(gpu, x))}" for x in dtypes)
    if share < 1.0:
        return (f"measured GEMMs ({gpu}, {where}) for {share:.0%} of the FLOPs; the rest (shapes outside the "
                "measured range) on the roofline x fitted efficiency")
    return f"measured GEMMs ({gpu}, {where}, data/kernels)"
