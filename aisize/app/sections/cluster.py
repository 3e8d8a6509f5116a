"""Cluster: pools and the packing of workloads onto servers, the timeline, and the job queue's waits.

Everything shown is the planner's (``Plan.pools``, ``Plan.placement``,
``Plan.timeline``, ``Plan.job_streams``); the wait curve is
:func:`aisize.plan.job_wait_curve` of the selected stream. The sliders edit the
selected job stream's rate and job length in the scenario.
"""

from __future__ import annotations

import ipywidgets as widgets
import pandas as pd

from aisize import charts
from aisize import format as F
from aisize.app import controls as K
from aisize.app.sections import Section, selected
from aisize.plan import job_wait_curve
from aisize.present.figures import gpus_busy, gpus_busy_timeline
from aisize.present.jobstreams import stream_target_text
from aisize.plan.bom import placement_table, timeline_table


def stream_target_hours(scenario, name: str) -> float | None:
    w = next(w for w in scenario.workloads if w.name == name)
    return w.target_wait_hours


class ClusterSection(Section):
    title = "Cluster"

    def __init__(self, state):
        self.figures, self.pools, self.table, self.timeline_table = (widgets.HTML() for _ in range(4))
        self.stream = K.dropdown("Job stream", [], None, "The stream of training or fine-tuning jobs shown")
        self.jobs = K.log_slider("Jobs per day", 10, 0.1, 10_000, "Mean job arrivals per day (Poisson)")
        self.hours = K.log_slider("Hours per job", 4, 0.05, 10_000, "Mean length of one job [h]")
        self.queue = widgets.HTML()
        self.packing, self.gantt, self.waits = K.ChartSlot(), K.ChartSlot(), K.ChartSlot()
        super().__init__(state)
        self.stream.observe(lambda _: (self.quietly(self.sync), self.refresh()), names="value")
        self.bind(self.jobs, lambda: self._path("jobs_per_day"), float)
        self.bind(self.hours, lambda: self._path("hours_per_job"), float)
        queue = widgets.HBox([K.controls_column([self.stream, self.jobs, self.hours, self.error, self.queue]),
                              K.figures_column([self.waits.box])])
        self.queue_box = widgets.VBox([K.heading("Job queue", "jobs wait for a slot of their GPUs"), queue])
        self.view.children = [self.figures, self.pools, K.heading("Packing", "GPUs in use per server and time slot"),
                              self.packing.box, self.table, K.heading("Timeline"), self.gantt.box,
                              self.timeline_table, self.queue_box]
        self.quietly(self.sync)

    def _path(self, field: str):
        index = self._stream_index()
        return None if index is None else ("workloads", index, field)

    def _stream_index(self) -> int | None:
        return self.stream.value

    def sync(self) -> None:
        streams = self.state.workloads("job-stream")
        selected(self.stream, streams)
        self.queue_box.layout.display = "" if streams else "none"
        index = self._stream_index()
        if index is not None:
            w = self.state.data["workloads"][index]
            per_day = w["jobs_per_day"] if w["jobs_per_day"] is not None else w["jobs_per_week"] / 7.0
            K.assign(self.jobs, "value", per_day)
            K.assign(self.hours, "value", w["hours_per_job"])
            self.jobs.disabled = w["jobs_per_day"] is None  # a weekly rate is edited in the file

    def update(self, plan) -> None:
        busy, drawn = gpus_busy(plan), gpus_busy_timeline(plan)
        fewest = sum(p.lower_bound_servers for p in plan.pools)
        K.assign(self.figures, "value", K.cards([
            K.card("cluster.servers", "Servers", plan.servers, plan.server,
                   "Pools: " + ", ".join(p.name for p in plan.pools)),
            K.card("cluster.gpus", "GPUs installed", plan.gpus, plan.accelerator),
            K.card("cluster.busy_peak", "GPUs busy at once", plan.gpus_busy_peak, "at most"),
            K.card("cluster.lower_bound", "Fewest servers possible", fewest, F.noun_for(fewest, "server"),
                   "Lower bound: the GPUs active in the busiest time slot"),
            K.card("cluster.utilisation", busy.label, F.pct(busy.value), "", busy.note),
            K.card("cluster.utilisation_timeline", drawn.label, F.pct(drawn.value), "", drawn.note)]))
        rows = [{"pool": p.name, "server": p.server, "servers": p.servers, "fixed": p.fixed_servers or "auto",
                 "GPUs": p.gpus, "racks": p.racks, "power": str(F.power(p.power_watts)), "fabric": p.fabric.design,
                 "workloads": ", ".join(p.workloads)} for p in plan.pools]
        K.assign(self.pools, "value", K.table(pd.DataFrame(rows)))
        labels = plan.placement.slot_labels
        self.packing.show((id(plan.placement),), lambda: charts.packing(plan.placement, labels))
        K.assign(self.table, "value", K.table(placement_table(plan)))
        t = plan.timeline  # the same workloads and phases: the new rows swapped into the drawn chart
        self.gantt.show(charts.timeline_key(t.rows, t.phases), lambda: charts.timeline(t.rows, t.phases),
                        data=charts.timeline_rows(t.rows, t.phases))
        K.assign(self.timeline_table, "value", K.table(timeline_table(plan)))
        self._queue(plan)

    def _queue(self, plan) -> None:
        index = self._stream_index()
        if index is None:  # no job stream: the last scenario's queue goes
            K.assign(self.queue, "value", "")
            self.waits.clear()
            return
        name = self.state.data["workloads"][index]["name"]
        s = next(j for j in plan.job_streams if j.name == name)
        K.assign(self.queue, "value", K.cards([
            K.card("cluster.queue_gpus", "GPUs in the partition", s.gpus, F.noun_for(s.gpus, "GPU"),
                   f"{s.slots} {F.noun_for(s.slots, 'job')} at once"),
            K.card("cluster.queue_utilisation", "Job slots busy", F.pct(s.utilisation), "",
                   state="bad" if not s.stable else ""),
            K.card("cluster.queue_wait_mean", "Mean wait", F.duration(s.wait_mean_seconds), ""),
            K.card("cluster.queue_wait_p95", "p95 wait", F.duration(s.wait_p95_seconds), ""),
            K.card("cluster.queue_target", "Target", "met" if s.target_met else "missed", stream_target_text(s.target),
                   state="good" if s.target_met else "bad")]))
        curve = job_wait_curve(s)
        target = stream_target_hours(plan.scenario, name)
        rows = charts.wait_vs_gpus_rows(curve, s.gpus, target)  # a move swaps the rows into the drawn chart
        self.waits.show((name, charts.WAIT_TARGET in rows),
                        lambda: charts.wait_vs_gpus(curve, s.gpus, target, title=f"Wait vs GPUs: {name}"), data=rows)
