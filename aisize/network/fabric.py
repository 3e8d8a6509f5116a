"""Fabric sizing: NICs per server, leaf/spine(/core) switch counts, the storage network.

A fat tree (folded Clos) of switches with ``radix`` ports. Each leaf gives
``down = floor(radix * o / (1 + o))`` ports to endpoints and the rest up, for a
leaf oversubscription o = down:up (1 = non-blocking). Two tiers: every spine
port reaches a different leaf, so at most ``radix`` leaves, spines =
ceil(leaves x up / radix). Beyond that, three tiers: pods of radix/2 leaves and
``up`` aggregation switches each (half their ports down, half up), cores =
ceil(aggregation uplinks / radix), at most ``radix`` pods. Non-blocking limits:
radix^2/2 endpoints for two tiers, radix^3/4 for three (the k-ary fat tree).

Rail-optimized servers give each GPU its own NIC and cable NIC i of every server
to the leaves of rail i, so leaves come in groups of ``rails``.

References
----------
.. [1] C. E. Leiserson, "Fat-trees", IEEE Trans. Computers C-34(10), 1985.
.. [2] M. Al-Fares, A. Loukissas, A. Vahdat, "A Scalable, Commodity Data Center
   Network Architecture", SIGCOMM 2008, section 3 (k-ary fat tree: k^3/4 hosts,
   5k^2/4 switches; k = 48 gives 27,648 hosts).
.. [3] NVIDIA DGX SuperPOD Reference Architecture, DGX H100 (RA-11333-001),
   "Network Fabrics", table 4 (compute fabric component count: 1 SU 8 leaf /
   4 spine, 2 SU 16 / 8, 4 SU 32 / 16, QM9700 64-port NDR switches, rail-optimized).
.. [4] NVIDIA DGX SuperPOD Reference Architecture, DGX B200, compute fabric table
   (16 SU = 4,096 GPUs: 128 leaf, 128 spine, 64 core).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from aisize import checks
from aisize.catalog.records import Link, Server
from aisize.network.collectives import DEFAULT_EFFICIENCY

DEFAULT_GPUS_PER_NIC = 1  # rail-optimized: one compute NIC per GPU [3]


@dataclass(frozen=True)
class Nics:
    """Compute NICs per server and the scale-out bandwidth each GPU gets."""

    nics_per_server: int
    rails: int  # separate leaf groups the server's NICs land on (1 when not rail-optimized)
    per_gpu_bytes_per_s: float  # per direction [B/s]


def compute_nics(gpus_per_server, nic_bytes_per_s, *, gpus_per_nic=DEFAULT_GPUS_PER_NIC,
                 rail_optimized=True) -> Nics:
    """Compute-fabric NICs per server and scale-out bandwidth per GPU.

    Parameters
    ----------
    gpus_per_server : GPUs per server [count]
    nic_bytes_per_s : one NIC port's rate per direction [B/s]
    gpus_per_nic : GPUs sharing one NIC [count] (1 in DGX/HGX designs)
    rail_optimized : NIC i of every server goes to rail i's leaves

    References
    ----------
    .. [1] NVIDIA DGX SuperPOD RA (DGX H100), "Compute fabric" (8 x 400 Gb/s NICs, rail-aligned).
    """
    gpus = checks.integer("gpus_per_server", gpus_per_server, high=10**4)
    nic = checks.positive("nic_bytes_per_s", nic_bytes_per_s)
    per_nic = checks.integer("gpus_per_nic", gpus_per_nic, high=10**4)
    nics = -(-gpus // per_nic)
    return Nics(nics, nics if checks.flag("rail_optimized", rail_optimized) else 1, nics * nic / gpus)


def compute_nics_for(server: Server, nic_link: Link, *, rail_optimized=True) -> Nics:
    """:func:`compute_nics` from a catalog server (its NIC count) and NIC link."""
    gpus_per_nic = max(1, server.gpus // max(1, server.compute_nics))
    return compute_nics(server.gpus, nic_link.bandwidth_per_direction_bytes_per_s,
                        gpus_per_nic=gpus_per_nic, rail_optimized=rail_optimized)


@dataclass(frozen=True)
class FatTree:
    """Switch and cable counts of a fat-tree fabric."""

    endpoints: float  # ports the fabric offers [count] (with any ports spare for growth)
    tiers: float  # 1 (a single switch), 2 or 3
    leaves: float
    spines: float  # second tier (aggregation in a three-tier tree)
    cores: float  # third tier (0 for one or two tiers)
    switches: float
    endpoint_cables: float  # NIC-to-leaf cables bought (spare growth ports get none)
    leaf_spine_cables: float
    spine_core_cables: float
    max_endpoints_two_tier: float


def one_switch(endpoints, radix, rails=1):
    """Whether ``endpoints`` ports of ``rails`` rails fit a single switch of ``radix`` ports (no leaf-spine
    tier, so no leaf oversubscription on their paths) [bool, vectorized]."""
    return (np.asarray(endpoints) <= radix) & (np.asarray(rails) == 1)


def fat_tree(endpoints, radix, *, oversubscription=1.0, rails=1) -> FatTree:
    """Leaf/spine(/core) switches for ``endpoints`` ports at a switch radix.

    Parameters
    ----------
    endpoints : NIC ports to connect [count]
    radix : ports per switch [count], even, >= 4 (QM9700 NDR: 64)
    oversubscription : leaf down:up port ratio [-], >= 1 typical (1 = non-blocking)
    rails : leaf groups (rail-optimized fabrics round leaves up per rail) [count]

    Returns
    -------
    :class:`FatTree`; a single switch (tiers = 1) when endpoints fit on one
    switch and there is one rail.

    References
    ----------
    .. [1] Al-Fares et al., SIGCOMM 2008, section 3.
    .. [2] NVIDIA DGX SuperPOD RA (DGX H100), table 4; (DGX B200), compute fabric table.
    """
    e = checks.integer("endpoints", endpoints, high=10**8)
    k = checks.integer("radix", radix, low=4, high=10**4)
    if np.any(np.asarray(k) % 2):
        raise ValueError(f"radix={radix!r} is not allowed: must be an even number of ports")
    o = checks.number("oversubscription", oversubscription, low=0.0, high=64.0, low_inclusive=False)
    r = checks.integer("rails", rails, high=10**4)
    down = np.floor(k * o / (1.0 + o))
    down = np.clip(down, 1, k - 1)
    up = k - down
    leaves = r * np.ceil(e / r / down)
    max_two = k * down  # at most `radix` leaves
    half = k // 2
    max_three = k * half * down
    if np.any(e > max_three):
        raise ValueError(f"endpoints={endpoints!r} is not allowed: more than a three-tier fat tree "
                         f"of radix {radix} holds at oversubscription {oversubscription}")
    single = one_switch(e, k, r)
    three = leaves > k
    spines_two = np.ceil(leaves * up / k)
    pods = np.ceil(leaves / half)
    agg = pods * up
    cores = np.where(three, np.ceil(agg * half / k), 0.0)
    spines = np.where(three, agg, spines_two)
    spines = np.where(single, 0.0, spines)
    leaves = np.where(single, 1.0, leaves)
    tiers = np.where(single, 1.0, np.where(three, 3.0, 2.0))
    leaf_spine = np.where(single, 0.0, leaves * up)
    spine_core = np.where(three, agg * half, 0.0)
    switches = leaves + spines + cores
    return FatTree(e * 1.0, _scalar(tiers), _scalar(leaves), _scalar(spines), _scalar(cores),
                   _scalar(switches), e * 1.0, _scalar(leaf_spine), _scalar(spine_core),
                   _scalar(max_two))


def cables(tree) -> float:
    """Cables (with their optics) a fabric buys: endpoint + leaf-spine + spine-core [count].

    The one count every surface reads (the Fabrics tables and the bill of materials)."""
    get = tree.get if isinstance(tree, dict) else lambda k: getattr(tree, k)
    return float(get("endpoint_cables") + get("leaf_spine_cables") + get("spine_core_cables"))


def _scalar(x):
    return float(x) if np.ndim(x) == 0 else x


def compute_fabric(servers, nics: Nics, radix, *, oversubscription=1.0) -> FatTree:
    """Compute fabric for ``servers`` servers with :func:`compute_nics`'s NICs.

    References
    ----------
    .. [1] NVIDIA DGX SuperPOD RA (DGX H100), table 4 (32 servers x 8 rails -> 8 leaves, 4 spines).
    """
    n = checks.integer("servers", servers, high=10**7)
    return fat_tree(n * nics.nics_per_server, radix, oversubscription=oversubscription,
                    rails=nics.rails)


@dataclass(frozen=True)
class StorageNetwork:
    """A separate storage network: NICs per server and its switches."""

    nics_per_server: float  # storage NICs each server needs for its read demand
    server_bytes_per_s: float  # achieved storage bandwidth per server [B/s]
    fabric: FatTree


def storage_network(servers, read_bytes_per_s_per_server, nic_bytes_per_s, storage_ports, radix, *,
                    min_nics_per_server=1, oversubscription=1.0,
                    efficiency=DEFAULT_EFFICIENCY) -> StorageNetwork:
    """Storage NICs per server and the storage fabric's switches.

    Parameters
    ----------
    servers : GPU servers [count]
    read_bytes_per_s_per_server : storage read demand of one server [B/s]
    nic_bytes_per_s : one storage NIC port, per direction [B/s]
    storage_ports : ports of the storage system on this fabric [count]
    radix : ports per switch [count]
    min_nics_per_server : floor on storage NICs (e.g. 2 for redundancy) [count]
    oversubscription : leaf down:up ratio [-]
    efficiency : achieved share of the NIC rate, (0, 1]

    References
    ----------
    .. [1] NVIDIA DGX SuperPOD RA (DGX H100), "Storage fabric" (a separate InfiniBand
       fabric, two storage ports per DGX).
    """
    n = checks.integer("servers", servers, high=10**7)
    demand = checks.non_negative("read_bytes_per_s_per_server", read_bytes_per_s_per_server)
    nic = checks.positive("nic_bytes_per_s", nic_bytes_per_s)
    ports = checks.integer("storage_ports", storage_ports, high=10**7)
    floor = checks.integer("min_nics_per_server", min_nics_per_server, high=10**3)
    eff = checks.fraction("efficiency", efficiency)
    nics = np.maximum(floor, np.ceil(demand / (nic * eff)))
    fabric = fat_tree(n * nics + ports, radix, oversubscription=oversubscription)
    return StorageNetwork(_scalar(nics), _scalar(nics * nic * eff), fabric)


FABRIC_DESIGNS = ("single-switch", "fat-tree", "rail-optimized")


@dataclass(frozen=True)
class FabricChoice:
    """The compute fabric chosen for a set of servers, and the designs it was weighed against."""

    design: str  # single-switch | fat-tree | rail-optimized
    tree: FatTree  # the chosen design: switches sized for the growth ports, endpoint cables for today's NICs
    endpoints: int  # NIC ports connected today
    ports_sized_for: int  # endpoints x (1 + growth), rounded up: the ports the fabric offers
    growth: float  # spare share of ports kept for growth
    links: float  # cables/optics bought today: endpoints + switch-to-switch links
    cost: float  # switches x switch_cost + links x link_cost (the caller's units, e.g. dollars)
    reason: str
    candidates: tuple  # (design, switches, links, cost) of every design that could carry the ports


def _candidate(design: str, ports: int, radix: int, oversubscription: float, rails: int):
    if design == "single-switch":
        return fat_tree(ports, radix, oversubscription=oversubscription) if ports <= radix else None
    if design == "fat-tree":
        return None if ports <= radix else fat_tree(ports, radix, oversubscription=oversubscription)
    return fat_tree(ports, radix, oversubscription=oversubscription, rails=rails) if rails > 1 else None


def _switches(n: float) -> str:
    return f"{n:g} switch" + ("" if n == 1 else "es")


def choose_fabric(servers, nics: Nics, radix, *, oversubscription=1.0, growth=0.25, design="auto",
                  switch_cost=1.0, link_cost=0.0) -> FabricChoice:
    """The cheapest compute fabric that carries the servers' NICs, with ports spare for growth.

    Every candidate is non-blocking at the requested leaf ``oversubscription``, so
    all meet the bandwidth; they differ in switches and cables. Candidates: one
    switch (when the ports fit its radix), a leaf-spine(-core) fat tree, and the
    rail-optimized fat tree of the reference design (NIC i of every server on
    rail i's leaves [1]; leaves come in groups of ``rails``). The fabric is sized
    for ceil(endpoints x (1 + growth)) ports; cables are counted for today's
    endpoints plus the switch-to-switch links. ``design="auto"`` takes the
    cheapest by ``switches x switch_cost + links x link_cost`` (by default the
    fewest switches); at equal cost the rail-optimized design wins, since it
    keeps same-rail traffic on one leaf at no extra cost. Another ``design``
    forces that design (ValueError when it cannot carry the ports).

    Parameters
    ----------
    servers : servers on the fabric [count]
    nics : :func:`compute_nics` of one server (NICs per server and rails)
    radix : ports per switch [count]
    oversubscription : leaf down:up port ratio [-]
    growth : spare share of ports, >= 0 (0.25: a quarter more servers can join)
    design : "auto" or one of ``FABRIC_DESIGNS``
    switch_cost, link_cost : cost of one switch and of one link's optics and cable (>= 0)

    References
    ----------
    .. [1] NVIDIA DGX SuperPOD Reference Architecture (DGX H100), "Compute fabric"
       (rail-optimized, 8 rails; table 4 switch counts).
    .. [2] Al-Fares et al., SIGCOMM 2008, section 3 (fat tree sizing; :func:`fat_tree`).
    """
    n = checks.scalar("servers", checks.integer("servers", servers, high=10**7))
    k = checks.scalar("radix", checks.integer("radix", radix, low=4, high=10**4))
    g = checks.scalar("growth", checks.non_negative("growth", growth, high=10.0))
    sw = checks.scalar("switch_cost", checks.non_negative("switch_cost", switch_cost))
    lc = checks.scalar("link_cost", checks.non_negative("link_cost", link_cost))
    if design != "auto":
        checks.choice("design", design, FABRIC_DESIGNS)
    endpoints = int(n) * nics.nics_per_server
    ports = max(int(np.ceil(endpoints * (1.0 + g) - 1e-9)), 1)
    found = []
    for name in FABRIC_DESIGNS:
        tree = _candidate(name, ports, int(k), oversubscription, nics.rails)
        if tree is not None:  # sized for the growth ports; cabled for today's NICs only
            tree = dataclasses.replace(tree, endpoint_cables=float(endpoints))
            links = cables(tree)
            found.append((name, tree, links, tree.switches * sw + links * lc))
    if design != "auto":
        pick = [c for c in found if c[0] == design]
        if not pick:
            why = (f"{ports} ports do not fit one {int(k)}-port switch" if design == "single-switch" else
                   f"{ports} ports fit one switch" if design == "fat-tree" else
                   "the servers' NICs are not on separate rails")
            raise ValueError(f"design={design!r} is not allowed here: {why}; allowed: "
                             f"{', '.join(c[0] for c in found)} or auto")
        chosen = pick[0]
        reason = f"{design} as asked"
    else:
        cheapest = min(c[3] for c in found)
        tied = [c for c in found if c[3] <= cheapest * (1 + 1e-12)]
        chosen = next((c for c in tied if c[0] == "rail-optimized"), tied[0])
        others = "; ".join(f"{c[0]} {_switches(c[1].switches)}" for c in found if c is not chosen)
        reason = (f"{chosen[0]}: the cheapest design for {endpoints} NIC ports + {g:.0%} growth = {ports} ports "
                  f"on {int(k)}-port switches ({_switches(chosen[1].switches)}"
                  + (f"; {others})" if others else ")"))
        if chosen[0] == "rail-optimized" and len(tied) > 1:
            reason += "; rail-optimized costs the same and keeps same-rail traffic on one leaf"
    name, tree, links, cost = chosen
    table = tuple((c[0], float(c[1].switches), float(c[2]), float(c[3])) for c in found)
    return FabricChoice(name, tree, endpoints, ports, float(g), float(links), float(cost), reason, table)
