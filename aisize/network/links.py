"""Catalog-aware transfer times: payloads over links, feeding GPUs over a link,
host-to-device staging per epoch, and the training traffic a parallel layout makes.

The alpha-beta model and the collectives live in :mod:`aisize.network.collectives`;
this module only applies them to catalog links and to a training step.

References
----------
.. [1] Thakur, Rabenseifner, Gropp, IJHPCA 19(1), 2005 (alpha-beta model).
.. [2] Shoeybi et al., "Megatron-LM", arXiv 1909.08053, section 3 and figure 4
   (two all-reduces per layer forward, two backward, under tensor parallelism).
.. [3] Lepikhin et al., "GShard", arXiv 2006.16668, section 2 (MoE dispatch and
   combine as two all-to-alls per MoE layer in the forward pass).
.. [4] Li et al., "PyTorch Distributed", VLDB 13(12), 2020, section 3.2.3
   (gradient bucketing overlaps all-reduce with the backward pass).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize import checks
from aisize.catalog.records import Link
from aisize.network.collectives import (DEFAULT_EFFICIENCY, collective_seconds, transfer_seconds,
                                        two_tier_collective_seconds)

# All-reduces per transformer layer per micro-batch under tensor parallelism [2]
TP_ALL_REDUCES_PER_LAYER = 4  # 2 forward (attention, MLP) + 2 backward
# All-to-alls per MoE layer per micro-batch [3]
MOE_ALL_TO_ALLS_PER_LAYER = 4  # dispatch + combine, forward and backward


def link_transfer_seconds(payload_bytes, link: Link, *, links=1, efficiency=DEFAULT_EFFICIENCY,
                          messages=1):
    """Time to move a payload over ``links`` parallel catalog links, one direction [s].

    Uses the link's per-direction rate and its one-hop latency (0 where the
    catalog has none).

    Parameters
    ----------
    payload_bytes : bytes to move [B]
    link : a catalog :class:`~aisize.catalog.records.Link`
    links : parallel links sharing the payload [count]
    efficiency : achieved share of the link rate, (0, 1]
    messages : sequential messages (latency terms) [count]

    References
    ----------
    .. [1] Thakur et al. 2005, section 2.
    """
    n = checks.integer("links", links, high=10**6)
    return transfer_seconds(payload_bytes, n * link.bandwidth_per_direction_bytes_per_s,
                            latency_seconds=link.latency_seconds or 0.0,
                            efficiency=efficiency, messages=messages)


@dataclass(frozen=True)
class LinkFeed:
    """What one link (or several in parallel) sustains for a training input stream."""

    bytes_per_s: float  # achieved rate [B/s]
    samples_per_s: float  # sustained samples per second [1/s]
    epoch_seconds: float  # time to move one epoch's bytes [s]


def link_feed(epoch_bytes, sample_bytes, bandwidth_bytes_per_s, *, links=1,
              efficiency=DEFAULT_EFFICIENCY) -> LinkFeed:
    """Samples per second and epoch transfer time a link sustains (e.g. 10 vs 40 Gb/s).

    Parameters
    ----------
    epoch_bytes : bytes this server reads per epoch [B]
    sample_bytes : bytes per sample as read [B]
    bandwidth_bytes_per_s : one link's rate per direction [B/s]
    links : parallel links [count]
    efficiency : achieved share of the rate, (0, 1]

    References
    ----------
    .. [1] Thakur et al. 2005, section 2 (bandwidth term of the alpha-beta model).
    """
    epoch = checks.non_negative("epoch_bytes", epoch_bytes)
    sample = checks.positive("sample_bytes", sample_bytes)
    bw = checks.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    n = checks.integer("links", links, high=10**6)
    eff = checks.fraction("efficiency", efficiency)
    rate = n * bw * eff
    return LinkFeed(rate, rate / sample, epoch / rate)


def link_feed_for(link: Link, epoch_bytes, sample_bytes, *, links=1,
                  efficiency=DEFAULT_EFFICIENCY) -> LinkFeed:
    """:func:`link_feed` over a catalog link."""
    return link_feed(epoch_bytes, sample_bytes, link.bandwidth_per_direction_bytes_per_s,
                     links=links, efficiency=efficiency)


@dataclass(frozen=True)
class Staging:
    """Host-to-device staging of one epoch on one server: storage -> RAM -> GPU."""

    storage_seconds: float  # storage (disk or network) into host RAM [s]
    pcie_seconds: float  # host RAM into the GPUs over PCIe [s]
    epoch_seconds: float  # both stages, pipelined or serial [s]
    pcie_bound: bool | np.ndarray  # True where PCIe, not storage, sets the pace


def staging_seconds(epoch_bytes_per_server, storage_read_bytes_per_s, pcie_bytes_per_s,
                    gpus_per_server, *, efficiency=DEFAULT_EFFICIENCY, pipelined=True) -> Staging:
    """Time to stage one epoch from storage through host RAM into the GPUs.

    Each GPU has its own PCIe x16 link, so the host-to-device stage runs at
    ``gpus x pcie`` per server. Pipelined (double-buffered) staging takes the
    slower stage; serial staging takes their sum.

    Parameters
    ----------
    epoch_bytes_per_server : bytes this server's GPUs read per epoch [B]
    storage_read_bytes_per_s : the server's read rate from local disk or the storage network [B/s]
    pcie_bytes_per_s : one GPU's PCIe link, per direction [B/s]
    gpus_per_server : GPUs sharing the epoch [count]
    efficiency : achieved share of the PCIe rate, (0, 1] (the storage rate is taken as achieved)
    pipelined : overlap the stages (True) or run them one after the other

    References
    ----------
    .. [1] PCI-SIG, PCIe Base Specification 4.0/5.0 (x16 per-direction rates).
    .. [2] NVIDIA GPUDirect Storage overview guide (the bounce buffer in host RAM
       that GDS removes).
    """
    epoch = checks.non_negative("epoch_bytes_per_server", epoch_bytes_per_server)
    storage = checks.positive("storage_read_bytes_per_s", storage_read_bytes_per_s)
    pcie = checks.positive("pcie_bytes_per_s", pcie_bytes_per_s)
    gpus = checks.integer("gpus_per_server", gpus_per_server, high=10**4)
    eff = checks.fraction("efficiency", efficiency)
    t_storage = epoch / storage
    t_pcie = epoch / (gpus * pcie * eff)
    total = np.maximum(t_storage, t_pcie) if checks.flag("pipelined", pipelined) else t_storage + t_pcie
    return Staging(t_storage, t_pcie, total, t_pcie > t_storage)


def staging_for(epoch_bytes_per_server, storage_link: Link, pcie_link: Link, gpus_per_server, *,
                storage_links=1, efficiency=DEFAULT_EFFICIENCY, pipelined=True) -> Staging:
    """:func:`staging_seconds` with catalog links (storage NICs and PCIe), both at ``efficiency``."""
    n = checks.integer("storage_links", storage_links, high=10**4)
    eff = checks.fraction("efficiency", efficiency)
    return staging_seconds(epoch_bytes_per_server,
                           n * storage_link.bandwidth_per_direction_bytes_per_s * eff,
                           pcie_link.bandwidth_per_direction_bytes_per_s, gpus_per_server,
                           efficiency=eff, pipelined=pipelined)


@dataclass(frozen=True)
class CommTime:
    """Communication time of one training step and the part not hidden by compute."""

    seconds: float  # total communication time [s]
    exposed_seconds: float  # adds to the step time [s]
    hidden_fraction: float  # share of the communication overlapped with compute [-]


def _overlap(comm, overlappable_seconds) -> CommTime:
    hidden = np.minimum(comm, overlappable_seconds)
    share = np.where(comm > 0, hidden / np.where(comm > 0, comm, 1.0), 1.0)
    return CommTime(comm, comm - hidden, share if np.ndim(share) else float(share))


def gradient_sync(gradient_bytes, dp_per_domain, dp_domains, scaleup_bytes_per_s,
                  scaleout_bytes_per_s, *, backward_seconds=0.0, overlappable_share=1.0,
                  efficiency=DEFAULT_EFFICIENCY) -> CommTime:
    """Data-parallel gradient all-reduce per step, and how much hides behind the backward pass.

    Parameters
    ----------
    gradient_bytes : gradient buffer each rank reduces [B] (params / (tp x pp) x bytes)
    dp_per_domain : data-parallel ranks inside one scale-up domain [count]
    dp_domains : scale-up domains the data-parallel group spans [count]
    scaleup_bytes_per_s, scaleout_bytes_per_s : per-GPU rates per direction [B/s]
    backward_seconds : backward-pass time the all-reduce can overlap [s]
    overlappable_share : share of the backward time available for overlap [-]
        (buckets launch as gradients become ready; the last bucket cannot overlap)
    efficiency : achieved share of link rates, (0, 1]

    References
    ----------
    .. [1] Li et al., VLDB 2020, section 3.2.3 (bucketed overlap).
    .. [2] :func:`aisize.network.collectives.two_tier_collective_seconds`.
    """
    back = checks.non_negative("backward_seconds", backward_seconds)
    share = checks.fraction("overlappable_share", overlappable_share, allow_zero=True)
    comm = two_tier_collective_seconds("all-reduce", checks.non_negative("gradient_bytes", gradient_bytes),
                                       checks.integer("dp_per_domain", dp_per_domain, high=10**5),
                                       checks.integer("dp_domains", dp_domains, high=10**7),
                                       checks.positive("scaleup_bytes_per_s", scaleup_bytes_per_s),
                                       checks.positive("scaleout_bytes_per_s", scaleout_bytes_per_s),
                                       efficiency=efficiency)
    return _overlap(comm, back * share)


def tensor_parallel_traffic(tokens_per_microbatch, hidden, layers, tp, scaleup_bytes_per_s, *,
                            microbatches=1, bytes_per_element=2, overlappable_seconds=0.0,
                            efficiency=DEFAULT_EFFICIENCY, latency_seconds=1e-6) -> CommTime:
    """Tensor-parallel all-reduces of activations inside the NVLink domain, per step.

    Each layer all-reduces a (tokens x hidden) activation twice forward and twice
    backward (Megatron-LM); with sequence parallelism the same bytes move as
    all-gather + reduce-scatter pairs, so the time is the same.

    Parameters
    ----------
    tokens_per_microbatch : sequence length x micro-batch size [count]
    hidden : hidden size h [count]
    layers : transformer layers this pipeline stage holds [count]
    tp : tensor-parallel degree [count]
    scaleup_bytes_per_s : per-GPU scale-up rate per direction [B/s]
    microbatches : micro-batches per step on this rank [count]
    bytes_per_element : activation element size [B] (bf16: 2)
    overlappable_seconds : compute the TP communication can overlap [s] (0: none)
    efficiency, latency_seconds : as in :func:`~aisize.network.collectives.collective_seconds`

    References
    ----------
    .. [1] Shoeybi et al. 2019, arXiv 1909.08053, section 3, figure 4.
    .. [2] Korthikanti et al. 2022, arXiv 2205.05198, section 4.2.2 (SP moves the same bytes).
    """
    tokens = checks.positive("tokens_per_microbatch", tokens_per_microbatch)
    h = checks.integer("hidden", hidden, high=10**7)
    n_layers = checks.integer("layers", layers, high=10**5)
    m = checks.integer("microbatches", microbatches, high=10**6)
    elem = checks.positive("bytes_per_element", bytes_per_element, high=16)
    hide = checks.non_negative("overlappable_seconds", overlappable_seconds)
    one = collective_seconds("all-reduce", tokens * h * elem, checks.integer("tp", tp, high=10**4),
                             checks.positive("scaleup_bytes_per_s", scaleup_bytes_per_s),
                             latency_seconds=latency_seconds, efficiency=efficiency)
    return _overlap(TP_ALL_REDUCES_PER_LAYER * n_layers * m * one, hide)


def moe_all_to_all(tokens_per_gpu, hidden, moe_layers, experts_per_token, ep_per_domain, ep_domains,
                   scaleup_bytes_per_s, scaleout_bytes_per_s, *, bytes_per_element=2,
                   overlappable_seconds=0.0, efficiency=DEFAULT_EFFICIENCY) -> CommTime:
    """MoE expert-parallel all-to-all (dispatch and combine, forward and backward) per step.

    Each GPU sends tokens x k x hidden x bytes per all-to-all; the share that goes
    to experts on other domains crosses the scale-out network.

    Parameters
    ----------
    tokens_per_gpu : tokens each GPU routes per step [count]
    hidden : hidden size [count]
    moe_layers : MoE layers on this rank [count]
    experts_per_token : k, experts each token visits [count]
    ep_per_domain, ep_domains : expert-parallel ranks per scale-up domain, domains [count]
    scaleup_bytes_per_s, scaleout_bytes_per_s : per-GPU rates per direction [B/s]
    bytes_per_element : element size on the wire [B] (bf16 2, fp8 dispatch 1)
    overlappable_seconds : compute that hides the all-to-all [s]
    efficiency : achieved share of link rates, (0, 1]

    References
    ----------
    .. [1] Lepikhin et al. 2020, arXiv 2006.16668, section 2.
    .. [2] DeepSeek-AI, DeepSeek-V3 technical report, arXiv 2412.19437, section 3.2.2
       (dispatch/combine across NVLink and InfiniBand).
    """
    tokens = checks.positive("tokens_per_gpu", tokens_per_gpu)
    h = checks.integer("hidden", hidden, high=10**7)
    n_layers = checks.integer("moe_layers", moe_layers, high=10**5)
    k = checks.integer("experts_per_token", experts_per_token, high=10**4)
    elem = checks.positive("bytes_per_element", bytes_per_element, high=16)
    hide = checks.non_negative("overlappable_seconds", overlappable_seconds)
    one = two_tier_collective_seconds("all-to-all", tokens * k * h * elem,
                                      checks.integer("ep_per_domain", ep_per_domain, high=10**5),
                                      checks.integer("ep_domains", ep_domains, high=10**7),
                                      checks.positive("scaleup_bytes_per_s", scaleup_bytes_per_s),
                                      checks.positive("scaleout_bytes_per_s", scaleout_bytes_per_s),
                                      efficiency=efficiency)
    return _overlap(MOE_ALL_TO_ALLS_PER_LAYER * n_layers * one, hide)
