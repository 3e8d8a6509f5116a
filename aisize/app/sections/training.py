"""Training: the selected training job's model, method, precision, optimizer, layout and target time (the
server, which every workload is sized on, is the scenario bar's).

Shows GPUs, servers and time to train with the plan's range (``TrainingPlan.days_low`` /
``days_high``: published MFUs, or the spread of measured throughputs), the per-GPU memory
breakdown against the GPU's memory, GPUs needed against the target time
(:func:`aisize.plan.gpus_vs_days`) and the fastest layouts that fit
(:func:`aisize.plan.layout_candidates`) with their step time by part (compute, exposed
TP/CP/PP/DP/EP communication, bubble, stragglers): every figure is the planner's.
"""

from __future__ import annotations

import html

import ipywidgets as widgets
import pandas as pd

from aisize import catalog, charts
from aisize import format as F
from aisize.app import controls as K
from aisize.compute import DEFAULT_MFU
from aisize.app.sections import OWN_MODEL, Section, selected, show_model
from aisize.plan import gpus_vs_days, layout_candidates
from aisize.present.training_text import days_range_text, throughput_basis_text
from aisize.scenario.model import OPTIMIZERS, RECOMPUTE, SCHEDULES, TRAIN_PRECISIONS
from aisize.units import GiB

MODELS = catalog.transformers.ids() + catalog.other_models.ids()
SWEEP_DAYS = (0.25, 0.5, 1, 2, 4, 7, 14, 30, 60, 120, 365)
TP_OPTIONS, PP_OPTIONS = (1, 2, 4, 8, 16, 32, 64), (1, 2, 4, 8, 16, 32, 64)
MICRO_BATCH_OPTIONS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
CP_OPTIONS = (1, 2, 4, 8, 16, 32)
INTERLEAVED_CHUNKS = 2  # model chunks per stage the fixed-layout knob uses for interleaved 1F1B
LAYOUT_COLUMNS = {"tp": "TP", "pp": "PP", "dp": "DP", "cp": "CP", "schedule": "schedule", "zero_stage": "ZeRO",
                  "micro_batch": "micro-batch", "recompute": "recompute", "step_seconds": "step [s]",
                  "mfu": "MFU predicted (step-time model)", "total_bytes": "memory/GPU [GiB]"}
# what a job's time rests on (plan.training's throughput_rule), said beside the MFU it used
TIMED_BY = {"step-time": "step-time model", "policy-mfu": "assumed: policies.mfu", "measured": "measured rate",
            "calibrated": "calibrated rate", "scenario": "the scenario's rate"}


def best_layouts(scenario, index: int, top: int = 5) -> pd.DataFrame:
    """The plan's fastest layouts that fit for workload ``index`` (empty for a model that is not a transformer),
    as shown: the layout columns, step time, MFU and memory per GPU [GiB]."""
    return shown_layouts(layout_candidates(scenario, index, top))


def shown_layouts(df: pd.DataFrame) -> pd.DataFrame:
    """:data:`LAYOUT_COLUMNS` of the candidates, memory in GiB (empty when there are none)."""
    if not len(df):
        return pd.DataFrame()
    # not the search's attrs (its model): pandas deep-copies attrs at every step (1.2 of 2 ms here and in the table)
    out = pd.DataFrame(df, copy=False)[list(LAYOUT_COLUMNS)].copy()
    out["total_bytes"] = out["total_bytes"] / GiB
    return out.rename(columns=LAYOUT_COLUMNS)


def days_curve(scenario, name: str) -> tuple[pd.DataFrame, int]:
    """(``target_days``, ``gpus``) at each of SWEEP_DAYS the planner can plan for job ``name``, and how
    many targets it refuses (:func:`aisize.plan.gpus_vs_days`, ``plannable``)."""
    frame = gpus_vs_days(scenario, name, SWEEP_DAYS)
    ok = frame["plannable"].to_numpy()  # numpy, not .loc: a millisecond of every Training-tab move
    kept = pd.DataFrame({"target_days": frame["target_days"].to_numpy()[ok], "gpus": frame["gpus"].to_numpy()[ok]})
    return kept, len(frame) - len(kept)


def range_note(t) -> str:
    """What the plan's time range rests on, in words (HTML)."""
    r = t.days_range_mfu
    if r is not None:
        return (f"<p class='aisize-note'>Time range from published MFUs {F.span(r.low * 100, r.high * 100, '%')} "
                f"({len(r.cases)} {r.rule}).</p>")
    if t.days_low < t.days_high:
        return f"<p class='aisize-note'>Time range from {html.escape(days_range_text(t.days_range_basis))}.</p>"
    return (f"<p class='aisize-note'>Time from {html.escape(throughput_basis_text(t.throughput_basis))}; "
            f"{html.escape(days_range_text(t.days_range_basis))}.</p>")


class TrainingSection(Section):
    title = "Training"

    def __init__(self, state):
        self.job = K.dropdown("Training job", [], None, "Which training workload of the scenario these controls edit")
        self.model = K.dropdown("Model", K.options(MODELS), None, "Model to train (catalog id)")
        self.method = K.dropdown("Method", ["full", "lora", "qlora"], None,
                                 "Full training, or LoRA / QLoRA adapters on a frozen base")
        self.precision = K.dropdown("Precision", list(TRAIN_PRECISIONS), None, "Training number format")
        self.optimizer = K.dropdown("Optimizer", list(OPTIMIZERS), None, "Optimizer (sets its state bytes/param)")
        self.tokens = K.log_slider("Tokens [billion]", 1.0, 0.01, 100_000, "Training tokens, in billions "
                                   "(LLMs; vision models train for epochs of a dataset)")
        self.size_by = widgets.ToggleButtons(options=[("by target time", "days"), ("by GPU count", "gpus")],
                                             description="Size", tooltip="Derive GPUs from a target time, "
                                             "or fix the GPUs and derive the time",
                                             style={"description_width": K.LABEL_WIDTH, "button_width": "124px"},
                                             layout=widgets.Layout(width=K.CONTROL_WIDTH))
        self.days = K.log_slider("Target time [days]", 1.0, 0.1, 730, "Wall-clock time the job must finish in "
                                 "[days]; GPUs are derived (whole servers)")
        self.gpus = K.log_slider("GPUs [count]", 8, 1, 65_536, "GPUs the job runs on", steps_per_decade=30,
                                 fmt=".0f")
        self.timed_by = K.dropdown("Time from", [("step-time model", "step-time"), ("MFU policy (override)", "mfu")],
                                   "step-time", "What times a transformer's training (full or LoRA), all jobs: the step-time "
                                   "model at the chosen layout (validated on published runs), or the MFU below as an "
                                   "override (policies.training_time)")
        self.mfu = K.float_slider("MFU, all jobs [ratio]", DEFAULT_MFU, 0.05, 0.9, 0.01, "Model FLOPs utilisation: "
                                  "share of dense peak a run achieves (a policy of every training job; large runs 0.35-0.50). It times "
                                  "only what the step-time model does not: QLoRA fine-tunes, models that "
                                  "are not transformers, and every job when 'Time from' is the MFU policy", fmt=".2f")
        self.parallel = K.dropdown("Parallelism", [("auto (search)", "auto"), ("fixed", "fixed")], "auto",
                                   "Search the fastest layout that fits, or fix TP/PP/ZeRO/micro-batch")
        small = dict(layout=widgets.Layout(width="136px"), style={"description_width": "56px"})
        self.tp = K.dropdown("TP", list(TP_OPTIONS), 1, "Tensor parallel degree: must divide the heads", **small)
        self.pp = K.dropdown("PP", list(PP_OPTIONS), 1, "Pipeline parallel stages", **small)
        self.zero = K.dropdown("ZeRO", [0, 1, 2, 3], 1, "ZeRO stage: sharding of optimizer/grads/weights", **small)
        self.micro = K.dropdown("μbatch", list(MICRO_BATCH_OPTIONS), 1, "Micro-batch [sequences]", **small)
        self.recompute = K.dropdown("recomp.", list(RECOMPUTE), "selective", "Activation recomputation", **small)
        self.cp = K.dropdown("CP", list(CP_OPTIONS), 1, "Context parallel degree: splits each sequence; must "
                             "divide the sequence length", **small)
        self.schedule = K.dropdown("sched.", list(SCHEDULES), "1f1b", "Pipeline schedule (interleaved 1F1B: "
                                   f"{INTERLEAVED_CHUNKS} model chunks per stage)", **small)
        self.figures = widgets.HTML()
        self.range_note = widgets.HTML()
        self.memory_chart, self.days_chart, self.step_chart = K.ChartSlot(), K.ChartSlot(), K.ChartSlot()
        self.layouts, self.days_note = widgets.HTML(), widgets.HTML(layout=widgets.Layout(max_width="520px"))
        self._curve_at = (None, None)  # (inputs, (frame, refused)) of the last GPUs-vs-days curve
        self._layouts_at = (None, "", None)  # (searched frame, table HTML, step chart rows) last shown
        super().__init__(state)
        w = self._path
        self.bind(self.model, lambda: None if self.model.value == OWN_MODEL else w("model")())
        for name in ("method", "precision", "optimizer"):
            self.bind(getattr(self, name), w(name))
        self.bind(self.tokens, w("tokens_billion"), float)
        self.bind(self.days, w("target_days"), float)
        self.bind(self.gpus, w("gpus"), lambda v: int(round(v)))
        self.bind(self.mfu, lambda: ("policies", "mfu"), float)
        self.bind(self.timed_by, lambda: ("policies", "training_time"))
        self.size_by.observe(self._on_size_by, names="value")
        self.bind(self.parallel, w("layout"), self._layout_value)
        for knob in self._layout_knobs():
            self.bind(knob, w("layout"), lambda _: self._layout_value("fixed"))
        self.job.observe(lambda _: self._on_plan(self.state.plan), names="value")
        manual = widgets.VBox([widgets.HBox([self.tp, self.pp, self.zero]),
                               widgets.HBox([self.micro, self.recompute, self.cp]), widgets.HBox([self.schedule])])
        # the job's controls, hidden when the scenario has no training job (they would edit nothing)
        self.controls = widgets.VBox([self.model, self.method, self.precision, self.optimizer, self.tokens,
                                      self.size_by, self.days, self.gpus, self.timed_by, self.mfu, self.parallel,
                                      manual])
        left = K.controls_column([self.job, self.controls, self.error])
        right = K.figures_column([self.figures, self.range_note, self.memory_chart.box])
        layouts = K.figures_column([K.heading("Fastest layouts that fit", "at the planned GPU count"), self.layouts])
        layouts.layout.overflow_x = "auto"
        # the parts below the cards, hidden with no training job (their headings stood over nothing)
        self.job_parts = (K.heading("GPUs needed vs target time"),
                          # the chart keeps its own width (a flexed box cut its title and y-axis title); the
                          # table beside it takes what is left and scrolls
                          widgets.HBox([widgets.VBox([self.days_chart.box, self.days_note],
                                                     layout=widgets.Layout(flex="0 0 auto")), layouts]),
                          K.heading("Why a layout wins", "step time by part for the fastest layouts"),
                          self.step_chart.box)
        self.view.children = [widgets.HBox([left, right]), *self.job_parts]
        self.quietly(self.sync)

    def _path(self, field):
        return lambda: None if self.job.value is None else ("workloads", self.job.value, field)

    def _layout_knobs(self):
        return (self.tp, self.pp, self.zero, self.micro, self.recompute, self.cp, self.schedule)

    def _layout_value(self, mode):
        if mode == "auto":
            return "auto"
        interleaved = self.schedule.value == "interleaved-1f1b"
        return {"tensor_parallel": self.tp.value, "pipeline_parallel": self.pp.value, "expert_parallel": 1,
                "zero_stage": self.zero.value, "micro_batch": self.micro.value, "recompute": self.recompute.value,
                "context_parallel": self.cp.value, "schedule": self.schedule.value,
                "virtual_stages": INTERLEAVED_CHUNKS if interleaved else 1}

    def _on_size_by(self, change) -> None:
        if self._syncing or self.job.value is None:
            return
        t = self._plan_job(self.state.plan)
        if change["new"] == "gpus":
            refused = self.state.set(("workloads", self.job.value, "gpus"), int(t.gpus))
        else:
            refused = self.state.set(("workloads", self.job.value, "target_days"),
                                     float(min(max(t.training_days, 0.1), 730)))
        if refused:
            K.assign(self.error, "value", K.error_html(refused))

    def _plan_job(self, plan):
        name = self.state.data["workloads"][self.job.value]["name"]
        return next(t for t in plan.training if t.name == name)

    def sync(self) -> None:
        selected(self.job, self.state.workloads("training"))
        data = self.state.data
        K.assign(self.mfu, "value", data["policies"]["mfu"])
        K.assign(self.timed_by, "value", data["policies"].get("training_time", "step-time"))
        K.assign(self.controls.layout, "display", "none" if self.job.value is None else None)
        if self.job.value is None:
            return
        w = data["workloads"][self.job.value]
        show_model(self.model, MODELS, w["model"], self.state.scenario.workloads[self.job.value].model)
        for name in ("method", "precision", "optimizer"):
            K.assign(getattr(self, name), "value", w[name])
        self.tokens.disabled = w["tokens_billion"] is None
        if w["tokens_billion"] is not None:
            K.assign(self.tokens, "value", w["tokens_billion"])
        K.assign(self.size_by, "value", "gpus" if w["gpus"] is not None else "days")
        self.days.disabled, self.gpus.disabled = w["gpus"] is not None, w["target_days"] is not None
        if w["target_days"] is not None:
            K.assign(self.days, "value", w["target_days"])
        if w["gpus"] is not None:
            K.assign(self.gpus, "value", w["gpus"])
        lay = w["layout"]
        K.assign(self.parallel, "value", "auto" if lay == "auto" else "fixed")
        if lay != "auto":
            self._show_layout(lambda key: lay[key])
        for knob in self._layout_knobs():
            knob.disabled = lay == "auto"

    def _show_layout(self, get) -> None:
        """Set the layout knobs from ``get(key)`` (a fixed layout's dict, or the searched layout's attributes)."""
        for knob, key in ((self.tp, "tensor_parallel"), (self.pp, "pipeline_parallel"),
                          (self.zero, "zero_stage"), (self.micro, "micro_batch"), (self.recompute, "recompute"),
                          (self.cp, "context_parallel"), (self.schedule, "schedule")):
            K.assign(knob, "value", get(key))

    def update(self, plan) -> None:
        K.show_if(self.job.value is not None, self.job, *self.job_parts)  # no empty select, no empty headings
        if self.job.value is None:  # nothing of the last scenario's job stays on the page
            K.assign(self.figures, "value", "<p>This scenario has no training job.</p>")
            for html_ in (self.range_note, self.layouts, self.days_note):
                K.assign(html_, "value", "")
            for slot in (self.memory_chart, self.days_chart, self.step_chart):
                slot.clear()
            return
        t = self._plan_job(plan)
        if self.parallel.value == "auto":  # the greyed knobs show the layout the search chose, not their defaults
            self.quietly(lambda: self._show_layout(lambda key: getattr(t.layout, key)))
        K.assign(self.figures, "value", self._figures(t))
        K.assign(self.range_note, "value", range_note(t))
        # one chart; new figures arrive as rows (a Vega changeset), the title as a param
        self.memory_chart.show("memory", lambda: charts.memory_breakdown(
            t.memory_bytes, t.gpu_memory_bytes, t.gpu_memory_usable_bytes).properties(width=charts.WIDTH - 80),
            data=charts.memory_breakdown_data(t.memory_bytes, t.gpu_memory_bytes, t.gpu_memory_usable_bytes),
            title=f"Memory per GPU: {t.name} ({plan.accelerator})")
        curve, refused = self._curve(plan, t.name)
        marked = t.target_days if t.target_days is not None else t.training_days
        self.days_chart.show("days", lambda: charts.gpus_vs_days(curve, marked, t.gpus),
                             params={charts.MARK_DAYS: float(marked), charts.MARK_GPUS: float(t.gpus)},
                             data=charts.gpus_vs_days_rows(curve), title=f"GPUs needed vs target time: {t.name}")
        K.assign(self.days_note, "value", "" if not refused else (
            f"<p class='aisize-note'>{refused} of {len(SWEEP_DAYS)} target times left out: the planner refuses "
            "them (beyond the engines' GPU limit, or a given layout or global batch that does not divide "
            "the GPU count).</p>"))
        candidates = layout_candidates(plan.scenario, self.job.value, 5)
        # the search is cached (the same frame while its inputs stay): so are its table and chart rows (1 to 2 ms)
        if self._layouts_at[0] is not candidates:
            layouts = shown_layouts(candidates)
            table = K.table(layouts, formats={LAYOUT_COLUMNS["mfu"]: lambda v: str(F.pct(v))}) if len(layouts) else ""
            self._layouts_at = (candidates, table, charts.step_breakdown_rows(candidates) if len(candidates) else None)
        _, table, steps = self._layouts_at
        own = "" if t.throughput_rule == "step-time" or not table else (
            "<p class='aisize-note'>The layouts' step times and MFUs are the step-time model's for full training; "
            f"this job's time rests on {html.escape(throughput_basis_text(t.throughput_basis))}.</p>")
        K.assign(self.layouts, "value", own + table if table else
                 "<p class='aisize-note'>No searched layouts: the model is not a transformer, or nothing fits.</p>")
        if len(candidates):  # one chart per job; new candidates arrive as rows, not a new chart
            self.step_chart.show(t.name, lambda: charts.step_breakdown(
                candidates, title=f"Step time by part: {t.name}"), data=steps)
        else:
            self.step_chart.clear()

    def _curve(self, plan, name: str) -> tuple[pd.DataFrame, int]:
        """:func:`days_curve` of job ``name``, kept while the job (but for its own GPUs and target time, which
        the sweep replaces), the hardware and the policies stay: a target-time move keeps the curve."""
        s = plan.scenario
        w = next(x for x in s.workloads if x.name == name)
        key = (w.model_copy(update={"gpus": None, "target_days": None}), s.hardware, s.policies)
        if self._curve_at[0] != key:
            self._curve_at = (key, days_curve(s, name))
        return self._curve_at[1]

    def _figures(self, t) -> str:
        lay = t.layout
        items = [K.card("training.gpus", "GPUs for this job", t.gpus, F.noun_for(t.gpus, "GPU"),
                        "GPUs the job runs on (whole servers)"),
                 K.card("training.servers", "Servers for this job", t.servers, F.noun_for(t.servers, "server")),
                 K.card("training.days", "Time to train", F.days(t.training_days), "",
                        "Expected wall-clock time after goodput; throughput: "
                        + throughput_basis_text(t.throughput_basis))]
        if t.days_low < t.days_high:
            label = ("Range (high–low MFU)" if t.days_range_mfu is not None else
                     "Range (the model's error on published runs)" if t.throughput_rule == "step-time" else
                     "Range (measured throughputs)")
            items.append(K.card("training.days_range", label, F.span(t.days_low, t.days_high, "days"), "",
                                days_range_text(t.days_range_basis)))
        items += [K.card("training.memory", "Memory per GPU", F.bytes_gpu(t.memory_bytes["total_bytes"]), "",
                         f"usable {F.bytes_gpu(t.gpu_memory_usable_bytes)}", state="good" if t.memory_fits else "bad"),
                  K.card("training.fits", "Fits in GPU memory", "yes" if t.memory_fits else "no", "",
                         state="good" if t.memory_fits else "bad"),
                  K.card("training.layout", "Layout", F.layout(lay, recompute=False), "",
                         ("searched" if lay.searched else "fixed by the user") + f"; schedule {lay.schedule}")]
        # the MFU the time rests on, named with its basis, as the CLI's "MFU of the time" (one figure, one label);
        # the step-time model's own figure only where it is another (the card said "not modelled" above a table
        # of layouts with MFU 50.1 % for a LoRA job timed at the policy's 40 %)
        items.append(K.card("training.mfu", "MFU of the time", F.pct(t.mfu_assumed),
                            TIMED_BY.get(t.throughput_rule, t.throughput_rule),
                            throughput_basis_text(t.throughput_basis)))
        if t.mfu_predicted is not None and abs(t.mfu_predicted - t.mfu_assumed) > 5e-4:
            items.append(K.card("training.mfu_predicted", "MFU predicted, chosen layout", F.pct(t.mfu_predicted),
                                "step-time model",
                                "From the step-time model of the chosen layout (aisize.training)"))
        items += [K.card("training.goodput", "Goodput", F.pct(t.goodput), "",
                         "Share of time doing useful work after checkpoints and failures"),
                  K.card("training.gpu_hours", "GPU-hours", F.sig(t.gpu_hours), "GPU-hours"),
                  K.card("training.energy", "GPU energy", F.energy(t.energy_joules), "",
                         "Energy the job's GPUs draw at their TDP over its GPU-hours")]
        return K.cards(items)
