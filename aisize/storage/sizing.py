"""Storage building blocks: how many units meet bandwidth, IOPS and capacity at once.

units = max(minimum, ceil(read / usable read), ceil(write / usable write),
ceil(IOPS / usable IOPS), ceil(capacity / usable capacity)), where a unit's usable
figure is its rating x (1 - headroom); the largest term binds. A requirement
of zero never binds; a unit figure that is unknown (None in the catalog) is
skipped only when nothing is required of it. :func:`choose_system` sizes every
system a buyer can order by the unit (:func:`purchasable`) and keeps the
cheapest count (each unit at its own price or raw capacity, as
aisize.cost.storage prices it), then the fewest rack units.

References
----------
.. [1] NVIDIA DGX SuperPOD Reference Architecture (DGX H100), "Storage Architecture":
   storage performance scales with the number of building blocks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aisize import checks
from aisize.catalog.records import StorageSystem

CONSTRAINTS = ("read", "write", "iops", "capacity")


@dataclass(frozen=True)
class StorageUnits:
    """Units needed for each requirement, the answer, and which requirement binds."""

    by_read: float
    by_write: float
    by_iops: float
    by_capacity: float
    units: float
    binding: str | np.ndarray  # one of CONSTRAINTS, or "none" when nothing is required


def _units(name, need, per_unit, usable_share):
    if per_unit is None:
        if np.any(need > 0):
            raise ValueError(f"{name}=None is not allowed: the unit has no figure for a requirement that is set")
        return 0.0 * need
    per = checks.positive(name, per_unit)
    # a relative tolerance keeps a need of exactly k units' usable figure at k (float noise would add one)
    return np.ceil(need / (per * usable_share) * (1 - 1e-12))


def storage_units(*, read_bytes_per_s=0.0, write_bytes_per_s=0.0, iops=0.0, capacity_bytes=0.0,
                  unit_read_bytes_per_s=None, unit_write_bytes_per_s=None, unit_iops=None,
                  unit_capacity_bytes=None, headroom=0.0, minimum_units=1) -> StorageUnits:
    """Building-block units that satisfy every requirement at once.

    Parameters
    ----------
    read_bytes_per_s, write_bytes_per_s : required aggregate bandwidth [B/s]
    iops : required operations per second [1/s] (at the unit's IO size)
    capacity_bytes : required usable (or raw, matching the unit's figure) capacity [B]
    unit_read_bytes_per_s, unit_write_bytes_per_s, unit_iops, unit_capacity_bytes :
        one unit's figures (None: unknown; then the requirement must be 0)
    headroom : share of every unit figure kept free at the demand [1], 0 <= headroom <= 0.9
    minimum_units : units bought even for a demand of zero [count], integer 0 to 100,000

    Returns
    -------
    :class:`StorageUnits`; at least ``minimum_units`` units.

    References
    ----------
    .. [1] NVIDIA DGX SuperPOD RA (DGX H100), "Storage Architecture" (building blocks).
    """
    needs = [checks.non_negative("read_bytes_per_s", read_bytes_per_s),
             checks.non_negative("write_bytes_per_s", write_bytes_per_s),
             checks.non_negative("iops", iops),
             checks.non_negative("capacity_bytes", capacity_bytes)]
    per_unit = [("unit_read_bytes_per_s", unit_read_bytes_per_s),
                ("unit_write_bytes_per_s", unit_write_bytes_per_s),
                ("unit_iops", unit_iops), ("unit_capacity_bytes", unit_capacity_bytes)]
    share = 1.0 - float(checks.scalar("headroom", checks.number("headroom", headroom, low=0.0, high=0.9)))
    least = float(checks.scalar("minimum_units", checks.integer("minimum_units", minimum_units, low=0, high=100_000)))
    counts = np.broadcast_arrays(*[_units(n, need, u, share) for (n, u), need in zip(per_unit, needs)])
    stack = np.stack(counts)
    units = np.maximum(least, stack.max(axis=0))
    binding = np.where(stack.max(axis=0) > 0, np.asarray(CONSTRAINTS)[stack.argmax(axis=0)], "none")
    pick = (lambda x: float(x)) if np.ndim(units) == 0 else (lambda x: x)
    return StorageUnits(pick(stack[0]), pick(stack[1]), pick(stack[2]), pick(stack[3]),
                        pick(units), str(binding) if np.ndim(binding) == 0 else binding)


def storage_units_for(system: StorageSystem, *, read_bytes_per_s=0.0, write_bytes_per_s=0.0,
                      iops=0.0, capacity_bytes=0.0, headroom=0.0, minimum_units=1) -> StorageUnits:
    """:func:`storage_units` with a catalog :class:`~aisize.catalog.records.StorageSystem` as the unit.

    The unit's IOPS figure is the record's read IOPS, measured at its
    ``iops_io_size_bytes``: state ``iops`` at that IO size.
    """
    return storage_units(read_bytes_per_s=read_bytes_per_s, write_bytes_per_s=write_bytes_per_s,
                         iops=iops, capacity_bytes=capacity_bytes,
                         unit_read_bytes_per_s=system.read_bandwidth_bytes_per_s,
                         unit_write_bytes_per_s=system.write_bandwidth_bytes_per_s,
                         unit_iops=system.read_iops_per_s,
                         unit_capacity_bytes=system.capacity_bytes, headroom=headroom,
                         minimum_units=minimum_units)


# what a system is sold in: nodes or enclosures of a building block, each with a read rate and a capacity
PURCHASABLE_KINDS = ("building-block",)


def purchasable(system: StorageSystem) -> bool:
    """Whether a buyer orders ``system`` by the unit and the catalog gives what sizing needs per unit.

    A building block (a node or enclosure, scope ``unit``) with a published capacity: guidance rows are
    performance levels, not products; ``system`` rows are one measured installation of a fixed size;
    drives go into servers, not into a shared file system.
    """
    return system.kind in PURCHASABLE_KINDS and system.scope == "unit" and system.capacity_bytes is not None


def unit_iops_at(system: StorageSystem, io_bytes) -> float:
    """Operations/s one unit serves at IOs of ``io_bytes``: its rated IOPS, at most its read rate / IO size.

    The rated IOPS holds at the record's own (small) IO size; larger IOs run out of bandwidth first,
    and a unit without an IOPS rating is bounded by bandwidth alone.

    Parameters
    ----------
    system : a catalog :class:`~aisize.catalog.records.StorageSystem`
    io_bytes : mean IO size of the load [B], > 0

    References
    ----------
    .. [1] Little's law / bandwidth = IOPS x IO size (docs/DESIGN.md, "Queueing").
    """
    io = checks.positive("io_bytes", io_bytes)
    by_bandwidth = system.read_bandwidth_bytes_per_s / io
    return float(min(system.read_iops_per_s, by_bandwidth) if system.read_iops_per_s else by_bandwidth)


def bought_latency_seconds(named: StorageSystem, systems, default_seconds: float) -> float:
    """Unloaded IO latency of the storage a plan buys for ``named``, known before its demand is [s].

    A named system or building block is what the plan buys: its published latency, else ``default_seconds``.
    A guidance level is a comparison: the plan buys a :func:`purchasable` system chosen on the demand
    (:func:`choose_system`), which depends on what the services ask of the storage, so the latency is the
    slowest candidate's, never faster than the system bought (each without a published latency at the
    default). Parameters: ``systems`` the catalog's records; ``default_seconds`` > 0.
    """
    default = float(checks.scalar("default_seconds", checks.positive("default_seconds", default_seconds)))
    if named.kind != "guidance":
        return named.latency_seconds or default
    return max((s.latency_seconds or default for s in systems if purchasable(s)), default=default)


@dataclass(frozen=True)
class Choice:
    """The system bought, its sizing, and every candidate considered (id -> units, read bought, rack units)."""

    system: StorageSystem
    sized: StorageUnits
    candidates: dict


def choose_system(systems, *, read_bytes_per_s=0.0, write_bytes_per_s=0.0, iops_at_io=None, io_bytes=None,
                  capacity_bytes=0.0, headroom=0.0, minimum_units=1, unknown_write_share=0.5,
                  unit_usd=None) -> Choice:
    """The purchasable system whose smallest count meets every demand at the least cost.

    Parameters
    ----------
    systems : iterable of catalog records; those :func:`purchasable` are candidates
    read_bytes_per_s, write_bytes_per_s, capacity_bytes : peak demands [B/s, B/s, B]
    iops_at_io, io_bytes : peak operations/s [1/s] at a mean IO size [B] (None: no IOPS demand)
    headroom, minimum_units : as :func:`storage_units`
    unknown_write_share : a unit without a write rating writes at this share of its read rate [1]
    unit_usd : callable(system) -> US dollars per unit, or None (then a unit costs its raw capacity,
        so the least raw capacity bought wins: what a uniform price per raw TB makes cheapest)

    Returns
    -------
    :class:`Choice`. Ties on cost go to fewer rack units, then to the id. A demand of zero buys
    ``minimum_units`` of the cheapest unit (the smallest one where units are priced by capacity).

    References
    ----------
    .. [1] aisize.cost.storage: a unit is priced at its own unit price or its raw capacity x the price
       per raw TB (data/prices.csv ``storage-per-tb``), never by the bandwidth it delivers.
    """
    share = checks.scalar("unknown_write_share", checks.fraction("unknown_write_share", unknown_write_share))
    sized = {}
    for s in systems:
        if not purchasable(s):
            continue
        write = s.write_bandwidth_bytes_per_s or share * s.read_bandwidth_bytes_per_s
        per_iops = unit_iops_at(s, io_bytes) if iops_at_io else None
        sized[s.id] = (s, storage_units(read_bytes_per_s=read_bytes_per_s, write_bytes_per_s=write_bytes_per_s,
                                        iops=iops_at_io or 0.0, capacity_bytes=capacity_bytes,
                                        unit_read_bytes_per_s=s.read_bandwidth_bytes_per_s,
                                        unit_write_bytes_per_s=write, unit_iops=per_iops,
                                        unit_capacity_bytes=s.capacity_bytes, headroom=headroom,
                                        minimum_units=minimum_units))
    if not sized:
        raise ValueError("systems has no purchasable storage system (a building block, scope 'unit', with a "
                         "capacity): add one to data/storage.csv or hardware.storage_systems")
    def cost(s, u):
        each = unit_usd(s) if unit_usd is not None else None
        return u.units * (each if each is not None else s.capacity_bytes)

    table = {k: {"units": u.units, "read_bytes_per_s": u.units * s.read_bandwidth_bytes_per_s,
                 "raw_capacity_bytes": u.units * s.capacity_bytes, "cost": cost(s, u),
                 "rack_units": u.units * s.rack_units if s.rack_units else None, "binding": u.binding}
             for k, (s, u) in sized.items()}
    best = min(table, key=lambda k: (table[k]["cost"], table[k]["rack_units"] or math.inf, k))
    return Choice(sized[best][0], sized[best][1], table)
