"""Queueing: latency vs concurrency of the shared storage or an inference fleet, the knee marked.

A closed system (N requests always outstanding, like a benchmark's queue depth):
:func:`aisize.plan.concurrency_curve` of the stations the planner sized
(``StoragePlan.station``, ``InferencePlan.station``) and their planned knees
(``knee_concurrency``: latency ``plan.knee_factor`` times the unloaded).
"""

from __future__ import annotations

from typing import NamedTuple

import ipywidgets as widgets
import numpy as np

from aisize import charts
from aisize import format as F
from aisize.app import controls as K
from aisize.app.sections import Section
from aisize.plan import concurrency_curve
from aisize.queueing import Station, little

POINTS = 120
SPAN = 4.0  # the chart runs to this many times the knee


class Queue(NamedTuple):
    """A planned station as shown: the station, its planned knee [requests outstanding], the latency unit."""

    station: Station
    knee_concurrency: int
    unit: str


def stations(plan) -> dict[str, Queue]:
    """{label: Queue} for the shared storage and each inference service of a plan (the planner's stations)."""
    s = plan.storage
    out = {f"shared storage ({s.system})": Queue(s.station, s.knee_concurrency, "ms")}
    for i in plan.inference:
        out[f"inference: {i.name}"] = Queue(i.station, i.knee_concurrency, "s")
    return out


class QueueingSection(Section):
    title = "Queueing"

    def __init__(self, state):
        self.station = K.dropdown("Service", [], None, "The service whose latency vs concurrency is shown")
        self.outstanding = K.log_slider("In flight [requests]", 16, 1, 1e6, "Requests kept in flight "
                                        "(queue depth, concurrent clients); marked on the chart",
                                        steps_per_decade=20, fmt=".0f")
        self.figures = widgets.HTML()
        self.chart = K.ChartSlot()
        super().__init__(state)
        self.station.observe(lambda _: self.refresh(), names="value")
        self.outstanding.observe(lambda _: self.refresh(), names="value")
        left = K.controls_column([self.station, self.outstanding, self.error, self.figures])
        self.view.children = [widgets.HBox([left, K.figures_column([self.chart.box])])]
        self.quietly(self.sync)

    def sync(self) -> None:
        labels = list(stations(self.state.plan))
        if list(self.station.options) != labels:
            keep = self.station.value if self.station.value in labels else labels[0]
            self.station.options = labels
            self.station.value = keep

    def update(self, plan) -> None:
        station, knee, unit = stations(plan)[self.station.value]
        factor = plan.assumptions["plan.knee_factor"]
        n = float(self.outstanding.value)
        here = concurrency_curve(station, n).iloc[0]
        scale = 1e3 if unit == "ms" else 1.0
        storage = not self.station.value.startswith("inference:")
        per_s = "IO/s" if storage else "requests/s"
        K.assign(self.figures, "value", K.cards([
            K.card("queueing.channels", "IOs in flight at rated IOPS" if storage else "Parallel channels",
                   station.servers, "", "Little's law: rated IOPS x unloaded latency (the curve itself is fitted on "
                   "published load tables: docs/storage.md)" if storage else
                   "Batch slots the service works on at once"),
            K.card("queueing.unloaded", "Unloaded latency", F.sig(station.service_seconds * scale), unit),
            K.card("queueing.capacity", "Throughput limit", F.sig(station.capacity_per_s), per_s,
                   "Where latency grows without bound (the fitted curve's saturation)" if storage else ""),
            K.card("queueing.knee", "Knee (requests outstanding)", F.num(knee), "outstanding",
                   f"Latency reaches {factor:g}x unloaded beyond this"),
            K.card("queueing.latency", "Latency at the marked point", F.sig(here.response_mean_seconds * scale), unit,
                   state="bad" if n > knee else "good"),
            K.card("queueing.throughput", "Throughput there", F.sig(here.throughput_per_s), per_s,
                   "Little's law: outstanding / latency"),
            K.card("queueing.little", "Little's law check",
                   F.num(float(little(rate_per_s=here.throughput_per_s, time_seconds=here.response_mean_seconds))),
                   "in flight")]))
        grid = np.unique(np.geomspace(1, max(SPAN * knee, n, 4), POINTS).round())
        frame = concurrency_curve(station, grid)
        self.chart.show(unit, lambda: charts.latency_vs_concurrency(frame, knee, n, latency_unit=unit),
                        params={charts.MARK: n}, data=charts.latency_vs_concurrency_data(frame, knee, unit),
                        title=f"Latency vs concurrency: {self.station.value}")
