"""Time of a replica's attention from the attention kernels measured on the GPU.

NVIDIA's AIConfigurator measures each serving engine's attention kernels on each GPU [1]: context
(prefill) attention by head dim, KV heads and query heads per GPU, batch of prompts and prompt length;
generation (decode) attention by the same heads, batch of sequences and KV length; and DeepSeek's
multi-head latent attention (MLA) by query heads per GPU, batch and length, each by compute and KV-cache
dtype and sliding window. aisize keeps those sweeps as surfaces under ``data/kernels/`` (:mod:`aisize.kernels`).

Per iteration and attention group (``tp = gpus / attention_dp`` GPUs; query heads ``heads / tp`` and KV
heads ``max(kv_heads / tp, 1)`` per GPU, KV heads replicated when fewer than the GPUs [2]):

- decode: every attention layer runs the generation kernel once for the group's decoding sequences at
  their mean KV length; a speculative step verifies ``k + 1`` tokens per sequence, which AIConfigurator
  queries as a batch of ``batch x (k + 1)`` [3], kept for GQA and MHA; MLA reads each latent cache once, at the
  sequences' batch with ``k + 1`` times the query heads (the caller passes that ``tp``:
  :func:`aisize.serving.speculative.verify_attention_lookup`). Sliding-window and chunked layers read the keys their
  query sees (the window, or the chunk's mean);
- prefill: every attention layer runs the context kernel over the prompts that finish this iteration
  (``b`` prompts of ``s`` tokens read at batch ``b``; a fraction of a prompt costs its share of one);
  windowed layers read the engine's sweep at that window where measured.

Each (GPU, engine, op, heads, dtypes, window) gives one grid of ln seconds over the table's own batch and
length values, read once and cached; an iteration interpolates it bilinearly in (ln batch, ln length),
the table's own rule, so a search's many batches cost one vectorized interpolation. The sweeps stop at a
token budget (about a million KV tokens for decode, 16,384 prompt tokens for prefill), so past the largest
batch measured at a length, time grows with the batch at that batch's time per sequence (decode reads each
sequence's own KV; prefill attends each prompt on its own); a mean batch below one costs its share of one. A length outside
the sweep, heads or dtypes no sweep measured, an engine or GPU without tables, Mamba mixers and KV formats
other than 16-bit and fp8 keep the roofline, entry by entry; :func:`coverage` says which, and the
iteration reports the share of its attention time the tables gave (``IterationTime.attention_table_share``).

References
----------
.. [1] ``aiconfigurator-core`` 0.12.0 (Apache-2.0), ``systems/data/<gpu>/{context,generation}_attention``
       and ``{context,generation}_mla/<engine>/<version>/*.parquet``; docs/kernels.md.
.. [2] Shoeybi et al. 2019 (Megatron-LM), arXiv:1909.08053, sec. 3 (attention heads split over the
       tensor-parallel GPUs); vLLM and TensorRT-LLM replicate KV heads when ``tp > kv_heads``.
.. [3] ``aiconfigurator-core`` 0.12.0, ``sdk/models/kimi_k3.py``: "Backend queries generation ops at
       batch * (nextn + 1)".
.. [4] ``aiconfigurator-core`` 0.12.0, ``sdk/models/helpers.py``: ``fmha_quant_mode`` is fp8 when the checkpoint is
       fp8, fp8_block or nvfp4 or the KV cache is fp8, and falls back to bfloat16 where no fp8 table exists (vLLM).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from aisize.serving.kernel_gemms import ENGINE_TABLES

#: KV-cache format -> (compute dtype, KV dtype) of the measured kernels, in order of preference: with an fp8 KV
#: cache the engines run FP8 attention where they measured it (AIConfigurator's own rule [4]), else 16-bit
#: attention over the fp8 cache (vLLM's tables, and every generation table but SGLang's).
KV_DTYPES = {"bf16": (("bfloat16", "bfloat16"),), "fp16": (("bfloat16", "bfloat16"),),
             "fp8": (("fp8", "fp8"), ("bfloat16", "fp8"))}
GQA_FORMS = ("mha", "gqa", "mqa")


def _layers(model):
    """(full-attention layers, windowed layers) of a model."""
    from aisize.models import attention_layer_count

    sliding = int(model.sliding_layers or 0) if model.sliding_window else 0
    return attention_layer_count(model) - sliding, sliding


def _heads_key(model, tp: float):
    """(form, query heads, KV heads, head dim) per GPU at ``tp``, or None where no sweep describes the layer."""
    if getattr(model, "mamba_layers", 0) and not _layers(model)[0] + _layers(model)[1]:
        return None
    if model.attention == "mla":
        return ("mla", model.heads / tp, 1.0, 0)
    if model.attention in GQA_FORMS:
        return ("gqa", model.heads / tp, max(model.kv_heads / tp, 1.0), int(model.head_dim))
    return None


@lru_cache(maxsize=2048)
def grid(gpu: str, engine_key: str, phase: str, heads_key: tuple, kv_precision: str, window: int = 0):
    """(ln batch, ln length, ln seconds[batch, length] with NaN where unmeasured, the variant read) of one layer's
    attention, or None where no table covers it (see the module docstring). The engine's most measured kernel is
    read first (its KV format's compute dtype by :data:`KV_DTYPES`), another kernel only where it has no sweep."""
    from aisize import kernels

    engine = ENGINE_TABLES.get(engine_key)
    form, heads, kv_heads, head_dim = heads_key
    dtypes = KV_DTYPES.get(kv_precision)
    if engine is None or dtypes is None:
        return None
    op = f"{phase}_{'mla' if form == 'mla' else 'attention'}"
    try:
        table = kernels.table(gpu, engine, op)
    except kernels.KernelDataMissing:
        return None
    b = table.axis_values[table.axes.index("batch")]
    s = table.axis_values[table.axes.index("seq")]
    bb, ss = (a.ravel() for a in np.meshgrid(b, s, indexing="ij"))
    fixed = {"num_heads": heads} if form == "mla" else {"head_dim": head_dim, "num_kv_heads": kv_heads,
                                                        "num_heads": heads}
    counts = table.points_per_variant()
    kernels_by_points = sorted({v[0] for v in table.variants},
                               key=lambda k: -sum(int(c) for v, c in zip(table.variants, counts) if v[0] == k))
    for kernel in kernels_by_points:  # the engine's main kernel (the most measured) first, then its others
        for dtype, kv_dtype in dtypes:
            want = dict(kernel=kernel, dtype=dtype, kv_dtype=kv_dtype)
            if form != "mla":
                want["window"] = window
            try:
                vid = table.resolve_variant(**want)
            except kernels.KernelDataMissing:
                continue
            axes = {**fixed, "batch": bb, "seq": ss}
            coords = np.stack(np.broadcast_arrays(*(np.asarray(axes[a], dtype=float) for a in table.axes)), axis=1)
            log_t, ok, _ = table.lookup_ids(np.full(len(coords), vid), coords)
            if ok.any():
                z = _batch_scaled(np.log(b), np.where(ok, log_t, np.nan).reshape(len(b), len(s)))
                return np.log(b), np.log(s), z, dict(zip(table.cats, table.variants[vid]))
    return None


def _batch_scaled(log_b, z):
    """The sweeps stop at a token budget (batch x length), so long lengths lack the large batches: at each
    length whose measured batches run from the smallest up, larger batches take the largest one's time per
    item (decode reads each sequence's KV, prefill attends each prompt on its own: time grows with the batch)."""
    z = z.copy()
    for j in range(z.shape[1]):
        finite = np.isfinite(z[:, j])
        top = int(np.argmin(finite)) - 1 if not finite.all() else len(finite) - 1
        if top >= 0 and not finite[top + 1:].any():
            z[top + 1:, j] = z[top, j] + log_b[top + 1:] - log_b[top]
    return z


def interpolate(g, batch, length):
    """Seconds of :func:`grid` ``g`` at ``batch`` and ``length`` (broadcast) and where the table covered them:
    bilinear in (ln batch, ln length); past the largest batch, that batch's per-item time x batch; a mean
    batch below one, its share of one item's time [s]."""
    log_b, log_s, z, _ = g
    bq = np.maximum(np.asarray(batch, dtype=float), 1.0)
    x = np.minimum(np.log(bq), log_b[-1])
    y = np.log(np.maximum(np.asarray(length, dtype=float), 1e-300))
    if y.size == 1 or (y.size and y.min() == y.max()):  # one length (a search's batches at one context): a curve over the batch
        shape = np.broadcast_shapes(x.shape, y.shape)
        sec, ok = _along_batch(log_b, log_s, z, np.broadcast_to(x, shape), float(y.flat[0]))
        return _scaled(sec, ok, batch, np.broadcast_to(bq, shape), log_b)
    x, y = np.broadcast_arrays(x, y)
    i = np.clip(np.searchsorted(log_b, x, side="right") - 1, 0, len(log_b) - 2)
    j = np.clip(np.searchsorted(log_s, y, side="right") - 1, 0, len(log_s) - 2)
    tx = np.clip((x - log_b[i]) / (log_b[i + 1] - log_b[i]), 0.0, 1.0)
    ty = (y - log_s[j]) / (log_s[j + 1] - log_s[j])
    inside = (y >= log_s[0]) & (y <= log_s[-1])
    ty = np.clip(ty, 0.0, 1.0)
    total = np.zeros(x.shape)
    ok = inside.copy()
    for di, wx in ((0, 1.0 - tx), (1, tx)):
        for dj, wy in ((0, 1.0 - ty), (1, ty)):
            w = wx * wy
            v = z[i + di, j + dj]
            used = w > 0.0
            ok &= ~used | np.isfinite(v)
            total = total + np.where(used, w * np.nan_to_num(v), 0.0)
    return _scaled(total, ok, batch, bq, log_b)


def _scaled(log_t, ok, batch, bq, log_b):
    """Seconds of ln-seconds ``log_t`` at the batch clamped to the grid, scaled to the batch asked for."""
    b = np.asarray(batch, dtype=float)
    scale = np.where(b < 1.0, np.maximum(b, 0.0), np.maximum(bq / np.exp(log_b[-1]), 1.0))
    return np.where(ok, np.exp(log_t) * scale, np.nan), ok


def _along_batch(log_b, log_s, z, x, y: float):
    """ln seconds and coverage at ln batches ``x`` and one ln length ``y``: :func:`interpolate` in one dimension."""
    if not log_s[0] <= y <= log_s[-1]:
        return np.zeros(np.shape(x)), np.zeros(np.shape(x), bool)
    j = min(int(np.searchsorted(log_s, y, side="right")) - 1, len(log_s) - 2)
    ty = (y - log_s[j]) / (log_s[j + 1] - log_s[j])
    col = z[:, j] if ty == 0.0 else (z[:, j + 1] if ty == 1.0 else (1.0 - ty) * z[:, j] + ty * z[:, j + 1])
    finite = np.isfinite(col)
    i = np.clip(np.searchsorted(log_b, x, side="right") - 1, 0, len(log_b) - 2)
    on_node = x == log_b[i]
    ok = finite[i] & (finite[i + 1] | on_node)
    return np.interp(x, log_b[finite], col[finite]) if finite.any() else np.zeros(np.shape(x)), ok


def _per_tp(costs, tp, fn):
    """Apply ``fn(heads_key, here)`` for each tensor-parallel size in ``tp``; (seconds, covered) arrays."""
    tps = np.asarray(tp, dtype=float)
    out, covered = None, None
    for t in np.unique(tps):
        key = _heads_key(costs.model, float(t))
        if key is None:
            continue
        sec, ok = fn(key)
        here = tps == t
        out = np.where(here, sec, np.nan if out is None else out)
        covered = np.where(here, ok, False if covered is None else covered)
    return out, covered


def decode_seconds(costs, gpu: str, engine_key: str, batch, context, tp, roofline):
    """Decode attention of every layer for ``batch`` query tokens per attention group (sequences x verify
    tokens) at mean KV length ``context`` on groups of ``tp`` GPUs, from the tables where they cover the
    case, else ``roofline`` (broadcast); returns (seconds, covered) [s, bool]."""
    full_layers, window_layers = _layers(costs.model)
    c = np.asarray(context, dtype=float)
    w = float(costs.window_tokens)
    windowed = (np.where(c <= w, c, 0.5 * w) if costs.window_chunked else np.minimum(c, w)) if window_layers else c

    def fn(key):
        g = grid(gpu, engine_key, "generation", key, costs.kv_precision)
        if g is None:
            return np.nan, False
        sec, ok = interpolate(g, batch, np.maximum(c, 2.0))
        total = full_layers * sec
        if window_layers:
            sec_w, ok_w = interpolate(g, batch, np.maximum(windowed, 2.0))
            total, ok = total + window_layers * sec_w, ok & ok_w
        return total, ok

    return _finish(fn, costs, tp, batch, roofline)


def prefill_seconds(costs, gpu: str, engine_key: str, prompts, prompt_tokens, tp, roofline):
    """Prefill attention of every layer for ``prompts`` prompts of ``prompt_tokens`` finishing on one attention
    group of ``tp`` GPUs, from the tables where they cover the case, else ``roofline``; (seconds, covered)."""
    full_layers, window_layers = _layers(costs.model)
    p = np.asarray(prompts, dtype=float)

    def fn(key):
        g = grid(gpu, engine_key, "context", key, costs.kv_precision)
        if g is None:
            return np.nan, False
        sec, ok = interpolate(g, p, prompt_tokens)
        total = full_layers * sec
        if window_layers:
            gw = grid(gpu, engine_key, "context", key, costs.kv_precision, int(costs.window_tokens))
            if gw is None:
                return np.nan, False
            sec_w, ok_w = interpolate(gw, p, prompt_tokens)
            total, ok = total + window_layers * sec_w, ok & ok_w
        return total, ok

    return _finish(fn, costs, tp, p, roofline)


def _finish(fn, costs, tp, count, roofline):
    rl = np.asarray(roofline, dtype=float)
    sec, ok = _per_tp(costs, tp, fn)
    if sec is None:
        return rl, np.zeros(np.shape(rl), bool)
    none = np.asarray(count, dtype=float) <= 0.0  # nothing to attend: the roofline's zero is exact
    ok = ok & ~none
    return np.where(ok, sec, rl), ok | none


def coverage(costs, gpu: str, engine_key: str, tp: int, *, batch=64, context=4096) -> str:
    """Where a replica's attention time comes from, in words (decode at ``batch`` x ``context``, prefill of
    one prompt of ``context`` tokens)."""
    key = _heads_key(costs.model, float(tp))
    if key is None:
        return f"roofline ({costs.model.id}: attention form {costs.model.attention!r} has no measured kernel)"
    parts = []
    for phase, cov in (("decode", decode_seconds(costs, gpu, engine_key, batch, context, tp, 0.0)[1]),
                       ("prefill", prefill_seconds(costs, gpu, engine_key, 1.0, context, tp, 0.0)[1])):
        parts.append(f"{phase}: " + (f"measured ({gpu}, {ENGINE_TABLES.get(engine_key)}, data/kernels)" if np.all(cov)
                                     else f"roofline (no measured {costs.kv_precision}-KV kernel for {gpu} under "
                                          f"{engine_key} at {key[1]:g} heads per GPU, length {context})"))
    return "; ".join(parts)
