"""Planning the next slider step while the page waits (aisize.app.ahead; issue 51 item 2).

A move that lands on the step planned ahead shows that plan: it must be the plan the move would have made, figure for
figure. A move anywhere else plans as before. The browser's own arithmetic for a key step (noUiSlider's) is checked
against Chromium in tests/browser/test_browser_ahead.py; here, what it must give on the sliders' grids.
"""

from __future__ import annotations

import asyncio
import math

import ipywidgets as widgets
import pytest

from aisize.app import ahead, build_app
from aisize.app.ahead import next_value
from aisize.app.controls import float_slider, int_slider, log_slider
from aisize.app.state import set_path
from aisize.plan import clear_caches, plan
from aisize.scenario import DEFAULT_PRESET, from_dict, preset, to_dict


def test_a_log_slider_steps_one_twentieth_of_a_decade_on_its_grid():
    rate = log_slider("Request rate", 20, 0.1, 10_000, "")
    values = [rate.value]
    for _ in range(30):
        rate.value = next_value(rate, 1)
        values.append(rate.value)
    exponents = [math.log10(v) for v in values]
    # from 20 (between grid points) the handle snaps to 10^1.3, then each step is 0.05 of a decade
    assert exponents[1] == pytest.approx(1.35, abs=1e-12)
    assert all(b - a == pytest.approx(0.05, abs=1e-12) for a, b in zip(exponents[1:], exponents[2:]))
    down = next_value(rate, -1)
    assert math.log10(down) == pytest.approx(exponents[-2], abs=1e-12)
    rate.value = 10_000
    assert next_value(rate, 1) is None  # at its end: the browser sends nothing
    assert next_value(rate, -1) == pytest.approx(10 ** 3.95, rel=1e-12)


def test_a_float_slider_steps_by_its_step_and_an_int_slider_by_whole_steps():
    cv = float_slider("Prompt length CV", 0.0, 0.0, 4.0, 0.05, "")
    seen = []
    for _ in range(7):
        cv.value = next_value(cv, 1)
        seen.append(cv.value)
    assert seen == pytest.approx([0.05 * k for k in range(1, 8)], abs=1e-12)
    assert next_value(cv, -1) == pytest.approx(0.3, abs=1e-12)
    kept = int_slider("Checkpoints kept", 3, 1, 20, 1, "")
    assert next_value(kept, 1) == 4 and next_value(kept, -1) == 2
    assert isinstance(next_value(kept, 1), int)
    kept.value = 20
    assert next_value(kept, 1) is None
    assert next_value(widgets.Dropdown(options=["a"]), 1) is None


def _app(name: str = DEFAULT_PRESET):
    return build_app(display=False, data=to_dict(preset(name)))


def _slider(app, tab: str, label: str):
    view = app.open_tab(tab).view

    def walk(w):
        if isinstance(w, ahead.SLIDERS) and w.description.startswith(label):
            yield w
        for child in getattr(w, "children", ()) or ():
            yield from walk(child)
    return next(walk(view))


def _figures(p) -> tuple:
    """What the page shows of a plan, by value: the services, the training jobs, the bill, the cost, the findings."""
    return (repr(p.inference), repr(p.training), p.gpus, p.servers, repr(p.storage), repr(p.network), repr(p.cost),
            repr(p.findings))


def _moves(app, slider, directions, pause_s=0.05):
    """Move ``slider`` one key step each way of ``directions`` inside a running event loop, pausing between moves
    (the page's think time); returns the state's (planned, used) counts."""
    state = app.state

    async def run():
        for d in directions:
            slider.value = next_value(slider, d)
            await asyncio.sleep(pause_s)
    asyncio.run(run())
    return state.ahead.planned, state.ahead.used


@pytest.mark.parametrize("tab,label", [("Inference", "Prompt ["), ("Inference", "Output length CV"),
                                       ("Inference", "Request rate"), ("Training", "MFU")])
def test_a_step_planned_ahead_shows_the_plan_the_move_would_make(tab, label):
    app = _app()
    slider = _slider(app, tab, label)
    planned, used = _moves(app, slider, [1, 1, 1, -1, -1])
    # every move plans the next step the same way; the 2nd and 3rd land on it, the first step back does not
    assert planned == 5 and used == 3
    shown = app.state.plan
    clear_caches()
    cold = plan(from_dict(app.state.data))
    assert _figures(shown) == _figures(cold)


@pytest.mark.parametrize("name,label,way", [("agentic-coding", "Turns per session", 1),
                                            ("rag-service", "RAG chunks", -1)])  # more chunks: past its prompt
def test_a_slider_that_edits_several_fields_is_planned_ahead_too(name, label, way):
    """The turns slider sets the think time with the turns, the chunks slider the chunks' size and corpus: their
    next steps are planned as the same edits (aisize.app.sections.inference_reuse)."""
    app = _app(name)
    slider = _slider(app, "Inference", label)
    planned, used = _moves(app, slider, [way] * 3)
    assert planned == 3 and used == 2
    shown = app.state.plan
    clear_caches()
    assert _figures(shown) == _figures(plan(from_dict(app.state.data)))


def test_a_move_before_the_plan_ahead_runs_cancels_it_and_nothing_runs_outside_an_event_loop(monkeypatch):
    app = _app()
    slider = _slider(app, "Inference", "Prompt [")
    monkeypatch.setattr(ahead, "DELAY_S", 60.0)  # however slow this machine: each next move comes first
    handles = []

    async def held_key():
        for _ in range(3):
            slider.value = next_value(slider, 1)
            handles.append(app.state.ahead.pending)
            await asyncio.sleep(0.01)
    asyncio.run(held_key())
    assert all(h is not None for h in handles) and len(set(map(id, handles))) == 3
    assert [h.cancelled() for h in handles[:-1]] == [True, True]  # each move cancelled the one before it
    assert (app.state.ahead.planned, app.state.ahead.used) == (0, 0)
    slider.value = next_value(slider, 1)  # no loop running (a script, the report): nothing is scheduled
    assert app.state.ahead.pending is None and app.state.ahead.kept is None


def test_off_by_the_environment_and_a_refused_step_is_not_kept(monkeypatch):
    monkeypatch.setenv(ahead.ENV, "0")
    app = _app()
    slider = _slider(app, "Inference", "Prompt [")
    assert _moves(app, slider, [1, 1]) == (0, 0)
    monkeypatch.delenv(ahead.ENV)
    state = app.state
    path = ("workloads", 2, "prompt_tokens")
    state.ahead.run(lambda data: set_path(data, path, -5))  # refused: not planned ahead (the move says why)
    assert state.ahead.kept is None and state.ahead.planned == 0
    assert state.set(path, -5) is not None


def test_a_kept_plan_serves_only_its_own_scenario():
    app = _app()
    state = app.state
    path = ("workloads", 2, "prompt_tokens")
    base = state.data["workloads"][2]["prompt_tokens"]
    state.ahead.run(lambda data: set_path(data, path, base + 64))
    assert state.ahead.kept is not None and state.ahead.planned == 1
    assert state.set(path, base + 32) is None  # another value: planned as before, the kept plan dropped
    assert state.ahead.used == 0 and state.ahead.kept is None
    assert state.data["workloads"][2]["prompt_tokens"] == base + 32
    state.ahead.run(lambda data: set_path(data, path, base + 64))
    kept = state.ahead.kept[1]
    assert state.set(path, base + 64) is None
    assert state.ahead.used == 1 and state.plan is kept
    # a scenario loaded (a preset, a file) never takes a plan made for an edit, even one of the same fields
    state.ahead.run(lambda data: set_path(data, path, base))
    fields, made = state.ahead.kept
    assert state.load(to_dict(from_dict(fields))) is None
    assert state.ahead.used == 1 and state.plan is not made
