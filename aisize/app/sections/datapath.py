"""Data path: shared storage, the GPUs' target utilisation and checkpoint policy.

Shows storage read/write demand and what binds, each training job's data stall,
capacity, checkpoint bandwidth and RTO, and the IO blender breakdown.
"""

from __future__ import annotations

import html
import math

import ipywidgets as widgets

from aisize import catalog, charts
from aisize import format as F
from aisize.app import controls as K
from aisize.app.sections import Kept, Section
from aisize.plan.bom import STORAGE_RATES, storage_columns
from aisize.plan.queues import storage_queue_basis
from aisize.present.storage_text import basis_text
from aisize.units import GB, KB, MB, PB, TB

INTERVALS = [("auto (Young/Daly)", "auto")] + [(f"{m} min", float(m)) for m in (10, 15, 30, 60, 120, 240, 480)]


def _storage_option(s) -> str:
    """A storage row as the dropdown names it: a guidance level is not a product (the plan buys a system to the
    demand and compares it with the level), a system its scope."""
    return f"{s.id} ({'guidance: compared, not bought' if s.kind == 'guidance' else s.scope})"


class DataPathSection(Section):
    title = "Data path"

    def __init__(self, state):
        self.storage = K.dropdown("Storage named", [(_storage_option(s), s.id) for s in catalog.storage],
                                  None, "Shared storage the scenario names (catalog id). A guidance level (per node) "
                                  "is a comparison: the plan buys the cheapest system that meets the demand "
                                  "('Storage bought')")
        self.job = K.dropdown("Training job", [], None, "Which training job's dataset to set")
        self.dataset = K.dropdown("Dataset", [("(none: tokens of a corpus)", "")]
                                  + K.options(catalog.datasets.ids()), None,
                                  "Dataset the job reads; vision models read its samples for each epoch")
        self.utilisation = K.float_slider("GPU busy target [ratio]", 0.9, 0.5, 1.0, 0.01,
                                          "Share of time GPUs compute, not wait for data (MLPerf Storage "
                                          "passes at 0.90); sets the read demand", fmt=".2f")
        self.interval = K.dropdown("Checkpoint interval", INTERVALS, "auto",
                                   "Time between checkpoints; auto is the Young/Daly optimum")
        self.retention = K.int_slider("Checkpoints kept [count]", 3, 1, 20, 1, "Checkpoints retained on storage")
        self.usable = K.float_slider("Usable/raw [ratio]", 0.8, 0.3, 1.0, 0.05,
                                     "Share of raw capacity left after data protection", fmt=".2f")
        self.figures, self.jobs, self.blend = widgets.HTML(), widgets.HTML(), widgets.HTML()
        self.blend_chart, self.capacity_chart = K.ChartSlot(), K.ChartSlot()
        self._kept = Kept()  # the blend's rows, table HTML and chart rows, while its inputs stay
        super().__init__(state)
        self.bind(self.storage, lambda: ("hardware", "storage"))
        self.bind(self.dataset, lambda: None if self.job.value is None else ("workloads", self.job.value, "dataset"),
                  lambda v: v or None)
        self.bind(self.utilisation, lambda: ("policies", "target_gpu_utilisation"), float)
        self.bind(self.interval, lambda: ("policies", "checkpoint_interval_minutes"))
        self.bind(self.retention, lambda: ("policies", "checkpoint_retention"), int)
        self.bind(self.usable, lambda: ("policies", "storage_usable_ratio"), float)
        self.job.observe(lambda _: self.quietly(self.sync), names="value")
        left = K.controls_column([self.storage, self.utilisation, self.interval, self.retention, self.usable,
                             self.job, self.dataset, self.error])
        self.view.children = [
            widgets.HBox([left, K.figures_column([self.figures, self.capacity_chart.box])]),
            K.heading("Training jobs: data stall and checkpoints"), self.jobs,
            K.heading("IO blender", "every workload on the shared storage"),
            widgets.VBox([self.blend_chart.box, self.blend])]
        self.quietly(self.sync)

    def sync(self) -> None:
        from aisize.app.sections import selected

        data = self.state.data
        pol = data["policies"]
        K.assign(self.storage, "value", data["hardware"]["storage"])
        K.assign(self.utilisation, "value", pol["target_gpu_utilisation"])
        interval = pol["checkpoint_interval_minutes"]
        K.assign(self.interval, "value", interval if interval == "auto" else float(interval))
        K.assign(self.retention, "value", pol["checkpoint_retention"])
        K.assign(self.usable, "value", pol["storage_usable_ratio"])
        selected(self.job, self.state.workloads("training"))
        self.dataset.disabled = self.job.value is None
        if self.job.value is not None:
            K.assign(self.dataset, "value", data["workloads"][self.job.value]["dataset"] or "")

    def update(self, plan) -> None:
        s = plan.storage
        K.assign(self.figures, "value", self._figures(s, plan.assumptions["plan.model_load_seconds"]))
        K.assign(self.jobs, "value", K.table(self._jobs_table(plan)) if plan.training else
                 "<p class='aisize-note'>No training job.</p>")
        # the blend's table and chart rows read only the blend (workloads, read share): a move that leaves it
        # (checkpoints, usable/raw) reuses them; one that changes it (the GPU-busy target) builds them from the
        # columns the plan's table is built from (bom.storage_columns), not through DataFrames (6 of the move's 15 ms)
        def blend_built():
            rows = [w for w in s.workloads if any(w[k] for k in _RATES)]
            return (rows, K.table(_blend_table(s.workloads, s.read_share)) if rows else None,
                    charts.io_blend_rows(rows) if rows else None)  # in GB/s, as the cards
        rows, table, blend = self._kept.get(("blend", s.workloads, s.read_share), blend_built)
        if not rows:  # nothing reads or writes the storage: a sentence, not an empty chart and a zero row
            self.blend_chart.clear()
            K.assign(self.blend, "value", "<p class='aisize-note'>No workload reads or writes the shared storage: "
                     "it holds the model repository and datasets only.</p>")
        else:
            K.assign(self.blend, "value", table)
            self.blend_chart.show(tuple(w["name"] for w in rows), lambda: charts.io_blend(rows), data=blend)
        self.capacity_chart.show("capacity", lambda: charts.capacity_breakdown(s.capacity_bytes),
                                 data=charts.capacity_breakdown_rows(s.capacity_bytes),
                                 title=f"Storage capacity ({s.system})")

    @staticmethod
    def _figures(s, load_seconds: float) -> str:
        util = {k: v for k, v in s.utilisation.items() if v is not None}
        ops = s.read_iops + s.write_iops
        # a latency at no load is the unloaded one: say so, rather than a p95 of a queue nothing uses
        basis = storage_queue_basis(s)  # the Queueing tab and the findings read the same origin
        unloaded = f"unloaded latency {F.duration(basis.latency_seconds)}, {basis_text(basis)}"
        latency = (K.card("storage.latency_p95", "IO latency p95", F.duration(s.latency_p95_seconds), "",
                          f"At the average demand ({F.sig(ops)} IO/s) on the units bought; {unloaded}") if ops else
                   K.card("storage.latency_unloaded", "IO latency, unloaded", F.duration(s.station.service_seconds),
                          "", f"No IO demand: one IO's latency on an idle system, {basis_text(basis)}"))
        peak = _read_peak_note(s, load_seconds)
        return K.cards([
            K.card("storage.read", "Read demand (average)", F.rate(s.read_bytes_per_s), "",
                   "Long-run: training reads, scheduled model reloads and restarts after failures"),
            K.card("storage.read_peak", "Read peak", F.rate(s.read_peak_bytes_per_s), "", peak),
            K.card("storage.write", "Write demand (average)", F.rate(s.write_bytes_per_s), ""),
            K.card("storage.write_peak", "Write peak", F.rate(s.write_peak_bytes_per_s), "",
                   "Checkpoint bursts coinciding"),
            K.card("storage.iops", "IO operations (average)", F.sig(ops), "IO/s"),
            K.card("storage.system", "Storage bought", s.system, "", "The system the plan buys and prices"),
            K.card("storage.units", "Storage units", s.units, s.scope if s.units == 1 else s.scope + "s"),
            K.card("storage.binding", "Sized by", s.binding,
                   f"{F.pct(util[s.binding])} used at the peak" if util.get(s.binding) is not None else "",
                   "; ".join(f"{k} {F.pct(v)}" for k, v in util.items()),
                   state="bad" if max(util.values(), default=0) > 1 else ""),
            K.card("storage.raw", "Raw capacity needed", F.bytes_si(s.capacity_bytes["raw_bytes"]), ""),
            latency,
        ]) + f"<p class='aisize-note' data-key='storage.read_peak_note'>Read peak: {html.escape(peak)}.</p>"

    @staticmethod
    def _jobs_table(plan) -> dict[str, list[str]]:
        """Each training job's stall and checkpoint figures as cell texts, by column (K.table)."""
        stalls = {j.name: j for j in plan.storage.jobs}
        max_stall = plan.assumptions["plan.checkpoint_max_stall"]  # the stall the planner sizes checkpoints for
        cols: dict[str, list] = {}
        for t in plan.training:
            c, j = t.checkpoint, stalls.get(t.name)
            for k, v in {"job": t.name, "read need": t.read_bytes_per_s,
                         "data stall": j.stall_fraction if j else None,
                         "link use": j.link_utilisation if j else None, "dataset": t.dataset_bytes,
                         "checkpoint": c.checkpoint_bytes if c else None,
                         "ckpt write": c.write_bytes_per_s if c else None,
                         f"needed for ≤{F.pct(max_stall)} stall": c.write_bytes_per_s_for_stall if c else None,
                         "write": c.write_seconds if c else None,
                         "interval": c.interval_seconds / 60 if c else None,
                         "RTO": c.restore_seconds / 60 if c else None, "goodput": t.goodput}.items():
                cols.setdefault(k, []).append(v)
        kinds = {"read need": F.rate, "dataset": F.bytes_si, "checkpoint": F.bytes_si, "ckpt write": F.rate,
                 "write": "s", "interval": "min", "RTO": "min"}
        out = {}
        for k, values in cols.items():
            if k in ("data stall", "link use", "goodput"):
                out[k] = ["" if v is None else str(F.pct(v)) for v in values]
            elif k == "job":
                out[k] = values
            else:
                unit, texts = column(values, kinds.get(k, F.rate))
                out[f"{k} [{unit}]"] = texts
        return out


_RATES = STORAGE_RATES
_LOADING = " model loading"  # the blend row of a service's weights (aisize.plan.storage.model_loads)


def _read_peak_note(s, load_seconds: float) -> str:
    """What sets the read peak, in one line: most often every replica loading its weights at deployment, which a
    scenario's ``model_loads_per_hour`` does not lower (it sets the average); else the largest burst."""
    rows = sorted(s.workloads, key=lambda w: w["read_peak_bytes_per_s"], reverse=True)
    if not rows or not s.read_peak_bytes_per_s:
        return "No workload reads the storage"
    loads = [w for w in rows if w["kind"] == "inference" and w["name"].endswith(_LOADING)]
    loading = sum(w["read_peak_bytes_per_s"] for w in loads)
    if loading >= 0.5 * s.read_peak_bytes_per_s:
        services = F.plural(len(loads), "service")
        return (f"{F.rate(loading)} of it: all replicas of {services} loading their weights within "
                f"{load_seconds:g} s at deployment (plan.model_load_seconds), which happens once whatever "
                f"model_loads_per_hour says; largest {loads[0]['name'].removesuffix(_LOADING)} "
                f"{F.rate(loads[0]['read_peak_bytes_per_s'])}")
    return f"Bursts coinciding; the largest: {rows[0]['name']} {F.rate(rows[0]['read_peak_bytes_per_s'])}"
_SCALES = {"TB/s": TB, "GB/s": GB, "MB/s": MB, "kB/s": KB, "B/s": 1.0, "PB": PB, "TB": TB, "GB": GB, "MB": MB,
           "kB": KB, "B": 1.0}


def column(values, unit) -> tuple[str, list[str]]:
    """(unit, texts): a table column in one unit. ``unit`` is a formatter of aisize.format (F.rate, F.bytes_si:
    the unit it picks for the column's largest value) or a fixed unit ("s", "GB/s"). Each value has three
    significant figures (:func:`aisize.format.in_unit`: a 2.90 GB checkpoint beside a 112 GB one reads "2.90",
    not "3", and 112 never "112.00"); zero reads "0"; a value below 0.001 of the unit reads in a smaller unit of
    its kind shown in the cell ("41.8 kB/s"), or "< 0.001"; missing values stay empty."""
    finite = [abs(float(v)) for v in values if v is not None and math.isfinite(float(v))]
    top = max(finite, default=0.0)
    if callable(unit):
        unit = unit(top).unit or unit(1.0).unit
    scale = _SCALES.get(unit, 1.0)
    return unit, [F.in_unit(None if v is None else float(v) / scale, unit) for v in values]


def _blend_table(workloads, read_share: float) -> dict[str, list[str]]:
    """The plan's IO blend (aisize.plan.bom.storage_columns: a row per workload and a total row) in GB/s, the unit
    of the blend chart, as cell texts by column."""
    columns = storage_columns(workloads, read_share)
    out = {"workload": columns["name"], "kind": columns["kind"]}
    for col, label in (("read_gb_per_s", "read"), ("write_gb_per_s", "write"), ("read_peak_gb_per_s", "read peak"),
                       ("write_peak_gb_per_s", "write peak")):
        unit, texts = column([v * GB for v in columns[col]], "GB/s")
        out[f"{label} [{unit}]"] = texts
    for col, label in (("read_iops", "read"), ("write_iops", "write")):
        unit, texts = column(columns[col], "IO/s")
        out[f"{label} [{unit}]"] = texts
    out["read share"] = [str(F.pct(v)) for v in columns["read_share"]]
    return out
