"""Chart builders: pure (data in, chart out), titled, axes with units, data equal to the inputs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from aisize import charts
from aisize.units import GB, TB, GiB


def spec(chart) -> dict:
    return json.loads(chart.to_json())


def datasets(chart) -> list[list[dict]]:
    return list(spec(chart)["datasets"].values())


def axis_titles(node) -> list[str]:
    """Every x/y title in a (layered) spec."""
    out = []
    if isinstance(node, dict):
        for channel in ("x", "y"):
            title = node.get("encoding", {}).get(channel, {}).get("title")
            if title:
                out.append(title)
        for value in node.values():
            out += axis_titles(value)
    elif isinstance(node, list):
        for value in node:
            out += axis_titles(value)
    return out


MEMORY = {"weights_bytes": 16 * GiB, "gradients_bytes": 16 * GiB, "optimizer_moments_bytes": 64 * GiB,
          "activations_bytes": 0.0, "host_bytes": 5 * GiB, "total_bytes": 96 * GiB}


def test_memory_breakdown_draws_the_line_items_in_gib_against_the_gpu():
    chart = charts.memory_breakdown(MEMORY, 80 * GiB, 72 * GiB, title="Memory per GPU: test")
    s = spec(chart)
    assert s["title"] == "Memory per GPU: test"
    assert "memory per GPU [GiB]" in axis_titles(s)
    rows = [r for d in datasets(chart) for r in d if "item" in r]
    # zero items, host memory and the total are not drawn
    assert {r["item"]: r["gib"] for r in rows} == {"weights": 16, "gradients": 16, "optimizer moments": 64}
    limits = [r for d in datasets(chart) for r in d if "limit" in r]
    assert [r["gib"] for r in limits] == [80, 72]


def dash_scale(chart) -> dict:
    """The strokeDash scale of the memory chart's limit rules."""
    layer = next(l for l in spec(chart)["layer"] if "strokeDash" in l.get("encoding", {}))
    return layer["encoding"]["strokeDash"]["scale"]


def test_memory_breakdown_legend_lists_only_the_limits_drawn():
    # inference plans give no usable-after-headroom figure: no dashed rule, so no such legend entry
    alone = dash_scale(charts.memory_breakdown(MEMORY, 80 * GiB))
    assert alone == {"domain": ["GPU memory"], "range": [[1, 0]]}
    both = dash_scale(charts.memory_breakdown(MEMORY, 80 * GiB, 72 * GiB))
    assert both == {"domain": ["GPU memory", "usable after headroom"], "range": [[1, 0], [4, 3]]}


def test_gpus_vs_days_marks_the_chosen_point_with_params():
    frame = pd.DataFrame({"target_days": [1, 2, 4], "gpus": [64, 32, 16]})
    s = spec(charts.gpus_vs_days(frame, 2, 32))
    assert {p["name"]: p["value"] for p in s["params"]} == {charts.MARK_DAYS: 2, charts.MARK_GPUS: 32}
    assert "target time to train [days] (log)" in axis_titles(s) and "GPUs needed [count] (log)" in axis_titles(s)
    assert s["title"]


def test_latency_vs_load_has_the_curve_the_knee_and_the_load():
    curve = pd.DataFrame({"requests_per_s": [1.0, 2.0], "latency_mean_seconds": [1.0, 1.5],
                          "latency_p95_seconds": [1.2, 2.0]})
    chart = charts.latency_vs_load(curve, knee_requests_per_s=1.8, requests_per_s=1.2, target_seconds=3.0)
    s = spec(chart)
    assert {"request rate [requests/s]", "latency [s]"} <= set(axis_titles(s))
    assert {p["name"]: p["value"] for p in s["params"]} == {charts.MARK: 1.2}
    rows = [r for d in datasets(chart) for r in d]
    assert {"where": "knee", "requests_per_s": 1.8} in rows
    assert sorted(r["seconds"] for r in rows if r.get("statistic") == "p95") == [1.2, 2.0]


def test_latency_charts_draw_their_named_datasets():
    curve = pd.DataFrame({"requests_per_s": [1.0, 2.0], "latency_mean_seconds": [1.0, 1.5],
                          "latency_p95_seconds": [1.2, 2.0]})
    rows = charts.latency_vs_load_data(curve, 1.8, 3.0)
    assert spec(charts.latency_vs_load(curve, 1.8, 1.2, 3.0))["datasets"] == rows
    assert rows[charts.LOAD_CURVE][0] == {"requests_per_s": 1.0, "statistic": "mean", "seconds": 1.0}
    assert rows[charts.LOAD_TARGET] == [{"seconds": 3.0, "what": "latency target"}]
    assert charts.LOAD_TARGET not in spec(charts.latency_vs_load(curve, 1.8))["datasets"]
    frame = pd.DataFrame({"concurrency": [1.0, 8.0], "response_mean_seconds": [0.5, 1.0]})
    rows = charts.latency_vs_concurrency_data(frame, 8, "s")
    assert spec(charts.latency_vs_concurrency(frame, 8, 2, latency_unit="s"))["datasets"] == rows
    assert rows[charts.CONCURRENCY_KNEE] == [{"where": "knee", "concurrency": 8.0}]


def test_latency_vs_concurrency_converts_to_the_unit():
    frame = pd.DataFrame({"concurrency": [1.0, 8.0, 16.0], "response_mean_seconds": [2e-4, 2e-4, 4e-4]})
    chart = charts.latency_vs_concurrency(frame, knee_concurrency=16, concurrency=4, latency_unit="ms")
    assert "mean latency [ms]" in axis_titles(spec(chart))
    rows = [r for d in datasets(chart) for r in d if "latency" in r]
    assert [r["latency"] for r in rows] == pytest.approx([0.2, 0.2, 0.4])
    with pytest.raises(KeyError):
        charts.latency_vs_concurrency(frame, 16, latency_unit="minutes")


def test_io_blend_is_in_gb_per_s_as_the_cards_are():
    """Transfer rates in GB/s on every surface (issue 47.6): a small blend read 'MB/s' beside the tab's GB/s cards."""
    rows = [{"name": "train", "read_bytes_per_s": 2 * GB, "write_bytes_per_s": 0.0},
            {"name": "ckpt", "read_bytes_per_s": 0.0, "write_bytes_per_s": 0.5 * GB}]
    chart = charts.io_blend(rows)
    assert "average rate [GB/s]" in axis_titles(spec(chart))
    small = charts.io_blend([{"name": "a", "read_bytes_per_s": 4e6, "write_bytes_per_s": 1e6}])
    assert "average rate [GB/s]" in axis_titles(spec(small))
    assert sorted(r["rate"] for d in datasets(small) for r in d) == pytest.approx([0.001, 0.004])


def test_capacity_breakdown_in_tb():
    cap = {"datasets_bytes": 10 * TB, "checkpoints_bytes": 30 * TB, "data_preparation_bytes": 0.0,
           "model_repository_bytes": 1 * TB, "usable_bytes": 41 * TB, "raw_bytes": 51.25 * TB}
    chart = charts.capacity_breakdown(cap)
    assert "capacity [TB]" in axis_titles(spec(chart))
    assert [r["tb"] for d in datasets(chart) for r in d if r.get("limit")] == [51.25]


def test_collective_time_marks_one_count():
    frame = pd.DataFrame({"gpus": np.arange(2, 9), "seconds": np.linspace(0.1, 0.7, 7)})
    chart = charts.collective_time(frame, "all-reduce", 4)
    assert "all-reduce time [s]" in axis_titles(spec(chart))
    marked = [d for d in datasets(chart) if len(d) == 1]
    assert marked[0][0]["gpus"] == 4


def test_builders_are_pure():
    frame = pd.DataFrame({"concurrency": [1.0, 2.0], "response_mean_seconds": [1.0, 1.0]})
    before = frame.copy()
    charts.latency_vs_concurrency(frame, 2, latency_unit="s")
    pd.testing.assert_frame_equal(frame, before)


def _tooltips(node):
    """Every tooltip channel definition in a Vega-Lite spec."""
    if isinstance(node, dict):
        tip = node.get("tooltip")
        if isinstance(tip, list):
            yield from (t for t in tip if isinstance(t, dict))
        elif isinstance(tip, dict) and "field" in tip:
            yield tip
        for value in node.values():
            yield from _tooltips(value)
    elif isinstance(node, list):
        for value in node:
            yield from _tooltips(value)


def _tooltip_problems(spec_dict, where):
    out = []
    for t in _tooltips(spec_dict):
        shown = t.get("title", t.get("field", ""))
        if "_" in str(shown):
            out.append(f"{where}: tooltip shows the field name {shown!r}")
        if str(t.get("format", "")).rstrip("~").endswith(("g", "e")):
            out.append(f"{where}: tooltip {shown!r} formats {t['format']!r}, which writes exponents")
    return out


@pytest.mark.slow
def test_no_chart_of_any_report_shows_a_field_name_or_an_exponent_on_hover(monkeypatch):
    """A tooltip (and the description a screen reader reads, made from it) names its figure in words
    and writes numbers as the formatter does: no ``tokens_per_s_per_gpu``, no "8.71e+3"."""
    from aisize.report import sections as S
    from aisize.report import svg
    from aisize.scenario import preset, preset_names
    from aisize.validation import error_chart, validate

    specs = []
    monkeypatch.setattr(svg, "submit", lambda spec: specs.append(spec) or svg.Drawing(spec, 0))
    monkeypatch.setattr(svg, "result", lambda drawing: "<svg></svg>")
    monkeypatch.setattr(svg, "to_svg", lambda spec: specs.append(spec) or "<svg></svg>")
    found = []
    for name in preset_names():
        ctx = S.context(preset(name))
        chosen = [n for n in S.SECTIONS if n != "accuracy"]  # its charts are kept in the store by their spec
        for section in chosen:
            del specs[:]
            S.section(section, ctx, chosen)
            found += [p for s in specs for p in _tooltip_problems(s, f"{name} {section}")]
    found += _tooltip_problems(error_chart(validate()).to_dict(), "accuracy")
    assert not found, "\n".join(sorted(set(found))[:40])


def drawn_axis_titles(chart) -> list[str]:
    """The axis titles Vega draws of a chart (or its Vega-Lite dict): Vega-Lite joins a shared axis's differing layer titles with ", "
    ("day, day, end [day]"), which the Vega-Lite spec alone does not show."""
    import vl_convert

    out = []

    def walk(node):
        if isinstance(node, dict):
            out.extend(a["title"] for a in node.get("axes", []) if a.get("title"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(vl_convert.vegalite_to_vega(chart if isinstance(chart, dict) else chart.to_dict()))
    return out


def test_the_timeline_has_one_day_axis_title_and_counts_agree_with_gpu():
    rows = [{"workload": "Tune", "kind": "training", "team": "ml", "phase": "build", "pool": "a", "start_day": 0.0,
             "end_day": 3.0, "hours": "all day", "gpus": 1},
            {"workload": "Chat", "kind": "inference", "team": "apps", "phase": "run", "pool": "a", "start_day": 3.0,
             "end_day": 30.0, "hours": "8-20 h", "gpus": 16}]
    phases = [{"name": "build", "start_day": 0.0, "days": 3.0, "ongoing": False},
              {"name": "run", "start_day": 3.0, "days": 27.0, "ongoing": True}]
    chart = charts.timeline(rows, phases)
    assert drawn_axis_titles(chart) == ["time from the start [days]"]  # was "day, day, end [day]"
    labels = [r["label"] for d in datasets(chart) for r in d if "label" in r]
    assert labels == ["Tune (1 GPU, all day)", "Chat (16 GPUs, 8-20 h)"]  # was "1 GPUs"


def test_latency_charts_draw_each_axis_title_once():
    curve = pd.DataFrame({"requests_per_s": [1.0, 2.0], "ttft_seconds": [0.1, 0.2], "ttft_p95_seconds": [0.2, 0.3],
                          "tpot_seconds": [0.01, 0.02], "tpot_p95_seconds": [0.02, 0.03]})
    # the planned-load rule's own x title was joined on: "request rate [requests/s], requests/s"
    assert drawn_axis_titles(charts.serving_latency(curve, 0.5, 0.05, requests_per_s=1.5)) == [
        "request rate [requests/s]", "TTFT [ms]", "request rate [requests/s]", "TPOT [ms]"]
    load = pd.DataFrame({"requests_per_s": [1.0, 2.0], "latency_mean_seconds": [1.0, 1.5],
                         "latency_p95_seconds": [1.2, 2.0]})
    assert drawn_axis_titles(charts.latency_vs_load(load, 1.8, 1.2, 3.0)) == ["request rate [requests/s]",
                                                                              "latency [s]"]
    frame = pd.DataFrame({"concurrency": [1.0, 8.0], "response_mean_seconds": [0.5, 1.0]})
    assert drawn_axis_titles(charts.latency_vs_concurrency(frame, 8, 2)) == ["requests outstanding [count]",
                                                                             "mean latency [ms]"]


@pytest.mark.slow
def test_no_chart_of_any_report_joins_axis_titles(monkeypatch):
    """Every report chart of every preset, compiled as Vega draws it: no axis title is two joined."""
    from aisize.report import sections as S
    from aisize.report import svg
    from aisize.scenario import preset, preset_names

    specs = []
    monkeypatch.setattr(svg, "submit", lambda spec: specs.append(spec) or svg.Drawing(spec, 0))
    monkeypatch.setattr(svg, "result", lambda drawing: "<svg></svg>")
    monkeypatch.setattr(svg, "to_svg", lambda spec: specs.append(spec) or "<svg></svg>")
    joined = set()
    for name in preset_names():
        ctx = S.context(preset(name))
        chosen = [n for n in S.SECTIONS if n != "accuracy"]  # aisize.validation draws that one
        for section in chosen:
            del specs[:]
            S.section(section, ctx, chosen)
            joined |= {f"{section}: {t}" for s in specs for t in drawn_axis_titles(s) if ", " in t}
    assert not joined, sorted(joined)


def test_a_services_memory_bar_adds_up_to_the_plans_memory_per_gpu():
    # the bar left the engine's runtime out: 69 GiB drawn against the summary's 73.6 GiB per GPU (screenshots)
    from aisize.charts.memory import MEMORY_DATA, memory_breakdown_data
    from aisize.plan import plan
    from aisize.scenario import preset
    from aisize.units import GiB

    for name in ("xe9680-genai", "agentic-coding"):
        i = plan(preset(name)).inference[0]
        rows = memory_breakdown_data(i.memory_per_gpu_bytes, i.gpu_memory_bytes)[MEMORY_DATA]
        assert sum(r["gib"] for r in rows) == pytest.approx(i.memory_per_gpu_bytes["total_bytes"] / GiB, rel=1e-6)


def test_the_knee_and_operating_point_labels_sit_on_different_lines():
    # the two labels were drawn at the same height and overlapped when the rules were close (screenshots)
    import altair as alt

    from aisize.charts.latency import knee_markers

    marks = knee_markers(alt.X("concurrency:Q"), "knee", at=8, at_label="operating point")
    texts = [m.to_dict(validate=False)["mark"] for m in marks if m.to_dict(validate=False)["mark"]["type"] == "text"]
    assert len({t["dy"] for t in texts}) == len(texts) == 2


def _workload_colours(chart) -> dict[str, str]:
    """workload -> colour of every colour encoding on the field "workload" in ``chart``."""
    out: dict[str, str] = {}

    def walk(node):
        if isinstance(node, dict):
            c = node.get("color")
            if isinstance(c, dict) and c.get("field") == "workload":
                scale = c.get("scale", {})
                assert "domain" in scale and "range" in scale, c  # Vega's default would order by first seen
                for name, colour in zip(scale["domain"], scale["range"]):
                    assert out.setdefault(name, colour) == colour
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(chart.to_dict())
    return out


def test_the_cluster_tab_colours_workloads_alike_in_the_packing_and_the_timeline():
    """One colour meaning on the Cluster tab: the packing coloured by workload and the timeline beside it by team,
    so serving-at-scale's R1 was red in one and orange in the other (screenshot review 09:15)."""
    from aisize.plan import plan
    from aisize.scenario import preset

    p = plan(preset("serving-at-scale"))
    packed = _workload_colours(charts.packing(p.placement, p.placement.slot_labels))
    timed = _workload_colours(charts.timeline(p.timeline.rows, p.timeline.phases))
    assert set(packed) == {"Reasoning R1", "Assistant 405B", "RAG chat 70B"}
    assert packed == {k: timed[k] for k in packed}
    assert len(set(timed.values())) == len(timed)  # no two workloads share a colour
