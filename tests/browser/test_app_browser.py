"""The served app in a real browser: offline, locked down, and computing right.

Run with ``pytest -m browser tests/browser``; needs Debian's ``chromium``.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
import uuid

import pytest

from aisize.app import widgets as app_widgets
from aisize.network import collective_seconds

pytestmark = pytest.mark.browser

RENDER_MS = 60_000
UPDATE_MS = 20_000
# Text that must never reach the page: kernel errors and server error pages.
ERROR_TEXT = ("Traceback", "Error:", "Exception", "Internal Server Error", "is not allowed")


def displayed_seconds(text: str) -> float:
    """'612.5 ms' or '1.225 s' as seconds."""
    match = re.fullmatch(r"\s*([0-9.]+(?:e[-+]?\d+)?) (ms|s)\s*", text)
    assert match, f"not a duration: {text!r}"
    return float(match[1]) * (1e-3 if match[2] == "ms" else 1.0)


def expected_seconds(op: str, gpus: int) -> float:
    """The package API's answer for the page's stated payload and link."""
    return float(collective_seconds(op, app_widgets.PAYLOAD_BYTES, gpus,
                                    app_widgets.link_bytes_per_s()))


def open_app(page, url: str):
    response = page.goto(url)
    page.wait_for_selector(".aisize-result", timeout=RENDER_MS)
    page.wait_for_selector(".vega-embed .mark-symbol path", timeout=RENDER_MS)
    return response


def wait_for_result_change(page, old: str) -> str:
    page.wait_for_function(
        "old => { const e = document.querySelector('.aisize-result');"
        " return e && e.textContent !== old; }", arg=old, timeout=UPDATE_MS)
    return page.inner_text(".aisize-result")


def marked_point(page) -> str:
    """The chart's marked point (its SVG transform), to see the chart follow the slider."""
    return page.get_attribute(".vega-embed .mark-symbol path", "transform")


def test_page_renders_offline_with_csp(served_app, page, requests_made, tmp_path):
    response = open_app(page, served_app.url)
    csp = response.headers.get("content-security-policy", "")
    assert "default-src 'self'" in csp and "connect-src 'self'" in csp
    assert page.title() == "aisize — AI cluster sizing workbook"
    assert "aisize — AI cluster sizing workbook" in page.inner_text("h1")
    assert page.locator(".vega-embed svg.marks").count() == 1
    page.screenshot(path=tmp_path / "app.png", full_page=True)
    body = page.inner_text("body")
    for text in ERROR_TEXT:
        assert text not in body
    assert page.locator("[data-mime-type='application/vnd.jupyter.stderr']").count() == 0
    assert requests_made.seen, "the request handler saw nothing: the check would be vacuous"
    assert requests_made.blocked == []
    assert page.evaluate("window.cspViolations") == []


def test_page_loads_nothing_external_even_without_csp(served_app, page_without_csp, requests_made):
    open_app(page_without_csp, served_app.url)
    page_without_csp.wait_for_load_state("networkidle")
    assert any("fontawesomefree" in url for url in requests_made.seen)
    assert requests_made.blocked == []


def test_slider_and_dropdown_update_result_and_chart(served_app, page, requests_made, tmp_path):
    open_app(page, served_app.url)
    text = page.inner_text(".aisize-result")
    assert displayed_seconds(text) == pytest.approx(
        expected_seconds("all-reduce", app_widgets.GPUS_DEFAULT), rel=5e-4)

    # one step right with the keyboard, as a user would
    point = marked_point(page)
    page.focus(".noUi-handle")
    page.keyboard.press("ArrowRight")
    text = wait_for_result_change(page, text)
    gpus = app_widgets.GPUS_DEFAULT + 1
    assert displayed_seconds(text) == pytest.approx(expected_seconds("all-reduce", gpus), rel=5e-4)
    page.wait_for_function("old => document.querySelector('.vega-embed .mark-symbol path')"
                           ".getAttribute('transform') !== old", arg=point, timeout=UPDATE_MS)

    # a typed value in the slider's readout
    page.click(".widget-readout")
    page.keyboard.press("Control+A")
    page.keyboard.type("64")
    page.keyboard.press("Enter")
    text = wait_for_result_change(page, text)
    assert displayed_seconds(text) == pytest.approx(expected_seconds("all-reduce", 64), rel=5e-4)

    page.select_option("select", "all-gather")
    text = wait_for_result_change(page, text)
    assert displayed_seconds(text) == pytest.approx(expected_seconds("all-gather", 64), rel=5e-4)
    assert "all-gather time" in page.inner_text(".vega-embed")
    page.screenshot(path=tmp_path / "app-all-gather-64.png", full_page=True)
    for bad in ERROR_TEXT:
        assert bad not in page.inner_text("body")
    assert requests_made.blocked == []
    assert page.evaluate("window.cspViolations") == []


def http_status(url: str, method: str = "GET") -> tuple[int, bytes]:
    """Status and body after following redirects (Voila redirects unknown paths)."""
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.mark.parametrize("path", ["api/kernels", "api/contents", "api/contents/pyproject.toml",
                                  "api/sessions", "api/terminals", "voila/files/pyproject.toml",
                                  "voila/files/app.ipynb", "voila/files/../pyproject.toml",
                                  "voila/tree", "voila/render/app.ipynb"])
def test_server_api_and_files_are_not_served(served_app, path):
    status, body = http_status(served_app.url + path)
    assert status in (403, 404), (path, status)
    assert b"[project]" not in body and b"build_app" not in body


def test_starting_a_kernel_is_refused(served_app):
    status, _ = http_status(served_app.url + "api/kernels", method="POST")
    assert status in (403, 404, 405)


def test_execute_request_over_websocket_has_no_effect(served_app, tmp_path):
    websocket = pytest.importorskip("websocket")
    status, html_page = http_status(served_app.url)
    assert status == 200
    config = re.search(rb'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
                       html_page, re.S)
    kernel_id = json.loads(config[1])["kernelId"]
    target = tmp_path / "written-by-kernel"
    ws = websocket.create_connection(
        f"ws://127.0.0.1:{served_app.port}/api/kernels/{kernel_id}/channels", timeout=30)
    try:
        execute = message("execute_request", {
            "code": f"open({str(target)!r}, 'w').write('x')", "silent": False,
            "store_history": False, "user_expressions": {}, "allow_stdin": False,
            "stop_on_error": True})
        info = message("kernel_info_request", {})
        ws.send(json.dumps(execute))
        ws.send(json.dumps(info))
        # the kernel answers the allowed request sent after it: the socket works,
        # and the shell channel has handled whatever came before
        replies = receive_until(ws, "kernel_info_reply", info["header"]["msg_id"])
        time.sleep(1.0)
    finally:
        ws.close()
    assert not target.exists()
    assert not any(r["parent_header"].get("msg_id") == execute["header"]["msg_id"] for r in replies)
    assert 'Received message of type "execute_request", which is not allowed' in served_app.log()


def message(msg_type: str, content: dict) -> dict:
    return {"header": {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "username": "test",
                       "session": uuid.uuid4().hex, "date": "", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "content": content,
            "channel": "shell", "buffers": []}


def receive_until(ws, msg_type: str, parent_id: str, timeout: float = 30.0) -> list[dict]:
    """Messages received until the reply of ``msg_type`` to ``parent_id``."""
    received, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        reply = json.loads(ws.recv())
        received.append(reply)
        if (reply["header"]["msg_type"] == msg_type
                and reply["parent_header"].get("msg_id") == parent_id):
            return received
    raise TimeoutError(f"no {msg_type} within {timeout} s")


def test_chart_menu_offers_no_external_editor(served_app, page):
    open_app(page, served_app.url)
    page.click(".vega-embed summary")
    menu = page.inner_text(".vega-embed .vega-actions")
    assert "Save as SVG" in menu
    assert "Vega Editor" not in menu
