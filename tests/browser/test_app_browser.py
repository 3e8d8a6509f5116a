"""The served app in a real browser: offline, locked down, and computing right.

Run with ``pytest -m browser tests/browser``; needs Debian's ``chromium``.
"""

from __future__ import annotations

import json
import math
import re
import time
import urllib.error
import urllib.request
import uuid

import pytest

from aisize import format as F
from aisize.app import chart_bundle
from aisize.plan import plan
from aisize.scenario import DEFAULT_PRESET, dumps, from_dict, preset, to_dict

pytestmark = pytest.mark.browser

RENDER_MS = 60_000
UPDATE_MS = 20_000
# Text that must never reach the page: kernel errors and server error pages.
ERROR_TEXT = ("Traceback", "Error:", "Exception", "Internal Server Error", "is not allowed", "NaN")


def api_plan(edit):
    data = to_dict(preset(DEFAULT_PRESET))
    edit(data)
    return plan(from_dict(data))


def figure(page, key: str) -> str:
    return page.inner_text(f"[data-key='{key}']")


def number(text: str) -> float:
    return float(text.replace(",", ""))


def open_app(page, url: str):
    response = page.goto(url)
    page.wait_for_selector("[data-key='training.gpus']", timeout=RENDER_MS)
    page.wait_for_selector(".vega-embed svg.marks", timeout=RENDER_MS)
    return response


def open_tab(page, title: str) -> None:
    page.click(f".lm-TabBar-tab:has-text('{title}')")


def control(page, label: str, inner: str):
    """The visible control labelled ``label`` (its ``inner`` element: select, .noUi-handle, ...)."""
    return page.locator(f".widget-inline-hbox:has(label:text-is('{label}')) {inner} >> visible=true").first


def wait_for_change(page, key: str, old: str) -> str:
    page.wait_for_function(
        "([key, old]) => { const e = document.querySelector(`[data-key='${key}']`);"
        " return e && e.offsetParent !== null && e.textContent !== old; }", arg=[key, old], timeout=UPDATE_MS)
    return figure(page, key)


def assert_clean(page, requests_made) -> None:
    body = page.inner_text("body")
    for text in ERROR_TEXT:
        assert text not in body
    assert page.locator("[data-mime-type='application/vnd.jupyter.stderr']").count() == 0
    assert page.locator(".aisize-error").count() == 0
    assert requests_made.seen, "the request handler saw nothing: the check would be vacuous"
    assert requests_made.blocked == []
    assert page.evaluate("window.cspViolations") == []


def test_page_renders_offline_with_csp(served_app, page, requests_made, tmp_path):
    response = open_app(page, served_app.url)
    csp = response.headers.get("content-security-policy", "")
    assert "default-src 'self'" in csp and "connect-src 'self'" in csp
    assert page.title() == "aisize — AI cluster sizing workbook"
    assert "aisize — AI cluster sizing workbook" in page.inner_text("h1")
    assert preset(DEFAULT_PRESET).name in page.inner_text(".aisize-title")
    base = plan(preset(DEFAULT_PRESET))
    assert number(figure(page, "training.gpus")) == base.training[0].gpus
    assert page.locator(".vega-embed svg.marks").count() >= 2  # memory and GPUs-vs-days charts
    # the chart bundle is preloaded from the page's head, and that one download is the one the charts use
    bundle = chart_bundle.bundle_name()
    assert page.locator("link[rel=modulepreload]").get_attribute("href").endswith(bundle)
    assert sum(url.endswith(bundle) for url in requests_made.seen) == 1
    page.screenshot(path=tmp_path / "app.png", full_page=True)
    for tab in ("Inference", "Data path", "Network", "Queueing", "Summary", "Accuracy"):
        open_tab(page, tab)
        if tab == "Summary":
            page.wait_for_selector("[data-key='summary.gpus'] >> visible=true", timeout=RENDER_MS)
        else:
            page.wait_for_selector(".vega-embed svg.marks >> visible=true", timeout=RENDER_MS)
        page.screenshot(path=tmp_path / f"app-{tab.replace(' ', '-').lower()}.png", full_page=True)
    assert number(figure(page, "summary.gpus")) == base.gpus
    assert_clean(page, requests_made)


def test_page_loads_nothing_external_even_without_csp(served_app, page_without_csp, requests_made):
    open_app(page_without_csp, served_app.url)
    page_without_csp.wait_for_load_state("networkidle")
    assert requests_made.blocked == []
    # the buttons' icons draw with the FontAwesome voila's style bundle carries, its web font from this server:
    # wait for the face to load (networkidle can come before the font is decoded), then it must be loaded
    icon = page_without_csp.evaluate("""async () => { const i = document.querySelector('button i.fa-undo');
        const faces = await document.fonts.load('900 12px "Font Awesome 5 Free"');
        return [getComputedStyle(i, '::before').fontFamily,
                faces.length > 0 && document.fonts.check('900 12px "Font Awesome 5 Free"')]; }""")
    assert icon == ['"Font Awesome 5 Free"', True]
    assert any(url.startswith(served_app.url) and url.endswith(".woff2") for url in requests_made.seen)


def test_slider_and_dropdown_update_the_figures(served_app, page, requests_made, tmp_path):
    open_app(page, served_app.url)

    # a dropdown: the first training job's model
    old = figure(page, "training.memory")
    control(page, "Model", "select").select_option("llama-2-7b")
    shown = wait_for_change(page, "training.memory", old)
    expected = api_plan(lambda d: d["workloads"][0].update(model="llama-2-7b")).training[0]
    assert shown == F.bytes_gpu(expected.memory_bytes["total_bytes"]).value  # the API's value, as shown
    assert number(figure(page, "training.gpus")) == expected.gpus

    # a slider, one step right with the keyboard: the request rate (log slider, 20 steps a decade)
    open_tab(page, "Inference")
    page.wait_for_selector("[data-key='inference.utilisation'] >> visible=true", timeout=RENDER_MS)
    old = figure(page, "inference.utilisation")
    control(page, "Request rate [requests/s]", ".noUi-handle").focus()
    page.keyboard.press("ArrowRight")
    shown = wait_for_change(page, "inference.utilisation", old)
    # the slider's exponents run from log10(0.1) = -1 in steps of 0.05: one step right of 20 is 10^1.35
    low, step = -1.0, 0.05
    rate = 10 ** (low + (math.floor((math.log10(20.0) - low) / step + 1e-9) + 1) * step)

    def edit(d):
        d["workloads"][0]["model"] = "llama-2-7b"
        d["workloads"][2]["requests_per_s"] = rate
    expected = api_plan(edit).inference[0]
    assert shown == F.pct(expected.utilisation).value
    assert figure(page, "inference.latency_p95") == F.duration(expected.latency_p95_seconds).value
    assert number(figure(page, "inference.replicas")) == expected.replicas
    page.screenshot(path=tmp_path / "app-after-changes.png", full_page=True)
    assert_clean(page, requests_made)


def test_an_invalid_combination_shows_a_message_not_a_traceback(served_app, page, requests_made):
    open_app(page, served_app.url)
    gpus = figure(page, "training.gpus")
    control(page, "Parallelism", "select").select_option("fixed")
    control(page, "TP", "select").select_option("64")
    page.wait_for_selector(".aisize-error >> visible=true", timeout=UPDATE_MS)
    assert "must divide gpus" in page.inner_text(".aisize-error >> visible=true")
    assert figure(page, "training.gpus") == gpus  # the last valid result stays
    assert "Traceback" not in page.inner_text("body")
    assert requests_made.blocked == []


def upload(page, button: str, path) -> None:
    """Choose ``path`` in the file dialog the upload button ``button`` opens (as a user would)."""
    with page.expect_file_chooser() as chooser:
        page.locator("button.widget-upload", has_text=button).click()
    chooser.value.set_files(str(path))


def test_custom_hardware_and_config_json_models(served_app, page, requests_made, tmp_path):
    """Issue 15's proof in the browser: a scenario file with config.json models on the site's own
    hardware runs in the app; then a config.json uploaded in the scenario bar becomes a model."""
    from custom_scenario import NAME, scenario_data
    from hf_configs import LLAMA_3_1_8B

    open_app(page, served_app.url)
    scenario_file = tmp_path / "site.yaml"
    scenario_file.write_text(dumps(from_dict(scenario_data())))
    upload(page, "Load file", scenario_file)
    page.wait_for_function("name => document.querySelector('.aisize-title')?.textContent.includes(name)",
                           arg=NAME, timeout=UPDATE_MS)
    origin = "[data-key='model.origin']"
    assert "config.json 'Qwen2.5-7B/config.json', model_type qwen2" in page.inner_text(origin)
    expected = plan(from_dict(scenario_data()))
    page.wait_for_function("() => document.querySelector(\"[data-key='training.gpus']\")?.textContent === '16'",
                           timeout=UPDATE_MS)
    open_tab(page, "Inference")
    page.wait_for_selector("[data-key='inference.replicas'] >> visible=true", timeout=RENDER_MS)
    assert number(figure(page, "inference.replicas")) == expected.inference[0].replicas
    open_tab(page, "Summary")
    page.wait_for_selector("[data-key='summary.gpus'] >> visible=true", timeout=RENDER_MS)
    assert number(figure(page, "summary.gpus")) == expected.gpus

    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA_3_1_8B))
    upload(page, "Load config.json", config)
    page.wait_for_function("sel => document.querySelector(sel)?.textContent.includes('model_type llama')",
                           arg=origin, timeout=UPDATE_MS)
    page.screenshot(path=tmp_path / "app-custom.png", full_page=True)
    assert_clean(page, requests_made)


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


def test_more_replicas_redraw_the_latency_curve_in_place(served_app, page, requests_made):
    open_app(page, served_app.url)
    open_tab(page, "Inference")
    page.wait_for_selector("[data-key='inference.utilisation'] >> visible=true", timeout=RENDER_MS)
    chart = "[...document.querySelectorAll('.vega-embed svg.marks')].filter(e => e.getBoundingClientRect().width > 0).pop()"
    first = int(number(figure(page, "inference.replicas")))
    page.wait_for_function(f"() => {chart}?.textContent.includes('({first} replica')", timeout=RENDER_MS)
    ticks = f"() => [...{chart}.querySelectorAll('.role-axis-label text')].map(t => t.textContent).join('|')"
    before = page.evaluate(ticks)
    control(page, "Request rate [requests/s]", ".noUi-handle").focus()
    for _ in range(12):  # x1.12 a step from 20 requests/s: another replica well before 80 requests/s
        old = figure(page, "inference.utilisation")
        page.keyboard.press("ArrowRight")
        wait_for_change(page, "inference.utilisation", old)
        if number(figure(page, "inference.replicas")) > first:
            break
    replicas = int(number(figure(page, "inference.replicas")))
    assert replicas > first
    # the rows and the title reach the drawn view (a changeset and a param): new axis range, new title
    page.wait_for_function(f"() => {chart}.textContent.includes('({replicas} replica')", timeout=UPDATE_MS)
    page.wait_for_function(f"before => ({ticks})() !== before", arg=before, timeout=UPDATE_MS)
    assert_clean(page, requests_made)


SHOWN_CHARTS = "[...document.querySelectorAll('.vega-embed svg.marks')].filter(e => e.getBoundingClientRect().width > 0)"
# (preset, tab, the figure a move changes, the slider, its steps, {chart: text only that drawn chart holds})
IN_PLACE = {
    "cluster": ("shared-cluster", "Cluster", "cluster.queue_wait_mean", "Jobs per day", 1,
                {"waits": "e.textContent.includes('wait [h]')",
                 "timeline": "e.textContent.includes('time from the start [days]')"}),
    "fleet": ("fleet-over-the-day", "Fleet", "fleet.gpu_hours", "Min replicas", 4,  # 2 -> 6 replicas at night
              {"day": "e.textContent.includes('offered load [requests/s]')",
               "pool": "e.textContent.includes('hour of the day') && !e.textContent.includes('offered load')"}),
}


@pytest.mark.parametrize("case", list(IN_PLACE))
def test_a_move_redraws_the_cluster_and_fleet_charts_in_place(served_app, page, requests_made, case):
    """The Cluster tab's waits and timeline charts and the Fleet tab's day and pool charts take a move's rows as a
    changeset (issue 51): the same drawn views, still on the page, with new marks; no chart is embedded again (on
    5beb575, which built them anew, this times out)."""
    name, tab, key, slider, steps, charts = IN_PLACE[case]
    open_app(page, served_app.url)
    control(page, "Preset", "select").select_option(name)
    open_tab(page, tab)
    page.wait_for_selector(f"[data-key='{key}'] >> visible=true", timeout=RENDER_MS)
    for chart, test in charts.items():
        js = f"{SHOWN_CHARTS}.find(e => {test})"
        page.wait_for_function(f"() => !!({js})", timeout=RENDER_MS)
        page.evaluate(f"() => {{ window.__{chart} = {js}; window.__{chart}_marks = window.__{chart}.innerHTML; }}")
    old = figure(page, key)
    control(page, slider, ".noUi-handle").focus()
    for _ in range(steps):
        page.keyboard.press("ArrowRight")
    wait_for_change(page, key, old)
    for chart in charts:
        page.wait_for_function(f"() => window.__{chart}.isConnected && window.__{chart}.innerHTML !== "
                               f"window.__{chart}_marks", timeout=UPDATE_MS)
    assert_clean(page, requests_made)


def test_cost_tab_shows_the_plans_cost_and_follows_the_life(served_app, page, requests_made, tmp_path):
    open_app(page, served_app.url)
    open_tab(page, "Cost")
    page.wait_for_selector("[data-key='cost.capital'] >> visible=true", timeout=RENDER_MS)
    base = api_plan(lambda d: None).cost
    assert figure(page, "cost.capital") == F.usd(base.capital_usd).value
    assert figure(page, "cost.per_gpu_hour") == F.usd(base.usd_per_gpu_hour).value
    old = figure(page, "cost.per_gpu_hour")
    control(page, "Life [years]", ".noUi-handle").focus()
    page.keyboard.press("ArrowRight")  # 4 -> 4.5 years
    shown = wait_for_change(page, "cost.per_gpu_hour", old)
    longer = api_plan(lambda d: d["cost"].update(life_years=4.5)).cost
    assert shown == F.usd(longer.usd_per_gpu_hour).value and longer.usd_per_gpu_hour < base.usd_per_gpu_hour
    page.screenshot(path=tmp_path / "app-cost.png", full_page=True)
    assert_clean(page, requests_made)


def test_the_title_follows_the_server_and_an_empty_tab_is_cleared(served_app, page, requests_made):
    """Issue 49.4 in the browser: the cluster's server (a scenario-bar control) marks the title as edited, and a
    preset without a training job leaves none of the last job's charts on the Training tab."""
    open_app(page, served_app.url)
    control(page, "Server (whole cluster)", "select").select_option(label="dgx-b200 (8× b200)")
    page.wait_for_function("() => document.querySelector('.aisize-title')?.textContent"
                           ".includes('(edited: server now NVIDIA DGX B200)')", timeout=UPDATE_MS)
    control(page, "Preset", "select").select_option("agentic-coding")
    page.wait_for_function("() => document.body.innerText.includes('This scenario has no training job')",
                           timeout=UPDATE_MS)
    page.wait_for_function("() => ![...document.querySelectorAll('.vega-embed svg.marks')]"
                           ".some(e => e.getBoundingClientRect().width > 0)", timeout=UPDATE_MS)
    assert "(edited" not in page.inner_text(".aisize-title")
    assert_clean(page, requests_made)
