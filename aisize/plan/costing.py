"""The plan's cost: capital by bill-of-materials line, yearly operating cost, $/GPU-hour, $/run, $/M tokens.

Glue only: prices from :mod:`aisize.cost.prices` (with the scenario's
``cost.prices`` overrides), formulas from :mod:`aisize.cost.tco`. Shared lines
(fabric, storage) are allocated to pools by their share of the GPUs; a
workload's cost is its GPU-hours at its pool's fully loaded $/GPU-hour.
Energy counts the GPU servers (their maximum power x ``cost.average_power_share``)
times the PUE; switch and storage power are not counted (the catalog has no
sourced figure for them). Renting is priced for the GPUs the plan bought
(:mod:`aisize.cost.rental`), and a price older than ``MAX_PRICE_AGE_MONTHS``
is listed (``stale_prices``). The plan writes no words: :mod:`aisize.present.cost_text` says the
verdict, its payback, the cost findings and the operating basis from the typed figures here.

A cost line's ``item`` ("server dell-xe9680-h100 (inference)", "compute fabric switch ib-ndr") is a label, not a
sentence: the name of the bill-of-materials line it prices (:func:`aisize.plan.bom.bom_table` names the same
lines the same way), read by a customer as the line's identifier and kept as the CSV's key column, so it is
data built here, once (tests/test_plan_no_words.py allows exactly these).
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass

from aisize import catalog
from aisize.cost import (HOURS_PER_YEAR, CostLine, break_even_months, break_even_utilisation, capital_per_hour,
                         energy_per_year, load_prices, per_million_tokens, priced, server_price_id, storage_line,
                         switch_price_id)
from aisize.cost.prices import stale
from aisize.cost.rental import choose_rate
from aisize.plan.network import OPTICS_PRICE
from aisize.plan.timeline import long_run_utilisation


@dataclass(frozen=True)
class CostPlan:
    """What the plan costs to buy and run (US dollars)."""

    life_years: float
    average_power_share: float
    capital_lines: tuple[CostLine, ...]
    capital_usd: float
    operating_lines: tuple  # dicts: item, usd_per_year and what it is computed from (energy: power_watts,
    # average_power_share, pue, usd_per_kwh; rack space: racks, usd_per_rack_month; support: support_share)
    operating_usd_per_year: float
    energy_kwh_per_year: float  # at the site meter (x PUE)
    usd_per_gpu_hour: float  # whole cluster, fully loaded (amortised capital + operating) per installed GPU
    pools: tuple  # dicts: pool, gpus, capital_usd, operating_usd_per_year, usd_per_gpu_hour
    training: tuple  # dicts: workload, pool, gpu_hours, usd_per_gpu_hour, usd
    inference: tuple  # dicts: workload, gpus, usd_per_hour, tokens_per_s at load and capacity, $/M tokens
    job_streams: tuple  # dicts: workload, usd_per_job, usd_per_job_with_idle, usd_per_year
    gpu_utilisation: float  # busy share of installed GPU-hours over the life (timeline.long_run_utilisation)
    cloud_rate: str  # the cloud row(s) compared with, renting the GPU the plan bought ("" where none does)
    cloud_usd_per_gpu_hour: float | None  # None where no rate rents the GPU bought (mixed GPUs: weighted by busy hours)
    rent_usd_per_year: float | None  # the busy GPU-hours rented at the cloud rate (None: no rate)
    own_usd_per_year: float  # amortised capital + operating
    break_even_utilisation: float | None  # share of hours busy at which owning costs what renting would (None: no rate)
    break_even_months: float | None  # months until renting the busy GPU-hours has cost what buying and running
    # does; None: never (renting costs no more a year than running the owned cluster) or no rate
    assumed: tuple[str, ...]  # ids of prices used that are assumptions to replace
    unpriced: tuple[str, ...]  # items with no price row (counted at $0)
    prices_used: tuple  # dicts: id, item, unit, usd, kind, date, source
    cloud_rate_requested: str = ""  # the scenario's cost.cloud_rate
    rental_notes: tuple[str, ...] = ()  # why the rate compared with is not the requested one, or why there is none
    stale_prices: tuple = ()  # dicts: id, item, date, age_months (prices used older than MAX_PRICE_AGE_MONTHS)
    verdict_kind: str = "no-rate"  # "buy", "rent" (the cheaper over the life) or "no-rate" (no rate rents the GPU)
    cloud_gpu: str = ""  # the GPU(s) the rate compared with rents ("/"-joined; "" where none)


def _capital(plan, pools, prices) -> tuple[list[CostLine], dict[str, float]]:
    """Priced lines, and the server capital of each pool."""
    lines, servers = [], {}
    for pool, pp in zip(pools, plan.pools):
        named = "" if pp.name == pp.server else f" ({pp.name})"  # the implicit pool is named after its server
        line = priced(f"server {pp.server}{named}", pp.servers, "servers", server_price_id(pp.server), prices)
        lines.append(line)
        servers[pp.name] = line.usd
        f = pp.fabric
        if f.design != "none":
            link = pool.ctx.scale_out_link
            lines.append(priced(f"compute fabric switch {link.id}{named}", f.fabric["switches"], "switches",
                                switch_price_id(link.kind, link.id), prices))
            lines.append(priced(f"compute fabric optics and cables{named}", f.links, "links", OPTICS_PRICE, prices))
    net, st = plan.network, plan.storage
    first = pools[0].ctx.storage_nic_link
    sfab = net.storage_fabric
    lines.append(priced(f"storage fabric switch {first.id}", sfab["switches"], "switches",
                        switch_price_id(first.kind, first.id), prices))
    lines.append(priced("storage fabric optics and cables", net.storage_links, "links", OPTICS_PRICE, prices))
    # the units bought, each at its unit price or raw capacity (aisize.cost.storage), never per GB/s delivered
    bought = st.record or catalog.storage[st.system]
    lines.append(storage_line(bought, st.units, st.capacity_bytes["raw_bytes"], prices))
    return lines, servers


def plan_cost(plan, pools) -> CostPlan:
    """Price a plan (``pools``: the resolved pools, in the plan's pool order)."""
    cfg = plan.scenario.cost
    prices = load_prices().with_overrides(cfg.prices)
    lines, server_capital = _capital(plan, pools, prices)
    capital = sum(x.usd for x in lines)
    shared = capital - sum(server_capital.values())
    kwh_rate, pue = prices.usd("energy-per-kwh"), prices.usd("pue")
    support, rack = prices.usd("support-share"), prices.usd("rack-per-month")
    gpus = max(plan.gpus, 1)
    pool_rows = []
    for pp in plan.pools:
        share = pp.gpus / gpus
        cap = server_capital[pp.name] + shared * share
        energy = float(energy_per_year(pp.power_watts * cfg.average_power_share, pue, kwh_rate))
        op = energy + pp.racks * rack * 12.0 + support * cap
        rate = (float(capital_per_hour(cap, cfg.life_years)) + op / HOURS_PER_YEAR) / pp.gpus if pp.gpus else 0.0
        pool_rows.append({"pool": pp.name, "gpus": pp.gpus, "capital_usd": cap, "operating_usd_per_year": op,
                          "energy_usd_per_year": energy, "usd_per_gpu_hour": rate})
    energy = sum(r["energy_usd_per_year"] for r in pool_rows)
    operating = [{"item": "energy", "usd_per_year": energy, "power_watts": plan.power_watts,
                  "average_power_share": cfg.average_power_share, "pue": pue, "usd_per_kwh": kwh_rate},
                 {"item": "rack space", "usd_per_year": plan.racks * rack * 12.0, "racks": plan.racks,
                  "usd_per_rack_month": rack},
                 {"item": "support", "usd_per_year": support * capital, "support_share": support}]
    opex = sum(x["usd_per_year"] for x in operating)
    own = float(capital_per_hour(capital, cfg.life_years)) * HOURS_PER_YEAR + opex
    rate = own / HOURS_PER_YEAR / gpus
    by_pool = {r["pool"]: r["usd_per_gpu_hour"] for r in pool_rows}
    pool_of = {w: a["pool"] for w, a in plan.placement.assignment.items()}
    util = long_run_utilisation(plan.timeline, cfg.life_years * HOURS_PER_YEAR)
    today = _today()
    choices, cloud = _rental(plan, prices, cfg.cloud_rate, today)
    rent = None if cloud is None else util * plan.gpus * HOURS_PER_YEAR * cloud
    rate_ids = [c.id for c in choices if c.id]
    used = sorted({x.price_id for x in lines if x.price_id} | {"energy-per-kwh", "pue", "support-share",
                                                                "rack-per-month"} | set(rate_ids))
    months = _finite(break_even_months(capital, opex, rent)) if rent is not None else None
    be = float(break_even_utilisation(rate, cloud)) if cloud is not None else None  # no rate: no figure, not NaN
    kind = "no-rate" if rent is None else ("rent" if rent < own else "buy")
    return CostPlan(
        cfg.life_years, cfg.average_power_share, tuple(lines), capital, tuple(operating), opex,
        plan.power_watts * cfg.average_power_share / 1e3 * pue * HOURS_PER_YEAR, rate, tuple(pool_rows),
        tuple(_training(plan, by_pool, pool_of)), tuple(_inference(plan, by_pool, pool_of)),
        tuple(_streams(plan, by_pool, pool_of)), util, ", ".join(rate_ids), cloud, rent, own, be, months,
        tuple(i for i in used if prices[i].assumed), tuple(x.item for x in lines if x.kind == "unpriced"),
        tuple({"id": i, "item": prices[i].item, "unit": prices[i].unit, "usd": prices[i].usd, "kind": prices[i].kind,
               "date": prices[i].date, "source": prices[i].source} for i in used),
        cfg.cloud_rate, tuple(c.note for c in choices if c.note),
        tuple(stale((prices[i] for i in used), today)), kind,
        "/".join(sorted({x.accelerator for x in choices if x.id})))


def _today() -> datetime.date:
    """The date prices are aged against (the clock's; tests pin it)."""
    return datetime.date.today()


def _rental(plan, prices, requested: str, today) -> tuple[list, float | None]:
    """The rate compared with for each accelerator the plan bought, and their mean weighted by busy GPU-hours
    (None when any accelerator has no rate: renting half a plan is not the plan)."""
    acc_of = {pp.name: pp.accelerator for pp in plan.pools}
    accs = list(dict.fromkeys(pp.accelerator for pp in plan.pools if pp.gpus)) or [plan.accelerator]
    choices = [choose_rate(prices, requested, a, today) for a in accs]
    if any(not c.id for c in choices):
        return choices, None
    busy = {a: 0.0 for a in accs}
    for r in plan.timeline.rows:
        a = acc_of.get(r["pool"])
        if a in busy:
            busy[a] += r["busy_gpu_hours"]
    total = sum(busy.values())
    weights = {a: (busy[a] / total if total else 1.0 / len(accs)) for a in accs}
    return choices, sum(weights[c.accelerator] * prices.usd(c.id) for c in choices)


def _finite(x) -> float | None:
    """``x`` as a float, or None where it is unbounded (a job that never ends, a break-even never reached)."""
    return float(x) if math.isfinite(x) else None


def _training(plan, by_pool, pool_of):
    for t in plan.training:
        r = by_pool[pool_of[t.name]]
        yield {"workload": t.name, "pool": pool_of[t.name], "gpu_hours": _finite(t.gpu_hours), "usd_per_gpu_hour": r,
               "usd": _finite(t.gpu_hours * r)}


def _inference(plan, by_pool, pool_of):
    out_tokens = {w.name: w.output_tokens for w in plan.scenario.workloads if w.kind == "inference"}
    for i in plan.inference:
        per_hour = i.gpus * by_pool[pool_of[i.name]]
        at_load = i.requests_per_s * out_tokens[i.name]
        capacity = i.capacity_output_tokens_per_s
        yield {"workload": i.name, "pool": pool_of[i.name], "gpus": i.gpus, "usd_per_hour": per_hour,
               "tokens_per_s_at_load": at_load, "tokens_per_s_capacity": capacity,
               "usd_per_million_tokens": float(per_million_tokens(per_hour, at_load)),
               "usd_per_million_tokens_at_capacity": float(per_million_tokens(per_hour, capacity))
               if capacity > 0 else None}


def _streams(plan, by_pool, pool_of):
    for s in plan.job_streams:
        r = by_pool[pool_of[s.name]]
        per_day = s.jobs_per_day
        yield {"workload": s.name, "pool": pool_of[s.name], "usd_per_gpu_hour": r,
               "usd_per_job": s.gpus_per_job * s.job_seconds / 3600.0 * r,
               "usd_per_job_with_idle": s.gpus * 24.0 * r / per_day, "usd_per_year": s.gpus * HOURS_PER_YEAR * r}
