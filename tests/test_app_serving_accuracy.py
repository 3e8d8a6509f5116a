"""The Accuracy tab's serving part: a calibration file loaded, compared with the default, given to the scenario
(aisize.app.sections.serving_accuracy)."""

from __future__ import annotations

import datetime

import pytest

from aisize.app import build_app
from aisize.serving import CALIBRATION as DEFAULT

HALF = DEFAULT.with_(name="half-hopper-gemm",
                     gemm_efficiency={**DEFAULT.gemm_efficiency, "hopper": DEFAULT.gemm_efficiency["hopper"] / 2})
MODIFIED = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def uploaded(content: bytes, name: str = "half.json") -> tuple:
    return ({"name": name, "type": "application/json", "size": len(content), "content": memoryview(content),
             "last_modified": MODIFIED},)


@pytest.fixture(scope="module")
def opened():
    app = build_app(display=False)
    return app, app.open_tab("Accuracy").serving


def test_a_loaded_calibration_is_compared_then_used_by_the_plan_then_dropped(opened):
    app, runs = opened
    assert runs.use.disabled and runs.default.disabled  # nothing loaded, the scenario on the default
    runs.upload.value = uploaded(HALF.to_json().encode())
    assert runs.error.value == "" and runs.loaded[2] == HALF and not runs.use.disabled
    assert "half-hopper-gemm" in runs.info.value and "gemm_efficiency[hopper]" in runs.info.value
    assert "within 15 %, loaded" in runs.summary.value and "TPOT loaded [ms]" in runs.runs.value
    assert app.state.plan.inference[0].estimate.calibration == DEFAULT.name  # compared, not used yet
    runs.use.click()
    chosen = app.state.scenario.policies.serving_calibration
    assert chosen.file == "half.json" and chosen.calibration == HALF
    assert app.state.plan.inference[0].estimate.calibration == "half-hopper-gemm"
    assert runs.use.disabled and not runs.default.disabled
    runs.default.click()
    assert app.state.scenario.policies.serving_calibration is None
    assert app.state.plan.inference[0].estimate.calibration == DEFAULT.name


@pytest.mark.parametrize("content,said", [(b'{"layer_seconds": -1}', "layer_seconds=-1"),
                                          (b'{"bogus": 1}', "unknown keys"), (b"{", "not JSON"),
                                          (b"\xff\xfe", "not UTF-8")])
def test_a_bad_calibration_file_is_refused_on_the_page(opened, content, said):
    app, runs = opened
    before = runs.loaded
    runs.upload.value = uploaded(content, "bad.json")
    assert "calibration refused" in runs.error.value and said in runs.error.value
    assert runs.loaded is before and app.state.scenario.policies.serving_calibration is None
