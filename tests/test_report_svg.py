"""Charts to SVG in the report's helper process: the same SVG as in-process, errors named, never fatal."""

from __future__ import annotations

import altair as alt
import pandas as pd
import pytest
import vl_convert

from aisize.report import svg
from aisize.report.markup import figure
from aisize.validation import store

SPEC = (alt.Chart(pd.DataFrame({"gpus": [8, 16, 32], "days": [12.0, 6.1, 3.2]})).mark_line(point=True)
        .encode(x=alt.X("gpus:Q", title="GPUs"), y=alt.Y("days:Q", title="days"))
        .properties(width=200, height=120, title="Days vs GPUs").to_dict())
BAD = {"data": {"values": [{"x": 1}]}, "mark": "point", "encoding": {"x": {"field": "x", "type": "wrong"}}}


@pytest.fixture
def helper():
    svg.start()
    yield svg._helper
    svg.stop()


def test_the_helper_draws_what_vl_convert_draws_in_process(helper):
    assert helper is not None and helper.poll() is None
    drawn = svg.to_svg(SPEC)
    assert svg._helper is helper  # answered by the helper, which still runs
    assert drawn == vl_convert.vegalite_to_svg(SPEC)
    assert drawn.startswith("<svg") and "Days vs GPUs" in drawn


def test_a_spec_it_cannot_draw_is_a_value_error_naming_the_cause(helper):
    with pytest.raises(ValueError, match="vl-convert could not draw the chart: .*Invalid field type"):
        svg.to_svg(BAD)
    assert svg.to_svg(SPEC).startswith("<svg")  # the helper keeps serving after a bad spec


def test_a_helper_that_died_leaves_the_conversion_in_process(helper):
    helper.kill()
    helper.wait()
    assert svg.to_svg(SPEC) == vl_convert.vegalite_to_svg(SPEC)
    assert svg._helper is None
    with pytest.raises(ValueError, match="Invalid field type"):
        svg.to_svg(BAD)
    svg.start()  # a new helper, and the charts go to it again
    assert svg._helper is not None and svg._helper is not helper and svg.to_svg(SPEC).startswith("<svg")


def test_start_after_the_helper_died_starts_another(helper):
    helper.kill()
    helper.wait()
    svg.start()
    assert svg._helper is not helper and svg._helper.poll() is None
    assert helper.stdout.closed and helper.stdin.closed  # the dead one's pipes
    assert svg.to_svg(SPEC) == vl_convert.vegalite_to_svg(SPEC)


def test_stop_ends_the_helper(helper):
    svg.stop()
    assert helper.poll() is not None and svg._helper is None


def test_a_kept_figure_is_drawn_once_per_spec(tmp_path, monkeypatch):
    monkeypatch.setenv(store.CACHE_ENV, str(tmp_path / "validation"))
    calls = []
    monkeypatch.setattr(svg, "to_svg", lambda spec: calls.append(spec) or vl_convert.vegalite_to_svg(spec))
    chart = alt.Chart.from_dict(SPEC)
    first, again = figure(chart, "kept", keep=True), figure(chart, "kept", keep=True)
    assert first == again and len(calls) == 1 and "<svg" in first
    figure(chart.properties(title="Another"), "kept", keep=True)
    figure(chart, "not kept")
    assert len(calls) == 3
    assert len(list((tmp_path / "validation").glob("figure-*.txt"))) == 2


def test_a_kept_figure_that_was_tampered_with_is_drawn_again(tmp_path, monkeypatch):
    """The store may be a folder a team shares: a kept SVG that could run script is never put in a report."""
    monkeypatch.setenv(store.CACHE_ENV, str(tmp_path / "validation"))
    chart = alt.Chart.from_dict(SPEC)
    clean = figure(chart, "kept", keep=True)
    (kept,) = (tmp_path / "validation").glob("figure-*.txt")
    kept.write_text('<svg><script>fetch("/steal")</script></svg>', encoding="utf-8")
    again = figure(chart, "kept", keep=True)
    assert again == clean and "<script" not in again
    assert "<script" not in kept.read_text(encoding="utf-8")  # written again, clean
