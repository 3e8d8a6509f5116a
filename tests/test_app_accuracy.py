"""The app's Accuracy tab counts ok, rough and outside apart, as `aisize validate` does."""

from __future__ import annotations

import re
from html import unescape

from aisize.app import build_app
from aisize.validation import summary, validate


def test_accuracy_tab_counts_ok_rough_and_outside_apart():
    app = build_app(display=False)
    shown = unescape(app.open_tab("Accuracy").table.value)
    heads = re.findall(r"<th>([^<]*)</th>", shown)
    # "within tolerance" had labelled the ok count alone: flops-time's 3 rough cases were in no column
    assert heads[2:5] == ["ok (within 15 % and the case's tolerance)", "rough (within a wide tolerance only)",
                          "outside its tolerance"]
    rows = [re.findall(r"<td>([^<]*)</td>", r) for r in re.findall(r"<tr>(.*?)</tr>", shown.split("<tbody>")[1])]
    expected = summary(validate())
    assert [[r[0]] + [int(x) for x in r[1:5]] for r in rows] == \
        expected[["family", "compared", "ok", "rough", "outside"]].values.tolist()
    flops = expected.set_index("family").loc["flops-time"]
    assert flops["rough"] > 0 and flops["ok"] + flops["rough"] + flops["outside"] == flops["compared"]


def test_the_long_case_chart_and_runs_table_scroll_in_boxes_below_the_counts():
    """The Accuracy tab's case chart (131 cases at 12 px) and a family's runs (82 rows of three lines) made a page
    about 12,000 px tall: each stands in a box at most K.SCROLL_HEIGHT_PX tall that scrolls, below the family counts,
    which stay whole."""
    from aisize.app import controls as K

    app = build_app(display=False)
    tab = app.open_tab("Accuracy")
    runs = tab.serving

    def box_of(widget, parent):
        return next(c for c in parent.children if getattr(c, "children", None) and widget in c.children)

    for widget, parent in ((tab.chart.box, tab.view), (runs.runs, runs.view)):
        box = box_of(widget, parent)
        assert box.layout.max_height == f"{K.SCROLL_HEIGHT_PX}px" and box.layout.overflow == "auto"
    assert tab.table in tab.view.children and runs.summary in runs.view.children  # the counts are not in a box
    assert K.SCROLL_HEIGHT_PX <= 800
