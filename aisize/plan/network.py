"""The plan's fabrics: each pool's compute fabric (the cheapest design that carries it) and the storage network.

Glue only: :func:`aisize.network.fabric.choose_fabric` weighs one switch, a
fat tree and the rail-optimized reference design at the price table's switch
and optics prices; :func:`aisize.network.fabric.storage_network` sizes the
storage network.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from aisize.cost import priced, switch_price_id
from aisize.network.fabric import FatTree, Nics, cables, choose_fabric, compute_nics_for, storage_network
from aisize.plan import context as C

OPTICS_PRICE = "optics-per-link"
_EMPTY = dataclasses.asdict(FatTree(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))


@dataclass(frozen=True)
class PoolFabric:
    """One pool's compute fabric."""

    compute_link: str
    nics_per_server: int
    design: str  # single-switch | fat-tree | rail-optimized | none (no servers)
    reason: str
    growth: float  # spare share of ports
    ports_sized_for: int
    links: float  # cables/optics bought: endpoints + switch-to-switch links
    fabric: dict  # aisize.network.fabric.FatTree fields
    candidates: tuple  # (design, switches, links, cost in $) weighed


@dataclass(frozen=True)
class UnusedNics:
    """Compute NICs the servers ship with that no compute fabric connects, because no workload of their pools
    spans servers (the words: :func:`aisize.present.network_text.unused_nics_text`)."""

    count: int  # NICs in the servers of the idle pools
    idle_pools: tuple[str, ...]  # pools that buy no compute fabric, in the plan's order
    all_pools: bool  # every pool of the plan is idle (the words then name none)


@dataclass(frozen=True)
class NetworkPlan:
    """Compute fabric (scale-out) and storage network of all GPU servers.

    The storage fabric's endpoints are the GPU servers' storage NICs plus the storage
    system's own ports: enough ports of the storage link to carry the storage's supplied
    read rate (ceil(supply_read_bytes_per_s / port rate), at least one). With several
    pools, the compute figures add the pools' fabrics (each pool has its own).
    """

    compute_link: str
    compute_nics_per_server: int
    compute_nics: int
    scaleout_per_gpu_bytes_per_s: float
    compute_fabric: dict  # aisize.network.fabric.FatTree fields (summed over pools)
    storage_link: str
    storage_nics_per_server: float
    storage_nics: float
    storage_fabric: dict
    scaleup_link: str  # link tensor-parallel traffic crosses inside a server: NVLink, else PCIe (job.scaleup)
    scaleup_per_gpu_bytes_per_s: float  # per GPU, per direction
    scaleup_domain: int  # GPUs one scale-up domain joins
    fabric_design: str = ""  # the first pool's design (each pool's in Plan.pools)
    fabric_reason: str = ""
    fabric_growth: float = 0.0
    compute_links: float = 0.0  # cables/optics of the compute fabrics (growth ports get none)
    storage_links: float = 0.0  # cables/optics of the storage network
    compute_nics_unused: int = 0  # compute NICs in servers no compute fabric connects
    unused_nics: UnusedNics | None = None  # which pools they are in and why (None: every NIC is cabled)

    @property
    def no_compute_fabric(self) -> bool:
        """Whether the servers' compute NICs connect to nothing: no pool buys a compute fabric."""
        return self.compute_nics > 0 and self.compute_nics_unused == self.compute_nics


def pool_fabric(ctx: C.HardwareContext, hardware, servers: int, prices, *, spans: bool = True) -> PoolFabric:
    """The cheapest compute fabric for ``servers`` of a pool at the price table's prices.

    ``spans`` False (no workload of the pool runs across servers) needs no compute fabric at all
    unless ``hardware.fabric`` asks for one: the storage network carries data and model loads.
    """
    nics = compute_nics_for(ctx.server, ctx.scale_out_link)
    if servers == 0 or (not spans and hardware.fabric == "auto"):
        why = "no servers" if servers == 0 else ("no workload of the pool runs across servers: no compute fabric "
                                                 "is needed (the storage network carries data and model loads)")
        return PoolFabric(ctx.scale_out_link.id, nics.nics_per_server, "none", why, hardware.fabric_growth,
                          0, 0.0, dict(_EMPTY), ())
    link = ctx.scale_out_link
    switch = priced("switch", 1, "switches", switch_price_id(link.kind, link.id), prices).unit_usd
    optics = priced("link", 1, "links", OPTICS_PRICE, prices).unit_usd
    try:
        c = choose_fabric(servers, nics, hardware.switch_radix, oversubscription=hardware.oversubscription,
                          growth=hardware.fabric_growth, design=hardware.fabric, switch_cost=switch or 1.0,
                          link_cost=optics)
    except ValueError as exc:
        raise ValueError(f"hardware.fabric_growth / hardware.switch_radix / hardware.fabric: {servers} servers of "
                         f"{ctx.server.id} with {hardware.fabric_growth:.0%} growth: {exc}") from None
    return PoolFabric(link.id, nics.nics_per_server, c.design, c.reason, c.growth, c.ports_sized_for, c.links,
                      dataclasses.asdict(c.tree), c.candidates)


def _summed(fabrics) -> dict:
    out = dict(_EMPTY)
    for f in fabrics:
        for k, v in f.fabric.items():
            out[k] = max(out[k], v) if k in ("tiers", "max_endpoints_two_tier") else out[k] + v
    return out


def unused_nics(pools) -> UnusedNics | None:
    """Compute NICs the servers ship with that no compute fabric connects, and the pools they are in (the
    BOM's and the Network tab's one reason); None where every NIC is cabled."""
    idle = [p for p in pools if p.fabric.design == "none" and p.servers and p.fabric.nics_per_server]
    count = int(sum(p.fabric.nics_per_server * p.servers for p in idle))
    if not count:
        return None
    return UnusedNics(count, tuple(p.name for p in idle), len(idle) == len(pools))


def network_plan(primary: C.HardwareContext, hardware, pools, servers: int, nics: Nics, read_per_server: float,
                 supply_read: float, scaleup) -> NetworkPlan:
    """Both fabrics of the plan: the pools' compute fabrics and one storage network for all servers."""
    n = max(servers, 1)
    link = primary.storage_nic_link.bandwidth_per_direction_bytes_per_s
    store = storage_network(n, read_per_server, link, max(1, math.ceil(supply_read / link)),
                            hardware.switch_radix, min_nics_per_server=max(1, primary.server.storage_nics),
                            oversubscription=hardware.oversubscription)
    first = pools[0].fabric
    compute_nics = sum(p.fabric.nics_per_server * p.servers for p in pools)
    storage_fabric = dataclasses.asdict(store.fabric)
    idle = unused_nics(pools)
    return NetworkPlan(primary.scale_out_link.id, nics.nics_per_server, int(compute_nics), nics.per_gpu_bytes_per_s,
                       _summed([p.fabric for p in pools]), primary.storage_nic_link.id,
                       float(store.nics_per_server), float(store.nics_per_server) * servers,
                       storage_fabric, *scaleup, int(primary.accelerator.scaleup_domain),
                       first.design, first.reason, first.growth, float(sum(p.fabric.links for p in pools)),
                       cables(storage_fabric), idle.count if idle else 0, idle)
