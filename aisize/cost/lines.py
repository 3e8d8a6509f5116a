"""Priced bill-of-materials lines: a quantity times a price from the table."""

from __future__ import annotations

from dataclasses import dataclass

from aisize import checks
from aisize.cost.prices import PriceTable


@dataclass(frozen=True)
class CostLine:
    """One priced line: quantity x unit price, with where the price came from."""

    item: str
    quantity: float
    unit: str  # what is counted: servers, switches, links, TB raw, GB/s ...
    price_id: str  # row of data/prices.csv ("" when unpriced)
    unit_usd: float
    usd: float
    kind: str  # the price's kind (list-price, quote, ..., assumption, overridden, unpriced)


def priced(item: str, quantity, unit: str, price_id: str, table: PriceTable) -> CostLine:
    """``quantity`` of ``item`` at the table's price ``price_id``; a missing row is "unpriced" ($0, flagged)."""
    q = checks.scalar("quantity", checks.non_negative("quantity", quantity))
    price = table.get(price_id)
    if price is None:
        return CostLine(item, q, unit, "", 0.0, 0.0, "unpriced")
    return CostLine(item, q, unit, price_id, price.usd, q * price.usd, price.kind)
