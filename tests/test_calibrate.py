"""aisize calibrate: benchmark exports read into runs, names mapped to the catalog, the fit, the command.

The vLLM, SGLang, genai-perf and InferenceX records below carry GPUStack's published Qwen3-8B run on one
H100 with vLLM 0.11 at a concurrency of 4 (233/221 tokens, 496.88 output tokens/s, TPOT 7.38 ms, TTFT
64.0 ms; data/validation/serving_load.csv), written in each tool's field names.
"""

import json

import pytest

from aisize import catalog, cli, serving
from aisize.calibrate import fit, predict, read_runs, read_table
from aisize.calibrate.names import accelerator_id, engine_key, model_id, precision
from aisize.serving.calibration import from_json, load

VLLM = {"backend": "vllm", "model_id": "Qwen/Qwen3-8B", "max_concurrency": 4, "completed": 100,
        "total_input_tokens": 23300, "total_output_tokens": 22100, "output_throughput": 496.88,
        "mean_ttft_ms": 64.0, "mean_tpot_ms": 7.38, "request_rate": "inf"}
GENAI_PERF = {"output_token_throughput": {"unit": "tokens/sec", "avg": 496.88},
              "inter_token_latency": {"unit": "ms", "avg": 7.38}, "time_to_first_token": {"unit": "ms", "avg": 64.0},
              "input_sequence_length": {"avg": 233}, "output_sequence_length": {"avg": 221},
              "input_config": {"model": ["Qwen/Qwen3-8B"], "concurrency": 4}}
INFERENCEX = {"hw": "h100", "model": "Qwen/Qwen3-8B", "framework": "vllm", "precision": "bf16", "tp": 1, "conc": 4,
              "isl": 233, "osl": 221, "metrics": {"output_tput_per_gpu": 496.88, "mean_tpot": 0.00738,
                                                  "mean_ttft": 0.064}}
H100 = {"accelerator": "h100-sxm", "tensor_parallel": 1, "weight_precision": "bf16", "kv_precision": "bf16",
        "engine": "vllm"}


@pytest.mark.parametrize("name,expected", [
    ("deepseek-ai/DeepSeek-R1-0528", "deepseek-r1"), ("nvidia/DeepSeek-R1-0528-FP4-v2", "deepseek-r1"),
    ("amd/DeepSeek-R1-0528-MXFP4-Preview", "deepseek-r1"), ("Qwen/Qwen3-8B-FP8", "qwen3-8b"),
    ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.3-70b"), ("openai/gpt-oss-120b", "gpt-oss-120b")])
def test_published_model_names_map_to_catalog_ids(name, expected):
    assert model_id(name) == expected


def test_names_that_match_nothing_are_refused_by_name():
    with pytest.raises(ValueError, match="matches no catalog model"):
        model_id("acme/Unknown-Model-7B")
    with pytest.raises(ValueError, match="matches no catalog accelerator"):
        accelerator_id("TPU v5e")
    with pytest.raises(ValueError, match="precision"):
        precision("fp6", "weight")
    with pytest.raises(ValueError, match="engine"):
        engine_key("tgi")
    assert (accelerator_id("H100 SXM"), accelerator_id("MI355X"), precision("fp8_e4m3", "kv"),
            engine_key("Dynamo-TRTLLM")) == ("h100-sxm", "mi355x", "fp8", "trtllm")


@pytest.mark.parametrize("records,suffix", [([VLLM], ".json"), ([VLLM, VLLM], ".jsonl"), ([GENAI_PERF], ".json"),
                                            ([INFERENCEX], ".json")])
def test_every_export_reads_into_the_same_run(tmp_path, records, suffix):
    path = tmp_path / f"runs{suffix}"
    path.write_text("\n".join(json.dumps(r) for r in records) if suffix == ".jsonl" else json.dumps(records[0]))
    runs = read_runs([path], H100)
    assert len(runs) == len(records)
    r = runs[0]
    assert (r.model, r.accelerator, r.tensor_parallel, r.concurrency) == ("qwen3-8b", "h100-sxm", 1, 4)
    assert (r.input_tokens, r.output_tokens) == (233, 221)
    assert r.measured_tokens_per_s_per_gpu == pytest.approx(496.88)
    assert r.measured_tpot_s == pytest.approx(7.38e-3) and r.measured_ttft_s == pytest.approx(0.064)
    assert r.engine == "vllm"


def test_a_run_without_its_hardware_names_what_is_missing(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(VLLM))
    with pytest.raises(ValueError, match="--accelerator --tensor-parallel"):
        read_runs([path])
    path.write_text("not json at all")
    with pytest.raises(ValueError, match=r"r\.json:1: not JSON"):
        read_runs([path], H100)
    with pytest.raises(ValueError, match="does not exist"):
        read_runs([tmp_path / "missing.json"], H100)


def test_the_reference_tables_read_and_predict():
    runs = read_table(catalog.data_dir() / "validation" / "serving_disagg.csv")
    assert len(runs) == 77 and all(r.kind == "disaggregated" for r in runs)
    p = predict(runs[0])
    assert p.tokens_per_s_per_gpu > 0 and p.tpot_s > 0


def test_a_fit_moves_only_what_the_runs_inform_and_improves_them(tmp_path):
    path = tmp_path / "r.json"
    # the same run measured 30 % slower: the fit must follow it, through Hopper's constants only
    path.write_text(json.dumps(dict(VLLM, output_throughput=496.88 / 1.3, mean_tpot_ms=7.38 * 1.3)))
    runs = read_runs([path], H100)
    result = fit(runs, max_evaluations=40, name="test")
    assert abs(result.after[0].error) < abs(result.before[0].error)
    fitted = {f"{c}[{g}]" if g else c for c, g in result.constants}
    assert "memory_efficiency[hopper]" in fitted and not any("blackwell" in c for c in fitted)
    assert not any(c.startswith("expert") for c in fitted)  # a dense model informs no expert constant
    cal = result.calibration
    assert cal.value("memory_efficiency", "blackwell") == serving.CALIBRATION.value("memory_efficiency", "blackwell")
    # what it writes reads back
    assert from_json(cal.to_json()) == cal


def test_the_command_writes_a_calibration_estimate_can_use(tmp_path, capsys):
    runs, out = tmp_path / "r.json", tmp_path / "mine.json"
    runs.write_text(json.dumps(VLLM))
    code = cli.main(["calibrate", str(runs), "--accelerator", "h100-sxm", "--tensor-parallel", "1",
                     "--weight-precision", "bf16", "--kv-precision", "bf16", "--out", str(out),
                     "--max-evaluations", "20"])
    text = capsys.readouterr().out
    assert code == 0 and "before: 1 runs" in text and "after: 1 runs" in text and out.is_file()
    cal = load(out)
    e = serving.estimate("qwen3-8b", "h100-sxm", tensor_parallel=1, weight_precision="bf16", kv_precision="bf16",
                         input_tokens=233, output_tokens=221, concurrency=4, engine="vllm", calibration=str(out))
    assert e.calibration == cal.name


@pytest.mark.parametrize("text,match", [("[1, 2]", "JSON object"), ('{"memory_efficiency": 1.5}', "share"),
                                        ('{"layer_seconds": -1}', "from 0 to 1e6"), ('{"bogus": 1}', "unknown keys"),
                                        ("{", "not JSON")])
def test_a_bad_calibration_file_is_refused_naming_the_value(tmp_path, text, match):
    path = tmp_path / "c.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        load(path)
