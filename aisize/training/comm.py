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
