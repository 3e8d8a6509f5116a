"""Training's routed experts timed from NVIDIA's measured MoE kernel tables.

Serving already reads the fused MoE operator's time from ``data/kernels/<gpu>/<engine>/moe.npz``
(:mod:`aisize.serving.kernel_moe`, docs/kernels.md) [1]: routing permutation, the grouped gate/up and
down GEMMs, the activation and the weighted combine of one MoE layer on one GPU, by model shape
(hidden, expert intermediate, top-k, experts), MoE tensor- and expert-parallel split and tokens. This
module reads the same curves for a training micro-batch, instead of the roofline x dense efficiency x
``T_e / (T_e + grouped_gemm_half_tokens)`` of :func:`aisize.training.moe.expert_times`, which is the
same for 40 tokens per expert and 4,000 up to that one fitted constant.

* **Tokens.** A rank routes ``tokens`` = b·s/(c·t) tokens; each of its E/ep local experts (split over
  expert-TP etp) sees ``T_e = tokens·k·ep·etp / E`` (:func:`aisize.training.moe.tokens_per_expert`). The
  table's tokens are those entering the layer over the whole EP group, before routing, each GPU holding
  E/ep experts split over ``tp`` [1]: T_e = table_tokens·k/E, so ``table_tokens = T_e·E/k``, read at
  ``tp = etp``, ``ep = ep``. Past the measured 16,384 tokens the time grows linearly with tokens at the last
  measured point's efficiency (the serving lookup, :func:`aisize.serving.kernel_gemms.seconds`): a
  conservative reading where T_e exceeds 16,384·k/E (512 per expert for DeepSeek-V3's 8 of 256).
* **Routing.** The benchmark recipes force-balance the tokens, so the ``balanced`` sweep is read and the
  busiest rank's ``imbalance`` (:func:`aisize.training.moe.busiest_rank_imbalance`) multiplies it, as on
  the roofline.
* **What the table holds besides GEMMs.** The operator fuses the expert activation (SwiGLU), which
  :func:`~aisize.training.moe.expert_times` times apart as memory traffic; that roofline share is taken out
  of the measured time so it is not counted twice. Under fp8/nvfp4 the operator also quantizes its input
  and intermediate activations [1]; training's separate casts of those (``cast_forward``) are then dropped.
  The GEMM time left is never below the FLOPs at the dense peak of the format.
* **Backward.** Each forward GEMM ``Y = X·W`` has two backward GEMMs of the same size (input gradient
  ``dX = dY·Wᵀ`` and weight gradient ``dW = Xᵀ·dY``), so a layer's backward is 2x its forward GEMM FLOPs
  and the step 3x [2][3]; the grouped GEMMs' backward is taken as 2x the measured forward GEMM time
  (:attr:`aisize.training.moe.ExpertTimes.backward`). No table measures the grouped dgrad and wgrad apart.
* **Formats.** The recipe's ``low_share`` runs in its low format (fp8: per-tensor ``fp8`` then
  block-scaled ``fp8_block``; fp4: ``nvfp4``), the rest in ``bfloat16``; engines' tables in the order of
  :data:`TABLE_ENGINES`. Where no table covers a case (a GPU without tables, fp32, a shape or split not
  swept) the roofline stays, case by case; :func:`coverage` says which.

The switch: ``moe_source`` "roofline" (default) or "kernels" (:data:`MOE_SOURCES`), set for a block with
:func:`using` or for a run with :data:`DEFAULT_MOE_SOURCE`; the GPU is the one
:func:`aisize.training.kernel_gemms.using` carries (``estimate`` always sets it). Judged against the
published runs in docs/training-kernels.md.

References
----------
.. [1] ``aiconfigurator-core`` 0.12.0 (Apache-2.0), ``systems/data/<gpu>/moe/<engine>/<version>/
   moe_perf.parquet``; docs/kernels.md ("In the serving model": the table's tokens and split).
.. [2] Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
   Megatron-LM", arXiv:2104.04473, sec. 3.1 (backward: two GEMMs of the forward's size; 3x forward FLOPs).
.. [3] Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
   arXiv:2205.05198, sec. 5 (the same 2x backward, 3x total).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace

import numpy as np

from aisize import checks
from aisize.serving import kernel_moe as serving_moe
from aisize.serving.kernel_gemms import seconds as curve_seconds
from aisize.training.dims import ModelDims
from aisize.training.moe import ExpertTimes, tokens_per_expert
from aisize.training.recipes import Recipe

MOE_SOURCES = ("roofline", "kernels")
#: what a step uses outside :func:`using` (see docs/training-kernels.md for why the roofline stays)
DEFAULT_MOE_SOURCE = "roofline"
#: engines' MoE tables in order of preference (TensorRT-LLM's CUTLASS grouped GEMMs first)
TABLE_ENGINES = ("trtllm", "vllm", "sglang")
#: training format -> the serving lookup's expert format (its DTYPES map it to the measured dtypes)
FORMATS = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "fp4": "nvfp4"}
QUANTIZED = ("fp8", "fp4")  # formats whose measured operator quantizes its activations itself

_ACTIVE = ContextVar("aisize_training_moe_source", default=None)


def check_source(moe_source) -> str:
    """``moe_source`` checked (None: :data:`DEFAULT_MOE_SOURCE`)."""
    return checks.choice("moe_source", DEFAULT_MOE_SOURCE if moe_source is None else moe_source, MOE_SOURCES)


@contextmanager
def using(moe_source: str):
    """Time the routed experts of the steps evaluated inside the block from ``moe_source``."""
    token = _ACTIVE.set(check_source(moe_source))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def active() -> str:
    """The source in force: :func:`using`'s, else :data:`DEFAULT_MOE_SOURCE`."""
    return _ACTIVE.get() or check_source(None)


def resolve_source(moe_source) -> str:
    """``moe_source`` checked; None: the source of the :func:`using` block around the call, else
    :data:`DEFAULT_MOE_SOURCE` (the same rule as :func:`aisize.training.kernel_gemms.resolve_source`)."""
    return active() if moe_source is None else check_source(moe_source)


def shape(d: ModelDims) -> tuple | None:
    """The serving lookup's shape key of ``d``'s routed experts (balanced routing), or None if dense."""
    if not d.moe_layers or not d.expert_ffn:
        return None
    return (int(d.expert_width), int(d.expert_ffn), int(d.experts_per_token), int(d.experts), bool(d.ffn_gated),
            "balanced", False)


def curve(gpu: str | None, fmt: str | None, key: tuple | None, etp: int, ep: int):
    """(engine, (ln tokens, ln seconds)) of the first engine whose table covers the case, else None."""
    if not gpu or key is None or fmt not in FORMATS:
        return None
    for engine in TABLE_ENGINES:
        c = serving_moe.curve(gpu, engine, FORMATS[fmt], key, int(etp), int(ep))
        if c is not None:
            return engine, c
    return None


def layer_seconds(d: ModelDims, gpu: str | None, fmt: str | None, tokens, ep: int, etp: int):
    """Measured forward time of one MoE layer's routed experts on one GPU, balanced routing, ``tokens``
    routed by the rank (array), or None where no table covers the case [s]."""
    found = curve(gpu, fmt, shape(d), etp, ep)
    if found is None:
        return None
    table_tokens = tokens_per_expert(d, np.asarray(tokens, dtype=float), ep, etp) * d.experts / d.experts_per_token
    return curve_seconds(found[1], table_tokens)


def _dense_peak_seconds(d: ModelDims, tokens, ep, etp, peak):
    """The expert GEMMs' FLOPs at the format's dense peak: the floor of the measured GEMM time [s]."""
    copies = tokens * d.experts_per_token * etp
    return 2.0 * copies * d.expert_params / etp / peak


def with_kernel_experts(xt: ExpertTimes, d: ModelDims, *, gpu: str | None, recipe: Recipe, tokens, ep, etp,
                        high_peak, low_peak, imbalance=1.0) -> tuple[ExpertTimes, object]:
    """``xt`` (the roofline's, :func:`aisize.training.moe.expert_times`) with its grouped-GEMM forward read
    from the tables where they cover the case: (times, share of the expert GEMM FLOPs measured, 0..1).

    ``tokens`` routed by a rank (array), ``ep`` and ``etp`` scalars or arrays (each split looked up once).
    """
    if not d.moe_layers:
        return xt, 0.0
    tok = np.asarray(tokens, dtype=float)
    eps, etps = np.broadcast_arrays(np.asarray(ep, dtype=float), np.asarray(etp, dtype=float))
    shp = np.broadcast(tok, eps, xt.gemm_forward).shape
    gemm = np.broadcast_to(np.asarray(xt.gemm_forward, dtype=float), shp).copy()
    cast = np.broadcast_to(np.asarray(xt.cast_forward, dtype=float), shp).copy()
    covered = np.zeros(shp)
    act = np.broadcast_to(np.asarray(xt.activation_forward, dtype=float), shp)
    share = recipe.low_share if recipe.low_dtype else 0.0
    parts = [p for p in ((recipe.high_dtype, 1.0 - share, high_peak), (recipe.low_dtype, share, low_peak)) if p[1] > 0]
    pairs = np.unique(np.stack([eps.ravel(), etps.ravel()], axis=1), axis=0)
    for e, t in pairs:
        here = np.broadcast_to((eps == e) & (etps == t), shp)
        measured = 0.0
        for fmt, weight, peak in parts:
            s = layer_seconds(d, gpu, fmt, tok, int(e), int(t))
            if s is None:
                break
            # the fused activation is the roofline's act share (xt is imbalance-scaled, the table balanced)
            measured = measured + weight * np.maximum(s - act / imbalance, _dense_peak_seconds(d, tok, e, t, peak))
        else:
            gemm = np.where(here, measured * imbalance, gemm)
            if share and recipe.low_dtype in QUANTIZED:  # the operator quantized its own activations
                cast = np.where(here, 0.0, cast)
            covered = np.where(here, 1.0, covered)
    memory = xt.memory_forward - xt.cast_forward + cast
    return replace(xt, gemm_forward=gemm, memory_forward=memory, cast_forward=cast), covered


def coverage(d: ModelDims, gpu: str | None, recipe: Recipe, ep: int, etp: int = 1) -> str:
    """Where a MoE layer's routed-expert time comes from, in words."""
    key = shape(d)
    if key is None:
        return "none (no routed experts)"
    fmts = [recipe.high_dtype] + ([recipe.low_dtype] if recipe.low_share and recipe.low_dtype else [])
    if recipe.low_share >= 1.0:
        fmts = fmts[1:]
    found = {f: curve(gpu, f, key, etp, ep) for f in fmts}
    if all(found.values()):
        where = ", ".join(f"{f}: {v[0]}" for f, v in found.items())
        return f"measured MoE kernels ({gpu}, {where}, data/kernels)"
    miss = "/".join(f for f, v in found.items() if v is None)
    return (f"roofline x grouped efficiency (no measured {miss} MoE kernel for {gpu} at hidden {key[0]}, expert "
            f"size {key[1]}, top-{key[2]} of {key[3]}, expert TP {etp} x EP {ep})")
