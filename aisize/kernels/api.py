"""The lookups behind :mod:`aisize.kernels` (re-exported there; see its docstring)."""

from __future__ import annotations

import numpy as np

from aisize.kernels.tables import KernelDataMissing, KernelOutOfRange, KernelTable, Lookup, index, load

ENGINES = ("trtllm", "vllm", "sglang")
#: weight format -> the GEMM dtypes the tables measured it as, in order of preference (per-tensor fp8 first;
#: DeepSeek-style block-scaled fp8 where an engine measured only that). Serving and training both read it.
GEMM_DTYPES = {"bf16": ("bfloat16",), "fp16": ("bfloat16",), "fp8": ("fp8", "fp8_block"), "nvfp4": ("nvfp4",)}
#: committed op tables (``nccl`` lives under the pseudo-engine "nccl").
OPS = ("gemm", "context_attention", "generation_attention", "context_mla", "generation_mla", "moe",
       "custom_allreduce", "moe_a2a", "nccl")
_PACKAGE_SYSTEMS = {
    "a100_sxm": "a100-sxm-80gb", "h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200",
    "b300_sxm": "b300", "gb200": "gb200", "gb300": "gb300", "l40s": "l40s",
    "rtx_pro_6000_server": "rtx-pro-6000-server",
}
#: bytes per element, to turn message bytes into the element counts the comm tables are keyed by.
ITEMSIZE = {"bfloat16": 2, "half": 2, "float16": 2, "fp16": 2, "bf16": 2, "int8": 1, "fp8": 1,
            "float32": 4, "fp32": 4}


def gpu_id(gpu: str) -> str:
    """The aisize accelerator id for a GPU given either way (``h200_sxm`` -> ``h200-sxm``)."""
    return _PACKAGE_SYSTEMS.get(gpu, gpu)


def available(gpu: str | None = None, engine: str | None = None, op: str | None = None) -> list[dict]:
    """Committed surfaces (rows of data/kernels/INDEX.csv), optionally filtered."""
    g = gpu_id(gpu) if gpu else None
    return [r for r in index() if (g is None or r["gpu"] == g) and (engine is None or r["engine"] == engine)
            and (op is None or r["op"] == op)]


def table(gpu: str, engine: str, op: str) -> KernelTable:
    """The committed surface of one (GPU, engine, op); see :class:`KernelTable`."""
    return load(gpu_id(gpu), engine, op)


def lookup(gpu: str, engine: str, op: str, variant: dict | None = None, **axes) -> Lookup:
    """Generic lookup: the op's axes by name (``table(...).axes``), variant filters as a dict."""
    return table(gpu, engine, op).lookup(variant, **axes)


# --------------------------------------------------------------------------- helpers
def _scalar_input(*values) -> bool:
    return all(np.ndim(v) == 0 for v in values)


def _finish(seconds: np.ndarray, in_range: np.ndarray, what: str, out_of_range: str, scalar: bool,
            detail: str = ""):
    if out_of_range not in ("raise", "nan"):
        raise ValueError("out_of_range must be 'raise' or 'nan'")
    if out_of_range == "raise" and not np.all(in_range):
        bad = int(np.size(in_range) - np.count_nonzero(in_range))
        raise KernelOutOfRange(f"{what}: {bad} of {np.size(in_range)} queries outside the measured "
                               f"range{detail}", np.asarray(~in_range))
    seconds = np.where(in_range, seconds, np.nan)
    return float(seconds) if scalar else seconds


def _why(lk: Lookup) -> str:
    fail = lk.axis_failed[lk.axis_failed >= 0]
    if fail.size == 0:
        return ""
    axes = lk.table.axes
    names = sorted({axes[int(i)] for i in np.unique(fail)})
    ranges = lk.table.axis_range({k: v for k, v in lk.variant.items()})
    return " (axis " + ", ".join(f"{a} measured {ranges[a][0]:g}..{ranges[a][1]:g} overall" for a in names) + \
        f"; variant {lk.variant})"


def _simple(gpu, engine, op, variant, what, out_of_range, scalar, **axes):
    lk = table(gpu, engine, op).lookup(variant, **axes)
    return _finish(lk.seconds, lk.in_range, what, out_of_range, scalar, _why(lk))


# --------------------------------------------------------------------------- ops
def gemm_seconds(gpu: str, engine: str, dtype: str, m, n, k, *, kernel: str | None = None,
                 m_align: str = "auto", out_of_range: str = "raise"):
    """One GEMM ``[m, k] x [k, n]`` (m = tokens), by dtype (``bfloat16``, ``fp8``, ``fp8_block``,
    ``nvfp4``, ...).

    The sweeps measure m at multiples of 16 and at 16 j + 1 separately (unaligned m pays for
    padding, up to tens of percent on some kernels). ``m_align="auto"`` uses the unaligned probes for
    m > 16 not a multiple of 16 where they were measured and the aligned curve otherwise;
    ``"aligned"`` / ``"unaligned"`` force one class.
    """
    scalar = _scalar_input(m, n, k)
    t = table(gpu, engine, "gemm")
    m_, n_, k_ = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (m, n, k)))
    coords = np.stack([n_.ravel(), k_.ravel(), m_.ravel()], axis=1)
    aligned_vid = t.resolve_variant(kernel=kernel, dtype=dtype, m_align="aligned")
    y, ok, fail = t.lookup_ids(np.full(len(coords), aligned_vid), coords)
    if m_align in ("auto", "unaligned"):
        mm = coords[:, 2]
        want = (mm > 16) & (np.mod(mm, 16) != 0) if m_align == "auto" else np.ones(len(mm), bool)
        kern = t.variants[aligned_vid][t.cats.index("kernel")]
        try:
            uvid = t.resolve_variant(kernel=kern, dtype=dtype, m_align="unaligned")
        except KernelDataMissing:
            uvid = None
        if uvid is not None and want.any():
            yu, oku, failu = t.lookup_ids(np.full(int(want.sum()), uvid), coords[want])
            use = oku if m_align == "auto" else np.ones_like(oku)
            idx = np.flatnonzero(want)[use]
            y[idx], ok[idx], fail[idx] = yu[use], oku[use], failu[use]
        elif m_align == "unaligned":
            raise KernelDataMissing(f"no unaligned-m GEMM sweep for {gpu}/{engine}/{dtype}")
    elif m_align != "aligned":
        raise ValueError("m_align must be 'auto', 'aligned' or 'unaligned'")
    lk = Lookup(np.exp(y).reshape(m_.shape), ok.reshape(m_.shape),
                dict(zip(t.cats, t.variants[aligned_vid])), t, fail.reshape(m_.shape))
    return _finish(lk.seconds, lk.in_range, f"gemm {gpu}/{engine}/{dtype}", out_of_range, scalar, _why(lk))


def attention_seconds(gpu: str, engine: str, phase: str, batch, seq, num_heads, num_kv_heads,
                      head_dim=128, *, dtype: str = "bfloat16", kv_dtype: str = "bfloat16",
                      window: int = 0, kernel: str | None = None, out_of_range: str = "raise"):
    """Attention of one layer on one GPU (heads per GPU).

    ``phase="context"``: ``batch`` prompts of ``seq`` tokens (the package's isl);
    ``phase="generation"``: one decode token for each of ``batch`` sequences attending to ``seq``
    tokens (the package's isl + step). ``window`` 0 is full attention, else the sliding window.
    """
    op = {"context": "context_attention", "generation": "generation_attention"}.get(phase)
    if op is None:
        raise ValueError("phase must be 'context' or 'generation'")
    return _simple(gpu, engine, op, dict(kernel=kernel, dtype=dtype, kv_dtype=kv_dtype, window=window),
                   f"{op} {gpu}/{engine}", out_of_range, _scalar_input(batch, seq, num_heads, num_kv_heads, head_dim),
                   head_dim=head_dim, num_kv_heads=num_kv_heads, num_heads=num_heads, batch=batch, seq=seq)


def mla_seconds(gpu: str, engine: str, phase: str, batch, seq, num_heads, *, dtype: str = "bfloat16",
                kv_dtype: str = "bfloat16", kernel: str | None = None, out_of_range: str = "raise"):
    """DeepSeek-style multi-head latent attention (heads per GPU), as :func:`attention_seconds`."""
    op = {"context": "context_mla", "generation": "generation_mla"}.get(phase)
    if op is None:
        raise ValueError("phase must be 'context' or 'generation'")
    return _simple(gpu, engine, op, dict(kernel=kernel, dtype=dtype, kv_dtype=kv_dtype),
                   f"{op} {gpu}/{engine}", out_of_range, _scalar_input(batch, seq, num_heads),
                   num_heads=num_heads, batch=batch, seq=seq)


def moe_seconds(gpu: str, engine: str, dtype: str, tokens, hidden, inter, topk, num_experts, tp=1, ep=1,
                *, distribution: str = "balanced", kernel: str | None = None, out_of_range: str = "raise"):
    """The grouped-GEMM expert computation of one MoE layer on one GPU.

    ``tokens`` before routing; ``inter`` is the expert intermediate size; ``tp`` / ``ep`` the MoE
    tensor / expert parallel sizes; ``distribution`` the routing skew (``balanced``,
    ``power_law_1.01``, ``power_law_1.2``). ``kernel=None`` never reads a low-latency table
    (TensorRT-LLM's ``moe_torch_flow_min_latency`` NVFP4 sweep, which the engine runs at 128 tokens
    and below only, :data:`aisize.serving.kernel_moe.LOW_LATENCY_MAX_TOKENS`): name it to read it.
    """
    if kernel is None:
        kernel = _regular_moe_kernel(table(gpu, engine, "moe"), dtype, distribution)
    return _simple(gpu, engine, "moe", dict(kernel=kernel, dtype=dtype, distribution=distribution),
                   f"moe {gpu}/{engine}/{dtype}", out_of_range,
                   _scalar_input(tokens, hidden, inter, topk, num_experts, tp, ep),
                   hidden=hidden, inter=inter, topk=topk, num_experts=num_experts, tp=tp, ep=ep, tokens=tokens)


def _regular_moe_kernel(t, dtype: str, distribution: str) -> str | None:
    """The kernel the table's preferences pick for (dtype, distribution) among those that are not low-latency
    twins; None (the preferences alone) where only a low-latency one was measured or none matches."""
    k, d, q = (t.cats.index(c) for c in ("kernel", "dtype", "distribution"))
    regular = [i for i, v in enumerate(t.variants)
               if v[d] == str(dtype) and v[q] == str(distribution) and "min_latency" not in v[k]]
    if not regular or len(regular) == sum(v[d] == str(dtype) and v[q] == str(distribution) for v in t.variants):
        return None
    return t.variants[t.resolve_among(regular)][k]


def _elements(message_bytes, dtype: str) -> np.ndarray:
    if dtype not in ITEMSIZE:
        raise ValueError(f"unknown dtype {dtype!r} for a message size; known {sorted(ITEMSIZE)}")
    return np.asarray(message_bytes, dtype=np.float64) / ITEMSIZE[dtype]


def collective_seconds(gpu: str, collective: str, message_bytes, num_gpus, *, dtype: str = "half",
                       out_of_range: str = "raise"):
    """An NCCL collective (``all_reduce``, ``all_gather``, ``reduce_scatter``, ``alltoall``) within one
    node, by message size in bytes (the tables are keyed by element count) and GPU count."""
    return _simple(gpu, "nccl", "nccl", dict(collective=collective, dtype=dtype), f"nccl {collective} {gpu}",
                   out_of_range, _scalar_input(message_bytes, num_gpus),
                   num_gpus=num_gpus, elements=_elements(message_bytes, dtype))


def allreduce_seconds(gpu: str, engine: str, message_bytes, num_gpus, *, dtype: str = "bfloat16",
                      impl: str = "auto", kernel: str | None = None, out_of_range: str = "raise"):
    """An all-reduce of ``message_bytes`` over ``num_gpus`` GPUs of one node.

    ``impl="custom"``: the engine's own (one/two-shot) all-reduce; ``"nccl"``: NCCL (measured in
    half precision for 16-bit dtypes); ``"auto"``: the faster of the two where both were measured,
    else whichever was.
    """
    scalar = _scalar_input(message_bytes, num_gpus)
    nccl_dtype = "int8" if ITEMSIZE.get(dtype) == 1 else "half"
    if impl not in ("auto", "custom", "nccl"):
        raise ValueError("impl must be 'auto', 'custom' or 'nccl'")
    results = []
    if impl in ("auto", "custom"):
        try:
            t = table(gpu, engine, "custom_allreduce")
            lk = t.lookup(dict(kernel=kernel, dtype=dtype), num_gpus=num_gpus,
                          elements=_elements(message_bytes, dtype))
            results.append((lk.seconds, lk.in_range, _why(lk)))
        except KernelDataMissing:
            if impl == "custom":
                raise
    if impl in ("auto", "nccl"):
        t = table(gpu, "nccl", "nccl")
        lk = t.lookup(dict(collective="all_reduce", dtype=nccl_dtype), num_gpus=num_gpus,
                      elements=_elements(message_bytes, nccl_dtype))
        results.append((lk.seconds, lk.in_range, _why(lk)))
    stack = np.stack([np.where(ok, s, np.inf) for s, ok, _ in results])
    best = stack.min(axis=0)
    ok = np.isfinite(best)
    return _finish(np.where(ok, best, np.nan), ok, f"all-reduce {gpu}/{engine} ({impl})", out_of_range,
                   scalar, "".join(w for _, _, w in results))


def moe_a2a_seconds(gpu: str, engine: str, phase: str, tokens, hidden, topk, num_experts, ep=8, *,
                    backend: str | None = None, dtype: str | None = None, sms: int | None = None,
                    out_of_range: str = "raise"):
    """MoE all-to-all ``dispatch`` or ``combine`` (DeepEP and TRT-LLM's own) for ``tokens`` per GPU.

    ``backend`` names the measured implementation (``trtllm_deepep_ht``, ``trtllm_deepep_ll``,
    ``deepep_ht``, ``deepep_ll`` for vLLM, ``deepep_normal`` / ``deepep_ll`` for SGLang; default: the
    best-covered); ``sms`` the SMs given to DeepEP's normal kernels (default 20, DeepEP's own).
    """
    if phase not in ("dispatch", "combine"):
        raise ValueError("phase must be 'dispatch' or 'combine'")
    return _simple(gpu, engine, "moe_a2a",
                   dict(backend=backend, phase=phase, dtype=dtype, sms=None if sms is None else str(sms)),
                   f"moe_a2a {gpu}/{engine}/{phase}", out_of_range,
                   _scalar_input(tokens, hidden, topk, num_experts, ep),
                   hidden=hidden, topk=topk, num_experts=num_experts, ep=ep, tokens=tokens)
