"""A site's power envelope: the largest cluster that fits, tokens per MW, energy per million tokens, cooling.

    IT power the site can feed  = site power / PUE                   (PUE = facility / IT energy [1])
    servers that fit             = floor(IT power / (server power x (1 + other IT share)))
    tokens per MW                = output tokens/s of the servers / their facility power [MW]
    energy per million tokens    = average power x PUE / (tokens/s) x 10^6 [J] (/3.6 x 10^6 for kWh)

Server power is the catalog's maximum system power (``data/servers.csv``, from datasheets);
``other_it_share`` adds the fabric, storage and management the servers need (an assumption:
the catalog has no sourced figure for switch and storage power). Each server type's cooling
(air or liquid) is ``data/server_cooling.csv``, from vendor material.

References
----------
.. [1] The Green Grid, White Paper 49, "PUE: A Comprehensive Examination of the Metric", 2012.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from functools import lru_cache

from aisize import checks
from aisize.catalog import data_dir

COOLING = ("air", "liquid")


@lru_cache(maxsize=1)
def _cooling() -> dict:
    with open(data_dir() / "server_cooling.csv", newline="") as f:
        return {r["id"]: r for r in csv.DictReader(f)}


def cooling_of(server_id: str) -> str:
    """How a server type is cooled: "air", "liquid", or "not stated" (no sourced row)."""
    row = _cooling().get(server_id)
    return row["cooling"] if row else "not stated"


@dataclass(frozen=True)
class Envelope:
    """What fits in a site's power budget [W, count]."""

    site_watts: float
    pue: float
    it_watts: float  # site / PUE
    server_watts: float  # one server at its maximum, with its share of other IT
    servers_fit: int
    gpus_fit: int


def envelope(site_mw, pue, *, server_power_watts, gpus_per_server, other_it_share=0.0,
             field: str = "site.power_mw") -> Envelope:
    """The largest cluster of one server type a site of ``site_mw`` MW at ``pue`` can power.

    Raises ValueError naming ``field`` when the budget does not reach one server.
    """
    mw = checks.scalar(field, checks.positive(field, site_mw, high=1e5))
    e = checks.scalar("pue", checks.number("pue", pue, low=1.0, high=5.0))
    w = checks.scalar("server_power_watts", checks.positive("server_power_watts", server_power_watts))
    g = int(checks.scalar("gpus_per_server", checks.integer("gpus_per_server", gpus_per_server, high=10**5)))
    extra = checks.scalar("other_it_share", checks.number("other_it_share", other_it_share, low=0.0, high=10.0))
    it = mw * 1e6 / e
    per = w * (1.0 + extra)
    n = math.floor(it / per + 1e-9)
    if n < 1:
        raise ValueError(f"{field}={mw:g} is not allowed: {mw:g} MW at PUE {e:g} feeds {it / 1e3:,.1f} kW of IT, "
                         f"less than one server's {per / 1e3:,.1f} kW")
    return Envelope(mw * 1e6, e, it, per, int(n), int(n * g))


@dataclass(frozen=True)
class Efficiency:
    """Tokens per MW and energy per million output tokens of servers serving at a rate."""

    facility_watts: float  # average draw x PUE
    tokens_per_s: float
    tokens_per_s_per_mw: float
    joules_per_token: float
    kwh_per_million_tokens: float


def efficiency(*, servers, server_power_watts, average_power_share, pue, output_tokens_per_s) -> Efficiency:
    """Tokens per MW (of facility power at the average draw) and kWh per million output tokens."""
    n = checks.scalar("servers", checks.positive("servers", servers))
    w = checks.scalar("server_power_watts", checks.positive("server_power_watts", server_power_watts))
    a = checks.scalar("average_power_share", checks.fraction("average_power_share", average_power_share))
    e = checks.scalar("pue", checks.number("pue", pue, low=1.0, high=5.0))
    t = checks.scalar("output_tokens_per_s", checks.positive("output_tokens_per_s", output_tokens_per_s))
    facility = n * w * a * e
    j = facility / t
    return Efficiency(facility, t, t / (facility / 1e6), j, j * 1e6 / 3.6e6)


@dataclass(frozen=True)
class CoolingLoad:
    """Heat one server type puts into the room at its maximum draw, and how it is removed."""

    server: str
    cooling: str  # air | liquid | not stated
    servers: int
    it_watts: float
    source: str


def cooling_load(server_id: str, servers: int, server_power_watts: float) -> CoolingLoad:
    """The heat ``servers`` servers of a type reject at their maximum power, with the type's cooling."""
    n = int(checks.scalar("servers", checks.integer("servers", servers, low=0, high=10**7)))
    w = checks.scalar("server_power_watts", checks.positive("server_power_watts", server_power_watts))
    row = _cooling().get(server_id)
    return CoolingLoad(server_id, cooling_of(server_id), n, n * w, row["source"] if row else "")
