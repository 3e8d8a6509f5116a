"""Accuracy: aisize's estimates against published figures (:func:`aisize.validation.validate`).

Independent of the scenario: computed once, drawn when the tab is first shown. Only cases with a
prediction are counted and charted; the cases left out are listed apart with why
(:func:`aisize.validation.left_out`), and every case outside its tolerance says why it misses. The
serving families' 300-odd runs have their own part (:mod:`.serving_accuracy`): a chart, a summary per
family and one family's runs at a time, with a calibration file loaded beside the default.
"""

from __future__ import annotations

import html

import ipywidgets as widgets
import pandas as pd

from aisize import charts
from aisize.app import controls as K
from aisize.app.sections import Section
from aisize.app.sections.serving_accuracy import ServingRuns
from aisize.report.accuracy import VERDICT_HEADERS, left_out_groups
from aisize.validation import summary, validate

# ok, rough and outside as `aisize validate` counts them apart, in the report's words
SUMMARY_NAMES = {"family": "family", "compared": "cases compared", **VERDICT_HEADERS,
                 "median_abs_error_pct": "median |error| [%]", "max_abs_error_pct": "max |error| [%]",
                 "needs_input": "left out (below)"}


def outside_table(cases: pd.DataFrame) -> pd.DataFrame:
    """The cases outside their tolerance: error, tolerance and why they miss."""
    out = cases[cases["status"] == "outside"]
    return pd.DataFrame({"case": out["case"], "family": out["family"], "error [%]": out["error_pct"],
                         "tolerance [%]": out["tolerance_pct"], "why": out["tolerance_basis"]})


class AccuracySection(Section):
    title = "Accuracy"

    def __init__(self, state):
        self.table, self.outside, self.left, self.chart = widgets.HTML(), widgets.HTML(), widgets.HTML(), K.ChartSlot()
        self.cases = None
        super().__init__(state)
        self.serving = ServingRuns(state)
        self.view.children = [
            widgets.HTML("<p class='aisize-note'>Every estimate checked against a published figure "
                         "(data/validation/cases.csv and the training and serving runs): signed error and the "
                         "case's tolerance. The serving runs are read with the parallelism each run's script used "
                         "(data/validation/, e.g. EP 8 where a result recorded none), so a family can count more runs "
                         "within 15 % here than a check that fills a missing EP with 1 (docs/estimates.md).</p>"),
            self.table, K.scroll_box(self.chart.box), K.heading("Outside their tolerance, and why", "serving runs: below"),
            self.outside, K.heading("Left out, and why", "cases whose source does not give what a comparison needs"),
            self.left, self.serving.view]

    def update(self, plan) -> None:
        if self.cases is None:
            self.cases = validate()
            shown = summary(self.cases)[list(SUMMARY_NAMES)].rename(columns=SUMMARY_NAMES)
            K.assign(self.table, "value", K.table(shown))
            K.assign(self.outside, "value", K.table(outside_table(self.cases[~self._serving])))
            gone = left_out_groups(self.cases)  # the report's table: one reason per row, said once
            K.assign(self.left, "value", K.table(gone, headers={"why": "why it is not compared"}) if len(gone) else
                     f"<p class='aisize-note'>{html.escape('None: every case is compared.')}</p>")
        self.chart.show("cases", lambda: charts.validation_errors(self.cases[~self._serving]))
        self.serving.update()

    @property
    def _serving(self) -> pd.Series:
        return self.cases["family"].str.startswith("serving")
