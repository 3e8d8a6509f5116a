"""Compare: the scenario being edited (A) beside a preset or an uploaded scenario (B), differences marked.

The table is :func:`aisize.present.comparison.comparison_table`; rows whose values
differ are highlighted and the better plan is named where "better" has a direction.
"""

from __future__ import annotations

import html

import ipywidgets as widgets

from aisize import charts
from aisize import format as F
from aisize.app import controls as K
from aisize.app.sections import Section
from aisize.app.state import load_failure, upload_text
from aisize.plan import plan as make_plan
from aisize.present.comparison import change_shown, comparison_table, difference_shown, shown
from aisize.scenario import loads, preset, preset_names

UPLOADED = "(uploaded file)"


def table_html(table) -> str:
    """The comparison as an HTML table; differing rows carry class ``aisize-differs``."""
    a, b = table.columns[3], table.columns[4]
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ("metric", "unit", a, b, "B - A", "change", "better"))
    body = []
    for r in table.to_dict("records"):
        cells = [r["metric"], r["unit"], shown(r[a], r["unit"]), shown(r[b], r["unit"]),
                 difference_shown(r["difference"], r["unit"]), change_shown(r["change"]), r["better"]]
        cls = " class='aisize-differs'" if r["differs"] else ""
        body.append(f"<tr{cls} data-key='compare.{html.escape(r['key'])}'>"
                    + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    style = "<style>.aisize-differs td {background:#fff4d6; font-weight:600}</style>"
    return f"{style}<table class='aisize-table'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


class CompareSection(Section):
    title = "Compare"

    def __init__(self, state):
        self.other = K.dropdown("Compare with", preset_names() + [UPLOADED], preset_names()[0],
                                "Scenario B: a built-in preset or a file you load")
        self.upload = widgets.FileUpload(accept=".yaml,.yml,.json", multiple=False, description="Load B",
                                         tooltip="Load scenario B (YAML or JSON)")
        self.summary, self.table = widgets.HTML(), widgets.HTML()
        self.chart = K.ChartSlot()
        self.uploaded = None  # the plan of the last uploaded B
        self.chosen = False  # the user picked B; until then B is a preset other than the scenario on screen
        self._auto = False
        super().__init__(state)
        self.other.observe(self._on_pick, names="value")
        self.upload.observe(self._on_upload, names="value")
        left = K.controls_column([self.other, self.upload, self.error, self.summary])
        self.view.children = [widgets.HBox([left, K.figures_column([self.chart.box])]),
                              K.heading("Side by side", "A is the scenario being edited"), self.table]

    def _on_pick(self, _change) -> None:
        if not self._auto:
            self.chosen = True
        self.refresh()

    def _default_other(self, plan) -> None:
        """B by default is the first preset that is not the scenario on screen (a plan compared with itself
        differs in nothing and draws an empty chart)."""
        if self.chosen or self.other.value == UPLOADED:
            return
        if preset(self.other.value).name != plan.scenario_name:
            return
        other = next((n for n in preset_names() if preset(n).name != plan.scenario_name), None)
        if other is not None:
            self._auto = True
            try:
                self.other.value = other
            finally:
                self._auto = False

    def _on_upload(self, change) -> None:
        if not change["new"]:
            return
        try:
            text, fmt = upload_text(change["new"])
            self.uploaded = make_plan(loads(text, fmt=fmt))
            self.other.value = UPLOADED
            self.refresh()
        except Exception as error:  # MemoryError too: the page says so rather than nothing
            K.assign(self.error, "value", K.error_html(f"scenario B: {load_failure(error)}"))
        self.upload.value = ()

    def other_plan(self):
        if self.other.value == UPLOADED:
            return self.uploaded
        return make_plan(preset(self.other.value))

    def update(self, plan) -> None:
        self._default_other(plan)
        b = self.other_plan()
        if b is None:
            K.assign(self.summary, "value", "<p class='aisize-note'>Load a scenario file as B.</p>")
            return
        table = comparison_table(plan, b)
        differs = int(table["differs"].sum())
        K.assign(self.summary, "value", K.cards([
            K.card("compare.differs", "Figures that differ", differs, f"of {len(table)}"),
            K.card("compare.capital", "Capital B - A", ("+" if b.cost.capital_usd >= plan.cost.capital_usd else "")
                   + F.usd(b.cost.capital_usd - plan.cost.capital_usd), ""),
            K.card("compare.servers", "Servers B - A", b.servers - plan.servers, "")]))
        K.assign(self.table, "value", table_html(table))
        self.chart.show((plan.scenario_name, b.scenario_name, tuple(table["change"].fillna(0))),
                        lambda: charts.comparison(table, title=f"B ({b.scenario_name}) against A"))
