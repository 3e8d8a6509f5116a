"""What shared storage costs: the units bought, each at its own unit price or at its raw capacity.

A storage system is sold by the node or enclosure, so its price follows the units bought: a
``storage-unit-<id>`` row of data/prices.csv where the unit has a public (or quoted) price, else the
unit's raw capacity x ``storage-per-tb`` (an assumption, said so on the plan). A system whose
catalog row gives neither (a measured installation of unknown size) is left unpriced, counted at
$0 and named on the plan: pricing only the capacity the plan needs would bill three 4U chassis at
$30. A ``storage-unit-<id>`` row (data/prices.csv, or PriceTable.with_overrides) prices it. Storage is never priced by the bandwidth it delivers: no vendor sells it that way, and a
per-GB/s figure would have to be invented. docs/storage.md says where each figure comes from.
"""

from __future__ import annotations

from aisize import checks
from aisize.catalog.records import StorageSystem
from aisize.cost.lines import CostLine, priced
from aisize.cost.prices import PriceTable
from aisize.units import TB

PER_TB = "storage-per-tb"


def storage_unit_price_id(system_id: str) -> str:
    """Price id of one unit of catalog storage system ``system_id``."""
    return f"storage-unit-{system_id}"


def unit_usd(system: StorageSystem, table: PriceTable) -> float | None:
    """US dollars for one unit of ``system``: its unit price, else raw capacity x ``storage-per-tb``.

    None where neither exists (no unit price and no published capacity): the caller prices the capacity it needs.
    """
    own = table.get(storage_unit_price_id(system.id))
    if own is not None:
        return own.usd
    if system.capacity_bytes is None:
        return None
    return system.capacity_bytes / TB * table.usd(PER_TB)


def storage_line(system: StorageSystem, units, needed_raw_bytes, table: PriceTable) -> CostLine:
    """The priced line of ``units`` of ``system`` (see the module docstring for which price applies).

    Parameters
    ----------
    system : the catalog record bought
    units : units bought [count], >= 0
    needed_raw_bytes : raw capacity the plan needs [B], >= 0 (checked; the line does not depend on it
        since a system is priced by what is bought, not by what the plan stores on it)
    table : the price table (with the scenario's overrides)
    """
    n = float(checks.scalar("units", checks.non_negative("units", units)))
    need = float(checks.scalar("needed_raw_bytes", checks.non_negative("needed_raw_bytes", needed_raw_bytes)))
    unit_id = storage_unit_price_id(system.id)
    if unit_id in table:
        return priced(f"storage {system.id}", n, "units", unit_id, table)
    if system.capacity_bytes is not None:
        tb = system.capacity_bytes / TB
        return priced(f"storage {system.id} ({n:g} unit{'' if n == 1 else 's'})", n * tb, "TB raw", PER_TB, table)
    del need  # checked above: a negative need is a caller's bug even where it does not price the line
    return priced(f"storage {system.id} (no unit price or capacity published)", n, "units", unit_id, table)
