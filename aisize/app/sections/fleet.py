"""Fleet: a service through the day — its load, the autoscaler's replicas, cost over the day, the pool's
troughs, tenants, spares, heterogeneous pools and the site's power envelope.

Every figure is ``Plan.fleet`` (:mod:`aisize.plan.fleet`). The controls edit the selected service's
``fleet`` (a service without one gets a diurnal profile with one click) and the ``site``.
"""

from __future__ import annotations

import ipywidgets as widgets
import pandas as pd

from aisize import charts
from aisize.app import controls as K
from aisize.app.sections import Section, selected
from aisize.format import availability, bytes_gpu, power, usd

# A service given a profile here: a quarter of the afternoon peak at night (a typical chat curve; replace it)
DIURNAL = [0.30, 0.24, 0.2, 0.18, 0.17, 0.19, 0.26, 0.4, 0.58, 0.75, 0.87, 0.95, 1.0, 0.98, 0.96, 0.93, 0.88, 0.8,
           0.72, 0.64, 0.56, 0.48, 0.41, 0.35]


class FleetSection(Section):
    title = "Fleet"

    def __init__(self, state):
        self.service = K.dropdown("Service", [], None, "Which inference service these controls edit")
        # sized to its label (a Button's default 148 px cut it to "Add a diurnal load ...")
        self.add = widgets.Button(description="Add a diurnal load profile", layout=widgets.Layout(width="auto"),
                                  tooltip=(
            "Give this service a load that follows the day (a quarter of its rate at night); edit the profile in "
            "the scenario file"))
        self.target = K.dropdown("Autoscaler target", [("latency targets", "slo"), ("utilisation", "utilisation")],
                                 "slo", "What rate a replica is given: the highest within the SLOs, or a share of "
                                        "its capacity")
        self.utilisation = K.float_slider("Target utilisation", 0.7, 0.1, 1.0, 0.05,
                                          "Share of a replica's capacity (target: utilisation)", fmt=".2f")
        self.least = K.int_slider("Min replicas", 1, 0, 64, 1, "The autoscaler never goes below")
        self.load_from = K.dropdown("Weights from", [("shared storage", "storage"), ("host cache", "host-cache")],
                                    "storage", "Where a new replica reads its weights (its scale-up time)")
        self.start = K.float_slider("Engine start [s]", 60, 0, 600, 5, "After the weights are read (assumption)",
                                    fmt=".0f")
        self.preemptive = K.dropdown("Tenant priority", [("non-preemptive", False), ("preemptive", True)], False,
                                     "Whether a higher tenant takes a place from a lower one")
        self.site = K.log_slider("Site power [MW]", 2.0, 0.01, 1000, "The site's power budget (a scenario site)",
                                 steps_per_decade=20, fmt=",.3g")
        self.figures, self.tables = widgets.HTML(), widgets.HTML()
        self.day_chart, self.pool_chart = K.ChartSlot(), K.ChartSlot()
        super().__init__(state)
        f = self._path
        self.bind(self.target, f("autoscaling", "target"))
        self.bind(self.utilisation, f("autoscaling", "target_utilisation"), float)
        self.bind(self.least, f("autoscaling", "min_replicas"), int)
        self.bind(self.load_from, f("autoscaling", "load_from"))
        self.bind(self.start, f("autoscaling", "engine_start_seconds"), float)
        self.bind(self.preemptive, f("preemptive"))
        self.bind(self.site, lambda: ("site", "power_mw") if self.state.data.get("site") else None, float)
        self.add.on_click(self._add_profile)
        self.service.observe(lambda _: self._on_plan(self.state.plan), names="value")
        left = K.controls_column([self.service, self.add, self.target, self.utilisation, self.least, self.load_from,
                                  self.start, self.preemptive, self.site, self.error])
        self.view.children = [widgets.HBox([left, K.figures_column([self.figures, self.day_chart.box])]),
                              self.pool_chart.box, self.tables]
        self.quietly(self.sync)

    def _fleet(self):
        if self.service.value is None:
            return None
        return self.state.data["workloads"][self.service.value].get("fleet")

    def _path(self, *keys):
        return lambda: None if self._fleet() is None else ("workloads", self.service.value, "fleet") + keys

    def _add_profile(self, _button) -> None:
        if self.service.value is None:
            return
        refused = self.state.set(("workloads", self.service.value, "fleet"), {"load_profile": {"hourly": DIURNAL}})
        if refused:
            K.assign(self.error, "value", K.error_html(refused))

    def sync(self) -> None:
        selected(self.service, self.state.workloads("inference"))
        f = self._fleet()
        for knob in (self.target, self.utilisation, self.least, self.load_from, self.start, self.preemptive):
            knob.disabled = f is None
        self.add.layout.display = "none" if f is not None or self.service.value is None else None
        site = self.state.data.get("site")
        self.site.disabled = not site
        if site:
            K.assign(self.site, "value", site["power_mw"])
        if f is None:
            return
        a = f["autoscaling"]
        for knob, value in ((self.target, a["target"]), (self.utilisation, a["target_utilisation"]),
                            (self.least, a["min_replicas"]), (self.load_from, a["load_from"]),
                            (self.start, a["engine_start_seconds"]), (self.preemptive, f["preemptive"])):
            K.assign(knob, "value", value)

    def update(self, plan) -> None:
        name = None if self.service.value is None else self.state.data["workloads"][self.service.value]["name"]
        sf = next((s for s in plan.fleet.services if s.day.name == name), None) if plan.fleet else None
        if sf is None:
            K.assign(self.figures, "value", "<p>This scenario has no inference service.</p>" if name is None else
                     "<p>This service has no load profile: add one to see it through the day (or open the preset "
                     "'fleet-over-the-day').</p>")
            K.assign(self.tables, "value", "")
            self.day_chart.clear()  # the last service's day is not this one's
            self.pool_chart.clear()
            return
        d, day, c = sf.day, sf.day.day, sf.cost
        pool = next(p for p in plan.fleet.pools if p.pool == sf.pool)
        cards = [K.card("fleet.replicas", "Replicas through the day", f"{day.least_replicas} – {day.peak_replicas}", "",
                        "Fewest and most the autoscaler holds through the day"),
                 K.card("fleet.gpu_hours", "GPU-hours a day", day.gpu_hours, "GPU-hours",
                        f"{day.peak_replicas * d.gpus_per_replica * 24:,} if the peak were held all day"),
                 K.card("fleet.usd_per_mtok", "$ per M tokens (day)", c.usd_per_million_tokens, "USD",
                        f"{usd(c.usd_per_million_tokens_reserved)} with the peak held all day"),
                 K.card("fleet.scale_up", "Scale-up time", d.scale_up_seconds, "s",
                        f"{bytes_gpu(d.weights_bytes)} of weights from {d.load_from} + engine start"),
                 K.card("fleet.overloaded", "Overloaded", day.overloaded_hours * 60, "min/day",
                        "Load above what the serving replicas can take while new ones load",
                        state="bad" if day.overloaded_hours > 0 else "good"),
                 K.card("fleet.free", "Free in the troughs", pool.free_gpu_hours, "GPU-hours a day",
                        f"Pool {pool.pool}: GPUs no workload holds, by hour")]
        if plan.fleet.site_fits is not None:
            cards.append(K.card("fleet.site", "Site", "fits" if plan.fleet.site_fits else "does not fit", "",
                                f"{power(plan.fleet.site_it_watts_needed)} of IT needed; at most "
                                f"{plan.fleet.envelope[0].servers_fit:,} servers fit",
                                state="good" if plan.fleet.site_fits else "bad"))
        K.assign(self.figures, "value", K.cards(cards))
        # the same service and pool: a move swaps the new rows into the drawn charts
        self.day_chart.show(name, lambda: charts.day_curve(sf), data=charts.day_curve_rows(sf))
        self.pool_chart.show(charts.pool_day_key(pool), lambda: charts.pool_day(pool), data=charts.pool_day_rows(pool))
        K.assign(self.tables, "value", self._tables(sf))

    @staticmethod
    def _tables(sf) -> str:
        parts = []
        if sf.tenants is not None:
            t = sf.tenants
            rows = pd.DataFrame({"tenant": t.names, "load with higher classes": t.cumulative_utilisation,
                                 "mean wait [ms]": [w * 1e3 for w in t.wait_mean_seconds],
                                 "TTFT mean [ms]": [x * 1e3 for x in sf.tenant_ttft_seconds],
                                 "target [ms]": [x * 1e3 for x in sf.tenant_ttft_targets_seconds],
                                 "stable": ["yes" if ok else "no: its queue grows" for ok in t.class_stable]})
            h = sf.tenants_at_seconds / 3600
            clock = f"{int(h):02d}:{int(round(h % 1 * 60)):02d}"
            parts.append(f"<h3 class='aisize-h'>Tenants at the tightest period ({clock})</h3>" + K.table(rows))
        if sf.heterogeneous is not None and len(sf.heterogeneous):
            cols = ["prefill_server", "decode_server", "prefill_gpus", "decode_gpus", "ttft_s", "tpot_s",
                    "kv_transfer_s", "usd_per_million_tokens", "feasible"]
            # ttft_s and tpot_s are the service's target statistic (fleet.hetero): the header names it
            stat = sf.day.peak_plan.slo_statistic
            h = sf.heterogeneous[[c for c in cols if c in sf.heterogeneous]].rename(
                columns={"ttft_s": f"ttft_{stat}_s", "tpot_s": f"tpot_{stat}_s"})
            parts.append("<h3 class='aisize-h'>Heterogeneous prefill and decode pools (cheapest first)</h3>"
                         + K.table(h))
        if sf.spares is not None:
            s = sf.spares
            parts.append(f"<p class='aisize-note'>Spares: {s.spares} beside {s.replicas_needed} replicas give "
                         f"{availability(s.availability)} availability ({availability(s.availability_without_spares)} "
                         "without).</p>")
        return "".join(parts)
