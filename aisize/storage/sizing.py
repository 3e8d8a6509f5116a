"""Storage building blocks: how many units meet bandwidth, IOPS and capacity at once.

units = max(ceil(read / unit read), ceil(write / unit write), ceil(IOPS / unit
IOPS), ceil(capacity / unit capacity)); the largest term binds. A requirement
of zero never binds; a unit figure that is unknown (None in the catalog) is
skipped only when nothing is required of it.

References
----------
.. [1] NVIDIA DGX SuperPOD Reference Architecture (DGX H100), "Storage Architecture":
   storage performance scales with the number of building blocks.
"""

from __future__ import annotations

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


def _units(name, need, per_unit):
    if per_unit is None:
        if np.any(need > 0):
            raise ValueError(f"{name}=None is not allowed: the unit has no figure for a requirement that is set")
        return 0.0 * need
    per = checks.positive(name, per_unit)
    return np.ceil(need / per)


def storage_units(*, read_bytes_per_s=0.0, write_bytes_per_s=0.0, iops=0.0, capacity_bytes=0.0,
                  unit_read_bytes_per_s=None, unit_write_bytes_per_s=None, unit_iops=None,
                  unit_capacity_bytes=None) -> StorageUnits:
    """Building-block units that satisfy every requirement at once.

    Parameters
    ----------
    read_bytes_per_s, write_bytes_per_s : required aggregate bandwidth [B/s]
    iops : required operations per second [1/s] (at the unit's IO size)
    capacity_bytes : required usable (or raw, matching the unit's figure) capacity [B]
    unit_read_bytes_per_s, unit_write_bytes_per_s, unit_iops, unit_capacity_bytes :
        one unit's figures (None: unknown; then the requirement must be 0)

    Returns
    -------
    :class:`StorageUnits`; at least one unit.

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
    counts = np.broadcast_arrays(*[_units(n, need, u) for (n, u), need in zip(per_unit, needs)])
    stack = np.stack(counts)
    units = np.maximum(1.0, stack.max(axis=0))
    binding = np.where(stack.max(axis=0) > 0, np.asarray(CONSTRAINTS)[stack.argmax(axis=0)], "none")
    pick = (lambda x: float(x)) if np.ndim(units) == 0 else (lambda x: x)
    return StorageUnits(pick(stack[0]), pick(stack[1]), pick(stack[2]), pick(stack[3]),
                        pick(units), str(binding) if np.ndim(binding) == 0 else binding)


def storage_units_for(system: StorageSystem, *, read_bytes_per_s=0.0, write_bytes_per_s=0.0,
                      iops=0.0, capacity_bytes=0.0) -> StorageUnits:
    """:func:`storage_units` with a catalog :class:`~aisize.catalog.records.StorageSystem` as the unit.

    The unit's IOPS figure is the record's read IOPS, measured at its
    ``iops_io_size_bytes``: state ``iops`` at that IO size.
    """
    return storage_units(read_bytes_per_s=read_bytes_per_s, write_bytes_per_s=write_bytes_per_s,
                         iops=iops, capacity_bytes=capacity_bytes,
                         unit_read_bytes_per_s=system.read_bandwidth_bytes_per_s,
                         unit_write_bytes_per_s=system.write_bandwidth_bytes_per_s,
                         unit_iops=system.read_iops_per_s,
                         unit_capacity_bytes=system.capacity_bytes)
