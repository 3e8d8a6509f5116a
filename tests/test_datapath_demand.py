"""The data path reads real demand (issue 49): a service's weights load at deployment even when it never reloads,
a storage with no IO shows a sentence (no empty blender), the Queueing tab marks the plan's own operating point,
and the Data path tables keep one unit per column."""

from __future__ import annotations

import html
import math
import re

import pytest

from aisize import format as F
from aisize.app import build_app
from aisize.app.sections.datapath import column
from aisize.plan import plan
from aisize.plan import context as C
from aisize.scenario import from_dict, preset, to_dict
from aisize.units import GB, HOUR
from shown_figures import shown


def _plan(name, edit=None):
    data = to_dict(preset(name))
    if edit:
        edit(data)
    return plan(from_dict(data))


@pytest.fixture(scope="module")
def agentic():
    return _plan("agentic-coding")


def test_a_service_that_never_reloads_still_loads_its_weights_at_deployment(agentic):
    s, i = agentic.storage, agentic.inference[0]
    assert agentic.scenario.workloads[0].model_loads_per_hour == 0.0
    # 15 replicas x DeepSeek-R1 in FP8 (671 B parameters: about 673 GB with its FP32 scales) within 60 s
    assert i.replicas == 15 and 660e9 < i.weights_bytes < 700e9
    burst = i.replicas * i.weights_bytes / C.MODEL_LOAD_SECONDS
    assert burst == pytest.approx(168.2 * GB, rel=1e-3)
    assert s.read_peak_bytes_per_s == pytest.approx(burst) and s.demand["read"] == pytest.approx(burst)
    # the burst sizes the storage: more than the one unit a demand of zero bought, read binding
    assert s.units > 1 and s.binding == "read" and s.units_by["read"] == s.units
    # the long-run average: restarts after failures only (node MTBF 5,000 h, one server per replica)
    mtbf = agentic.scenario.policies.node_mtbf_hours
    assert s.read_bytes_per_s == pytest.approx(i.replicas * i.weights_bytes / (mtbf * HOUR))
    assert 0 < s.read_bytes_per_s < 1e6  # 561 kB/s: a one-off load is no steady stream


def test_hourly_reloads_keep_their_average_and_add_the_failure_restarts():
    p = _plan("xe9680-genai")
    i = p.inference[0]
    (row,) = [w for w in p.storage.workloads if w["name"] == f"{i.name} model loading"]
    per_hour = i.model_loads_per_hour + 1.0 / p.scenario.policies.node_mtbf_hours
    assert row["read_bytes_per_s"] == pytest.approx(i.replicas * i.weights_bytes * per_hour / HOUR)
    assert row["read_peak_bytes_per_s"] == pytest.approx(i.replicas * i.weights_bytes / C.MODEL_LOAD_SECONDS)


def test_a_published_fleets_interruptions_raise_the_restart_reloads(agentic):
    from aisize.fleet.failures import failure_rates

    fleet = _plan("agentic-coding", lambda d: d["policies"].update(failure_rates="llama3-405b-h100"))
    i = fleet.inference[0]
    # a replica of 8 GPUs on one server restarts at the fleet's rate for 8 GPUs and 1 server (Llama 3: 419
    # interruptions in 54 days on 16,384 H100, about 1 in 6,300 h for 8 GPUs: fewer than 1 in 5,000 h)
    per_hour = failure_rates("llama3-405b-h100").per_hour(8, 1)
    assert fleet.storage.read_bytes_per_s == pytest.approx(i.replicas * i.weights_bytes * per_hour / HOUR)
    assert fleet.storage.read_bytes_per_s != pytest.approx(agentic.storage.read_bytes_per_s)
    assert fleet.storage.read_peak_bytes_per_s == pytest.approx(agentic.storage.read_peak_bytes_per_s)


@pytest.fixture
def app():
    return build_app(display=False)


def _text(widget_html: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", widget_html)))


def test_a_storage_without_io_says_so_and_draws_no_blender(app):
    datapath = app.open_tab("Data path")
    assert datapath.blend_chart.chart is not None  # the default preset's blend is drawn
    data = to_dict(preset("fleet-over-the-day"))
    data["workloads"] = [w for w in data["workloads"] if w["kind"] == "job-stream"]  # no storage IO at all
    assert app.state.load(data) is None
    s = app.state.plan.storage
    assert s.read_peak_bytes_per_s == s.write_peak_bytes_per_s == s.read_iops == 0.0
    assert datapath.blend_chart.chart is None  # the old chart went, no empty one came
    assert "No workload reads or writes the shared storage" in datapath.blend.value
    assert "no storage IO" not in datapath.blend.value and "<table" not in datapath.blend.value
    # no p95 of a queue nothing uses: the unloaded latency, named so
    assert "storage.latency_p95" not in datapath.figures.value
    assert shown(datapath.figures.value, "storage.latency_unloaded") == pytest.approx(s.station.service_seconds)


def test_agentic_coding_data_path_shows_the_weights_burst(app):
    app.preset.value = "agentic-coding"
    datapath = app.open_tab("Data path")
    s = app.state.plan.storage
    assert shown(datapath.figures.value, "storage.read_peak") == pytest.approx(s.read_peak_bytes_per_s, rel=5e-3)
    assert shown(datapath.figures.value, "storage.read") == pytest.approx(s.read_bytes_per_s, rel=5e-3)
    text = _text(datapath.blend.value)
    assert "model loading" in text and "read peak [GB/s]" in text and " 168 " in text
    assert datapath.blend_chart.chart is not None


@pytest.mark.parametrize("preset_name", ["xe9680-genai", "agentic-coding"])
def test_the_queueing_mark_is_the_plans_operating_point(app, preset_name):
    from aisize.app.sections.queueing import stations

    app.preset.value = preset_name
    queueing = app.open_tab("Queueing")
    p = app.state.plan
    s = p.storage
    q = stations(p)[queueing.station.value]
    assert queueing.station.value.startswith("shared storage")
    # Little's law at the plan's demand: outstanding IOs = IO rate x mean latency
    ops = s.read_iops + s.write_iops
    assert q.operating_point == pytest.approx(ops * s.latency_mean_seconds) and q.operating_point > 0
    assert queueing.chart.chart.params.marked == pytest.approx(q.operating_point)
    queueing.outstanding.value = 1000  # the what-if slider moves the what-if figures, not the mark
    assert queueing.chart.chart.params.marked == pytest.approx(q.operating_point)
    assert shown(queueing.figures.value, "queueing.plan_point") == pytest.approx(q.operating_point, rel=5e-3)
    # coloured by its own verdict: far below the knee here, while the what-if at 1,000 is past it
    assert q.operating_point < q.knee_concurrency
    assert _state(queueing.figures.value, "queueing.plan_point") == "good"
    assert _state(queueing.figures.value, "queueing.latency") == "bad"


def _state(cards_html: str, key: str) -> str:
    """The colour (state) of the card showing ``key``."""
    m = re.search(rf"<div class='aisize-card ?([^']*)' title='[^']*'><div class='aisize-label'>[^<]*</div>"
                  rf"<div><span class='aisize-value' data-key='{re.escape(key)}'>", cards_html)
    assert m, key
    return m[1]


def test_an_inference_station_is_marked_at_its_requests_in_flight(app):
    from aisize.app.sections.queueing import stations

    queueing = app.open_tab("Queueing")
    p = app.state.plan
    i = p.inference[0]
    queueing.station.value = f"inference: {i.name}"
    q = stations(p)[queueing.station.value]
    assert q.operating_point == pytest.approx(i.requests_per_s * i.request_seconds)
    assert queueing.chart.chart.params.marked == pytest.approx(q.operating_point)
    assert shown(queueing.figures.value, "queueing.plan_latency") == pytest.approx(i.request_seconds, rel=5e-3)


def test_one_column_one_unit_and_three_significant_figures_a_cell():
    # the review's column: checkpoint write peaks 2 GB/s twice and a total of 4 GB/s read "2.00", "2", "4.00"
    unit, texts = column([2e9, 2e9, 4e9], F.rate)
    assert (unit, texts) == ("GB/s", ["2.00", "2.00", "4.00"])
    # issue 49 (xe9680-genai): the 8B job's 112 GB checkpoint and the LoRA job's 2.90 GB one read "112" and
    # "2.90", not "112" and "3" (the largest's decimals) nor "112.00" (the smallest's)
    assert column([2.90e9, 112e9], F.bytes_si) == ("GB", ["2.90", "112"])
    # a small figure beside a large one: neither a zero nor "< 1", but its own unit, shown in the cell
    unit, texts = column([168.2e9, 0.0, 561e3], F.rate)
    assert unit == "GB/s" and texts == ["168", "0", "561 kB/s"]
    # the blend table's GB/s column of xe9680-genai: 41.8 kB/s is not "0.00004", 8.92 MB/s keeps three figures
    assert column([41.8e3, 0.0, 224e3, 8.92e6], "GB/s") == ("GB/s", ["41.8 kB/s", "0", "224 kB/s", "0.00892"])
    unit, texts = column([36.2e3, 228e3], F.rate)  # read needs of 0.0000362 GB/s read in kB/s
    assert (unit, texts) == ("kB/s", ["36.2", "228"])
    assert column([0.0004, 0.04, 8.51], "IO/s") == ("IO/s", ["< 0.001", "0.0400", "8.51"])  # no smaller unit
    assert column([2e9, None, math.nan], F.bytes_si) == ("GB", ["2.00", "", ""])


def _three_figures(text: str) -> bool:
    """A cell in its column's unit with three significant figures, or a whole number of three or more digits."""
    digits = text.replace(",", "").replace(".", "").lstrip("0")
    return text == "0" or len(digits) == 3 or ("." not in text and len(digits) > 3)


def test_the_data_path_tables_state_one_unit_per_column(app):
    for name in ("xe9680-genai", "hpe-weka-resnet", "io-blender", "llama3-70b-pretrain"):
        app.preset.value = name
        datapath = app.open_tab("Data path")
        for table in (datapath.jobs.value, datapath.blend.value):
            heads = re.findall(r"<th>([^<]*)</th>", html.unescape(table))
            rows = [[html.unescape(c) for c in re.findall(r"<td>([^<]*)</td>", r)]
                    for r in re.findall(r"<tr>(.*?)</tr>", table)[1:]]
            assert heads and rows
            for k, head in enumerate(heads):
                if "[" not in head:
                    continue
                unit = head[head.index("[") + 1:-1]
                for c in (r[k] for r in rows if r[k]):
                    # a number in the column's unit to three figures, or a smaller figure that names its own unit
                    assert _three_figures(c) or re.fullmatch(r"(< 0\.001|[\d.,]+) \S+", c), (name, head, c)
                    assert not re.fullmatch(r"0\.0{3,}\d*", c), (name, head, c)  # never "0.00004" nor "0.00000"
                    assert " " not in c or not c.endswith(unit), (name, head, c)


def test_the_report_blender_says_so_without_io_and_tables_the_weights_burst():
    from aisize.report import sections as S
    from aisize.report.queue_sections import blender

    data = to_dict(preset("fleet-over-the-day"))
    data["workloads"] = [w for w in data["workloads"] if w["kind"] == "job-stream"]
    empty = str(blender(S.context(from_dict(data))))
    assert "No workload reads or writes the shared storage" in empty
    assert "no storage IO" not in empty and "<table" not in empty and "<svg" not in empty
    shown = str(blender(S.context(preset("agentic-coding"))))
    assert "Coding agent R1 model loading" in shown and "168 GB/s" in shown


@pytest.mark.parametrize("replicas, gpus, servers, restarts_per_hour", [
    (2, 32, 4, 2 / 5000),  # a replica across two servers restarts when either fails
    (8, 8, 1, 1 / 5000),  # eight single-GPU replicas on one server: each restarts when it fails
])
def test_restarts_follow_the_servers_a_replica_spans(replicas, gpus, servers, restarts_per_hour):
    from types import SimpleNamespace

    from aisize.fleet.failures import FailureRates
    from aisize.plan.storage import model_loads

    node = FailureRates("node-mtbf", 0.0, 1 / 5000, 0.0, "test")
    service = SimpleNamespace(name="s", replicas=replicas, gpus=gpus, servers=servers, weights_bytes=1e12,
                              model_loads_per_hour=0.0)
    w = model_loads(service, node)
    assert w.read_peak_bytes_per_s == pytest.approx(replicas * 1e12 / C.MODEL_LOAD_SECONDS)
    assert w.read_bytes_per_s == pytest.approx(replicas * 1e12 * restarts_per_hour / HOUR)
    never = model_loads(service, FailureRates("none", 0.0, 0.0, 0.0, "test"))  # no failures, no reloads
    assert never.read_bytes_per_s == 0.0 and never.read_peak_bytes_per_s == w.read_peak_bytes_per_s


def test_the_sizing_constraint_is_shown_with_how_much_of_it_is_used():
    """'Binding constraint: read' at 1 % use read as if read limited the plan (screenshot review): the card and the
    CLI now say what sized the units and how much of it the peak uses."""
    from aisize.present.summary import summary_text
    p = plan(preset("xe9680-genai"))
    s = p.storage
    assert s.binding == "read" and s.utilisation["read"] < 0.02
    assert f"sized by read ({F.pct(s.utilisation['read'])} used at the peak)" in summary_text(p)


def test_serving_at_scale_says_what_sets_its_read_peak_in_gb_per_s(app):
    """Review 2 (S3): the 68.5 GB/s read peak of serving-at-scale is its three services' deployment bursts, the
    replicas x weights / 60 s of each (11.2 + 27.1 + 30.3 GB/s), shown beside the card in words; the blend chart and
    table read GB/s as the cards do, and one unit is 'unit', not '1 units'."""
    app.preset.value = "serving-at-scale"
    datapath = app.open_tab("Data path")
    p = app.state.plan
    s = p.storage
    loads = {w["name"]: w["read_peak_bytes_per_s"] for w in s.workloads}
    assert sorted(round(v / GB, 1) for v in loads.values()) == [11.2, 27.1, 30.3]
    assert s.read_peak_bytes_per_s == pytest.approx(sum(loads.values()))
    assert round(s.read_peak_bytes_per_s / GB, 1) == 68.5
    note = _text(re.search(r"data-key='storage.read_peak_note'>(.*?)</p>", datapath.figures.value)[1])
    assert note.startswith("Read peak: 68.5 GB/s of it: all replicas of 3 services loading their weights within 60 s")
    assert "model_loads_per_hour" in note and "RAG chat 70B 30.3 GB/s" in note
    # one unit for transfer rates: the chart's axis and data, and the blend table, in GB/s
    assert "average rate [GB/s]" in json_text(datapath.blend_chart.chart)
    assert "read [GB/s]" in _text(datapath.blend.value) and "MB/s" not in _text(datapath.blend.value)
    assert s.units == 1 and re.search(r"data-key='storage.units'>1</span> <span class='aisize-unit'>unit</span>",
                                      datapath.figures.value)


def json_text(chart_slot_chart) -> str:
    """The chart's spec as text (whatever the slot holds: an Altair chart or its Vega-Lite dict)."""
    import json

    chart = getattr(chart_slot_chart, "chart", chart_slot_chart)
    spec = chart.to_dict() if hasattr(chart, "to_dict") else chart
    return json.dumps(spec)


def test_the_blend_chart_is_in_gb_per_s_however_small():
    from aisize import charts

    small = charts.io_blend([{"name": "a", "read_bytes_per_s": 4e6, "write_bytes_per_s": 1e6}])
    assert small.to_dict()["encoding"]["x"]["title"] == "average rate [GB/s]"
    assert sorted(r["rate"] for d in small.to_dict()["datasets"].values() for r in d) == [0.001, 0.004]
