"""The app's widgets in-process (no browser): controls drive the shown results."""

from __future__ import annotations

import re

import pytest

from aisize.app import build_app, serve
from aisize.app import widgets as app_widgets
from aisize.network import collective_seconds
from aisize.units import GB


def shown_seconds(result_html: str) -> float:
    match = re.search(r"<b class='aisize-result'>([0-9.]+) (ms|s)</b>", result_html)
    assert match, result_html
    return float(match[1]) * (1e-3 if match[2] == "ms" else 1.0)


def api_seconds(op: str, gpus: int) -> float:
    return float(collective_seconds(op, app_widgets.PAYLOAD_BYTES, gpus,
                                    app_widgets.link_bytes_per_s()))


@pytest.fixture
def app():
    return build_app(display=False)


def test_page_assumptions_are_the_stated_ones():
    # 7e9 parameters x 2 bytes (BF16) = 14 GB; 400 Gbit/s = 50 GB/s per direction
    assert app_widgets.PAYLOAD_BYTES == 14 * GB
    assert app_widgets.link_bytes_per_s() == 50 * GB


def test_initial_result_is_the_api_result(app):
    assert app.op.value == "all-reduce"
    assert shown_seconds(app.result.value) == pytest.approx(
        api_seconds("all-reduce", app_widgets.GPUS_DEFAULT), rel=5e-4)


def test_ring_all_reduce_worked_number(app):
    # Patarasuk & Yuan 2009: ring all-reduce sends 2 (n-1)/n S per GPU. 8 GPUs,
    # S = 14 GB, 50 GB/s at 0.8 efficiency: 2 * 7/8 * 14e9 / 40e9 = 0.6125 s,
    # plus 2 (n-1) = 14 steps of zero latency.
    assert shown_seconds(app.result.value) == pytest.approx(0.6125, rel=5e-4)


@pytest.mark.parametrize("op,gpus", [("all-reduce", 64), ("all-gather", 2),
                                     ("reduce-scatter", 256), ("broadcast", 17),
                                     ("all-to-all", 100)])
def test_controls_update_result_and_chart(app, op, gpus):
    app.op.value = op
    app.gpus.value = gpus
    assert shown_seconds(app.result.value) == pytest.approx(api_seconds(op, gpus), rel=5e-4)
    assert app.chart.params.gpus == gpus
    assert f"{op} time" in app.chart.chart.to_json()


def test_slider_move_moves_the_marked_point_without_a_new_chart(app):
    before = app.chart.chart
    app.gpus.value = 32
    assert app.chart.chart is before
    assert app.chart.params.gpus == 32


def test_out_of_range_slider_values_are_clamped(app):
    # values arrive from the browser: the slider clamps them to its range
    app.gpus.value = 10**6
    assert app.gpus.value == app_widgets.GPUS_MAX
    assert shown_seconds(app.result.value) == pytest.approx(
        api_seconds("all-reduce", app_widgets.GPUS_MAX), rel=5e-4)


def test_options_not_offered_are_rejected(app):
    with pytest.raises(Exception, match="Invalid selection"):
        app.op.value = "__import__('os')"
    assert app.op.value == "all-reduce"


def test_format_seconds():
    assert app_widgets.format_seconds(0.6125) == "612.5 ms"
    assert app_widgets.format_seconds(1.22512) == "1.225 s"
    assert app_widgets.format_seconds(0.0) == "0 s"


def test_result_html_rejects_an_unknown_operation():
    with pytest.raises(ValueError, match="op"):
        app_widgets.result_html("<script>", 8)


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


def test_command_options():
    command = serve.build_command(port=8000, host="0.0.0.0", pool_size=0, open_browser=True)
    assert "--Voila.ip=0.0.0.0" in command and "--preheat_kernel=False" in command
    assert "--no-browser" not in command
    assert serve.url(8000, "0.0.0.0") == "http://127.0.0.1:8000/"


@pytest.mark.parametrize("kwargs,name", [({"port": 0}, "port"), ({"port": 70000}, "port"),
                                         ({"pool_size": -1}, "pool_size"),
                                         ({"cull_idle_seconds": 0}, "cull_idle_seconds"),
                                         ({"host": "a b"}, "host"),
                                         ({"notebook": "missing.ipynb"}, "notebook")])
def test_command_rejects_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        serve.build_command(**kwargs)
