"""Routed experts from the engine's MoE operator measured on the GPU (aisize.serving.kernel_moe)."""

import json

import numpy as np
import pytest

from aisize import kernels, models, serving
from aisize.serving import kernel_moe as KM
from aisize.serving.calibration import from_json
from aisize.serving.costs import model_costs, weight_formats
from aisize.serving.hardware import device
from aisize.serving.iteration import achieved_rates, iteration_time

KERNELS = serving.CALIBRATION.with_(moe_source="kernels")
ROOFLINE = serving.CALIBRATION.with_(moe_source="roofline")
# (model, format, GPU, engine, MoE TP, EP): shapes the tables measure, gated MLPs, skewed routing
CASES = [("mixtral-8x7b", "fp8", "h100-sxm", "trtllm", 2, 1), ("qwen3-30b-a3b", "nvfp4", "b200", "trtllm", 1, 1),
         ("deepseek-r1", "fp8", "h200-sxm", "sglang", 1, 8), ("gpt-oss-120b", "mxfp4", "h100-sxm", "vllm", 1, 1),
         ("llama-4-scout", "nvfp4", "b200", "trtllm", 4, 1)]


def _costs(model, fmt):
    return model_costs(models.resolve(model), weight_formats(fmt), "fp8")


def _measured(model, fmt, gpu, engine, tp, ep):
    """The surface's retained points (tokens, seconds) behind a case's curve, at its chosen variant."""
    m = models.resolve(model)
    shape = KM.moe_shape(m)
    t = kernels.table(gpu, engine, "moe")
    dtypes = KM.BLOCK_FP8_FIRST if shape[6] and fmt == "fp8" else KM.DTYPES[fmt]
    for dtype in dtypes:
        for vid in KM._variants(t, dtype, shape[4], shape[5]):
            sel = t.point_variant == vid
            p = {a: t.axis_values[j][t.point_idx[sel, j]] for j, a in enumerate(t.axes)}
            hit = ((p["hidden"] == shape[0]) & (p["inter"] == shape[1]) & (p["topk"] == shape[2])
                   & (p["num_experts"] == shape[3]) & (p["tp"] == tp) & (p["ep"] == ep))
            if hit.sum() >= 5:
                return p["tokens"][hit], np.exp(t._leaf[sel][hit])
    raise AssertionError("no measured points for the case")


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}/{c[2]}/{c[3]}")
def test_the_curve_reproduces_the_tables_points(case):
    model, fmt, gpu, engine, tp, ep = case
    lookup = KM.curve(gpu, engine, fmt, KM.moe_shape(models.resolve(model)), tp, ep)
    assert lookup is not None
    tokens, measured = _measured(*case)
    err = np.abs(KM.seconds(lookup, tokens) / measured - 1.0)
    assert np.median(err) <= 0.05, f"median {np.median(err):.1%}, worst {err.max():.1%}"


def test_a_hand_checked_point_mixtral_on_h200():
    # Mixtral 8x7B on H200 under TensorRT-LLM, FP8, one GPU: 16 tokens at top-2 touch all 8 experts, so the
    # layer reads 8 x 3 x 4,096 x 14,336 B = 1.409 GB of FP8 weights: 294 us at H200's 4.8 TB/s. The measured
    # operator takes 362 us (81 % of the HBM rate); 32 layers make 11.6 ms per iteration.
    shape = KM.moe_shape(models.resolve("mixtral-8x7b"))
    per_layer = float(KM.seconds(KM.curve("h200-sxm", "trtllm", "fp8", shape, 1, 1), 16))
    hbm = 8 * 3 * 4096 * 14336 / 4.8e12
    assert hbm == pytest.approx(293.6e-6, rel=1e-3)
    assert per_layer == pytest.approx(362e-6, rel=0.03)
    costs = _costs("mixtral-8x7b", "fp8")
    step = dict(decode_sequences=16.0, decode_context=1000.0, prefill_tokens=0.0, prefill_prompts=0.0,
                prompt_tokens=1000.0, gpus=1)
    it = iteration_time(costs, achieved_rates(device("h200-sxm", "fp8", "fp8"), KERNELS, "trtllm"), KERNELS, **step)
    assert float(it.experts_seconds) == pytest.approx(32 * per_layer, rel=1e-9)


def test_tokens_beyond_the_sweep_grow_linearly_and_the_curve_rises():
    lookup = KM.curve("h100-sxm", "trtllm", "fp8", KM.moe_shape(models.resolve("mixtral-8x7b")), 2, 1)
    t = KM.seconds(lookup, np.array([16384.0, 32768.0]))
    assert t[1] == pytest.approx(2 * t[0], rel=1e-9)
    assert KM.seconds(lookup, 4096.0) > KM.seconds(lookup, 64.0)


@pytest.mark.parametrize("model, fmt, gpu, engine, gpus, ep, expect", [
    ("mixtral-8x7b", "fp8", "h100-sxm", "trtllm", 2, 1, "measured MoE kernels (h100-sxm, trtllm"),
    ("mixtral-8x7b", "fp8", "h100-sxm", "trtllm-bench", 2, 1, "measured MoE kernels (h100-sxm, trtllm"),
    ("mixtral-8x7b", "fp8", "mi300x", "vllm", 2, 1, "roofline (no measured fp8 MoE kernel for mi300x"),
    ("mixtral-8x7b", "nvfp4", "h100-sxm", "trtllm", 2, 1, "roofline (no measured nvfp4"),  # Hopper has no NVFP4
    ("llama-3.1-8b", "fp8", "h100-sxm", "trtllm", 1, 1, "none (llama-3.1-8b has no routed experts)"),
])
def test_coverage_says_where_the_routed_experts_time_comes_from(model, fmt, gpu, engine, gpus, ep, expect):
    assert KM.coverage(_costs(model, fmt), gpu, engine, gpus, ep).startswith(expect)


def test_the_switch_selects_the_tables_and_leaves_the_roofline_where_none_covers():
    costs = _costs("qwen3-30b-a3b", "nvfp4")
    dev = device("b200", "nvfp4", "fp8")
    step = dict(decode_sequences=np.array([8.0, 256.0]), decode_context=2000.0, prefill_tokens=0.0,
                prefill_prompts=0.0, prompt_tokens=1000.0, gpus=np.array([1.0, 2.0]), expert_parallel=1.0)
    off = iteration_time(costs, achieved_rates(dev, ROOFLINE, "trtllm"), ROOFLINE, **step)
    on = iteration_time(costs, achieved_rates(dev, KERNELS, "trtllm"), KERNELS, **step)
    shape = KM.moe_shape(costs.model)
    for i, (n, g) in enumerate([(8.0, 1), (256.0, 2)]):
        want = costs.moe_layers * KM.seconds(KM.curve("b200", "trtllm", "nvfp4", shape, g, 1), n)
        assert on.experts_seconds[i] == pytest.approx(want, rel=1e-9)
    assert not np.allclose(on.experts_seconds, off.experts_seconds)
    # no engine named, or a GPU without tables: the roofline, unchanged
    assert achieved_rates(dev, KERNELS).kernel_moe is None
    amd = device("mi355x", "fp8", "fp8")
    c8 = _costs("qwen3-30b-a3b", "fp8")
    a = iteration_time(c8, achieved_rates(amd, KERNELS, "vllm"), KERNELS, **step)
    b = iteration_time(c8, achieved_rates(amd, ROOFLINE, "vllm"), ROOFLINE, **step)
    np.testing.assert_allclose(a.experts_seconds, b.experts_seconds)


def test_a_calibration_file_names_a_known_moe_source():
    with pytest.raises(ValueError, match="moe_source='guess' is not allowed: one of roofline, kernels"):
        from_json(json.dumps({"moe_source": "guess"}))
    assert from_json(json.dumps({"moe_source": "kernels"})).moe_source == "kernels"
