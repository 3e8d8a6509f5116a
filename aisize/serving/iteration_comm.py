"""The collectives of one serving iteration: tensor-parallel all-reduces, attention-DP exchanges around the MoE
layers, and the expert dispatch that crosses servers (:func:`aisize.serving.iteration.iteration_time` adds them).

References
----------
.. [4] Patarasuk & Yuan 2009 (ring all-reduce moves 2(n-1)/n of the buffer).
.. [9] Thakur, Rabenseifner & Gropp 2005, "Optimization of Collective Communication Operations in
       MPICH", IJHPCA 19(1), sec. 4 (hierarchical composition); :func:`aisize.network.collectives.
       two_tier_collective_seconds` (the same form for training).
.. [10] deepseek-ai/DeepEP README (dispatch in FP8, combine in BF16; internode kernels over RDMA, each
        token sent once per destination rank).
.. [11] NVIDIA/TensorRT-LLM ``tensorrt_llm/_torch/modules/fused_moe/fused_moe_cutlass.py`` (``forward_chunk``:
        under attention DP, ``run_post_quant_allgather`` quantizes NVFP4 inputs with ``fp4_quantize`` and
        ``allgather``s them with their scale factors, expert ids and weights by ``sizes=all_rank_num_tokens``;
        ``reducescatter_or_allreduce`` reduce-scatters the output by the same sizes); ``Engine.dp_exchange_by_sizes``.
.. [12] NVIDIA/TensorRT-LLM ``cpp/tensorrt_llm/thop/allgatherOp.cpp`` (with sizes, one ``ncclBroadcast`` per root
        rank in an NCCL group; without, ``ncclAllGather``) and ``reducescatterOp.cpp`` (one ``ncclReduce`` per root,
        or ``ncclReduceScatter``): the exchange is NCCL's, as SGLang's is (``Engine.dp_gather_nccl``).
"""

from __future__ import annotations

import numpy as np

from aisize.network.collectives import SCALEOUT_STEP_SECONDS  # one ring step across servers
from aisize.precision import bytes_per_element
from aisize.serving.kernel_allreduce import gather_scatter_seconds as kernel_gather_scatter_seconds

ACTIVATION_BYTES = 2.0  # hidden states between layers and on the wire are 16-bit
DISPATCH_BYTES = 1.0  # tokens dispatched to their experts in fp8 (DeepEP's dispatch format [10])


def all_reduce_seconds(payload_bytes, n, link_bytes_per_s, latency_seconds, *, scaleup_domain=None,
                       scaleout_bytes_per_s=None):
    """All-reduce of a buffer over n GPUs, plus its fixed latency [s].

    Within one scale-up domain a ring [4]. A group wider than its domain (``scaleup_domain`` GPUs per
    server, joined by ``scaleout_bytes_per_s`` per GPU, already at the achieved share) runs NCCL's
    hierarchical form [9]: reduce-scatter inside the domain, a ring all-reduce of the 1/d shard across the
    n/d domains (one NIC rail per GPU), all-gather inside; each cross-server ring step pays
    :data:`SCALEOUT_STEP_SECONDS`.
    """
    n = np.asarray(n, dtype=float)
    flat = scaleup_domain is None or scaleout_bytes_per_s is None
    if n.ndim == 0 and np.ndim(link_bytes_per_s) == 0 and np.ndim(latency_seconds) == 0:
        # one group size: what the np.where below gives, without its other branch (one GPU: zeros of the
        # payload's shape; more in one domain: the ring, an array of the payload's, from n as a numpy scalar)
        if n <= 1:
            return np.zeros(np.shape(payload_bytes))
        if n > 1 and flat and type(payload_bytes) is np.ndarray and payload_bytes.ndim:
            return _ring(n[()], payload_bytes, link_bytes_per_s, latency_seconds)
    ring = _ring(n, payload_bytes, link_bytes_per_s, latency_seconds)
    if flat:
        return np.where(n > 1, ring, 0.0)
    d = np.minimum(n, float(scaleup_domain))
    o = n / d
    inside = _ring(d, payload_bytes, link_bytes_per_s, latency_seconds)
    across = (2.0 * (o - 1.0) / o * payload_bytes / d / scaleout_bytes_per_s
              + 2.0 * (o - 1.0) * SCALEOUT_STEP_SECONDS)
    return np.where(n > 1, np.where(o > 1, inside + across, ring), 0.0)


def _ring(n, payload_bytes, link_bytes_per_s, latency_seconds):
    """A ring all-reduce over n GPUs of one link: 2(n - 1)/n of the buffer each way [4], plus the fixed latency."""
    return 2.0 * (n - 1.0) / n * payload_bytes / link_bytes_per_s + latency_seconds


def cross_server_dispatch_seconds(tokens_per_rank, experts_per_token, expert_parallel, gpus, scaleup_domain,
                                  hidden, scaleout_bytes_per_s):
    """Dispatch and combine of one MoE layer, the part that crosses servers [s] [10].

    Each rank sends every token once to each rank holding one of its experts (at most
    ``experts_per_token`` ranks), fp8 out and 16-bit back; under uniform routing the share
    ``(gpus - domain) / gpus`` of those ranks is on other servers, so that traffic crosses the rank's NIC
    (``scaleout_bytes_per_s``, achieved); two network steps of latency. It reproduces DeepEP's published
    low-latency kernels (H800, 400 Gb/s CX7 per GPU, 128 tokens, 7,168 hidden, top-8) within 15 % at EP 16
    to 256 (tests/test_serving_mechanisms.py).
    """
    g = np.asarray(gpus, dtype=float)
    d = np.minimum(g, float(scaleup_domain))
    ranks = np.minimum(float(experts_per_token), np.asarray(expert_parallel, dtype=float))
    bytes_out = tokens_per_rank * ranks * (g - d) / g * hidden * (DISPATCH_BYTES + ACTIVATION_BYTES)
    return np.where(g > d, bytes_out / scaleout_bytes_per_s + 2.0 * SCALEOUT_STEP_SECONDS, 0.0)


def dp_gather_bytes(expert_format) -> float:
    """Bytes per hidden element an attention-DP rank's tokens travel in to the experts under TensorRT-LLM [11]:
    NVFP4 experts quantize them first (4-bit values and one FP8 scale per 16: 0.5625 B, :mod:`aisize.precision`);
    other formats, DeepSeek's block-scaled FP8 among them, gather the 16-bit states."""
    return bytes_per_element("nvfp4") if expert_format == "nvfp4" else ACTIVATION_BYTES


ROUTE_BYTES_PER_EXPERT = 8.0  # each token's chosen expert ids (int32) and weights (fp32) travel with it [11]


def exchange_by_sizes_seconds(costs, tokens, busiest_tokens, attention_dp, link_bytes_per_s, latency_seconds):
    """One MoE layer's attention-DP exchange when each rank sends only its own tokens [11] [s].

    TensorRT-LLM's fused MoE all-gathers every rank's tokens by their per-rank counts (``sizes``), quantized
    first, and reduce-scatters the 16-bit results by the same counts: a rank receives every token but its own,
    so the exchange is set by the tokens of all ranks (``tokens``), not by attention_dp times the busiest rank's
    (``busiest_tokens``, the roofline's all-gather of equal shares). With equal shares both are (dp - 1) x a
    share; when one rank carries a whole prompt the others' receive it once. The rank that receives most holds
    the fewest: the others' mean, ``(tokens - busiest) / (dp - 1)``."""
    dp = np.asarray(attention_dp, dtype=float)
    own = np.maximum(tokens - busiest_tokens, 0.0) / np.maximum(dp - 1.0, 1.0)
    per_token = (costs.hidden * (dp_gather_bytes(costs.formats.experts) + ACTIVATION_BYTES)
                 + ROUTE_BYTES_PER_EXPERT * costs.experts_per_token)
    return np.maximum(tokens - own, 0.0) * per_token / link_bytes_per_s + 2.0 * latency_seconds


def exchange_by_sizes_bytes(costs, tokens):
    """(gathered, reduce-scattered) buffers of one MoE layer's exchange by per-rank sizes [11] [B]: every rank's
    tokens in the experts' gather format with their routing, and their 16-bit results."""
    out = tokens * (costs.hidden * dp_gather_bytes(costs.formats.experts) + ROUTE_BYTES_PER_EXPERT * costs.experts_per_token)
    return out, tokens * costs.hidden * ACTIVATION_BYTES


def _moe_exchange(costs, rates, n, n_group, dp, ep, g, hidden_bytes, latency, out, scaleup_domain):
    """The MoE layers' attention-DP exchange of one iteration [s]: gather and scatter around each MoE layer."""
    gather = (dp - 1.0) * hidden_bytes / rates.link_bytes_per_s + latency
    remote = 0.0
    if out is not None:
        # across servers engines dispatch each token to the ranks of its experts and combine it back
        # (DeepEP's all-to-all [10]: fp8 out, 16-bit back); the share bound for other servers crosses
        # the NICs, each phase once per MoE layer, and the slower of the two links sets the pace
        remote = cross_server_dispatch_seconds(n_group, costs.experts_per_token, ep, g, scaleup_domain,
                                               costs.hidden, out)
        gather = np.maximum(gather, 0.5 * remote)
    if rates.kernel_gather is not None and out is None and rates.dp_exchange_by_sizes:
        # TensorRT-LLM: NCCL broadcasts of each rank's own tokens, quantized, and reduces of the 16-bit results
        # by the same sizes [11] [12], read as NCCL's measured all-gather and reduce-scatter of those buffers
        roofline = exchange_by_sizes_seconds(costs, n, n_group, dp, rates.link_bytes_per_s, latency)
        out_bytes, back_bytes = exchange_by_sizes_bytes(costs, n)
        exchange = kernel_gather_scatter_seconds(rates.kernel_gather, out_bytes, dp, roofline, back_bytes)
        return costs.moe_layers * np.where(dp > 1, exchange, 0.0)
    if rates.kernel_gather is not None and out is None:  # NCCL's all-gather + reduce-scatter, as measured
        exchange = kernel_gather_scatter_seconds(rates.kernel_gather, dp * hidden_bytes, dp, 2.0 * gather)
        return costs.moe_layers * np.where(dp > 1, exchange, 0.0)
    if rates.dp_exchange_by_sizes:  # each rank's own tokens, quantized out, 16-bit back [11]
        exchange = exchange_by_sizes_seconds(costs, n, n_group, dp, rates.link_bytes_per_s, latency)
        if out is not None:
            exchange = np.maximum(exchange, remote)
        return costs.moe_layers * np.where(dp > 1, exchange, 0.0)
    return 2.0 * costs.moe_layers * np.where(dp > 1, gather, 0.0)
