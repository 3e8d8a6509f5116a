"""The app in-process (no browser): controls edit the scenario, shown figures equal the package's API."""

from __future__ import annotations

import html

import base64
import copy
import datetime
import re
import subprocess
import sys

import pytest

from aisize import catalog
from aisize import format as F
from aisize.app import build_app, serve
from aisize.app.sections import network as net
from aisize.app.state import AppState
from aisize.plan import plan
from aisize.present.export import to_json
from aisize.present.training_text import days_range_text
from aisize.queueing import bend_concurrency, knee_concurrency
from aisize.scenario import DEFAULT_PRESET, dumps, from_dict, preset, to_dict
from aisize.units import GB
from shown_figures import shown


MODIFIED = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)


def api_plan(edit=None):
    data = to_dict(preset(DEFAULT_PRESET))
    if edit:
        edit(data)
    return plan(from_dict(data))


@pytest.fixture(scope="module")
def base_plan():
    return api_plan()


@pytest.fixture
def app():
    return build_app(display=False)


def test_opens_on_the_default_preset(app, base_plan):
    assert app.preset.value == DEFAULT_PRESET
    assert app.state.data == to_dict(preset(DEFAULT_PRESET))
    assert preset(DEFAULT_PRESET).name in app.title.value
    t = base_plan.training[0]
    figures = app["Training"].figures.value
    assert shown(figures, "training.gpus") == t.gpus
    assert shown(figures, "training.days") == pytest.approx(t.training_days * 86400, rel=5e-3)
    assert shown(figures, "training.memory") == pytest.approx(t.memory_bytes["total_bytes"], rel=5e-3)
    assert app["Training"].memory_chart.chart is not None  # the first tab is drawn at once


def test_target_days_slider_resizes_the_job(app):
    training = app["Training"]
    training.days.value = 0.25
    expected = api_plan(lambda d: d["workloads"][0].update(target_days=training.days.value)).training[0]
    assert shown(training.figures.value, "training.gpus") == expected.gpus
    assert shown(training.figures.value, "training.servers") == expected.servers
    assert shown(training.figures.value, "training.days") == pytest.approx(expected.training_days * 86400, rel=5e-3)
    assert training.days_chart.chart.params.marked_gpus == expected.gpus
    assert app["Summary"].stale  # hidden sections catch up when shown
    app.open_tab("Summary")
    assert shown(app["Summary"].figures.value, "summary.gpus") == api_plan(
        lambda d: d["workloads"][0].update(target_days=training.days.value)).gpus


@pytest.mark.parametrize("field,value", [("model", "llama-2-13b"), ("precision", "fp8"), ("optimizer", "sgd-momentum"),
                                         ("method", "qlora")])
def test_training_dropdowns(app, field, value):
    training = app["Training"]
    getattr(training, field).value = value
    expected = api_plan(lambda d: d["workloads"][0].update({field: value})).training[0]
    assert training.error.value == ""
    assert shown(training.figures.value, "training.memory") == pytest.approx(
        expected.memory_bytes["total_bytes"], rel=5e-3)
    assert shown(training.figures.value, "training.gpus") == expected.gpus


def test_fixed_layout_and_the_layouts_table(app):
    from aisize.plan import layout_candidates

    training = app["Training"]
    assert "<table" in training.layouts.value and "micro-batch" in training.layouts.value
    # the candidates' step time by part: one stacked bar per layout (aisize.charts.training)
    drawn = [r for d in training.step_chart.chart.spec["datasets"].values() for r in d if "part" in r]
    assert {r["part"] for r in drawn} >= {"compute"} and len({r["layout"] for r in drawn}) > 1
    rows = re.findall(r"<tr>(.*?)</tr>", training.layouts.value, re.S)[1:]  # the planner's candidates
    assert len(rows) == len(layout_candidates(app.state.plan.scenario, training.job.value, 5)) > 0
    lay, first = app.state.plan.training[0].layout, re.findall(r"<td[^>]*>([^<]*)</td>", rows[0])
    assert list(map(int, first[:4])) == [lay.tensor_parallel, lay.pipeline_parallel, lay.data_parallel,
                                        lay.context_parallel]
    training.parallel.value = "fixed"  # the knobs start from the searched layout (TP2 CP2 ZeRO-3, recompute none)
    training.cp.value, training.zero.value, training.recompute.value = 1, 1, "selective"
    training.tp.value = 8
    expected = api_plan(lambda d: d["workloads"][0].update(layout={
        "tensor_parallel": 8, "pipeline_parallel": 1, "expert_parallel": 1, "zero_stage": 1, "micro_batch": 1,
        "recompute": "selective", "context_parallel": 1, "schedule": "1f1b", "virtual_stages": 1})).training[0]
    assert shown(training.figures.value, "training.layout").startswith("TP8 PP1")
    assert shown(training.figures.value, "training.memory") == pytest.approx(
        expected.memory_bytes["total_bytes"], rel=5e-3)


@pytest.mark.parametrize("name", [DEFAULT_PRESET, "llama3-70b-pretrain"])
def test_gpus_vs_days_chart_shows_the_plannable_points(app, name):
    from aisize.app.sections.training import SWEEP_DAYS
    from aisize.plan import gpus_vs_days

    app.preset.value, training = name, app["Training"]
    frame = gpus_vs_days(app.state.plan.scenario, app.state.plan.training[0].name, SWEEP_DAYS)
    ok = frame.loc[frame["plannable"]]
    drawn = [r for d in training.days_chart.chart.spec["datasets"].values() for r in d if "gpus" in r]
    assert [(r["target_days"], r["gpus"]) for r in drawn] == list(zip(ok["target_days"], ok["gpus"]))
    # Llama 3 70B, global batch 2048: the planner refuses GPU counts whose data-parallel degree cannot
    # divide the batch, and 0.25 days needs more GPUs than the engines allow; the note says how many
    refused = len(frame) - len(ok)
    assert (refused > 0) == (name != DEFAULT_PRESET) and (len(drawn) >= 4 or refused)
    assert (f"{refused} of {len(SWEEP_DAYS)} target times left out" in training.days_note.value) == (refused > 0)


@pytest.mark.parametrize("name", ["llama3-70b-pretrain", "hpe-weka-resnet"])
def test_time_range_is_the_plans(app, name):
    app.preset.value = name
    t = app.state.plan.training[0]
    figures = app["Training"].figures.value
    assert t.days_low < t.training_days <= t.days_high  # measured throughputs have a range too
    low, high = shown(figures, "training.days_range").split("–")  # both ends with the upper end's decimals
    decimals = len(high.split(".")[1]) if "." in high else 0
    assert float(low) == round(t.days_low, decimals) and float(high) == round(t.days_high, decimals)
    note = app["Training"].range_note.value
    if t.days_range_mfu is not None:
        r = t.days_range_mfu
        assert f"{F.span(r.low * 100, r.high * 100, '%')} ({len(r.cases)} {r.rule})" in note
    elif t.throughput_rule == "step-time":  # the model's own error on published runs
        assert f"Time range from {days_range_text(t.days_range_basis)}" in html.unescape(note)
        assert "published runs" in note
    else:
        assert "the spread of measured throughputs" in note


def test_app_computes_no_planner_figure_of_its_own():
    """One formula, one place: the app reads stations, knees, ranges, sweeps and layouts from the plan."""
    import ast
    from pathlib import Path

    import aisize.app as app_package

    private_modules = {"aisize.plan.context", "aisize.plan.job", "aisize.plan.training", "aisize.plan.storage",
                       "aisize.plan.inference"}
    engine = {"search_layouts", "mfu_range", "time_range", "storage_station", "inference_station",
              "knee_concurrency", "knee_load", "sweep", "latency_vs_concurrency", "latency_vs_load", "days_range"}
    constants = {"KNEE_FACTOR", "STORAGE_LATENCY_SECONDS", "DEFAULT_SEQ_LEN", "INFERENCE_SERVICE_CV",
                 "CHECKPOINT_MAX_STALL", "SCENARIO_OPTIMIZERS", "MAX_GPUS"}
    root = Path(app_package.__file__).parent
    paths = [p for p in root.rglob("*.py") if "jupyter" not in p.parts]
    assert len(paths) >= 10
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(root)}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                base = getattr(node, "module", None)
                names = {a.name for a in node.names}
                assert not ({base} | {f"{base}.{n}" for n in names} | names) & private_modules, where
                assert not names & (engine | constants), where
            elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
                f = node.func
                # a chart builder of the same name draws, it does not compute
                drawing = isinstance(f, ast.Attribute) and getattr(f.value, "id", None) == "charts"
                assert drawing or getattr(f, "id", getattr(f, "attr", None)) not in engine, where
            elif isinstance(node, (ast.Name, ast.Attribute)):
                assert getattr(node, "id", getattr(node, "attr", None)) not in constants, where


def test_invalid_layout_shows_a_message_and_keeps_the_last_result(app):
    training = app["Training"]
    training.parallel.value = "fixed"
    before_data, before_figures = copy.deepcopy(app.state.data), training.figures.value
    training.tp.value = 64  # 8 GPUs: TP x PP = 64 does not divide them
    assert "must divide gpus" in training.error.value and "aisize-error" in training.error.value
    assert app.state.data == before_data and training.figures.value == before_figures
    for bad in ("Traceback", "nan", "NaN"):
        assert bad not in training.error.value + training.figures.value
    training.tp.value = 2  # a valid value clears the message
    assert training.error.value == ""


def test_inference_controls(app):
    inference = app.open_tab("Inference")
    inference.rate.value = 200.0
    inference.output.value = 512
    expected = api_plan(lambda d: d["workloads"][2].update(requests_per_s=inference.rate.value,
                                                           output_tokens=512)).inference[0]
    f = inference.figures.value
    assert shown(f, "inference.replicas") == expected.replicas
    assert shown(f, "inference.gpus") == expected.gpus
    assert shown(f, "inference.latency_p95") == pytest.approx(expected.latency_p95_seconds, rel=5e-3)
    assert shown(f, "inference.kv_per_token") == pytest.approx(expected.kv_bytes_per_token, rel=5e-3)
    assert shown(f, "inference.kv_per_user") == pytest.approx(expected.kv_bytes_per_user, rel=5e-3)
    assert shown(f, "inference.ttft") == pytest.approx(expected.ttft_p95_seconds, rel=5e-3)
    assert shown(f, "inference.tpot") == pytest.approx(expected.tpot_p95_seconds, rel=5e-3)
    assert inference.latency_chart.chart.params.marked == inference.rate.value


def test_kv_cache_per_token_of_llama_3_8b(app):
    # Llama 3 8B: 32 layers x 8 KV heads x 128 dims x 2 (K and V) x 2 bytes (bf16) = 131,072 B/token
    # (Meta Llama 3 model card: 8 KV heads, GQA; AI Engineering formula 2 * L * kv_heads * d_head * bytes)
    inference = app.open_tab("Inference")
    # GPU memory in binary units, as `aisize model` and nvidia-smi say it (issue 47: it read "131 kB" here)
    assert shown(inference.figures.value, "inference.kv_per_token", base=False) == 128.0
    assert "128 KiB" in re.sub(r"<[^>]+>", "", inference.figures.value)


def test_a_marker_move_does_not_redraw_the_chart(app):
    inference = app.open_tab("Inference")
    chart_before = inference.latency_chart.chart.chart
    inference.rate.value = 22.4  # same replicas, only the planned load moves
    assert inference.latency_chart.chart.chart is chart_before
    assert inference.latency_chart.chart.params.marked == inference.rate.value


def test_a_new_curve_swaps_the_rows_of_the_drawn_chart(app):
    from dataclasses import replace

    from aisize import charts
    from aisize.app import controls as K
    from aisize.plan import latency_curve

    inference = app.open_tab("Inference")
    slot = inference.latency_chart
    chart_before = slot.chart.chart
    inference.rate.value = 200.0  # more replicas: the rates scale (the rate factor), the same chart
    inference.prompt.value = 2048  # a longer prompt: a new curve, the same chart
    expected = api_plan(lambda d: d["workloads"][2].update(requests_per_s=inference.rate.value,
                                                           prompt_tokens=2048)).inference[0]
    assert expected.replicas > 1 and slot.chart.chart is chart_before
    # the rows are one replica's curve, drawn at the replica count (charts.RATE_FACTOR)
    rows = charts.serving_latency_data(latency_curve(replace(expected, replicas=1)), expected.ttft_target_seconds,
                                       expected.tpot_target_seconds)
    sent = {u["name"]: u["value"] for u in slot.chart._py_to_js_updates}
    assert sent[charts.SERVING_CURVE] == rows[charts.SERVING_CURVE]
    assert slot.chart.spec["datasets"] == rows  # the kernel's copy of the spec follows
    assert slot.chart.params.rate_factor == expected.replicas
    assert f"({F.serving_shape(expected)})" in getattr(slot.chart.params, K.TITLE)
    assert slot.chart.params.marked == inference.rate.value


def test_a_rebuilt_chart_can_be_sent_the_same_rows_again():
    import altair as alt

    from aisize.app import controls as K

    def build(rows):
        return lambda: alt.Chart(alt.NamedData(name="d")).mark_point().encode(x="x:Q").properties(
            datasets={"d": rows})

    a, b = [{"x": 1.0}], [{"x": 2.0}]
    slot = K.ChartSlot()
    assert slot.show("one", build(a), data={"d": a})
    assert not slot.show("one", build(b), data={"d": b})
    assert slot.chart._py_to_js_updates == [{"namespace": "data", "name": "d", "scope": [], "value": b}]
    assert slot.show("two", build(b), data={"d": b})  # a new structure: a new chart, nothing pending
    assert slot.chart._py_to_js_updates is None
    assert not slot.show("two", build(a), data={"d": a})
    assert slot.chart._py_to_js_updates[0]["value"] == a and slot.chart.spec["datasets"] == {"d": a}
    with pytest.raises(KeyError, match="no dataset"):
        slot.show("two", build(a), data={"other": b})


def test_data_path_utilisation(app):
    datapath = app.open_tab("Data path")
    datapath.utilisation.value = 0.6
    expected = api_plan(lambda d: d["policies"].update(target_gpu_utilisation=0.6)).storage
    assert shown(datapath.figures.value, "storage.read") == pytest.approx(expected.read_bytes_per_s, rel=5e-3)
    assert datapath.blend_chart.chart is not None and datapath.capacity_chart.chart is not None


def test_collective_explorer_ring_all_reduce(app):
    # Patarasuk & Yuan 2009: ring all-reduce sends 2 (n-1)/n S per GPU. 8 GPUs, S = 14 GB,
    # ib-ndr 400 Gbit/s = 50 GB/s per GPU at 0.8 efficiency: 2 * 7/8 * 14e9 / 40e9 = 0.6125 s
    network = app.open_tab("Network")
    assert network.link_bytes_per_s() == 50 * GB
    assert "612 ms" in network.result.value
    network.op.value, network.gpus.value = "all-gather", 64
    expected = net.result_seconds("all-gather", net.PAYLOAD_GB_DEFAULT, 64, 50 * GB)
    assert net.format_seconds(float(expected)) in network.result.value
    assert "all-gather time" in network.chart.chart.chart.to_json()


def test_network_link_changes_the_scale_out_rate(app):
    network = app.open_tab("Network")
    network.link.value = "eth-100g"
    assert network.link_bytes_per_s() == pytest.approx(catalog.links["eth-100g"].bandwidth_per_direction_bytes_per_s
                                                       * app.state.plan.network.compute_nics_per_server / 8)
    assert shown(network.figures.value, "network.compute_link") == "eth-100g"


@pytest.mark.parametrize("which", ["storage", "inference"])
def test_queueing_shows_the_planners_stations_and_knees(app, which):
    from aisize.app.sections.queueing import stations
    from aisize.plan import concurrency_curve

    queueing = app.open_tab("Queueing")
    p = app.state.plan
    planned = p.storage if which == "storage" else p.inference[0]
    if which == "inference":
        queueing.station.value = f"inference: {planned.name}"
    q = stations(p)[queueing.station.value]
    assert q.station is planned.station and q.knee_concurrency == planned.knee_concurrency
    assert shown(queueing.figures.value, "queueing.knee") == q.knee_concurrency
    if which == "inference":  # closed system, one c-channel station: latency doubles at N = 2c (Lazowska et al.
        assert q.knee_concurrency == knee_concurrency(q.station, 2.0) == int(2 * q.station.servers)  # 1984, ch. 6)
    else:  # storage: its fitted curve's bend, saturation x unloaded latency (Lazowska et al. 1984, 5.3)
        assert q.knee_concurrency == bend_concurrency(q.station) == int(q.station.capacity_per_s
                                                                         * q.station.service_seconds * (1 + 1e-12))
        assert f"2x unloaded at {planned.knee_factor_concurrency:,}" in queueing.figures.value
    assert "2x unloaded" in queueing.figures.value  # plan.assumptions["plan.knee_factor"]
    at = concurrency_curve(q.station, queueing.outstanding.value).iloc[0]
    assert shown(queueing.figures.value, "queueing.latency") == pytest.approx(
        at.response_mean_seconds, rel=5e-3)
    assert queueing.chart.chart is not None


def test_summary_downloads_are_the_plan(app):
    summary = app.open_tab("Summary")
    payload = re.search(r"download='plan.json' href='data:application/json;base64,([^']+)'", summary.downloads.value)
    assert base64.b64decode(payload[1]).decode() == to_json(app.state.plan)
    assert "bom.csv" in summary.downloads.value and "findings.csv" in summary.downloads.value
    assert f">{app.state.plan.gpus}<" in summary.bom.value


def test_accuracy_tab(app):
    accuracy = app.open_tab("Accuracy")
    assert "memory" in accuracy.table.value and accuracy.chart.chart is not None


def test_preset_upload_and_reset(app):
    app.preset.value = "llama3-70b-pretrain"
    assert shown(app["Training"].figures.value, "training.gpus") == 1024
    text = dumps(preset("io-blender")).encode()
    app.upload.value = ({"name": "mine.yaml", "type": "", "size": len(text), "content": memoryview(text),
                         "last_modified": MODIFIED},)
    assert app.state.data == to_dict(preset("io-blender")) and app.status.value == ""
    app.reset.click()
    assert app.state.data == to_dict(preset(DEFAULT_PRESET))


@pytest.mark.parametrize("content", [b"!!python/object/apply:os.system ['true']", b"workloads: []",
                                     b"\xff\xfe", b"name: x\nworkloads:\n  - kind: training\n    name: a\n"])
def test_bad_uploads_are_refused(app, content):
    before = copy.deepcopy(app.state.data)
    app.upload.value = ({"name": "bad.yaml", "type": "", "size": len(content), "content": memoryview(content),
                         "last_modified": MODIFIED},)
    assert "aisize-error" in app.status.value and "Traceback" not in app.status.value
    assert app.state.data == before


@pytest.mark.parametrize("path,value", [(("workloads", 2, "requests_per_s"), -1.0),
                                        (("workloads", 2, "requests_per_s"), float("nan")),
                                        (("workloads", 0, "model"), "__import__('os')"),
                                        (("hardware", "server"), "<script>"),
                                        (("policies", "mfu"), 5.0),
                                        (("workloads", 9, "model"), "llama-2-7b")])
def test_untrusted_values_are_validated(path, value):
    state = AppState()
    before, before_plan = copy.deepcopy(state.data), state.plan
    refused = state.set(path, value)
    assert refused and "Traceback" not in refused
    assert state.data == before and state.plan is before_plan


def test_options_not_offered_are_rejected(app):
    with pytest.raises(Exception, match="Invalid selection"):
        app["Training"].model.value = "__import__('os')"


# The launcher's command line (served for real by tests/browser).

def test_command_is_locked_down():
    command = serve.build_command(port=9001)
    assert command[command.index("-m") + 1] == "voila"
    for option in ("--port=9001", "--Voila.ip=127.0.0.1", "--template=aisize", "--no-browser",
                   "--show_tracebacks=False", "--preheat_kernel=True", "--pool_size=1",
                   "--VoilaConfiguration.file_denylist=.*",
                   "--MappingKernelManager.cull_idle_timeout=600"):
        assert option in command
    # the only voila config file read is the one that sets the CSP header
    assert f"--Voila.config_file_paths={serve.JUPYTER_DATA_DIR}" in command
    assert "serve import HEADERS" in (serve.JUPYTER_DATA_DIR / "voila.py").read_text()
    assert "default-src 'self'" in serve.HEADERS["Content-Security-Policy"]
    assert serve.server_env({})["JUPYTER_PATH"] == str(serve.JUPYTER_DATA_DIR)


def test_server_config_sends_without_nagle_and_names_the_chart_bundle(monkeypatch):
    """voila.py (read by the app server) turns Nagle's algorithm off on the kernel websocket, so
    a reply is not held for the browser's delayed ACK (40 ms), names the served chart bundle
    in the page config (the page preloads it) and lets the browser keep content-named scripts."""
    import asyncio
    import inspect
    import runpy

    from jupyter_server.base.handlers import FileFindHandler, JupyterHandler
    from traitlets.config import Config
    from voila.handler import VoilaHandler
    from voila.static_file_handler import TemplateStaticFileHandler
    from voila.tornado.kernel_websocket_handler import VoilaKernelWebsocketHandler as Socket

    from aisize.app import chart_bundle

    # the file patches these classes: put them back after the test
    for cls, name in ((Socket, "open"), (VoilaHandler, "get_generator"), (JupyterHandler, "check_host"),
                      (TemplateStaticFileHandler, "parse_url_path"),
                      (TemplateStaticFileHandler, "get_absolute_path"), (FileFindHandler, "set_headers")):
        monkeypatch.setattr(cls, name, inspect.getattr_static(cls, name))
    config = Config()
    runpy.run_path(str(serve.JUPYTER_DATA_DIR / "voila.py"), init_globals={"get_config": lambda: config})

    calls = []

    class Handler:
        def set_nodelay(self, value):
            calls.append(("nodelay", value))

    async def original_open(self, kernel_id):
        calls.append(("open", kernel_id))

    monkeypatch.setitem(Socket.open.__globals__, "_open_kernel_ws", original_open)
    asyncio.run(Socket.open(Handler(), "k1"))
    assert calls == [("nodelay", True), ("open", "k1")]

    hook = config.VoilaConfiguration.page_config_hook
    monkeypatch.setenv(chart_bundle.ENV, "aisize-charts/x.js")
    assert hook({"baseUrl": "/"}, base_url="/") == {"baseUrl": "/", "aisizeChartBundle": "aisize-charts/x.js"}
    monkeypatch.delenv(chart_bundle.ENV)
    assert hook({"baseUrl": "/"}, base_url="/") == {"baseUrl": "/"}

    # content-named labextension scripts are cached for good; voila's no-cache stays on everything else
    monkeypatch.setitem(FileFindHandler.set_headers.__globals__, "_set_static_headers",
                        lambda self: self.set_header("Cache-Control", "no-cache"))

    def cache_control(path):
        headers = {}
        handler = type("Handler", (), {"request": type("Request", (), {"path": path})(),
                                       "set_header": lambda self, k, v: headers.__setitem__(k, v)})()
        FileFindHandler.set_headers(handler)
        return headers["Cache-Control"]

    forever = "public, max-age=31536000, immutable"
    for path in ("/voila/labextensions/@jupyter-widgets/jupyterlab-manager/static/568.1e2faa2ba0bbe59c4780.js",
                 "/user/al/voila/labextensions/anywidget/static/remoteEntry.698dcaf7.js",
                 f"/voila/labextensions/{chart_bundle.bundle_name()}"):
        assert cache_control(path) == forever, path
    for path in ("/voila/labextensions/@jupyter-widgets/jupyterlab-manager/package.json",
                 "/voila/labextensions/anywidget/static/remoteEntry.js",
                 "/voila/labextensions/anywidget/static/style.js",
                 "/static/568.1e2faa2ba0bbe59c4780.js"):
        assert cache_control(path) == "no-cache", path


def test_command_options():
    command = serve.build_command(port=8000, host="0.0.0.0", pool_size=0, open_browser=True)
    assert "--Voila.ip=0.0.0.0" in command and "--preheat_kernel=False" in command
    assert "--no-browser" not in command
    assert serve.url(8000, "0.0.0.0") == "http://127.0.0.1:8000/"
    # voila refills at once; the guard holds the refill back (6 s unless told)
    assert "--VoilaKernelManager.fill_delay=0" in command
    assert f"--GuardedKernelManager.refill_delay_seconds={serve.POOL_REFILL_DELAY_SECONDS}" in command


@pytest.mark.parametrize("kwargs,name", [({"port": 0}, "port"), ({"port": 70000}, "port"),
                                         ({"pool_size": -1}, "pool_size"),
                                         ({"cull_idle_seconds": 0}, "cull_idle_seconds"),
                                         ({"host": "a b"}, "host"),
                                         ({"refill_delay_seconds": -1}, "refill_delay_seconds"),
                                         ({"notebook": "missing.ipynb"}, "notebook")])
def test_command_rejects_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        serve.build_command(**kwargs)


def test_the_shown_page_leaves_the_cycle_collectors_full_scans():
    # a full collection over the page's ~140,000 objects stopped one slider move in about seventy for 75 ms;
    # the shown page freezes them (its own process: a frozen test session would keep every cycle it drops)
    code = "import gc\nfrom aisize.app import build_app\nbuild_app()\nprint(gc.get_freeze_count())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600)
    assert int(out.stdout.strip().splitlines()[-1]) > 50_000
