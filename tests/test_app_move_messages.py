"""What a slider move sends to the page (issue 51): one message per changed output, a chart's params and rows in one
Vega changeset, and no params for the page to send back."""

from __future__ import annotations

import comm
import pytest

from aisize.app import build_app
from aisize.app import controls as K


@pytest.fixture()
def sent(monkeypatch):
    """The comm messages the widgets publish: (comm id, message type, message data)."""
    messages: list[tuple[str, str, dict]] = []

    def publish(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        messages.append((self.comm_id, msg_type, data))
    monkeypatch.setattr(comm.DummyComm, "publish_msg", publish)
    return messages


def updates(sent, widget) -> list[dict]:
    return [data["state"] for cid, kind, data in sent if cid == widget.comm.comm_id and kind == "comm_msg"
            and data.get("method") == "update"]


def test_a_rate_move_sends_the_chart_one_changeset_of_signals_and_rows(sent):
    app = build_app(display=False)
    inference = app.open_tab("Inference")
    chart = inference.latency_chart.chart
    assert chart.get_state()["_params"] == {}  # the page holds no params: it registers no param listeners
    sent.clear()
    inference.rate.value = 200.0  # more replicas: a new marker, rate factor and title
    assert inference.latency_chart.chart is chart
    (state,) = updates(sent, chart)  # one message for the chart
    assert set(state) == {"_py_to_js_updates"}
    kinds = [(u["namespace"], u["name"]) for u in state["_py_to_js_updates"]]
    assert kinds == [("signal", "marked"), ("signal", "rate_factor"), ("signal", K.TITLE)]
    assert dict((u["name"], u["value"]) for u in state["_py_to_js_updates"])["marked"] == 200.0
    # the kernel's params and spec follow, with no message of their own
    assert chart.params.marked == 200.0 and chart._params["marked"] == 200.0
    assert {p["name"]: p["value"] for p in chart.spec["params"]}["marked"] == 200.0
    assert all("_params" not in s for cid, kind, data in sent if kind == "comm_msg" for s in [data.get("state", {})])
    sent.clear()
    inference.output.value = 512  # a new curve: signals, then its rows, in the same changeset
    (state,) = updates(sent, chart)
    kinds = [(u["namespace"], u["name"]) for u in state["_py_to_js_updates"]]
    assert ("data", "serving_curve") in kinds
    assert kinds.index(("data", "serving_curve")) > max(k for k, (space, _) in enumerate(kinds) if space == "signal")


def test_a_marker_move_sends_the_marker_alone(sent):
    app = build_app(display=False)
    inference = app.open_tab("Inference")
    chart = inference.latency_chart.chart
    sent.clear()
    inference.rate.value = 22.4  # the same replicas: only the planned load moves
    (state,) = updates(sent, chart)
    assert state["_py_to_js_updates"] == [{"namespace": "signal", "name": "marked", "scope": [], "value": 22.4}]


def test_an_unchanged_output_is_not_sent(sent):
    app = build_app(display=False)
    inference = app.open_tab("Inference")
    inference.rate.value = 200.0
    sent.clear()
    inference.rate.value = 200.0  # no change: no plan, no message
    assert sent == []
    inference.ttft.value = 2100.0  # the targets move, the memory chart does not
    assert updates(sent, inference.memory_chart.chart) == []


def test_a_value_from_the_page_comes_back_only_where_the_kernel_changed_it(sent):
    """No echo_update of each value the page sends (one message a move: the page's widget manager drops an echo of
    its own update anyway); a value the kernel's callbacks set otherwise still goes to the page as an update."""
    import ipywidgets as widgets

    app = build_app(display=False)
    cost = app.open_tab("Cost")
    sent.clear()
    cost.life.set_state({"value": cost.life.value + cost.life.step})  # as the page's update message
    assert sent and not [data for _, _, data in sent if data and data.get("method") == "echo_update"]
    assert not updates(sent, cost.life)
    clamped = widgets.IntSlider(value=1, max=10)
    clamped.observe(lambda change: setattr(clamped, "value", 3) if change["new"] == 5 else None, names="value")
    sent.clear()
    clamped.set_state({"value": 5})
    assert updates(sent, clamped) == [{"value": 3}] and clamped.value == 3
