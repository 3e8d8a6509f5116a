"""Tensor-parallel all-reduces from the all-reduce kernels measured on the GPU, where tables cover them.

A serving iteration all-reduces the tokens' hidden states twice per layer over the tensor-parallel GPUs
(:mod:`aisize.serving.iteration`). The roofline form is a ring's bandwidth term plus one fixed latency
(``collective_seconds``, assumed: no public run identifies it). NVIDIA's measured tables
(``aiconfigurator-core``, Apache-2.0; distilled under ``data/kernels/<gpu>/<engine>/custom_allreduce.npz`` and
``data/kernels/<gpu>/nccl/nccl.npz``; docs/kernels.md) give each engine's own one-/two-shot all-reduce and
NCCL's by message size and GPU count within one server; :func:`aisize.kernels.allreduce_seconds` takes the faster
of the two where both were measured, as engines switch between them by message size. A calibration with
``allreduce_source="kernels"`` reads them; a group that spans servers, a GPU count or message outside the
sweeps, or a GPU/engine without tables keeps the roofline form.

Measured on B200 under TensorRT-LLM (bf16, 7,168 hidden): 5.4 to 6.0 µs for 1 to 4 tokens over 4 and 8 GPUs,
16.5 µs for 64 tokens and 37.5 µs for 256 over 8; the roofline form gives 10.1, 12.2 and 19 µs
(tests/test_serving_kernel_allreduce.py).

Attention data parallelism gathers every rank's tokens before each MoE layer and scatters the results back:
SGLang pads each rank's tokens to the largest rank's inside CUDA graphs and runs NCCL's ``all_gather_into_tensor``
and ``reduce_scatter_tensor`` over the whole gathered buffer [1]. With ``calib.gather_source="kernels"``
:func:`gather_scatter_seconds` reads both from NCCL's measured tables (the message is the whole buffer, as
nccl-tests size it): on B200 over 8 GPUs a 10 MB buffer gathers in 54 µs, about 160 GB/s received per GPU,
where the roofline's 0.8 x 900 GB/s gives 22 µs (tests/test_serving_kernel_allreduce.py). TensorRT-LLM's exchange
is NCCL's too, by each rank's own count: one broadcast per rank in an NCCL group out, one reduce per rank back [2];
its gathered buffer holds every rank's tokens in the experts' gather format (NVFP4 quantized first) and its
scattered one their 16-bit results, read as NCCL's all-gather and reduce-scatter of those buffers
(``scatter_bytes``; tests/test_serving_trtllm_nccl_exchange.py).

References
----------
.. [1] sgl-project/sglang ``python/sglang/srt/layers/dp_attention.py`` (``DpPaddingMode``: ``MAX_LEN`` pads
       tokens to the largest rank's and gathers with ``all_gather_into_tensor``, the default inside CUDA graphs;
       ``SUM_LEN`` gathers with an all-reduce) and ``dp_reduce_scatter_tensor``; docs/calibration.md
       ("SGLang's attention-DP decode").
.. [2] NVIDIA/TensorRT-LLM ``cpp/tensorrt_llm/thop/allgatherOp.cpp`` (with ``all_rank_split_size``, one
       ``ncclBroadcast`` per root in ``ncclGroupStart``/``ncclGroupEnd``; else ``ncclAllGather``) and
       ``reducescatterOp.cpp`` (one ``ncclReduce`` per root, else ``ncclReduceScatter``), called by its fused MoE
       under attention DP (``fused_moe_cutlass.py``); docs/calibration.md ("Long prompts under attention DP").
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from aisize.serving.kernel_gemms import ENGINE_TABLES

MIN_MESSAGE_BYTES = 256.0  # the sweeps start at 128 bf16 elements; below, an all-reduce is latency-bound
#: messages at which each (GPU, engine, GPU count) curve is read once and interpolated (log-log) [B]
GRID_BYTES = np.geomspace(MIN_MESSAGE_BYTES, 2.0**30, 89)


@lru_cache(maxsize=256)
def curve(gpu: str, engine: str, gpus: int):
    """(ln bytes, ln seconds) of one all-reduce over ``gpus`` GPUs on :data:`GRID_BYTES` up to the last message
    the tables cover, or None where they cover none."""
    from aisize import kernels

    try:
        t = np.asarray(kernels.allreduce_seconds(gpu, engine, GRID_BYTES, np.full(GRID_BYTES.shape, float(gpus)),
                                                 out_of_range="nan"), dtype=float)
    except kernels.KernelDataMissing:
        return None
    finite = np.isfinite(t)
    upto = int(np.argmin(finite)) if not finite.all() else len(t)
    return None if upto < 2 else (np.log(GRID_BYTES[:upto]), np.log(t[:upto]))


@lru_cache(maxsize=256)
def collective_curve(gpu: str, collective: str, gpus: int):
    """(ln bytes, ln seconds) of NCCL's measured ``collective`` over ``gpus`` GPUs of one server on
    :data:`GRID_BYTES` up to the last message the tables cover, or None where they cover none."""
    from aisize import kernels

    try:
        t = np.asarray(kernels.collective_seconds(gpu, collective, GRID_BYTES, np.full(GRID_BYTES.shape, float(gpus)),
                                                  out_of_range="nan"), dtype=float)
    except kernels.KernelDataMissing:
        return None
    finite = np.isfinite(t)
    if finite.sum() < 2:
        return None
    start = int(np.argmax(finite))  # the sweeps start above the smallest grid message: below, its first time
    upto = start + (int(np.argmin(finite[start:])) if not finite[start:].all() else len(t) - start)
    return np.log(GRID_BYTES[start:upto]), np.log(t[start:upto])


def gather_scatter_seconds(gpu: str, buffer_bytes, gpus, roofline, scatter_bytes=None):
    """NCCL's all-gather plus reduce-scatter of a gathered buffer of ``buffer_bytes`` (16-bit, every rank's share)
    over ``gpus`` GPUs of one server, measured where the tables cover both, else ``roofline`` (broadcast) [s].
    ``scatter_bytes``: the reduce-scattered buffer where it differs from the gathered one (TensorRT-LLM gathers
    NVFP4-quantized tokens and scatters 16-bit results [2]); None: the same buffer both ways."""
    scatter_bytes = buffer_bytes if scatter_bytes is None else scatter_bytes
    size, back, n, fallback = np.broadcast_arrays(
        np.asarray(buffer_bytes, dtype=float), np.asarray(scatter_bytes, dtype=float), np.asarray(gpus, dtype=float),
        np.asarray(roofline, dtype=float))
    result = np.array(fallback, dtype=float)
    x = np.log(np.maximum(size, MIN_MESSAGE_BYTES))
    y = np.log(np.maximum(back, MIN_MESSAGE_BYTES))
    for g in np.unique(n[n > 1]):
        if g != int(g):
            continue
        gather, scatter = (collective_curve(gpu, c, int(g)) for c in ("all_gather", "reduce_scatter"))
        if gather is None or scatter is None:
            continue
        inside = (n == g) & (x <= gather[0][-1]) & (y <= scatter[0][-1])
        measured = np.exp(np.interp(x, *gather)) + np.exp(np.interp(y, *scatter))
        result = np.where(inside, measured, result)
    return result


def allreduce_seconds(gpu: str, engine_key: str, payload_bytes, gpus, roofline):
    """One all-reduce of ``payload_bytes`` (16-bit) over ``gpus`` GPUs of one server, measured where the tables
    cover it, else ``roofline`` (broadcast); 0 where ``gpus`` is 1 [s]."""
    payload, n, fallback = np.broadcast_arrays(np.asarray(payload_bytes, dtype=float),
                                               np.asarray(gpus, dtype=float), np.asarray(roofline, dtype=float))
    result = np.where(n > 1, fallback, 0.0)
    engine = ENGINE_TABLES.get(engine_key)
    if engine is None:
        return result
    x = np.log(np.maximum(payload, MIN_MESSAGE_BYTES))
    for g in np.unique(n[n > 1]):
        lookup = curve(gpu, engine, int(g)) if g == int(g) else None
        if lookup is None:
            continue
        log_b, log_t = lookup
        inside = (n == g) & (x <= log_b[-1])
        result = np.where(inside, np.exp(np.interp(x, log_b, log_t)), result)
    return result
