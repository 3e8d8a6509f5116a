"""Cost: capital by line, yearly operating cost, $/GPU-hour, per-workload cost, break-even against renting.

Every figure is ``Plan.cost`` (:mod:`aisize.plan.costing`). The controls edit
the scenario's ``cost`` section: the life, the average power draw, the cloud
rate compared with, and overrides of the energy price, the PUE and the first
pool's server price (any other price is overridden in the scenario file).
"""

from __future__ import annotations

import html
import re

import ipywidgets as widgets
import pandas as pd

from aisize import charts
from aisize import format as F
from aisize.app import controls as K
from aisize.app.sections import Kept, Section
from aisize.cost import load_prices, server_price_id
from aisize.present.cost_text import payback, verdict
from aisize.present.export import cost_rows
from aisize.present.figures import gpus_busy


def _usd(x: float | None) -> str:
    """Dollars (:func:`aisize.format.usd`); None (the plan's "unbounded": a job that never ends) as "unbounded"."""
    return str(F.usd(x if x is not None else float("inf")))


WORKLOAD_COLUMNS = ["workload", "what", "usd", "basis"]
PRICE_COLUMNS = ["id", "item", "unit", "usd", "kind", "date", "source"]


def workload_costs(cost) -> pd.DataFrame:
    """One row per workload: its pool's $/GPU-hour and what a run, a job or a million tokens costs."""
    return pd.DataFrame(workload_cost_rows(cost), columns=WORKLOAD_COLUMNS)


def workload_cost_rows(cost) -> list[dict]:
    """:func:`workload_costs`' rows (the page writes them without the frame: :func:`aisize.app.controls.frame_columns`)."""
    rows = [{"workload": t["workload"], "what": "one training run", "usd": t["usd"],
             "basis": f"{F.sig(t['gpu_hours'])} GPU-hours at {_usd(t['usd_per_gpu_hour'])}"} for t in cost.training]
    rows += [{"workload": i["workload"], "what": "1 M output tokens", "usd": i["usd_per_million_tokens"],
              "basis": f"{i['gpus']} {F.noun_for(i['gpus'], 'GPU')} at {_usd(i['usd_per_hour'])}/h for "
                       f"{F.sig(i['tokens_per_s_at_load'])} tokens/s (full capacity: "
                       f"{_usd(i['usd_per_million_tokens_at_capacity'])})"}
             for i in cost.inference]
    rows += [{"workload": j["workload"], "what": "one job", "usd": j["usd_per_job"],
              "basis": f"with the partition's idle time {_usd(j['usd_per_job_with_idle'])}"} for j in cost.job_streams]
    return rows


def _prices_table(c) -> str:
    """The prices the plan used (HTML table), assumptions in bold, and where to override them."""
    # the columns pd.DataFrame(c.prices_used)[PRICE_COLUMNS] held, without the frame (1.2 -> 0.4 ms a price move)
    return (K.table(K.frame_columns(c.prices_used, PRICE_COLUMNS), formats={"usd": lambda v: F.sig(v)},
                    headers={"usd": "price [USD per unit]", "kind": "basis"}).replace(
        "<td>assumption</td>", "<td><b>assumption</b></td>") + "<p class='aisize-note'>"
        + html.escape("Override any price in the scenario file: cost: {prices: {id: value}}") + "</p>")


CLOUD_CHARS = 32  # characters the cloud-rate dropdown shows uncut (255 px of select at about 7 px each)


def cloud_options(prices) -> list[tuple[str, str]]:
    """(label, price id) of every cloud rate, each label short enough to show in full: the offer's name up to its
    first detail ("AWS EC2 P5 (p5.48xlarge, 8x H100), on demand" -> "AWS EC2 P5") and its rate; the price id
    where two names would read the same or a name runs long."""
    ids = list(prices.ids("cloud"))
    short = {i: re.split(r" \(|, | with ", prices[i].item)[0] for i in ids}
    labels = {}
    for i in ids:
        name = short[i] if list(short.values()).count(short[i]) == 1 else i
        rate = f"{prices[i].usd:.2f}"
        labels[i] = f"{name}: {rate}" if len(name) + len(rate) + 2 <= CLOUD_CHARS else f"{i}: {rate}"
    return [(labels[i], i) for i in ids]


class CostSection(Section):
    title = "Cost"

    def __init__(self, state):
        prices = load_prices()
        self.life = K.float_slider("Life [years]", 4.0, 1.0, 10.0, 0.5, "Straight-line amortisation period")
        self.power = K.float_slider("Average power [share]", 0.8, 0.1, 1.0, 0.05,
                                    "Average draw as a share of the servers' maximum power", fmt=".2f")
        self.rate_names = {i: prices[i].item for i in prices.ids("cloud")}  # the dropdown's names in full
        self.cloud = K.dropdown("Cloud rate [$/GPU-h]", cloud_options(prices), None,
                                "The rental rate owning is compared with, where it rents the GPU bought (else "
                                "a rate for that GPU, as the note under the cards says)")
        self.kwh = K.float_slider("Energy [$/kWh]", prices.usd("energy-per-kwh"), 0.01, 0.5, 0.005,
                                  "Electricity price (overrides data/prices.csv)", fmt=".3f")
        self.pue = K.float_slider("PUE", prices.usd("pue"), 1.0, 3.0, 0.01, "Facility power / IT power", fmt=".2f")
        self.server = K.log_slider("Server price [$]", 300_000, 1_000, 10_000_000,
                                   "Price of one server of the first pool (overrides data/prices.csv)",
                                   steps_per_decade=50, fmt=",.0f")
        self.figures, self.capital, self.workloads, self.prices = (widgets.HTML() for _ in range(4))
        self.chart = K.ChartSlot()
        self._tables = Kept()
        super().__init__(state)
        self.bind(self.life, lambda: ("cost", "life_years"), float)
        self.bind(self.power, lambda: ("cost", "average_power_share"), float)
        self.bind(self.cloud, lambda: ("cost", "cloud_rate"))
        self.bind(self.kwh, lambda: ("cost", "prices", "energy-per-kwh"), float)
        self.bind(self.pue, lambda: ("cost", "prices", "pue"), float)
        self.bind(self.server, lambda: ("cost", "prices", self._server_id()), float)
        left = K.controls_column([self.life, self.power, self.cloud, self.kwh, self.pue, self.server, self.error])
        self.view.children = [widgets.HBox([left, K.figures_column([self.figures])]), self.chart.box,
                              K.heading("Capital by line, operating per year"), self.capital,
                              K.heading("What each workload costs"), self.workloads,
                              K.heading("Prices used", "assumptions must be replaced with quotes"), self.prices]
        self.quietly(self.sync)

    def _server_id(self) -> str:
        return server_price_id(self.state.plan.pools[0].server)

    def sync(self) -> None:
        cost, prices = self.state.data["cost"], load_prices()
        K.assign(self.life, "value", cost["life_years"])
        K.assign(self.power, "value", cost["average_power_share"])
        K.assign(self.cloud, "value", cost["cloud_rate"])
        over = cost["prices"]
        K.assign(self.kwh, "value", over.get("energy-per-kwh", prices.usd("energy-per-kwh")))
        K.assign(self.pue, "value", over.get("pue", prices.usd("pue")))
        sid = self._server_id()
        price = over.get(sid, prices.usd(sid) if sid in prices else self.server.value)
        K.assign(self.server, "value", price)

    def update(self, plan) -> None:
        c = plan.cost
        busy = gpus_busy(plan)
        # the payback and the buy-or-rent verdict in present.cost_text's words, from the plan's typed figures
        value, unit, why = payback(c)
        rated = bool(c.cloud_rate)
        rate = (K.card("cost.cloud", f"Renting {c.cloud_gpu}", F.usd(c.cloud_usd_per_gpu_hour), "per GPU-hour",
                       f"{c.cloud_gpu} rented at {c.cloud_rate}: {self.rate_names.get(c.cloud_rate, '')}") if rated else
                K.card("cost.cloud", "Cloud rate", F.DASH, "no rate for the GPU bought", why))
        K.assign(self.figures, "value", K.cards([
            K.card("cost.capital", "Capital", F.usd(c.capital_usd), ""),
            K.card("cost.operating", "Operating", F.usd(c.operating_usd_per_year), "per year"),
            K.card("cost.per_gpu_hour", "Per GPU-hour", F.usd(c.usd_per_gpu_hour), "",
                   f"Amortised over {c.life_years:g} years plus operating, per installed GPU"),
            K.card("cost.utilisation", busy.label, F.pct(busy.value), "", busy.note),
            rate,
            K.card("cost.break_even", "Break-even", F.pct(c.break_even_utilisation), "busy" if rated else "no rate",
                   "Owning costs what renting the busy hours would at this share of hours busy" if rated else why,
                   state="" if not rated else "good" if c.gpu_utilisation >= c.break_even_utilisation else "bad"),
            K.card("cost.payback", "Pays back in", value, unit or "no rate", why)])
            + f"<p class='aisize-note' data-key='cost.verdict'><b>Buy or rent:</b> {html.escape(verdict(c))}.</p>"
            # the dropdown holds the rate asked for; where it rents another GPU, say what the cards compare with
            + "".join(f"<p class='aisize-note' data-key='cost.rental_note'>{html.escape(n)}</p>"
                      for n in (c.rental_notes if rated else ())))
        lines = charts.cost_breakdown_rows(c)
        self.chart.show(len(lines[charts.COST_DATA]), lambda: charts.cost_breakdown(c), data=lines,
                        title=f"Cost per year ({plan.scenario_name})")
        # each table reads a few of the plan's figures and is built again only when those change: the capital
        # lines and the operating ones stay on a life move, the prices on a life or power move, the workloads'
        # costs on a cloud rate; and built from the rows' columns as the frames held them (frame_columns), not
        # through a DataFrame (0.3 to 0.8 ms a table)
        K.assign(self.capital, "value", self._tables.get(
            ("capital", c.capital_lines, c.capital_usd, c.operating_lines),
            lambda: K.table(K.frame_columns(cost_rows(c)))))
        K.assign(self.workloads, "value", self._tables.get(
            ("workloads", c.training, c.inference, c.job_streams),
            lambda: K.table(K.frame_columns(workload_cost_rows(c), WORKLOAD_COLUMNS), formats={"usd": _usd},
                            headers={"usd": "cost"})))
        K.assign(self.prices, "value", self._tables.get(("prices", c.prices_used), lambda: _prices_table(c)))
