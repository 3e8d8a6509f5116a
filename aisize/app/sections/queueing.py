"""Queueing: latency vs concurrency of the shared storage or an inference fleet, the knee marked.

A closed system (N requests always outstanding, like a benchmark's queue depth):
:func:`aisize.plan.concurrency_curve` of the stations the planner sized
(``StoragePlan.station``, ``InferencePlan.station``) and their planned knees (``knee_concurrency``: for the
storage, where its curve bends, saturation x unloaded latency; for a service, latency ``plan.knee_factor`` times
the unloaded). The chart marks the plan's operating
point: what its demand keeps in flight by Little's law (outstanding IOs = IOPS x latency; requests = rate x
request latency), coloured by its own verdict against the knee; the slider asks "what if" at another depth.
"""

from __future__ import annotations

from typing import NamedTuple

import ipywidgets as widgets
import math

import numpy as np

from aisize import charts
from aisize import format as F
from aisize.app import controls as K
from aisize.app.sections import Section
from aisize.plan import concurrency_curve
from aisize.plan.queues import StorageQueueBasis, storage_queue_basis
from aisize.present.storage_text import basis_text
from aisize.queueing import Station, little

POINTS = 120
SPAN = 4.0  # the chart runs to this many times the knee


class Queue(NamedTuple):
    """A planned station as shown: the station, its planned knee [requests outstanding], the latency unit, and
    the plan's operating point [requests outstanding, mean] (inf: the demand exceeds what the station serves) and
    the plan's mean latency there [s] (the figure the plan states: StoragePlan.latency_mean_seconds, a service's
    request_seconds)."""

    station: Station
    knee_concurrency: int
    unit: str
    operating_point: float
    operating_latency_seconds: float


def stations(plan) -> dict[str, Queue]:
    """{label: Queue} for the shared storage and each inference service of a plan (the planner's stations)."""
    s = plan.storage
    out = {f"shared storage ({s.system})": Queue(s.station, s.knee_concurrency, "ms", float(s.outstanding_ios),
                                                     float(s.latency_mean_seconds))}
    for i in plan.inference:
        out[f"inference: {i.name}"] = Queue(i.station, i.knee_concurrency, "s", _in_flight(i),
                                                   float(i.request_seconds))
    return out


def _in_flight(service) -> float:
    """Requests a service keeps in flight: its users when given so, else Little's law at its planned rate and
    mean request time (arrival to last token); inf where the load is past its capacity."""
    if service.concurrency is not None:
        return float(service.concurrency)
    if not math.isfinite(service.request_seconds):
        return math.inf
    return float(little(rate_per_s=service.requests_per_s, time_seconds=service.request_seconds))


def _rate_origin(b: StorageQueueBasis) -> str:
    """Where the rated IO rate comes from, in words (the finding on the Summary tab says the same)."""
    per_unit = f"{F.plural(int(b.units), 'unit')} x {F.sig(b.unit_rate_per_s)} IO/s"
    if b.published_iops_per_s is None:
        return f"{per_unit}: {b.system} publishes no IOPS, so a unit's read bandwidth / the blend's mean IO size"
    rated = ("IOPS derived from its drives' ratings and network (an upper bound, not measured), capped at "
             f"{F.sig(b.iops_node_ceiling_per_s)} IO/s a node, the most one node of a published all-flash file system "
             "served (SPECstorage 2020)") if b.iops_derived else "published read IOPS"
    if b.bandwidth_bound:
        return f"{per_unit}: a unit's read bandwidth / the blend's mean IO size, below its {rated}"
    return f"{per_unit}: the {rated} of {b.system}"


def _knee_note(station: Station, knee: int, storage: bool, factor: float, scale: float, unit: str,
               at_factor: int) -> str:
    """What the knee is, in words: the storage curve's bend (asymptotes crossing), a service's latency budget."""
    if not storage:
        return f"Latency reaches {factor:g}x unloaded beyond this"
    if knee < 1:  # large IOs on a bandwidth-bound unit: fewer than one IO in flight saturates it
        return (f"The curve bends below one IO in flight: saturation x unloaded latency = "
                f"{F.sig(station.capacity_per_s * station.service_seconds)}, so a single outstanding IO already queues")
    at = concurrency_curve(station, knee).iloc[0]
    return (f"Where the curve bends: saturation x unloaded latency ({F.sig(station.capacity_per_s)} IO/s x "
            f"{F.sig(station.service_seconds * scale)} {unit}), where its flat and rising asymptotes meet; "
            f"latency {F.sig(at.response_mean_seconds / station.service_seconds)}x unloaded there, {factor:g}x "
            f"unloaded at {F.num(at_factor)} outstanding")


def _latency_origin(b: StorageQueueBasis) -> str:
    return (f"The published latency of {b.system}" if b.latency_published else
            f"{b.system} publishes no IO latency: the planner's default, {basis_text(b)}")


class QueueingSection(Section):
    title = "Queueing"

    def __init__(self, state):
        self.station = K.dropdown("Service", [], None, "The service whose latency vs concurrency is shown")
        self.outstanding = K.log_slider("In flight [requests]", 16, 1, 1e6, "Requests kept in flight "
                                        "(queue depth, concurrent clients) for the 'what if' figures; the chart "
                                        "marks the plan's own point", steps_per_decade=20, fmt=".0f")
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
        station, knee, unit, point, latency = stations(plan)[self.station.value]
        factor = plan.assumptions["plan.knee_factor"]
        n = float(self.outstanding.value)
        here = concurrency_curve(station, n).iloc[0]
        scale = 1e3 if unit == "ms" else 1.0
        storage = not self.station.value.startswith("inference:")
        # the shared storage's rate and latency with where each comes from (the catalog row or a default)
        basis = storage_queue_basis(plan) if storage else None
        per_s = "IO/s" if storage else "requests/s"
        top = max(SPAN * knee, n, 4, point if math.isfinite(point) else 0.0)
        mark = point if math.isfinite(point) else top  # past capacity: at the chart's end, marked bad
        verdict = "bad" if point > knee else "good"
        K.assign(self.figures, "value", K.cards([
            K.card("queueing.channels", "IOs in flight at rated IOPS" if storage else "Parallel channels",
                   station.servers, "", "Little's law: rated IOPS x unloaded latency (the curve itself is fitted on "
                   "published load tables: docs/storage.md)" if storage else
                   "Batch slots the service works on at once"),
            K.card("queueing.unloaded", "Unloaded latency", F.sig(station.service_seconds * scale), unit,
                   _latency_origin(basis) if basis else ""),
            *([K.card("queueing.rated", "Rated IO rate", F.sig(basis.rated_per_s), per_s, _rate_origin(basis))]
              if basis else []),
            K.card("queueing.capacity", "Saturation (fitted curve)" if storage else "Throughput limit",
                   F.sig(station.capacity_per_s), per_s,
                   "Where latency grows without bound: the rated IO rate / the fitted curve's peak utilisation"
                   if storage else ""),
            K.card("queueing.knee", "Knee (IOs outstanding)" if storage else "Knee (requests outstanding)",
                   F.num(knee), "outstanding", _knee_note(station, knee, storage, factor, scale, unit,
                                                                 plan.storage.knee_factor_concurrency)),
            K.card("queueing.plan_point", "Plan's operating point (mean)", F.sig(point), "in flight",
                   "Little's law at the plan's demand: " + ("its IO rate x mean IO latency" if storage else
                                                            "its request rate x mean request time"), state=verdict),
            K.card("queueing.plan_latency", "Latency at the plan's point", F.sig(latency * scale), unit,
                   f"{'past' if point > knee else 'below'} the knee ({F.num(knee)} outstanding)", state=verdict),
            K.card("queueing.latency", "What if: latency", F.sig(here.response_mean_seconds * scale), unit,
                   f"at {F.num(n)} in flight (the slider)", state="bad" if n > knee else "good"),
            K.card("queueing.throughput", "What if: throughput", F.sig(here.throughput_per_s), per_s,
                   "Little's law: outstanding / latency"),
            K.card("queueing.little", "Little's law check",
                   F.num(float(little(rate_per_s=here.throughput_per_s, time_seconds=here.response_mean_seconds))),
                   "in flight")]))
        grid = np.unique(np.geomspace(1, top, POINTS).round())
        frame = concurrency_curve(station, grid)
        what = "IOs" if storage else "requests"
        K.assign(self.outstanding, "description", f"In flight [{what}]")
        self.chart.show(unit, lambda: charts.latency_vs_concurrency(frame, knee, mark, latency_unit=unit,
                                                                    outstanding=what),
                        params={charts.MARK: mark}, data=charts.latency_vs_concurrency_data(frame, knee, unit),
                        title=f"Latency vs concurrency: {self.station.value} (marked: the plan's operating point)")
