"""aisize.app.move_timer: off without its environment variable; with it, one line a widget message, its spans nested."""

import gc
import json
import time
from types import SimpleNamespace

import IPython
import pytest

import aisize.app.state as state_module
from aisize.app import move_timer


class _Kernel:
    """What the timer wraps of an ipykernel kernel: status, the comm_msg handler, the session's send."""

    def __init__(self):
        self.statuses = []
        self.shell_handlers = {"comm_msg": self.handle}
        self.session = SimpleNamespace(send=lambda *args, **kwargs: time.sleep(0.002))

    def _publish_status(self, status, *args, **kwargs):
        self.statuses.append(status)

    def handle(self, stream, idents, msg):
        state_module.plan("scenario")
        self.session.send("iopub", "comm_msg")


@pytest.fixture
def kernel(monkeypatch, tmp_path):
    k = _Kernel()
    monkeypatch.setattr(IPython, "get_ipython", lambda: SimpleNamespace(kernel=k))
    monkeypatch.setattr(state_module, "plan", lambda scenario: time.sleep(0.005))
    callbacks = list(gc.callbacks)
    yield k
    gc.callbacks[:] = callbacks


def test_off_without_the_variable(kernel, monkeypatch):
    monkeypatch.delenv(move_timer.ENV, raising=False)
    handler = kernel.shell_handlers["comm_msg"]
    assert move_timer.install_from_env() is False
    assert kernel.shell_handlers["comm_msg"] is handler


def test_a_folder_that_is_not_there_is_named(kernel, monkeypatch, tmp_path):
    monkeypatch.setenv(move_timer.ENV, str(tmp_path / "missing"))
    handler = kernel.shell_handlers["comm_msg"]
    with pytest.raises(ValueError, match=r"AISIZE_MOVE_TIMER=.*missing.*existing folder"):
        move_timer.install_from_env()
    assert kernel.shell_handlers["comm_msg"] is handler


def test_one_line_a_widget_message(kernel, monkeypatch, tmp_path):
    monkeypatch.setenv(move_timer.ENV, str(tmp_path))
    assert move_timer.install_from_env() is True
    msg = {"content": {"comm_id": "nobody", "data": {"method": "update", "state": {"value": 3}}}}
    for _ in range(2):
        kernel._publish_status("busy")
        kernel.shell_handlers["comm_msg"](None, [], msg)
        kernel._publish_status("idle")
    kernel._publish_status("busy")  # a message that is no comm_msg: not logged
    kernel._publish_status("idle")
    assert kernel.statuses == ["busy", "idle"] * 3
    (log,) = tmp_path.glob("moves-*.jsonl")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(records) == 2
    for r in records:
        assert r["what"] == "NoneType: update ['value']"
        assert r["sends"] == 1
        assert r["plan_wall"] >= 5.0 and r["send_wall"] >= 2.0  # the sleeps
        assert r["wall"] >= r["handler_wall"] >= r["plan_wall"] + r["send_wall"]
        assert r["plan_cpu"] < r["plan_wall"]  # a sleep is no CPU
        assert 0.0 <= r["runqueue"] < r["wall"]
