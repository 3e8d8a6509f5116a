"""Where a parallel group's traffic goes, and how long its collectives take.

Ranks are placed tensor-parallel fastest, then context-parallel, expert-parallel,
data-parallel and pipeline-parallel (Megatron-Core's ``tp-cp-ep-dp-pp``, which
torchtitan's device mesh follows; the expert layers number the same ranks expert-TP,
EP, expert-DP, PP), so a group of n ranks whose neighbours are ``stride`` ranks apart
is on NVLink when its n x stride ranks fit one scale-up domain of any size (8, 36, 72),
and otherwise tiles domains (:func:`aisize.network.placement.domain_share`), the rest of
it over the scale-out network. Collectives run hierarchically
(:func:`aisize.network.collectives.two_tier_collective_seconds`).

The scale-out fabric is a rail-optimized fat tree (:func:`aisize.network.fabric.fat_tree`):
a group whose domains do not fit under one leaf crosses the spines, where a leaf
oversubscription o (down:up ports) leaves 1/o of the rate.

References
----------
.. [1] Narayanan et al. 2021, arXiv:2104.04473, sec. 3 (placement) and 4.1 (scatter/gather).
.. [2] Al-Fares et al. 2008, SIGCOMM (fat tree); NVIDIA DGX SuperPOD reference architecture (rails).
.. [3] DeepSeek-AI, DeepEP (github.com/deepseek-ai/DeepEP), internode dispatch: one RDMA copy per
   destination node, forwarded over NVLink to that node's experts; DeepSeek-AI 2024, "DeepSeek-V3
   Technical Report", arXiv:2412.19437, sec. 3.2.2 (node-limited routing, dispatch via IB then NVLink).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize.network import domain_share
from aisize.network.collectives import (DEFAULT_EFFICIENCY, SCALEOUT_STEP_SECONDS, SCALEUP_STEP_SECONDS,
                                        transfer_seconds, two_tier_collective_seconds)
from aisize.network.fabric import one_switch

SCALEUP_LATENCY_SECONDS = SCALEUP_STEP_SECONDS  # NVLink step (aisize.network.collectives' assumption)
SCALEOUT_LATENCY_SECONDS = SCALEOUT_STEP_SECONDS  # network hop (the same, and serving's)
DEFAULT_SWITCH_RADIX = 64  # NDR InfiniBand QM9700 (aisize.network.fabric)


@dataclass(frozen=True)
class Links:
    """Per-GPU link rates (per direction) and the fabric's shape."""

    scaleup_bytes_per_s: float
    scaleout_bytes_per_s: float
    scaleup_domain: int
    switch_radix: int = DEFAULT_SWITCH_RADIX
    oversubscription: float = 1.0
    efficiency: float = DEFAULT_EFFICIENCY


def span(n, stride, domain):
    """(ranks inside one scale-up domain, domains) of a group of n ranks at a stride."""
    return domain_share(n, stride, domain)


def scaleout_rate(domains, links: Links):
    """Scale-out rate a group spanning ``domains`` domains gets [B/s per GPU per direction]."""
    rate = links.scaleout_bytes_per_s
    if links.oversubscription <= 1.0:
        return rate * np.ones(np.shape(domains))
    # past one switch the group spans leaves, and a fat tree's leaves are what the ratio oversubscribes
    return np.where(one_switch(domains, links.switch_radix), rate, rate / links.oversubscription)


def collective_seconds(op: str, payload_bytes, n, stride, links: Links):
    """Time of one collective over a group of n ranks at ``stride`` [s] (0 where n = 1)."""
    inner, outer = span(n, stride, links.scaleup_domain)
    out_bw = scaleout_rate(outer, links)
    t = two_tier_collective_seconds(op, payload_bytes, inner, outer, links.scaleup_bytes_per_s, out_bw,
                                    inner_latency_seconds=SCALEUP_LATENCY_SECONDS,
                                    outer_latency_seconds=SCALEOUT_LATENCY_SECONDS, efficiency=links.efficiency)
    return np.where(np.asarray(n) > 1, t, 0.0)


def pipeline_send_seconds(activation_bytes, tp, stride, pp, sharded, links: Links):
    """One activation (or gradient) send between pipeline stages [s].

    Without sequence parallelism every TP rank would send the whole s·b·h tensor;
    Megatron's scatter/gather sends 1/t of it from each rank over the network and
    all-gathers it over NVLink on the far side [1]; sequence-parallel activations
    are already split by t (``sharded``). ``stride`` = TP x CP x DP, the rank distance
    of pipeline neighbours: when the pp stages do not share one domain, the slowest
    send, over the network, sets the pace.
    """
    inner, _ = span(pp, stride, links.scaleup_domain)
    across = inner < np.asarray(pp)
    bw = np.where(across, scaleout_rate(2, links), links.scaleup_bytes_per_s)
    lat = np.where(across, SCALEOUT_LATENCY_SECONDS, SCALEUP_LATENCY_SECONDS)
    send = transfer_seconds(activation_bytes / tp, bw, latency_seconds=lat, efficiency=links.efficiency)
    gather = collective_seconds("all-gather", activation_bytes, tp, 1, links)
    return send + np.where(sharded, 0.0, gather)


def domains_reached(k, experts, domains):
    """Expected scale-up domains a token's k experts fall in, of ``domains`` holding experts/domains each.

    Uniform routing without replacement: a domain is missed with probability
    prod_{i<k} (E - E/D - i) / (E - i) [count, 1..min(k, D)].
    """
    e = np.asarray(experts, dtype=float)
    dom = np.asarray(domains, dtype=float)
    miss = np.ones(np.broadcast(e, dom).shape)
    for i in range(int(k)):
        miss = miss * np.maximum(e - e / dom - i, 0.0) / (e - i)
    return dom * (1.0 - miss)


def moe_alltoall_seconds(copy_bytes, k, experts, ep, stride, links: Links, dedup=False):
    """One dispatch (or combine) all-to-all of a rank's routed tokens over its EP group [s].

    ``copy_bytes``: one copy of the tokens this rank routes (tokens x width x 2 B). NCCL's
    all-to-all (Megatron's ``alltoall`` dispatcher) sends all k copies, the share (n - n_in)/n of
    them over the scale-out NIC and (n_in - 1)/n over NVLink, at once (the slower sets the time).
    ``dedup`` (DeepEP / HybridEP, Megatron's ``flex``): a token crosses the network once per other
    domain its experts reach (:func:`domains_reached`) and fans out over NVLink there, so the
    scale-out bytes are copy_bytes x (D - 1)/D x domains reached instead of k x copy_bytes x
    (n - n_in)/n [3]. Inside one domain both are the same. 0 where ep = 1.
    """
    inner, outer = span(ep, stride, links.scaleup_domain)
    payload = k * np.asarray(copy_bytes, dtype=float)
    plain = collective_seconds("all-to-all", payload, ep, stride, links)
    if not np.any(dedup):
        return plain
    out_bw = scaleout_rate(outer, links)
    reached = domains_reached(k, experts, outer)
    across = transfer_seconds(copy_bytes * reached * (outer - 1) / outer, out_bw,
                              latency_seconds=SCALEOUT_LATENCY_SECONDS, efficiency=links.efficiency,
                              messages=outer - 1)
    inside = transfer_seconds(payload * (inner - 1) / inner, links.scaleup_bytes_per_s,
                              latency_seconds=SCALEUP_LATENCY_SECONDS, efficiency=links.efficiency,
                              messages=inner - 1)
    deduped = np.where(np.asarray(ep) > 1, np.maximum(inside, across), 0.0)
    return np.where(dedup, deduped, plain)
