"""Accuracy: aisize's estimates against published figures (:func:`aisize.validation.validate`).

Independent of the scenario: computed once, drawn when the tab is first shown.
"""

from __future__ import annotations

import ipywidgets as widgets

from aisize import charts
from aisize.app import controls as K
from aisize.app.sections import Section
from aisize.validation import summary, validate

SUMMARY_NAMES = {"family": "family", "cases": "cases", "compared": "compared", "ok": "within tolerance",
                 "outside": "outside", "needs_input": "needs input",
                 "median_abs_error_pct": "median |error| [%]", "max_abs_error_pct": "max |error| [%]"}


class AccuracySection(Section):
    title = "Accuracy"

    def __init__(self, state):
        self.table, self.chart = widgets.HTML(), K.ChartSlot()
        self.cases = None
        super().__init__(state)
        self.view.children = [
            widgets.HTML("<p class='aisize-note'>Every estimate checked against a published figure "
                         "(data/validation/cases.csv): signed error and the case's tolerance.</p>"),
            self.table, self.chart.box]

    def update(self, plan) -> None:
        if self.cases is None:
            self.cases = validate()
            K.assign(self.table, "value", K.table(summary(self.cases).rename(columns=SUMMARY_NAMES)))
        self.chart.show("cases", lambda: charts.validation_errors(self.cases))
