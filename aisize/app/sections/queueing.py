"""Queueing: latency vs concurrency of the shared storage or an inference fleet, the knee marked.

A closed system (N requests always outstanding, like a benchmark's queue depth):
:func:`aisize.queueing.latency_vs_concurrency` and the knee
:func:`aisize.queueing.knee_concurrency` (latency twice the unloaded), on the
same stations the planner sizes (:func:`aisize.queueing.storage_station`,
:func:`aisize.queueing.inference_station`).
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import pandas as pd

from aisize import charts
from aisize.app import controls as K
from aisize.app.sections import Section
from aisize.plan import context as C
from aisize.queueing import (inference_station, knee_concurrency, latency_vs_concurrency, little,
                             storage_station)

POINTS = 120
SPAN = 4.0  # the chart runs to this many times the knee


def stations(plan) -> dict:
    """{label: (Station, latency unit)} for the shared storage and each inference service of a plan."""
    ctx = C.resolve(plan.scenario.hardware)
    s = plan.storage
    out = {f"shared storage ({s.system})": (
        storage_station(s.supply_iops, ctx.storage.latency_seconds or C.STORAGE_LATENCY_SECONDS), "ms")}
    for i in plan.inference:
        out[f"inference: {i.name}"] = (inference_station(i.replicas, max(i.batch, 1), i.request_seconds,
                                                         C.INFERENCE_SERVICE_CV), "s")
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
        station, unit = stations(plan)[self.station.value]
        knee = knee_concurrency(station, C.KNEE_FACTOR)
        n = float(self.outstanding.value)
        here = latency_vs_concurrency(station, n)
        scale = 1e3 if unit == "ms" else 1.0
        K.assign(self.figures, "value", K.cards([
            K.card("queueing.channels", "Parallel channels", station.servers, "",
                   "IOs (or batch slots) the service works on at once"),
            K.card("queueing.unloaded", "Unloaded latency", station.service_seconds * scale, unit),
            K.card("queueing.capacity", "Throughput limit", station.capacity_per_s, "per s"),
            K.card("queueing.knee", "Knee", knee, "outstanding",
                   f"Latency reaches {C.KNEE_FACTOR:g}x unloaded beyond this"),
            K.card("queueing.latency", "Latency at the marked point", here.response_mean_seconds * scale, unit,
                   state="bad" if n > knee else "good"),
            K.card("queueing.throughput", "Throughput there", here.throughput_per_s, "per s",
                   "Little's law: outstanding / latency"),
            K.card("queueing.little", "Little's law check",
                   float(little(rate_per_s=here.throughput_per_s, time_seconds=here.response_mean_seconds)),
                   "in flight")]))
        grid = np.unique(np.geomspace(1, max(SPAN * knee, n, 4), POINTS).round())
        curve = latency_vs_concurrency(station, grid)
        frame = pd.DataFrame({"concurrency": curve.concurrency, "response_mean_seconds": curve.response_mean_seconds})
        self.chart.show(unit, lambda: charts.latency_vs_concurrency(frame, knee, n, latency_unit=unit),
                        params={charts.MARK: n}, data=charts.latency_vs_concurrency_data(frame, knee, unit),
                        title=f"Latency vs concurrency: {self.station.value}")
