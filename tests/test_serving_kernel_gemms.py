"""Linear layers from the engine's GEMMs measured on the GPU (aisize.serving.kernel_gemms)."""

import json

import numpy as np
import pytest

from aisize import kernels, models, serving
from aisize.serving import kernel_gemms as KG
from aisize.serving.calibration import from_json
from aisize.serving.costs import model_costs, weight_formats
from aisize.serving.hardware import device
from aisize.serving.iteration import achieved_rates, iteration_time

KERNELS = serving.CALIBRATION.with_(gemm_source="kernels")
ROOFLINE = serving.CALIBRATION.with_(gemm_source="roofline")


def test_llama_70b_gemms_per_gpu_at_tp4_follow_its_architecture():
    # Llama 3 70B: hidden 8,192, 64 heads of 128, 8 KV heads, SwiGLU MLP of 28,672, 80 layers
    g = KG.layer_gemms(models.resolve("llama-3-70b"), 4)
    assert g == (("attention", (16 + 2 * 2) * 128, 8192, 80), ("attention", 8192, 16 * 128, 80),
                 ("dense", 2 * 7168, 8192, 80), ("dense", 8192, 7168, 80))
    # more GPUs than KV heads: each GPU keeps one KV head
    assert KG.layer_gemms(models.resolve("llama-3-70b"), 16)[0][1] == (4 + 2 * 1) * 128


def test_the_curve_is_the_sum_of_the_measured_gemms_and_interpolates_between_them():
    gemms = KG.layer_gemms(models.resolve("llama-3-70b"), 4)
    lookup = KG.curve("h100-sxm", "trtllm", "fp8", "fp8", gemms)
    direct = sum(c * kernels.gemm_seconds("h100-sxm", "trtllm", "fp8", 256, n, k) for _, n, k, c in gemms)
    assert float(KG.seconds(lookup, 256)) == pytest.approx(direct, rel=1e-9)
    m = np.array([1.0, 100.0, 300.0, 5000.0, 32768.0, 65536.0])
    t = KG.seconds(lookup, m)
    assert np.all(np.diff(t) > 0)
    assert t[-1] == pytest.approx(2 * t[-2], rel=1e-9)  # beyond the measured range, compute-bound: time ~ m


@pytest.mark.parametrize("model, fmt, gpu, engine, expect", [
    ("llama-3-70b", "fp8", "h100-sxm", "trtllm", "measured GEMMs (h100-sxm, trtllm"),
    ("llama-3-70b", "fp8", "h100-sxm", "trtllm-bench", "measured GEMMs (h100-sxm, trtllm"),
    ("llama-2-7b", "fp16", "a100-sxm-80gb", "trtllm", "measured GEMMs (a100-sxm-80gb"),  # sweep ends at m 8,192
    ("llama-3-70b", "int4-g128", "h100-sxm", "vllm", "roofline (no measured"),
    ("llama-3-70b", "fp8", "mi300x", "vllm", "roofline (no measured"),
    ("deepseek-r1", "fp8", "h200-sxm", "sglang", "roofline (deepseek-r1: layers without"),
])
def test_coverage_says_where_each_replicas_linear_time_comes_from(model, fmt, gpu, engine, expect):
    costs = model_costs(models.resolve(model), weight_formats(fmt), "fp8")
    assert KG.coverage(costs, gpu, engine, 8).startswith(expect)


def test_an_iteration_reads_its_linear_time_from_the_tables_when_the_calibration_says_so():
    m = models.resolve("llama-3-70b")
    costs = model_costs(m, weight_formats("fp8"), "fp8")
    dev = device("h100-sxm", "fp8", "fp8")
    step = dict(decode_sequences=64.0, decode_context=2000.0, prefill_tokens=0.0, prefill_prompts=0.0,
                prompt_tokens=1000.0, gpus=4)
    measured = iteration_time(costs, achieved_rates(dev, KERNELS, "trtllm"), KERNELS, **step)
    gemms = KG.layer_gemms(m, 4)
    direct = sum(c * kernels.gemm_seconds("h100-sxm", "trtllm", "fp8", 64, n, k) for _, n, k, c in gemms)
    assert float(measured.linear_seconds) == pytest.approx(direct, rel=1e-9)
    roofline = iteration_time(costs, achieved_rates(dev, ROOFLINE, "trtllm"), ROOFLINE, **step)
    assert float(roofline.linear_seconds) != pytest.approx(direct, rel=0.01)
    # without an engine the tables cannot be chosen: the roofline, said by the rates
    assert achieved_rates(dev, KERNELS).kernel_gemms is None


def test_a_calibration_file_names_a_known_gemm_source():
    text = json.dumps({"gemm_source": "guess"})
    with pytest.raises(ValueError, match="gemm_source='guess' is not allowed: one of roofline, kernels"):
        from_json(text)
    assert from_json(json.dumps({"gemm_source": "kernels"})).gemm_source == "kernels"


def test_a_static_decode_on_a100_reads_measured_gemms_and_lands_near_lmdeploys_published_rate():
    # LMDeploy's published Llama-2-7B fp16 decode on one A100-80G: 102.21 tokens/s at batch 1, 1,010.62 at
    # batch 16 (data/validation/cases.csv). TensorRT-LLM's GEMMs, measured on the A100, stand in for TurboMind's.
    for batch, context, published in ((1, 192, 102.21), (16, 1152, 1010.62)):
        step = serving.decode_step("llama-2-7b", "a100-sxm-80gb", batch=batch, context_tokens=context,
                                   weight_precision="fp16", kv_precision="fp16", calibration=KERNELS)
        assert batch / step["seconds"] == pytest.approx(published, rel=0.08)
    with pytest.raises(ValueError, match="engine='lmdeploy' is not allowed"):
        serving.decode_step("llama-2-7b", "a100-sxm-80gb", batch=1, context_tokens=192, engine="lmdeploy")
