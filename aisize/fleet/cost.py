"""What a day of a service costs: the GPU-hours it held, and per million output tokens.

    $ per day        = GPU-hours x $/GPU-hour
    $ per M tokens   = $ per day / (output tokens per day / 10^6)

(the cost of :func:`aisize.cost.per_million_tokens` averaged over the day). Against it, the same
tokens on GPUs reserved at the peak all day: what a fleet sized for the peak costs when nothing
fills its troughs.
"""

from __future__ import annotations

from dataclasses import dataclass

from aisize import catalog, checks
from aisize.cost import energy_per_year, per_gpu_hour, per_million_tokens, server_price_id


@dataclass(frozen=True)
class DayCost:
    """A service's day in dollars."""

    gpu_hours: float
    usd_per_gpu_hour: float
    usd_per_day: float
    output_tokens_per_day: float
    usd_per_million_tokens: float  # at the GPU-hours held
    usd_per_million_tokens_reserved: float | None  # at the peak's GPUs all day (None: not given)


def day_cost(gpu_hours, usd_per_gpu_hour, output_tokens_per_day, *, reserved_gpus=None) -> DayCost:
    """A day's cost from its GPU-hours (and, with ``reserved_gpus``, the same tokens on GPUs held all day)."""
    h = checks.scalar("gpu_hours", checks.non_negative("gpu_hours", gpu_hours))
    rate = checks.scalar("usd_per_gpu_hour", checks.non_negative("usd_per_gpu_hour", usd_per_gpu_hour))
    tokens = checks.scalar("output_tokens_per_day", checks.positive("output_tokens_per_day", output_tokens_per_day))
    per_s = tokens / 86400.0
    reserved = None
    if reserved_gpus is not None:
        g = checks.scalar("reserved_gpus", checks.non_negative("reserved_gpus", reserved_gpus))
        reserved = float(per_million_tokens(g * rate, per_s))
    return DayCost(h, rate, h * rate, tokens, float(per_million_tokens(h * rate / 24.0, per_s)), reserved)


def server_usd_per_gpu_hour(server_id: str, prices, *, life_years: float, average_power_share: float) -> float:
    """One GPU-hour of a catalog server: its price amortised over ``life_years``, its energy at the
    average draw x PUE, and support, per GPU ($; rack space and shared fabric and storage not counted)."""
    s = catalog.servers[server_id]
    capital = prices.usd(server_price_id(server_id))
    energy = float(energy_per_year(s.power_watts * average_power_share, prices.usd("pue"),
                                   prices.usd("energy-per-kwh")))
    return float(per_gpu_hour(capital, life_years, energy + prices.usd("support-share") * capital, s.gpus))
