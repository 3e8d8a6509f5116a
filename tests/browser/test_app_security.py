"""The served app against a hostile client: other users' kernels, culling, crafted widget messages.

No browser is driven here: every request is what a script could send. What
voila 0.5 does, read from its handlers and checked below:

- ``/api/kernels/<id>`` (jupyter_server's ``KernelHandler``: GET, DELETE) and
  ``/voila/api/shutdown/<id>`` (POST, the page's close beacon) are routed;
  ``/api/kernels/<id>/restart`` and ``/interrupt`` are not (they fall through
  to the page handler, which has no POST: 405). No route lists kernel ids.
- Every non-GET request must pass tornado's double-submit XSRF check (an
  ``_xsrf`` cookie equal to an ``_xsrf`` argument or ``X-XSRFToken`` header):
  a plain client gets 403.
- That check is not authorisation: the cookie is not signed, so a client that
  knows a kernel id can mint a matching cookie and header and shut that kernel
  down, as it could by sending ``shutdown_request`` (a message type voila
  allows) over the kernel's websocket. The kernel id (a uuid4, sent only in its
  owner's page) is the capability; these tests check it is not disclosed.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
import uuid

import pytest

from aisize.app import serve

pytestmark = pytest.mark.browser

WIDGET_SETTLE_S = 30.0


def request(url: str, method: str = "GET", headers: dict | None = None) -> tuple[int, bytes]:
    data = b"" if method == "POST" else None
    req = urllib.request.Request(url, method=method, headers=headers or {}, data=data)
    try:
        with urllib.request.urlopen(req, timeout=120) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def open_page(url: str) -> tuple[str, bytes]:
    """Load the app as a new visitor: the id of the kernel it was given, and the page."""
    status, html = request(url)
    assert status == 200
    config = re.search(rb'<script id="jupyter-config-data" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(config[1])["kernelId"], html


def kernel_alive(app, kernel_id: str) -> bool:
    status, body = request(f"{app.url}api/kernels/{kernel_id}")
    return status == 200 and json.loads(body)["execution_state"] not in ("dead", "restarting")


FORGED_XSRF = {"Cookie": "_xsrf=minted-by-the-client", "X-XSRFToken": "minted-by-the-client"}


# (a) one visitor cannot stop, restart or find another's kernel

@pytest.mark.parametrize("method,path", [("DELETE", "api/kernels/{}"), ("POST", "voila/api/shutdown/{}"),
                                         ("POST", "api/kernels/{}/restart"),
                                         ("POST", "api/kernels/{}/interrupt")])
def test_a_plain_client_cannot_stop_or_restart_a_kernel(served_app, method, path):
    victim, _ = open_page(served_app.url)
    status, _ = request(served_app.url + path.format(victim), method)
    assert status == 403, (method, path, status)
    assert kernel_alive(served_app, victim)
    log = served_app.log()
    assert f"Kernel shutdown: {victim}" not in log and f"Kernel restarted: {victim}" not in log


@pytest.mark.parametrize("action", ["restart", "interrupt"])
def test_restart_and_interrupt_are_not_routed_even_past_the_xsrf_check(served_app, action):
    victim, _ = open_page(served_app.url)
    status, _ = request(f"{served_app.url}api/kernels/{victim}/{action}", "POST", FORGED_XSRF)
    assert status == 405
    assert kernel_alive(served_app, victim) and f"Kernel restarted: {victim}" not in served_app.log()


def test_a_guessed_kernel_id_reaches_nothing(served_app):
    victim, _ = open_page(served_app.url)
    guess = str(uuid.uuid4())
    for method, path in [("DELETE", f"api/kernels/{guess}"), ("POST", f"voila/api/shutdown/{guess}")]:
        status, _ = request(served_app.url + path, method, FORGED_XSRF)
        assert status in (404, 500), (path, status)  # voila's shutdown handler raises KeyError: 500
    assert kernel_alive(served_app, victim)


def test_kernel_ids_are_not_disclosed_to_other_visitors(served_app):
    victim, victim_page = open_page(served_app.url)
    other, other_page = open_page(served_app.url)
    assert other != victim and victim.encode() not in other_page
    assert uuid.UUID(victim).version == 4  # 122 random bits: not guessable
    for path in ("api/kernels", "api/sessions", "voila/api/kernels", "api/kernels?all=1"):
        status, body = request(served_app.url + path)
        assert status in (403, 404), path
        assert victim.encode() not in body and other.encode() not in body


# (b) idle kernels are culled; a kernel with a page attached is not

def test_idle_kernels_are_culled_and_connected_ones_kept(tmp_path):
    websocket = pytest.importorskip("websocket")
    app = serve.start(tmp_path / "voila.log", pool_size=1, cull_idle_seconds=4, cull_interval_seconds=1)
    try:
        ran = " ".join(app.process.args)
        assert "--MappingKernelManager.cull_idle_timeout=4" in ran
        assert "--MappingKernelManager.cull_interval=1" in ran
        kept, _ = open_page(app.url)
        # attached at once, as the page's widget manager does, before the timeout can pass
        ws = websocket.create_connection(f"ws://127.0.0.1:{app.port}/api/kernels/{kept}/channels", timeout=30)
        try:
            left, _ = open_page(app.url)  # a visitor who left: nothing attached
            deadline = time.monotonic() + 60
            while kernel_alive(app, left) and time.monotonic() < deadline:
                time.sleep(0.5)
            assert not kernel_alive(app, left), "an idle kernel nobody is connected to was not culled"
            assert re.search(rf"Culling .*kernel .*{left}", app.log())
            time.sleep(3.0)  # past the timeout again: the connected kernel stays
            assert kernel_alive(app, kept)
            assert not re.search(rf"Culling .*kernel .*{kept}", app.log())
        finally:
            ws.close()
    finally:
        app.stop()


# (c) crafted widget messages: refused or clamped, the kernel lives, the last valid plan stays

def message(msg_type: str, content: dict, metadata: dict | None = None) -> dict:
    return {"header": {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "username": "attacker",
                       "session": uuid.uuid4().hex, "date": "", "version": "5.3"},
            "parent_header": {}, "metadata": metadata or {}, "content": content,
            "channel": "shell", "buffers": []}


class WidgetClient:
    """Speaks the widget protocol over a kernel's websocket, as a page would."""

    def __init__(self, app, kernel_id: str):
        import websocket

        self.ws = websocket.create_connection(f"ws://127.0.0.1:{app.port}/api/kernels/{kernel_id}/channels",
                                              timeout=5)
        self.control = uuid.uuid4().hex
        # ipywidgets' control comm: one request returns every widget's state
        self.send(message("comm_open", {"comm_id": self.control, "target_name": "jupyter.widget.control",
                                        "data": {}}, {"version": "1.0.0"}))

    def send(self, msg: dict) -> str:
        self.ws.send(json.dumps(msg))
        return msg["header"]["msg_id"]

    def receive_until(self, done, timeout: float = WIDGET_SETTLE_S):
        import websocket

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                reply = json.loads(self.ws.recv())
            except websocket.WebSocketTimeoutException:
                continue
            if done(reply):
                return reply
        raise TimeoutError("no reply from the kernel")

    def states(self) -> dict[str, dict]:
        """model id -> {"model_name", "state"} of every widget in the kernel."""
        for _ in range(3):  # the comm_open may still be in flight on the first try
            asked = self.send(message("comm_msg", {"comm_id": self.control, "data": {"method": "request_states"}}))
            try:
                reply = self.receive_until(lambda r: r["parent_header"].get("msg_id") == asked
                                           and r["header"]["msg_type"] == "comm_msg", timeout=10)
                return reply["content"]["data"]["states"]
            except TimeoutError:
                continue
        raise TimeoutError("no widget states")

    def update(self, model_id: str, state: dict) -> None:
        """Set ``state`` on a widget as the page does when a control moves; return when handled."""
        sent = self.send(message("comm_msg", {"comm_id": model_id,
                                              "data": {"method": "update", "state": state, "buffer_paths": []}}))
        self.receive_until(lambda r: r["header"]["msg_type"] == "status"
                           and r["parent_header"].get("msg_id") == sent
                           and r["content"]["execution_state"] == "idle")

    def kernel_answers(self) -> bool:
        asked = self.send(message("kernel_info_request", {}))
        reply = self.receive_until(lambda r: r["parent_header"].get("msg_id") == asked
                                   and r["header"]["msg_type"] == "kernel_info_reply", timeout=20)
        return reply["content"]["status"] == "ok"

    def close(self) -> None:
        self.ws.close()


def find(states: dict, model_name: str, predicate) -> str:
    found = [k for k, v in states.items() if v["model_name"] == model_name and predicate(v["state"])]
    assert len(found) == 1, (model_name, len(found))
    return found[0]


def shown_html(states: dict) -> str:
    return " ".join(str(v["state"].get("value", "")) for v in states.values() if v["model_name"] == "HTMLModel")


def inference_figures(states: dict) -> str:
    return next(str(v["state"]["value"]) for v in states.values() if v["model_name"] == "HTMLModel"
                and "data-key='inference.utilisation'" in str(v["state"].get("value", "")))


def test_crafted_widget_messages_cannot_break_the_plan(served_app):
    kernel, _ = open_page(served_app.url)
    client = WidgetClient(served_app, kernel)
    try:
        states = client.states()
        tabs = find(states, "TabModel", lambda s: "Inference" in s.get("titles", []))
        client.update(tabs, {"selected_index": states[tabs]["state"]["titles"].index("Inference")})
        states = client.states()
        rate = find(states, "FloatLogSliderModel", lambda s: s.get("description") == "Request rate [requests/s]")
        chooser = find(states, "DropdownModel", lambda s: s.get("description") == "Preset")
        figures, preset_index = inference_figures(states), states[chooser]["state"]["index"]
        rate_before = states[rate]["state"]["value"]

        # refused by the widget (not a float: the kernel logs a TraitError) or by the app (NaN)
        for hostile in [{"value": "x" * 10_000_000}, {"value": {"$gt": 1}}, {"value": None},
                        {"value": [1, 2]}, {"value": float("nan")}]:
            client.update(rate, hostile)
            assert client.kernel_answers()
            states = client.states()
            assert inference_figures(states) == figures, str(hostile)[:40]  # the last valid plan stays
            value = states[rate]["state"]["value"]
            # NaN passes ipywidgets' range clamp (comparisons with NaN are false) and comes back as "nan"
            assert value == rate_before or str(value).lower() == "nan", str(hostile)[:40]
        assert "class='aisize-error'>⚠ workloads.2.inference.requests_per_s: Input should be a finite number" \
            in shown_html(states)
        for hostile in [{"index": 999}, {"index": -7}, {"index": "llama-9000"}, {"index": None},
                        {"value": "no-such-preset"}]:
            client.update(chooser, hostile)
            assert client.kernel_answers()
            states = client.states()
            # None is "nothing selected", a state the page can send; the app ignores it
            assert states[chooser]["state"]["index"] in (preset_index, None), hostile
            assert inference_figures(states) == figures, hostile
        assert "Traceback" not in shown_html(states) and "nan" not in inference_figures(states).lower()

        # clamped to the slider's range: a negative rate becomes its minimum, a valid plan
        client.update(rate, {"value": -5.0})
        states = client.states()
        assert states[rate]["state"]["value"] == pytest.approx(0.1)
        clamped = inference_figures(states)
        assert clamped != figures and "nan" not in clamped.lower()

        # and the page still works: a valid move replans
        client.update(rate, {"value": 200.0})
        states = client.states()
        assert states[rate]["state"]["value"] == 200.0
        assert inference_figures(states) not in (figures, clamped)
        assert "Traceback" not in shown_html(states)
        assert client.kernel_answers()
    finally:
        client.close()
    assert kernel_alive(served_app, kernel)


def test_closing_a_tab_shuts_its_kernel_down(served_app, browser):
    # Voila's page sends a shutdown beacon on unload with the _xsrf cookie's value;
    # aisize/app/jupyter/voila.py makes the server set that cookie, so the beacon passes
    # the XSRF check and the kernel's memory returns at once, not only after culling.
    context = browser.new_context()
    page = context.new_page()
    page.goto(served_app.url)
    page.wait_for_selector("[data-key='training.gpus']", timeout=120_000)
    assert any(c["name"] == "_xsrf" for c in context.cookies())
    config = page.inner_text("#jupyter-config-data")
    kernel_id = json.loads(config)["kernelId"]
    assert kernel_alive(served_app, kernel_id)
    page.close(run_before_unload=True)
    context.close()
    deadline = time.monotonic() + 30
    while kernel_alive(served_app, kernel_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not kernel_alive(served_app, kernel_id)
    assert f"Kernel shutdown: {kernel_id}" in served_app.log()
