"""A scenario selects a serving calibration (``policies.serving_calibration``, a file from ``aisize calibrate``).

Every serving figure of its plan uses it (services, fleets through the day, KV tiers, disaggregated pools,
heterogeneous pairs); the file is read only from a scenario file given to the command line and embedded (the
rules of a model's ``hf_config``, issue 22); the plan's assumptions and the report name it and show its values.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import textwrap
from html import unescape
from pathlib import Path

import pytest

from aisize import catalog, cli, serving
from aisize.plan import plan
from aisize.report import sections as S
from aisize.report.accuracy import calibration_comparison
from aisize.scenario import ScenarioError, dumps, from_dict, load, loads, preset, preset_names, to_dict
from aisize.validation.serving import SETS, family_summary

DEFAULT = serving.CALIBRATION
HOPPER_GEMM = DEFAULT.value("gemm_efficiency", "hopper")
HALF = DEFAULT.with_(name="half-hopper-gemm", gemm_efficiency={**DEFAULT.gemm_efficiency, "hopper": HOPPER_GEMM / 2})
# Llama 3.1 8B (config.json: hidden 4096, intermediate 14336, 32 layers, 32 heads of 128, 8 KV heads): the weights
# each prompt token goes through in the GEMMs of one layer (q and o 4096 x 4096, k and v 4096 x 1024, gate, up
# and down 4096 x 14336); embeddings are a lookup and the LM head runs on the last token only
LLAMA_8B_GEMM_PARAMS = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)  # 6.98e9


def _service(**extra) -> dict:
    return {"kind": "inference", "name": "long prompts", "model": "llama-3.1-8b", "weight_precision": "bf16",
            "kv_precision": "bf16", "requests_per_s": 0.01, "prompt_tokens": 8192, "output_tokens": 16,
            "tensor_parallel": 1, "ttft_target_ms": 60_000, "tpot_target_ms": 1000} | extra


def _scenario(calibration=None, **service) -> dict:
    data = {"name": "calibrated", "hardware": {"server": "dgx-h100"}, "workloads": [_service(**service)]}
    if calibration is not None:
        data["policies"] = {"serving_calibration": {"file": "half.json", "content": json.loads(calibration.to_json())}}
    return data


def test_half_the_hopper_gemm_efficiency_adds_the_prompts_gemm_time_to_ttft():
    """A long prompt at light load is compute-bound in its GEMMs: with half the GEMM efficiency its prefill takes
    one more 2 x params x prompt tokens / (dense BF16 peak x efficiency); decode of one sequence reads the
    weights from HBM, so TPOT does not move."""
    base, half = plan(from_dict(_scenario())).inference[0], plan(from_dict(_scenario(HALF))).inference[0]
    peak = catalog.accelerators["h100-sxm"].bf16_flops_per_s  # 989.4 TFLOP/s dense (H100 SXM datasheet)
    extra_s = 2 * LLAMA_8B_GEMM_PARAMS * 8192 / (peak * HOPPER_GEMM)  # 0.167 s
    assert extra_s == pytest.approx(0.1668, rel=1e-3)
    assert half.ttft_seconds - base.ttft_seconds == pytest.approx(extra_s, rel=0.02)
    assert half.tpot_seconds == pytest.approx(base.tpot_seconds, rel=0.01)
    assert (base.estimate.calibration, half.estimate.calibration) == (DEFAULT.name, "half-hopper-gemm")


class _Poisoned:
    """The default calibration where a scenario selected another: any use of it is a figure that ignored it."""

    def __getattr__(self, name):
        raise AssertionError(f"a serving figure used the default calibration's {name}")


@pytest.mark.parametrize("name", [n for n in preset_names()
                                  if any(w.kind == "inference" for w in preset(n).workloads)])
def test_every_serving_figure_of_a_plan_uses_the_selected_calibration(monkeypatch, name):
    """Fleets through the day (LoRA, heterogeneous pairs), KV tiers, disaggregated pools, latency curves and the
    report's Inference, fleet and KV-tier sections: none falls back to the default."""
    # the default is read where a replica resolves its calibration (aisize.serving.replica, once estimate.py)
    estimate_module = importlib.import_module("aisize.serving.replica")
    selected = DEFAULT.with_(name="mine", request_seconds=DEFAULT.request_seconds + 0.01)
    data = to_dict(preset(name))
    data["policies"]["serving_calibration"] = {"file": "mine.json", "content": json.loads(selected.to_json())}
    scenario = from_dict(data)
    for module in (serving, estimate_module):
        monkeypatch.setattr(module, "CALIBRATION", _Poisoned())
    p = plan(scenario)
    assert p.inference and all(i.estimate is None or i.estimate.calibration == "mine" for i in p.inference)
    ctx = S.ReportContext(scenario, p)
    for section in ("inference", "fleet", "kv-tiers", "queueing"):
        if section in S.SECTIONS:
            S.section(section, ctx, [section])


def test_a_path_is_never_read_from_the_app_or_a_dict(tmp_path):
    real = tmp_path / "half.json"
    HALF.save(real)
    messages = {"dict": set(), "text": set()}
    for path in (str(real), "/nonexistent/c.json", "/etc/passwd", "/dev/zero"):
        for form, value in (("dict", {"file": path}), ("text", path)):
            data = _scenario()
            data["policies"] = {"serving_calibration": value}
            with pytest.raises(ScenarioError) as refused:
                loads(json.dumps(data), fmt="json")
            said = str(refused.value).replace(repr(path), "PATH")
            messages[form].add(re.sub(r"\(got '[^)]*\)", "(got PATH)", said))  # a long path is cut short
            with pytest.raises(ScenarioError):
                from_dict(data)
    # the same words whether the file exists, is a device, is missing or is not a calibration: nothing leaks
    for form, words in messages.items():
        assert len(words) == 1, words
        assert "policies.serving_calibration" in min(words) and "embed" in min(words)


def test_a_cli_scenario_file_embeds_the_calibration_and_the_saved_scenario_stands_alone(tmp_path, monkeypatch):
    folder = tmp_path / "customer"
    folder.mkdir()
    HALF.save(folder / "half.json")
    (folder / "s.yaml").write_text("name: calibrated\nhardware: {server: dgx-h100}\n"
                                   "policies: {serving_calibration: half.json}\n"
                                   f"workloads: [{json.dumps(_service())}]\n")
    monkeypatch.chdir(tmp_path)  # a relative path is found beside the scenario file (a report's kernel runs elsewhere)
    scenario = load(folder / "s.yaml")
    chosen = scenario.policies.serving_calibration
    assert chosen.file == "half.json" and chosen.content == json.loads(HALF.to_json())
    assert chosen.calibration == HALF
    saved = dumps(scenario)
    (folder / "half.json").unlink()
    again = loads(saved)  # no file left, no path read: the content travels in the scenario
    assert again == scenario and hash(again.policies) == hash(scenario.policies)
    assert plan(again).inference[0].estimate.calibration == "half-hopper-gemm"


@pytest.mark.parametrize("content,match", [
    ('{"gemm_efficiency": {"hopper": 1.5, "blackwell": 0.7, "cdna4": 0.6}}', r"gemm_efficiency\[hopper\]=1.5.*share"),
    ('{"layer_seconds": -1}', "layer_seconds=-1 .*from 0 to 1e6"), ('{"bogus": 1}', "unknown keys"),
    ('{"name": "' + "x" * 300 + '"}', "name=.*1 to 200"), ("[1]", "JSON object"), ("{", "not JSON")])
def test_a_bad_calibration_file_is_refused_naming_the_field(tmp_path, content, match):
    (tmp_path / "c.json").write_text(content)
    (tmp_path / "s.yaml").write_text("name: x\npolicies: {serving_calibration: c.json}\n"
                                     f"workloads: [{json.dumps(_service())}]\n")
    with pytest.raises(ScenarioError, match=match) as refused:
        load(tmp_path / "s.yaml")
    assert "policies.serving_calibration" in str(refused.value)


def test_an_embedded_calibration_is_checked_like_a_file():
    data = _scenario(HALF)
    data["policies"]["serving_calibration"]["content"]["memory_efficiency"] = {"hopper": 0}
    with pytest.raises(ScenarioError, match=r"policies.serving_calibration: .*memory_efficiency\[hopper\]=0"):
        from_dict(data)


def test_a_device_a_fifo_and_a_huge_file_are_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "big.json").write_text(" " * 1_000_001 + "{}")
    code = textwrap.dedent("""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))
        from aisize.scenario import ScenarioError, load
        try:
            load(sys.argv[1])
        except ScenarioError as e:
            print(e)
    """)
    for path, words in (("/dev/zero", "not a regular file"), ("fifo.json", "not a regular file"),
                        ("big.json", "larger than allowed")):
        scenario = tmp_path / "s.yaml"
        scenario.write_text(f"name: x\npolicies: {{serving_calibration: {path}}}\n"
                            f"workloads: [{json.dumps(_service())}]\n")
        result = subprocess.run([sys.executable, "-c", code, str(scenario)], capture_output=True, text=True,
                                timeout=60, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        assert words in result.stdout and "policies.serving_calibration" in result.stdout, result


def test_the_plans_assumptions_and_the_report_show_the_selected_calibration():
    scenario = from_dict(_scenario(HALF))
    p = plan(scenario)
    assert p.assumptions["policies.serving_calibration"] == "half-hopper-gemm"
    assert p.assumptions["serving.gemm_efficiency[hopper]"] == HOPPER_GEMM / 2
    assert plan(from_dict(_scenario())).assumptions["policies.serving_calibration"] == DEFAULT.name
    page = unescape(str(S.assumptions_table(scenario, p.assumptions)))
    assert "<td>Serving calibration</td><td>half-hopper-gemm (file half.json)</td><td>scenario</td>" in page
    row = re.search(r"<td>GEMM efficiency, Hopper \(serving\)</td><td>(.*?)</td><td>(.*?)</td>", page)
    assert row.groups() == (f"{HOPPER_GEMM / 2 * 100:.4g} %", "scenario (half-hopper-gemm)")
    ctx = S.ReportContext(scenario, p)
    inference = unescape(str(S.section("inference", ctx, ["inference"])))
    assert "calibration half-hopper-gemm, from half.json, selected by the scenario" in inference
    served = family_summary("serving", HALF)
    assert f"against {served['cases']} published TensorRT-LLM max-throughput runs the model lands " \
           f"{served['within']} within 15 %" in inference


def test_the_accuracy_appendix_compares_the_selected_calibration_with_the_default():
    assert str(calibration_comparison(from_dict(_scenario()))) == ""
    table = unescape(str(calibration_comparison(from_dict(_scenario(HALF)))))
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td>", table)
    assert len(rows) == len(SETS)
    for family, (_, default, selected) in zip(SETS, rows):
        d, c = family_summary(family), family_summary(family, HALF)
        assert (default, selected) == (f"{d['within']} of {d['cases']}", f"{c['within']} of {c['cases']}")
    # half the Hopper GEMM efficiency misses the Hopper max-throughput runs that the default fits
    assert family_summary("serving", HALF)["within"] < family_summary("serving")["within"]


def test_the_calibrate_command_says_how_to_select_its_file(tmp_path, capsys):
    runs, out = tmp_path / "r.json", tmp_path / "mine.json"
    # GPUStack's Qwen3-8B run on one H100 with vLLM at a concurrency of 4, as vllm bench serve writes it
    runs.write_text(json.dumps({"backend": "vllm", "model_id": "Qwen/Qwen3-8B", "max_concurrency": 4,
                                "completed": 100, "total_input_tokens": 23300, "total_output_tokens": 22100,
                                "output_throughput": 496.88, "mean_ttft_ms": 64.0, "mean_tpot_ms": 7.38,
                                "request_rate": "inf"}))
    assert cli.main(["calibrate", str(runs), "--accelerator", "h100-sxm", "--tensor-parallel", "1",
                     "--weight-precision", "bf16", "--kv-precision", "bf16", "--out", str(out),
                     "--max-evaluations", "10"]) == 0
    text = capsys.readouterr().out
    assert f"policies:\n    serving_calibration: {out}" in text and "Accuracy tab" in text
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: x\nhardware: {{server: dgx-h100}}\npolicies: {{serving_calibration: {out}}}\n"
                        f"workloads: [{json.dumps(_service(model='qwen3-8b'))}]\n")
    written = json.loads(Path(out).read_text())  # one file of sections: the fitted serving, the shipped training
    assert set(written) == {"serving", "training"}
    assert plan(load(scenario)).inference[0].estimate.calibration == written["serving"]["name"]
