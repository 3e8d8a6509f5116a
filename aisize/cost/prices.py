"""The price table (``data/prices.csv``): every price sourced with a date, or flagged as an assumption.

    from aisize.cost import prices
    table = prices.load()                 # all rows
    table.usd("energy-per-kwh")           # 0.1192
    table.with_overrides({"pue": 1.2})    # a scenario's overrides (checked)

A row's ``kind`` says what the figure is: ``list-price``, ``quote`` (a public
quote), ``cloud-rate`` (a published rental rate), ``published`` (an official
statistic) or ``assumption`` (no public figure: the user must replace it).
Prices are US dollars in the row's ``unit``; PUE is a ratio. Every row carries
the date it was valid (``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``): :func:`stale`
names the ones older than :data:`MAX_PRICE_AGE_MONTHS`. A cloud row names the
catalog accelerator it rents (``accelerator``), so a plan is compared with
renting the GPU it bought (:func:`cloud_rates_for`). A row is dated as its figure
is, not as the day it was looked up; docs/prices.md says what the server and
storage rows stand on.
"""

from __future__ import annotations

import csv
import datetime
import math
import re
from dataclasses import dataclass, replace
from functools import lru_cache

from aisize.catalog import data_dir

KINDS = ("list-price", "quote", "cloud-rate", "published", "assumption")
COLUMNS = ("id", "category", "item", "unit", "usd", "kind", "date", "source", "note", "accelerator")
# A price older than this is flagged on the plan: GPU rental rates fell by about half between mid-2024 and 2026
# (AWS cut P5 on demand by ~44 % in June 2025), so an 18-month-old figure can misstate a verdict by that much.
MAX_PRICE_AGE_MONTHS = 18.0
_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")
# Allowed ranges by unit where a price has a natural bound (everything else: >= 0). A cloud rate divides the
# break-even: public rates run from about $0.10 (spot, older GPUs) to $12 (H100 on demand) a GPU-hour, so a cent
# to $1,000 bounds typos; electricity costs cents a kWh (European peaks ~$1); the dearest server, a rack-scale
# NVL72, lists at a few $ M.
BOUNDS = {"PUE": (1.0, 5.0), "share of capital per year": (0.0, 1.0), "per GPU-hour": (0.01, 1000.0),
          "per kWh": (0.0, 10.0), "per server": (0.0, 1e9)}
MAX_USD = 1e12


@dataclass(frozen=True)
class Price:
    """One row of the price table."""

    id: str
    category: str  # server | network | storage | energy | facility | support | cloud
    item: str
    unit: str
    usd: float
    kind: str  # one of KINDS; "overridden" once a scenario replaces it
    date: str
    source: str
    note: str
    accelerator: str = ""  # catalog accelerator a cloud row rents ("" for other rows)

    @property
    def assumed(self) -> bool:
        """True when the figure is an assumption the user must replace."""
        return self.kind == "assumption"


def _bounds(unit: str) -> tuple[float, float]:
    return BOUNDS.get(unit, (0.0, MAX_USD))


def _check_value(where: str, value, unit: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{where}: {value!r} is not allowed: a price must be a finite number")
    low, high = _bounds(unit)
    if not low <= value <= high:
        what = "prices must not be negative" if value < 0 else f"allowed range [{low:g}, {high:g}]"
        raise ValueError(f"{where}: {value!r} is not allowed: {what} ({unit})")
    return float(value)


class PriceTable:
    """Prices by id, in file order."""

    def __init__(self, rows: dict[str, Price]):
        self.rows = rows

    def __contains__(self, id_: str) -> bool:
        return id_ in self.rows

    def __getitem__(self, id_: str) -> Price:
        if id_ not in self.rows:
            raise ValueError(f"price {id_!r} is not in data/prices.csv; ids: {', '.join(self.rows)}")
        return self.rows[id_]

    def get(self, id_: str) -> Price | None:
        return self.rows.get(id_)

    def usd(self, id_: str) -> float:
        return self[id_].usd

    def ids(self, category: str | None = None) -> list[str]:
        return [k for k, p in self.rows.items() if category is None or p.category == category]

    def with_overrides(self, overrides: dict) -> PriceTable:
        """A copy with ``overrides`` (id -> USD) applied; each is checked and marked "overridden".

        A ``server-<id>`` or ``storage-unit-<id>`` not in the table (a server the scenario defines, a storage
        unit's quoted price) becomes a new row.
        """
        check_overrides(overrides, self)
        rows = dict(self.rows)
        for id_, value in overrides.items():
            old = rows.get(id_) or _new_row(id_)
            note = f"data/prices.csv: {old.usd:g}" if id_ in self.rows else f"the scenario's own {old.unit} price"
            rows[id_] = replace(old, usd=float(value), kind="overridden", date="", source="scenario cost.prices",
                                note=note)
        return PriceTable(rows)


# ids a scenario may price without a row in the table: its own servers, and storage units (aisize.cost.storage)
_NEW_ROWS = {"server-": ("server", "per server"), "storage-unit-": ("storage", "per unit")}


def _new_row(id_: str) -> Price:
    prefix = next(p for p in _NEW_ROWS if id_.startswith(p))
    category, unit = _NEW_ROWS[prefix]
    return Price(id_, category, id_.removeprefix(prefix), unit, 0.0, "", "", "", "")


def _row(path, line: int, raw: dict) -> Price:
    where = f"{path}, line {line}"
    missing = [c for c in COLUMNS if raw.get(c) is None and c != "accelerator"]
    if missing:
        raise ValueError(f"{where}: missing columns {missing}")
    kind = raw["kind"].strip()
    if raw.get("accelerator") is None:
        raise ValueError(f"{where}: missing columns ['accelerator']")
    if kind not in KINDS:
        raise ValueError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    if not raw["source"].strip():
        raise ValueError(f"{where}: every price needs a source (or the words 'no public ... found')")
    if not raw["date"].strip():
        raise ValueError(f"{where}: every price needs the date it was valid (an assumption: the date it was made)")
    parse_date(f"{where}, date", raw["date"].strip())
    try:
        usd = float(raw["usd"])
    except ValueError:
        raise ValueError(f"{where}: usd {raw['usd']!r} is not a number") from None
    _check_value(f"{where}, usd", usd, raw["unit"].strip())
    return Price(raw["id"].strip(), raw["category"].strip(), raw["item"].strip(), raw["unit"].strip(), usd, kind,
                 raw["date"].strip(), raw["source"].strip(), raw["note"].strip(), raw["accelerator"].strip())


@lru_cache(maxsize=1)
def load() -> PriceTable:
    """``data/prices.csv`` as a :class:`PriceTable` (read once)."""
    path = data_dir() / "prices.csv"
    rows: dict[str, Price] = {}
    with open(path, newline="", encoding="utf-8") as f:
        for line, raw in enumerate(csv.DictReader(f), start=2):
            p = _row(path, line, raw)
            if p.id in rows:
                raise ValueError(f"{path}, line {line}: duplicate id {p.id!r}")
            rows[p.id] = p
    return PriceTable(rows)


def check_overrides(overrides: dict, table: PriceTable | None = None) -> None:
    """Raise ValueError naming ``cost.prices.<id>`` for an unknown id or a value out of range.

    ``server-<id>`` ids outside the table are allowed (servers a scenario defines; the scenario checks them),
    and so are ``storage-unit-<id>`` ids (a storage unit's price: aisize.cost.storage).
    """
    table = table or load()
    for id_, value in overrides.items():
        if id_ not in table and not id_.startswith(tuple(_NEW_ROWS)):
            raise ValueError(f"cost.prices: {id_!r} is not a price id; ids: {', '.join(table.ids())} (or "
                             "server-<id>, storage-unit-<id>)")
        _check_value(f"cost.prices.{id_}", value, table[id_].unit if id_ in table else _new_row(id_).unit)
        if id_ in table and table[id_].category == "cloud" and value == 0:  # break-even divides by it
            raise ValueError(f"cost.prices.{id_}: 0 is not allowed: a cloud rate is more than 0 "
                             f"({table[id_].unit})")


def check_cloud_rate(id_: str) -> None:
    """Raise ValueError unless ``id_`` is a price of kind cloud-rate (or a cloud row)."""
    table = load()
    clouds = table.ids("cloud")
    if id_ not in clouds:
        raise ValueError(f"cost.cloud_rate: {id_!r} is not a cloud rate; allowed: {', '.join(clouds)}")


def server_price_id(server_id: str) -> str:
    return f"server-{server_id}"


def switch_price_id(link_kind: str, link_id: str) -> str:
    """The switch row for a fabric of ``link_id`` (InfiniBand by generation; one row for all Ethernet)."""
    return f"switch-{link_id}" if link_kind == "infiniband" else "switch-ethernet"


def parse_date(where: str, text: str) -> datetime.date:
    """A price's date (``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``) as the first day it names (ValueError: ``where``)."""
    m = _DATE.match(text)
    try:
        if not m:
            raise ValueError
        return datetime.date(int(m[1]), int(m[2] or 1), int(m[3] or 1))
    except ValueError:
        raise ValueError(f"{where}: {text!r} is not a date: allowed YYYY, YYYY-MM or YYYY-MM-DD") from None


def age_months(date_text: str, today: datetime.date) -> float:
    """Months from a price's date to ``today`` (30.44-day months; a bare year or month counts from its first day,
    so a row is never younger than it says)."""
    return (today - parse_date("date", date_text)).days / (365.25 / 12.0)


def stale(prices, today: datetime.date | None = None, max_age_months: float = MAX_PRICE_AGE_MONTHS) -> list[dict]:
    """The prices older than ``max_age_months`` at ``today`` (default: the clock's date), oldest first.

    A price with no date (a scenario's own override) is the user's current figure and never stale.
    """
    if not (isinstance(max_age_months, (int, float)) and not isinstance(max_age_months, bool)
            and math.isfinite(max_age_months) and max_age_months > 0):
        raise ValueError(f"max_age_months: {max_age_months!r} is not allowed: a number of months above 0")
    today = today or datetime.date.today()
    out = [{"id": p.id, "item": p.item, "date": p.date, "age_months": age_months(p.date, today)}
           for p in prices if p.date]
    return sorted((x for x in out if x["age_months"] > max_age_months), key=lambda x: -x["age_months"])


def cloud_rates_for(table: PriceTable, accelerator: str) -> list[str]:
    """Ids of the cloud rows renting ``accelerator`` (catalog id), in file order."""
    return [i for i in table.ids("cloud") if table[i].accelerator == accelerator]
