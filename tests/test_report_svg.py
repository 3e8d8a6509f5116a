"""Charts to SVG in the report's helper process: the same SVG as in-process, errors named, never fatal."""

from __future__ import annotations

import json

import altair as alt
import pandas as pd
import pytest
import vl_convert

from aisize.report import svg
from aisize.report.markup import drawing_ahead, figure
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


def _spec(title: str, points: int = 3) -> dict:
    frame = pd.DataFrame({"gpus": list(range(1, points + 1)), "days": [100.0 / g for g in range(1, points + 1)]})
    return (alt.Chart(frame).mark_line(point=True).encode(x="gpus:Q", y="days:Q")
            .properties(width=200, height=120, title=title).to_dict())


def test_charts_sent_ahead_come_back_each_to_its_own_spec(helper):
    specs = [_spec(f"chart {k}") for k in range(4)]
    drawings = [svg.submit(s) for s in specs]
    assert len(svg._sent) == 4  # all four with the helper before any answer is read
    for k in (2, 0, 3, 1):  # asked for out of order
        assert svg.result(drawings[k]) == vl_convert.vegalite_to_svg(specs[k])
    assert not svg._sent


def test_more_specs_than_a_pipe_holds_do_not_block(helper):
    """Specs of 17 kB and answers of 115 kB: unread, they would fill both pipes and block both sides."""
    specs = [_spec(f"big {k}", points=400) for k in range(6)]
    assert all(len(json.dumps(s)) > 15_000 for s in specs)
    drawings = [svg.submit(s) for s in specs]
    assert sum(d.line_bytes for d in svg._sent) <= svg.IN_FLIGHT_BYTES
    assert [svg.result(d) for d in drawings] == [vl_convert.vegalite_to_svg(s) for s in specs]


def test_a_section_that_fails_leaves_the_helper_in_step(helper):
    with pytest.raises(RuntimeError):
        with drawing_ahead():
            marker = figure(alt.Chart.from_dict(_spec("left behind")), "never placed")
            assert "\x00" in marker and "<svg" not in marker
            raise RuntimeError("a section failed")
    assert not svg._sent  # its chart's answer was read on the way out
    assert "next chart" in svg.to_svg(_spec("next chart"))


def test_drawing_ahead_places_each_figure_where_it_was_made(helper):
    with drawing_ahead() as place:
        a = figure(alt.Chart.from_dict(_spec("first")), "caption one")
        b = figure(alt.Chart.from_dict(_spec("second")), "caption two")
        page = place(f"<p>before</p>{a}<p>between</p>{b}")
    assert "\x00" not in page
    assert page.index("first") < page.index("caption one") < page.index("between") < page.index("second")
    assert page == f"<p>before</p>{figure(alt.Chart.from_dict(_spec('first')), 'caption one')}<p>between</p>" \
                   f"{figure(alt.Chart.from_dict(_spec('second')), 'caption two')}"


def test_charts_in_flight_when_the_helper_dies_are_drawn_here(helper):
    drawings = [svg.submit(_spec(f"chart {k}")) for k in range(3)]
    helper.kill()
    helper.wait()
    assert [svg.result(d) for d in drawings] == [vl_convert.vegalite_to_svg(_spec(f"chart {k}")) for k in range(3)]
    assert svg._helper is None
