"""Total cost of ownership: amortised capital, operating cost, $/GPU-hour, $/run, $/M tokens, break-even.

Pure, vectorized formulas (scalars or numpy arrays in, the same out); dollars,
watts, hours and seconds in the names. Straight-line amortisation over the
stated life; a year is 8,760 hours (365 days, the convention cloud providers
use: 730 hours a month).

    capital per hour  = capital / (life_years x 8,760)
    energy per year   = average power [kW] x PUE x 8,760 h x $/kWh
    $/GPU-hour        = (capital per hour + operating per hour) / GPUs
    $/M tokens        = $/hour / (tokens/s x 3,600) x 10^6

References
----------
.. [1] docs/DESIGN.md section 2, "Shared clusters and cost".
.. [2] The Green Grid, White Paper 49, "PUE: A Comprehensive Examination of the
   Metric", 2012 (PUE = total facility energy / IT equipment energy).
"""

from __future__ import annotations

import numpy as np

from aisize import checks

HOURS_PER_YEAR = 8760.0  # 365 days; AWS and others bill 730 hours a month
# Amortisation life: servers are depreciated over 3 to 6 years and none serves past 15; below a year the capital
# per hour runs away (1e-9 years is $5 B per GPU-hour), so that is refused as a typo (the scenario's cost.life_years).
LIFE_YEARS = (1.0, 15.0)


def capital_per_hour(capital_usd, life_years):
    """Capital amortised straight-line over ``life_years`` [$ per hour]."""
    c = checks.non_negative("capital_usd", capital_usd)
    life = checks.number("life_years", life_years, low=LIFE_YEARS[0], high=LIFE_YEARS[1])
    return c / (life * HOURS_PER_YEAR)


def energy_per_year(average_power_watts, pue, usd_per_kwh):
    """Yearly energy bill of IT equipment drawing ``average_power_watts`` in a site of the given PUE [$].

    References
    ----------
    .. [1] The Green Grid WP 49 (facility energy = IT energy x PUE).
    """
    p = checks.non_negative("average_power_watts", average_power_watts)
    e = checks.number("pue", pue, low=1.0, high=5.0)
    rate = checks.non_negative("usd_per_kwh", usd_per_kwh)
    return p / 1e3 * e * HOURS_PER_YEAR * rate


def per_gpu_hour(capital_usd, life_years, operating_usd_per_year, gpus):
    """Fully loaded cost of one GPU for one hour [$]: (amortised capital + operating) / GPUs."""
    op = checks.non_negative("operating_usd_per_year", operating_usd_per_year)
    n = checks.positive("gpus", gpus)
    return (capital_per_hour(capital_usd, life_years) + op / HOURS_PER_YEAR) / n


def per_run(usd_per_gpu_hour, gpu_hours):
    """Cost of a training run that uses ``gpu_hours`` GPU-hours [$]."""
    return checks.non_negative("usd_per_gpu_hour", usd_per_gpu_hour) * checks.non_negative("gpu_hours", gpu_hours)


def per_million_tokens(usd_per_hour, tokens_per_s):
    """Cost of a million output tokens for GPUs costing ``usd_per_hour`` that produce ``tokens_per_s`` [$].

    References
    ----------
    .. [1] docs/DESIGN.md section 2: $/M tokens = $/hour / (tokens/s x 3,600) x 10^6.
    """
    cost = checks.non_negative("usd_per_hour", usd_per_hour)
    rate = checks.positive("tokens_per_s", tokens_per_s)
    return cost / (rate * 3600.0) * 1e6


def break_even_utilisation(owned_usd_per_gpu_hour, cloud_usd_per_gpu_hour):
    """Share of hours a GPU must be busy for owning to cost what renting it for those hours would [1].

    Owning costs the same every hour; renting only the busy hours costs u x cloud rate, so they
    cross at u = owned / cloud. Above 1, renting is cheaper even at full use.
    """
    own = checks.non_negative("owned_usd_per_gpu_hour", owned_usd_per_gpu_hour)
    cloud = checks.positive("cloud_usd_per_gpu_hour", cloud_usd_per_gpu_hour)
    return own / cloud


def break_even_months(capital_usd, operating_usd_per_year, rented_usd_per_year):
    """Months until renting the same busy GPU-hours has cost as much as buying and running [months].

    capital + operating x t = rent x t  =>  t = capital / (rent - operating); inf when renting
    costs no more per year than operating the owned cluster.
    """
    c = checks.non_negative("capital_usd", capital_usd)
    op = checks.non_negative("operating_usd_per_year", operating_usd_per_year)
    rent = checks.non_negative("rented_usd_per_year", rented_usd_per_year)
    margin = np.asarray(rent - op, dtype=float)
    out = np.where(margin > 0, 12.0 * c / np.where(margin > 0, margin, 1.0), np.inf)
    return float(out) if np.ndim(out) == 0 else out
