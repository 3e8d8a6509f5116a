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
"""

from __future__ import annotations

import numpy as np

from aisize.serving.kernel_gemms import ENGINE_TABLES

MIN_MESSAGE_BYTES = 256.0  # the sweeps start at 128 bf16 elements; below, an all-reduce is latency-bound


def allreduce_seconds(gpu: str, engine_key: str, payload_bytes, gpus, roofline):
    """One all-reduce of ``payload_bytes`` (16-bit) over ``gpus`` GPUs of one server, measured where the tables
    cover it, else ``roofline`` (broadcast); 0 where ``gpus`` is 1 [s]."""
    from aisize import kernels

    payload, n, fallback = np.broadcast_arrays(np.asarray(payload_bytes, dtype=float),
                                               np.asarray(gpus, dtype=float), np.asarray(roofline, dtype=float))
    fallback = np.where(n > 1, fallback, 0.0)
    engine = ENGINE_TABLES.get(engine_key)
    if engine is None or not np.any(n > 1):
        return fallback
    try:
        measured = kernels.allreduce_seconds(gpu, engine, np.maximum(payload, MIN_MESSAGE_BYTES),
                                             np.maximum(n, 2.0), out_of_range="nan")
    except kernels.KernelDataMissing:
        return fallback
    measured = np.asarray(measured, dtype=float)
    return np.where(n > 1, np.where(np.isfinite(measured), measured, fallback), 0.0)
