"""The Accuracy tab's serving part: every public serving run, with a loaded calibration beside the default.

A calibration file (``aisize calibrate --out FILE``) loaded here is untrusted: its size, encoding, JSON
and every value are checked (:func:`aisize.serving.calibration.from_json`) before anything uses it, and
a refusal is shown next to the control. The four serving families' runs (:mod:`aisize.validation.serving`)
are then predicted with it, once per calibration, and shown beside aisize's default: a summary per family
and, for the family chosen, every run. "Use in this scenario" makes it the scenario's
``policies.serving_calibration`` (its content embedded, as a saved scenario carries it); "Use the default"
clears that. With nothing loaded, the scenario's own calibration (if it selects one) is compared.
"""

from __future__ import annotations

import html
import json

import ipywidgets as widgets
import numpy as np
import pandas as pd

from aisize import charts
from aisize import format as F
from aisize.app import controls as K
from aisize.app.state import AppState, load_failure
from aisize.serving import CALIBRATION
from aisize.serving.calibration import MAX_FILE_BYTES, from_json
from aisize.validation.serving import (SETS, TOLERANCE_PCT, family_table, latest_runs, misses, repeat_read_misses,
                                       serving_results, superseded_misses, ttft_read_misses)

WHAT = "calibration file (.json, from aisize calibrate)"
FAMILY_LABELS = {"serving": "max throughput (TensorRT-LLM)", "serving-load": "fixed concurrency",
                 "serving-specdec": "MTP speculative decoding", "serving-disagg": "disaggregated"}
DIFFERENCES_SHOWN = 8


def calibration_from_upload(value) -> tuple[str, dict, object]:
    """(file name, its JSON object, the checked :class:`~aisize.serving.Calibration`) of one uploaded file.

    Raises ValueError with a message for the page: not one file, too large, not UTF-8, not JSON, or a key
    or value a calibration does not allow (named)."""
    name, text = K.uploaded_text(value, WHAT, MAX_FILE_BYTES)
    calibration = from_json(text, where=f"{name[:80]}")
    return name, json.loads(text), calibration


def _within(errors: pd.Series) -> str:
    a = errors.abs().dropna()
    return f"{int((a <= TOLERANCE_PCT).sum())} of {len(a)}" if len(a) else "—"


def _median(errors: pd.Series) -> float:
    a = errors.abs().dropna()
    return float(np.median(a)) if len(a) else float("nan")


def summary_frame(calibration=None) -> pd.DataFrame:
    """Per serving family: runs within 15 % and the median |error| with the default (and ``calibration``)."""
    rows = []
    for family in SETS:
        d = family_table(family)
        row = {"family": FAMILY_LABELS[family], "runs": len(d), "within 15 %, default": _within(d["error_pct"]),
               "median |error|, default [%]": _median(d["error_pct"])}
        c = family_table(family, calibration) if calibration is not None else None
        if c is not None:
            row |= {"within 15 %, loaded": _within(c["error_pct"]),
                    "median |error|, loaded [%]": _median(c["error_pct"])}
        row["TPOT within 15 %, default"] = _within(d["tpot_error_pct"])
        if c is not None:
            row["TPOT within 15 %, loaded"] = _within(c["tpot_error_pct"])
        row["misses with a TTFT reading"] = f"{ttft_read_misses(d)} of {misses(d)}"
        row["misses published again, apart"] = f"{repeat_read_misses(d)} of {misses(d)}"
        row["misses of an earlier engine build"] = f"{superseded_misses(d)} of {misses(d)}"
        latest = latest_runs(d)
        row["latest build of each recipe: within 15 %"] = _within(latest["error_pct"])
        row["latest build: TPOT within 15 %"] = _within(latest["tpot_error_pct"])
        rows.append(row)
    return pd.DataFrame(rows)


def runs_frame(family: str, calibration=None) -> pd.DataFrame:
    """Every run of a family: published, aisize's default and (with ``calibration``) the loaded one's
    tokens/s per GPU with their errors, and TPOT alike."""
    d = family_table(family)
    out = {"run": d["run"], "published tokens/s per GPU": d["published"], "default": d["predicted"],
           "error, default [%]": d["error_pct"]}
    c = family_table(family, calibration) if calibration is not None else None
    if c is not None:
        out |= {"loaded": c["predicted"], "error, loaded [%]": c["error_pct"]}
    out |= {"TPOT published [ms]": d["published_tpot_ms"], "TPOT default [ms]": d["predicted_tpot_ms"]}
    if c is not None:
        out["TPOT loaded [ms]"] = c["predicted_tpot_ms"]
    out |= {"TTFT published [ms]": d["published_ttft_ms"], "TTFT default [ms]": d["predicted_ttft_ms"],
            "reading": d["reading"]}
    return pd.DataFrame(out)


def differences(calibration) -> list[str]:
    """The constants where ``calibration`` differs from the default, as "name value (default value)"."""
    default = {r["constant"]: r["value"] for r in CALIBRATION.as_table()}
    return [f"{r['constant']} {F.sig(r['value'])} (default {F.sig(default[r['constant']])})"
            if r["constant"] in default else f"{r['constant']} {F.sig(r['value'])}"
            for r in calibration.as_table() if default.get(r["constant"]) != r["value"]]


class ServingRuns:
    """Load a calibration file, compare the serving families with it, and give it to the scenario."""

    def __init__(self, state: AppState):
        self.state = state
        self.loaded = None  # (file name, JSON object, Calibration) of the last file loaded
        self.upload = widgets.FileUpload(accept=".json", multiple=False, description="Load calibration",
                                         tooltip="A calibration file written by aisize calibrate (read here only)",
                                         layout=widgets.Layout(width="170px"))
        self.use = widgets.Button(description="Use in this scenario", icon="check", disabled=True,
                                  tooltip="Every serving figure of the plan uses the loaded calibration",
                                  layout=widgets.Layout(width="180px"))
        self.default = widgets.Button(description="Use the default", icon="undo",
                                      tooltip=f"Back to aisize's calibration {CALIBRATION.name}",
                                      layout=widgets.Layout(width="150px"))
        self.family = K.dropdown("Runs of", [(FAMILY_LABELS[f], f) for f in SETS], "serving-load",
                                 "The serving family whose runs are listed", style={"description_width": "60px"},
                                 layout=widgets.Layout(width="340px"))
        self.info, self.error, self.summary, self.runs = (widgets.HTML() for _ in range(4))
        self.chart = K.ChartSlot()
        self._shown = None  # (calibration compared, family) drawn
        self.view = widgets.VBox([
            K.heading("Serving: every public run", "predicted against published output tokens/s per GPU"),
            self.chart.box,
            widgets.HBox([self.upload, self.use, self.default], layout=widgets.Layout(align_items="center")),
            self.error, self.info, self.summary, self.family, K.scroll_box(self.runs)])
        self.upload.observe(self._on_upload, names="value")
        self.use.on_click(lambda _: self._select(True))
        self.default.on_click(lambda _: self._select(False))
        self.family.observe(lambda _: self.update(), names="value")

    def compared(self):
        """(label, Calibration) compared with the default: the file loaded here, else the scenario's own."""
        chosen = self.state.scenario.policies.serving_calibration
        if self.loaded is not None:
            return f"loaded: {self.loaded[2].name} (file {self.loaded[0]})", self.loaded[2]
        if chosen is not None:
            return f"the scenario's: {chosen.calibration.name} (file {chosen.file})", chosen.calibration
        return None, None

    def update(self) -> None:
        """Draw the chart once; the tables when the calibration compared or the family changes."""
        self.chart.show("serving", lambda: charts.serving_validation(
            pd.concat([serving_results(f) for f in SETS], ignore_index=True)))
        chosen = self.state.scenario.policies.serving_calibration
        label, calibration = self.compared()
        in_scenario = chosen.calibration.name if chosen else f"{CALIBRATION.name} (aisize's default)"
        self.use.disabled = self.loaded is None or (chosen is not None and chosen.calibration == self.loaded[2])
        self.default.disabled = chosen is None
        text = f"This scenario's plan uses the calibration {in_scenario}."
        if calibration is not None:
            diff = differences(calibration)
            text += (f" Compared with the default: {label[:200]}; it differs in "
                     + (", ".join(diff[:DIFFERENCES_SHOWN]) + (f" and {len(diff) - DIFFERENCES_SHOWN} more"
                                                              if len(diff) > DIFFERENCES_SHOWN else "")
                        if diff else "nothing") + ".")
        K.assign(self.info, "value", f"<p class='aisize-note'>{html.escape(text)}</p>")
        key = (calibration, self.family.value)
        if key == self._shown:
            return
        K.assign(self.summary, "value", K.table(summary_frame(calibration)))
        K.assign(self.runs, "value", K.table(runs_frame(self.family.value, calibration)))
        self._shown = key

    def _on_upload(self, change) -> None:
        if not change["new"]:
            return
        try:
            self.loaded = calibration_from_upload(change["new"])
            K.assign(self.error, "value", "")
        except Exception as error:  # MemoryError too: the page says so rather than nothing
            K.assign(self.error, "value", K.error_html(f"calibration refused: {load_failure(error)}"))
        self.upload.value = ()
        self.update()

    def _select(self, loaded: bool) -> None:
        value = {"file": self.loaded[0], "content": self.loaded[1]} if loaded and self.loaded else None
        refused = self.state.set(("policies", "serving_calibration"), value)
        K.assign(self.error, "value", K.error_html(f"calibration not applied: {refused}") if refused else "")
        self.update()
