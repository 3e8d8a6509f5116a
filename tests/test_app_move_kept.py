"""A slider move on the Training, Data path and Cost tabs builds again only the tables and chart rows whose inputs
changed (issue 51 item 2): the layouts table and step rows while the cached layout search is the same frame, the
IO blend's table and rows while the blend is, the cost tabs' workloads and prices tables while their figures are.
What is kept must be what a fresh page shows for the same scenario."""

from __future__ import annotations

import copy

import ipywidgets as widgets
import pytest

from aisize.app import build_app
from aisize.app import controls as K
from aisize.app.sections import cost, datapath, training


def _sliders(view) -> dict[str, widgets.Widget]:
    found, stack = {}, [view]
    while stack:
        w = stack.pop()
        if isinstance(w, (widgets.IntSlider, widgets.FloatSlider, widgets.FloatLogSlider)) and not w.disabled:
            found[w.description] = w
        stack.extend(getattr(w, "children", ()))
    return found


def _step(slider) -> float:
    """One ArrowRight, as the browser sends it."""
    if isinstance(slider, widgets.FloatLogSlider):
        return min(slider.value * slider.base ** slider.step, slider.base ** slider.max)
    return min(slider.value + slider.step, slider.max)


def _shown(section) -> dict[str, object]:
    """Every HTML output's text and every chart's rows of a section."""
    out = {}
    for name, value in vars(section).items():
        if isinstance(value, widgets.HTML):
            out[name] = value.value
        elif isinstance(value, K.ChartSlot):
            out[name] = (value.key, value.data)
    return out


@pytest.mark.parametrize("tab", ["Training", "Data path", "Cost"])
def test_after_moves_the_tab_shows_what_a_fresh_page_shows(tab):
    app = build_app(display=False)
    section = app.open_tab(tab)
    for label, slider in _sliders(section.view).items():
        for _ in range(3):
            slider.set_state({"value": _step(slider)})
    fresh = build_app(display=False, data=copy.deepcopy(app.state.data)).open_tab(tab)
    assert _shown(section) == _shown(fresh)


def _count(monkeypatch, module, name) -> list:
    calls, function = [], getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return function(*args, **kwargs)
    monkeypatch.setattr(module, name, counted)
    return calls


def test_a_move_that_leaves_the_blend_builds_no_blend_table(monkeypatch):
    app = build_app(display=False)
    section = app.open_tab("Data path")
    calls = _count(monkeypatch, datapath, "_blend_table")
    table = section.blend.value
    slider = _sliders(section.view)["Checkpoints kept [count]"]
    slider.set_state({"value": _step(slider)})
    assert section.figures.value and not calls and section.blend.value == table
    busy = _sliders(section.view)["GPU busy target [ratio]"]
    busy.set_state({"value": busy.value - busy.step})  # changes the blend: built again
    assert len(calls) == 1 and section.blend.value != table


def test_the_same_layout_search_builds_no_layouts_table(monkeypatch):
    app = build_app(display=False)
    section = app.open_tab("Training")
    calls = _count(monkeypatch, training, "shown_layouts")
    section.update(app.state.plan)  # the same plan: the cached search's same frame
    assert not calls and "<table" in section.layouts.value


def test_cost_tables_are_built_again_only_when_their_figures_change(monkeypatch):
    app = build_app(display=False)
    section = app.open_tab("Cost")
    workloads = _count(monkeypatch, cost, "workload_cost_rows")
    prices = _count(monkeypatch, cost, "_prices_table")
    capital = _count(monkeypatch, cost, "cost_rows")
    life = _sliders(section.view)["Life [years]"]
    life.set_state({"value": _step(life)})  # no price changes: the prices table is kept; capital and operating too
    assert not prices and not capital and len(workloads) == 1
    pue = _sliders(section.view)["PUE"]
    pue.set_state({"value": _step(pue)})  # the energy's operating line changes
    assert len(prices) == 1 and f"<td>{pue.value:g}</td>" in section.prices.value and len(capital) == 1
    fresh = build_app(display=False, data=app.state.data).open_tab("Cost")
    assert (section.capital.value, section.workloads.value, section.prices.value) == (
        fresh.capital.value, fresh.workloads.value, fresh.prices.value)


def test_cost_chart_rows_are_the_cost_tables_records():
    from aisize import charts
    from aisize.plan import plan
    from aisize.scenario.presets import preset

    c = plan(preset("xe9680-genai")).cost
    rows, table = charts.cost_breakdown_rows(c)[charts.COST_DATA], charts.cost_rows(c).to_dict("records")
    assert rows and rows == table
    assert [type(v) for r in rows for v in r.values()] == [type(v) for r in table for v in r.values()]
