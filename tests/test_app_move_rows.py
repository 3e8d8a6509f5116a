"""What a move sends when a chart's rows only rescale (issue 51): the latency chart's rows are one replica's curve
and the replica count is a param the chart multiplies the rates by, so a request-rate move that changes only the
replica count sends signals, no rows; the drawn chart is the same SVG as the fleet's curve drawn directly."""

from __future__ import annotations

from dataclasses import replace

import comm
import pandas as pd
import pytest

from aisize import charts
from aisize.app import build_app
from aisize.plan import latency_curve


@pytest.fixture()
def sent(monkeypatch):
    """The comm messages the widgets publish: (comm id, message data)."""
    messages: list[tuple[str, dict]] = []

    def publish(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        if msg_type == "comm_msg":
            messages.append((self.comm_id, data))
    monkeypatch.setattr(comm.DummyComm, "publish_msg", publish)
    return messages


def chart_updates(sent, chart) -> list[list[dict]]:
    return [data["state"]["_py_to_js_updates"] for cid, data in sent
            if cid == chart.comm.comm_id and "_py_to_js_updates" in data.get("state", {})]


def test_a_move_that_changes_only_the_replica_count_sends_no_rows(sent):
    app = build_app(display=False)
    inference = app.open_tab("Inference")
    slot = inference.latency_chart
    rows_before = slot.data[charts.SERVING_CURVE]
    sent.clear()
    inference.rate.value = 200.0  # more replicas, the same replica: its curve is unchanged
    i = app.state.plan.inference[0]
    assert i.replicas > 2
    (update,) = chart_updates(sent, slot.chart)
    assert {(u["namespace"], u["name"]) for u in update} == {
        ("signal", charts.MARK), ("signal", charts.RATE_FACTOR), ("signal", "chart_title")}
    assert {u["name"]: u["value"] for u in update}[charts.RATE_FACTOR] == i.replicas
    assert slot.chart.params.rate_factor == i.replicas
    # the rows the page holds are one replica's; times the factor they are the fleet's curve, to the bit
    assert slot.data[charts.SERVING_CURVE] is rows_before
    fleet = charts.serving_latency_data(latency_curve(i), i.ttft_target_seconds, i.tpot_target_seconds)
    drawn = [dict(r, requests_per_s=r["requests_per_s"] * i.replicas) for r in rows_before]
    assert drawn == fleet[charts.SERVING_CURVE]
    assert slot.chart.spec["datasets"][charts.SERVING_CURVE] == charts.serving_latency_data(
        latency_curve(replace(i, replicas=1)), i.ttft_target_seconds, i.tpot_target_seconds)[charts.SERVING_CURVE]


def test_a_new_replica_curve_sends_new_rows(sent):
    app = build_app(display=False)
    inference = app.open_tab("Inference")
    slot = inference.latency_chart
    sent.clear()
    inference.prompt.value = 2048  # a longer prompt: a new curve
    (update,) = chart_updates(sent, slot.chart)
    rows = {u["name"]: u["value"] for u in update if u["namespace"] == "data"}
    i = app.state.plan.inference[0]
    assert rows[charts.SERVING_CURVE] == charts.serving_latency_data(
        latency_curve(replace(i, replicas=1)), i.ttft_target_seconds, i.tpot_target_seconds)[charts.SERVING_CURVE]


def test_the_drawn_chart_at_a_rate_factor_is_the_fleets_curve_drawn(monkeypatch):
    vl_convert = pytest.importorskip("vl_convert")
    one = pd.DataFrame({"requests_per_s": [0.1, 1.3, 2.7], "ttft_seconds": [0.1, 0.2, 0.9],
                        "ttft_p95_seconds": [0.2, 0.3, 1.5], "tpot_seconds": [0.01, 0.02, 0.05],
                        "tpot_p95_seconds": [0.02, 0.03, 0.08]})
    fleet = one.assign(requests_per_s=one["requests_per_s"] * 7)
    at_factor = charts.serving_latency(one, 0.5, 0.05, 9.0, rate_factor=7)
    direct = charts.serving_latency(fleet, 0.5, 0.05, 9.0)
    svg = vl_convert.vegalite_to_svg(at_factor.to_dict())
    assert svg == vl_convert.vegalite_to_svg(direct.to_dict())
    assert svg != vl_convert.vegalite_to_svg(charts.serving_latency(one, 0.5, 0.05, 9.0).to_dict())


@pytest.mark.parametrize("bad", [0, 2.5, -3])
def test_a_rate_factor_out_of_range_is_refused_by_name(bad):
    curve = pd.DataFrame({"requests_per_s": [1.0], "ttft_seconds": [0.1], "ttft_p95_seconds": [0.2],
                          "tpot_seconds": [0.01], "tpot_p95_seconds": [0.02]})
    with pytest.raises(ValueError, match="rate_factor"):
        charts.serving_latency(curve, rate_factor=bad)
