"""The plan's cost in words: the buy-or-rent verdict, its payback and the operating basis (the cost findings are
worded with the other findings, :mod:`aisize.present.findings`).

The planner (:mod:`aisize.plan.costing`) states the figures typed (the verdict kind "buy", "rent" or
"no-rate", the break-even share and months, the GPU rented and its rate, the stale prices as records);
this module words them once, and every surface (CLI, app, report, the plan's findings) reads these words.
"""

from __future__ import annotations

from aisize.format import DASH, num, pct, power, sig, usd


def _life(c) -> str:
    return f"{num(c.life_years)} year{'' if c.life_years == 1 else 's'}"


def verdict(c) -> str:
    """Buy or rent, plainly: what the cheaper one saves over the life, and the busy share where buying pays back."""
    if c.verdict_kind == "no-rate":
        return f"not compared with renting: {'; '.join(c.rental_notes)}"
    at = f"at {pct(c.gpu_utilisation)} busy over the {num(c.life_years)}-year life"
    rate = f"{c.cloud_gpu} rented at {c.cloud_rate} ({usd(c.cloud_usd_per_gpu_hour)}/GPU-hour)"
    diff = abs(c.own_usd_per_year - c.rent_usd_per_year) * c.life_years
    if c.verdict_kind == "rent":
        return (f"renting wins {at}: {rate} costs {usd(diff)} less over {_life(c)} ({usd(c.rent_usd_per_year)}/year "
                f"against {usd(c.own_usd_per_year)}/year to own); {_pays(c)}")
    months = "" if c.break_even_months is None else f", paying back in {sig(c.break_even_months)} months"
    return f"buying wins {at}: owning costs {usd(diff)} less over {_life(c)} than {rate}{months}; {_pays(c)}"


def _pays(c) -> str:
    """The busy share at which buying pays back (the verdict's last clause)."""
    if c.break_even_utilisation > 1:
        return (f"buying does not pay back even 100 % busy (owning costs {usd(c.usd_per_gpu_hour)} per GPU-hour, "
                f"renting {usd(c.cloud_usd_per_gpu_hour)})")
    return f"buying pays back at {pct(c.break_even_utilisation)} busy or more"


def payback(c) -> tuple[str, str, str]:
    """(value, unit, why) of "pays back in", in the verdict's terms, for the report's fact and the app's card.

    Where renting wins, the months until renting has cost what owning does fall after the life (or never come),
    so buying never pays back within it; "—" with the reason where no rate rents the GPU bought."""
    if c.verdict_kind == "no-rate":
        return DASH, "", "; ".join(c.rental_notes)
    why = f"at {pct(c.gpu_utilisation)} busy; {_pays(c)}"
    if c.verdict_kind == "rent" or c.break_even_months is None:
        return "never", f"within the {num(c.life_years)}-year life", why
    return str(sig(c.break_even_months)), "months", why


def operating_basis(line: dict) -> str:
    """How one yearly operating line (:attr:`aisize.plan.costing.CostPlan.operating_lines`) is computed."""
    if line["item"] == "energy":
        return (f"{power(line['power_watts'])} max x {pct(line['average_power_share'])} average x PUE "
                f"{line['pue']:g} x 8,760 h x ${line['usd_per_kwh']:g}/kWh")
    if line["item"] == "rack space":
        racks = line["racks"]
        return f"{racks} rack{'' if racks == 1 else 's'} x {usd(line['usd_per_rack_month'])}/month"
    return f"{pct(line['support_share'])} of capital per year"
