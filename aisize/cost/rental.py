"""Which published rental rate a plan is compared with: the same GPU it bought, or none.

    from aisize.cost import load_prices
    from aisize.cost.rental import choose_rate
    choose_rate(load_prices(), "aws-p5-on-demand", "b200")   # a B200 rate, and a note saying why

Comparing a B200 plan with H100 rental mixes a GPU's price with another's speed, so the
scenario's ``cost.cloud_rate`` is used only when it rents the accelerator the plan bought.
Otherwise the first fresh on-demand row for that accelerator is used (the scenario's
provider first), and where data/prices.csv has none the plan says so instead of comparing.

References
----------
.. [1] docs/DESIGN.md section 2, "Shared clusters and cost".
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from aisize.cost.prices import MAX_PRICE_AGE_MONTHS, PriceTable, age_months, cloud_rates_for

# Renting only the busy GPU-hours is what an on-demand rate bills; a reservation bills every hour of its term, so
# an automatic choice takes on-demand rows only (the scenario may still name a reserved row for the same GPU).
ON_DEMAND_SUFFIX = "-on-demand"


@dataclass(frozen=True)
class RateChoice:
    """The cloud row compared with (``""`` when none rents the GPU) and, where it is not the requested one, why."""

    id: str
    accelerator: str
    note: str


def _provider(id_: str) -> str:
    return id_.split("-", 1)[0]


def choose_rate(table: PriceTable, requested: str, accelerator: str, today: datetime.date | None = None) -> RateChoice:
    """The rate to compare a plan of ``accelerator`` GPUs with, given the scenario's ``requested`` cloud row."""
    today = today or datetime.date.today()
    req = table.get(requested)
    if req is not None and req.accelerator == accelerator:
        return RateChoice(requested, accelerator, "")
    rented = req.accelerator if req is not None and req.accelerator else "no named GPU"
    candidates = [i for i in cloud_rates_for(table, accelerator) if i.endswith(ON_DEMAND_SUFFIX)]
    if not candidates:
        return RateChoice("", accelerator, (
            f"no rental rate for {accelerator} in data/prices.csv (the scenario's cloud rate {requested} rents "
            f"{rented}, not the GPU bought): add a cloud row for {accelerator} to compare"))

    def rank(i: str):
        p = table[i]
        old = bool(p.date) and age_months(p.date, today) > MAX_PRICE_AGE_MONTHS
        return (old, _provider(i) != _provider(requested))

    chosen = min(candidates, key=rank)  # min is stable: file order breaks ties
    return RateChoice(chosen, accelerator, (
        f"the scenario's cloud rate {requested} rents {rented}; the plan bought {accelerator}, so it is compared "
        f"with {chosen}, the same GPU"))
