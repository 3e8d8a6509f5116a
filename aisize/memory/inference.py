"""Inference memory per GPU: weights at their precision and the KV cache's size.

KV-cache sizes come from :mod:`aisize.models.kv_cache` (GQA, MLA, sliding windows);
they are re-exported here under their earlier names (``kv_bytes_per_token`` for the
per-layer-shape formula, ``transformer_kv_bytes_per_token`` for a model). What a serving
replica holds (weights per GPU, the KV pool, concurrency) is :mod:`aisize.serving.memory`.
"""

from __future__ import annotations

from aisize import checks
from aisize.models.kv_cache import gqa_kv_bytes_per_token as kv_bytes_per_token
from aisize.models.kv_cache import kv_bytes_per_token as transformer_kv_bytes_per_token
from aisize.models.kv_cache import mla_kv_bytes_per_token
from aisize.precision import bytes_per_element

__all__ = ["weight_bytes", "kv_bytes_per_token", "mla_kv_bytes_per_token", "transformer_kv_bytes_per_token"]


def weight_bytes(params, dtype: str = "bf16", *, tp=1):
    """Weights per GPU at a storage dtype, block scales included [B].

    Parameters
    ----------
    params : parameters [count]; dtype : a key of ``aisize.precision.BITS_PER_ELEMENT``
    tp : GPUs the weights are split over (tensor x pipeline parallel) [count]

    References
    ----------
    .. [1] OCP MX spec v1.0 (MXFP4 4.25 bit); NVIDIA NVFP4 (4.5 bit); GPTQ/AWQ group-128.
    """
    n = checks.positive("params", params)
    t = checks.integer("tp", tp, high=10**4)
    return n * bytes_per_element(dtype) / t
