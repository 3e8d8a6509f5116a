"""The network plan in words: why the servers' compute NICs connect to nothing, worded once from the plan's
typed :class:`aisize.plan.network.UnusedNics` for every surface (the bill of materials' NIC line, the Network
tab, the report and the JSON); and the bill of materials with that line worded."""

from __future__ import annotations

import pandas as pd

from aisize.plan import bom


def unused_nics_text(u) -> str:
    """Why compute NICs are in the servers and unused: 'in the servers; unused: no workload [of pools A, B]
    spans servers, so no compute fabric is bought' ("" for None: every NIC is cabled)."""
    if u is None:
        return ""
    where = "" if u.all_pools else f" of pool{'s' * (len(u.idle_pools) > 1)} {', '.join(u.idle_pools)}"
    return f"in the servers; unused: no workload{where} spans servers, so no compute fabric is bought"


def unused_nics_sentence(n) -> str:
    """The sentence beside the Network tab's and the report's fabric figures: 'N compute NICs in the servers;
    unused: ...' ("" where every NIC is cabled)."""
    if n.unused_nics is None:
        return ""
    return f"{n.compute_nics_unused:,} compute NICs {unused_nics_text(n.unused_nics)}"


def bom_table(plan) -> pd.DataFrame:
    """:func:`aisize.plan.bom.bom_table` with the compute NICs' line saying why they connect to nothing, where
    no fabric is bought (the plan's one reason, which the Network tab and the report show too)."""
    table = bom.bom_table(plan)
    why = unused_nics_text(plan.network.unused_nics)
    if why:
        line = table["item"] == f"{bom.COMPUTE_NIC} {plan.network.compute_link}"
        table.loc[line, "item"] = table.loc[line, "item"] + f" ({why})"
    return table


__all__ = ["bom_table", "unused_nics_sentence", "unused_nics_text"]
