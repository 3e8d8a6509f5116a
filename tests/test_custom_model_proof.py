"""Issue 15's proof, without a browser: a scenario with Hugging Face config.json models on the site's own
accelerator, server and storage rows plans, saves, reloads equal, renders a report that names where each
model and row came from, and runs in the app, where a config.json can also be uploaded (untrusted).

The browser half is tests/browser/test_app_browser.py::test_custom_hardware_and_config_json_models.
"""

from __future__ import annotations

import copy
import datetime
import json
import math
import re
from html import unescape

import pytest

from aisize import models
from aisize.app import build_app
from aisize.plan import plan
from aisize.present.export import to_json
from aisize.report import render
from aisize.report import sections as S
from aisize.scenario import dumps, from_dict, loads, to_dict
from custom_scenario import GPU, NAME, SERVER, STORE, scenario_data
from hf_configs import LLAMA_3_1_8B, QWEN2_5_7B

MODIFIED = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
# What the report and the app must say about each model and each of the scenario's own rows.
PROVENANCE = ("Hugging Face config.json 'Qwen2.5-7B/config.json', model_type qwen2",
              "Hugging Face config.json 'Qwen3-8B/config.json', model_type qwen3")
OWN_ROWS = tuple((row["name"], row["source"]) for row in (GPU, SERVER, STORE))


def text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


@pytest.fixture(scope="module")
def scenario():
    return from_dict(scenario_data())


def test_plans_saves_and_reloads_equal(scenario, tmp_path):
    p = plan(scenario)
    assert (p.server, p.accelerator, p.storage_system) == ("site-server", "site-gpu", "site-store")
    (tmp_path / "s.yaml").write_text(dumps(scenario))
    again = loads((tmp_path / "s.yaml").read_text())
    assert again == scenario and to_dict(again) == to_dict(scenario)
    assert json.loads(to_json(plan(again))) == json.loads(to_json(p))
    # the models are the configs' architectures (Qwen2.5-7B's published safetensors total)
    assert models.params(again.workloads[0].model).total == 7_615_616_512
    t, i = p.training[0], p.inference[0]
    assert t.gpus == 16 and 0 < t.training_days < math.inf
    assert i.replicas >= 1 and i.gpus >= 1 and i.output_tokens_per_s_per_replica > 0


def test_report_sections_name_each_origin_and_the_scenarios_rows(scenario):
    ctx = S.context(scenario)
    sources = text(S.section("sources", ctx, S.SECTIONS))
    for origin in PROVENANCE:
        assert origin in sources
    summary = text(S.section("summary", ctx, S.SECTIONS))
    assert "Site GPU (scenario's own row)" in summary and "Site flash (scenario's own row)" in summary
    assumptions = text(S.section("assumptions", ctx, S.SECTIONS))
    assert "Hardware given by the scenario" in assumptions and "memory [GiB] 100" in assumptions
    for name, source in OWN_ROWS:
        assert name in sources and source in sources and source in assumptions
    catalog_model = S.sources_table(from_dict({**scenario_data(), "workloads": [
        {"kind": "inference", "name": "svc", "model": "llama-3-8b", "requests_per_s": 1}]}))
    assert "catalog row llama-3-8b (transformers.csv)" in text(catalog_model)
    inline = dict(id="our-7b", layers=32, hidden=4096, heads=32, vocab=32000, ffn_hidden=11008, max_seq=4096,
                  source="design doc v3")
    inline_model = S.sources_table(from_dict({**scenario_data(), "workloads": [
        {"kind": "training", "name": "ft", "model": inline, "tokens_billion": 1, "gpus": 8}]}))
    assert "architecture fields written in the scenario design doc v3" in text(inline_model)


@pytest.mark.slow
def test_report_renders_with_provenance(scenario, tmp_path):
    path = tmp_path / "site.yaml"
    path.write_text(dumps(scenario))
    result = render(scenario_path=path, fmt="html", out_dir=tmp_path / "out")
    page = text(result.html_path.read_text(encoding="utf-8"))
    assert NAME in page and "Traceback" not in page
    for expected in PROVENANCE + ("Site server (scenario's own row)", "Hardware given by the scenario"):
        assert expected in page
    for name, source in OWN_ROWS:
        assert name in page and source in page


def uploaded(content: bytes, name: str = "config.json") -> tuple:
    return ({"name": name, "type": "application/json", "size": len(content), "content": memoryview(content),
             "last_modified": MODIFIED},)


def html_of(widget) -> str:
    """Every HTML widget's value under ``widget``, joined."""
    own = widget.value if isinstance(getattr(widget, "value", None), str) and hasattr(widget, "placeholder") else ""
    return own + "".join(html_of(child) for child in getattr(widget, "children", ()))


def test_app_runs_the_scenario_and_shows_where_the_model_came_from():
    app = build_app(display=False, data=scenario_data())
    assert PROVENANCE[0] in unescape(app.model.info.value)
    app.model.workload.value = 1
    assert PROVENANCE[1] in unescape(app.model.info.value)
    for title in ("Training", "Inference", "Data path", "Network", "Queueing", "Summary"):
        app.open_tab(title)
    page = html_of(app.view)
    assert "class='aisize-error'" not in page and "Traceback" not in page and NAME in page
    assert "data-key='training.gpus'>16<" in page and "data-key='inference.replicas'>" in page


def test_an_uploaded_config_becomes_the_workloads_model():
    app = build_app(display=False, data=scenario_data())
    app.model.workload.value = 0
    app.model.upload.value = uploaded(json.dumps(LLAMA_3_1_8B).encode())
    model = app.state.data["workloads"][0]["model"]
    assert model["hf_config"] == "config.json" and model["config"] == LLAMA_3_1_8B
    assert models.params(app.state.scenario.workloads[0].model).total == models.params(
        models.from_hf_config(LLAMA_3_1_8B)).total
    assert "model_type llama" in unescape(app.model.info.value) and app.model.upload.value == ()
    saved = loads(dumps(app.state.scenario))  # the upload travels with the saved scenario
    assert saved.workloads[0].model.config == LLAMA_3_1_8B


@pytest.mark.parametrize("content, message", [
    (b"{\"model_type\": ", "not JSON (Expecting value at line 1, column 16)"),
    (json.dumps(dict(QWEN2_5_7B, model_type="bloom")).encode(), "model_type='bloom' is not supported; supported:"),
    (json.dumps(dict(QWEN2_5_7B, num_attention_heads=0)).encode(), "'num_attention_heads'=0 is not allowed"),
    (json.dumps({k: v for k, v in QWEN2_5_7B.items() if k != "hidden_size"}).encode(), "'hidden_size' is missing"),
    (b"[1, 2]", "holds a JSON object"),
    (b'{"model_type": "qwen2", "x": NaN}', "NaN is not a JSON number"),
    (b"\xff\xfe{}", "not UTF-8 text"),
    (b" " * 100_001, "100,001 bytes; a Hugging Face config.json is at most 100,000"),
    (b"[" * 50_000, "nested too deeply"),
])
def test_a_bad_upload_is_refused_next_to_the_control(content, message):
    app = build_app(display=False, data=scenario_data())
    before, before_plan = copy.deepcopy(app.state.data), app.state.plan
    app.model.upload.value = uploaded(content)
    shown = unescape(app.model.info.value)
    assert "aisize-error" in shown and message in shown and "Traceback" not in shown
    assert app.state.data == before and app.state.plan is before_plan
    app.model.workload.value = 1  # the next choice shows the model line again
    assert PROVENANCE[1] in unescape(app.model.info.value)
