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


def _variant(case):
    """The variant (kernel, dtype, distribution) behind a case's curve above the low-latency range."""
    model, fmt, gpu, engine, tp, ep = case
    shape = KM.moe_shape(models.resolve(model))
    t = kernels.table(gpu, engine, "moe")
    lookup = KM.curve(gpu, engine, fmt, shape, tp, ep)
    dtypes = KM.BLOCK_FP8_FIRST if shape[6] and fmt == "fp8" else KM.DTYPES[fmt]
    for dtype in dtypes:
        for vid in KM._variants(t, dtype, shape[4], shape[5]):
            got = t.lookup(dict(zip(t.cats, t.variants[vid])), hidden=shape[0], inter=shape[1], topk=shape[2],
                           num_experts=shape[3], tp=tp, ep=ep, tokens=np.exp(lookup[0]))
            above = np.exp(lookup[0]) > KM.LOW_LATENCY_MAX_TOKENS  # below, TRT-LLM NVFP4 reads its low-latency twin
            if np.allclose(np.log(got.seconds)[above], lookup[1][above]):
                return shape, dict(zip(t.cats, t.variants[vid]))
    raise AssertionError("no variant reproduces the curve")


# tokens between the curve's powers of two, where it interpolates
BETWEEN = np.array([3.0, 12.0, 48.0, 96.0, 192.0, 384.0, 768.0, 1536.0, 3072.0, 6144.0, 12288.0])


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}/{c[2]}/{c[3]}")
def test_the_curve_follows_the_surface_between_its_points(case):
    model, fmt, gpu, engine, tp, ep = case
    shape, variant = _variant(case)
    surface = kernels.table(gpu, engine, "moe").lookup(variant, hidden=shape[0], inter=shape[1], topk=shape[2],
                                                        num_experts=shape[3], tp=tp, ep=ep, tokens=BETWEEN)
    err = np.abs(KM.seconds(KM.curve(gpu, engine, fmt, shape, tp, ep), BETWEEN) / surface.seconds - 1.0)
    err = err[BETWEEN > (KM.LOW_LATENCY_MAX_TOKENS if fmt == "nvfp4" and engine == "trtllm" else 0)]
    assert np.median(err) <= 0.05, f"median {np.median(err):.1%}, worst {err.max():.1%}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}/{c[2]}/{c[3]}")
def test_the_curve_reproduces_the_measured_points(case):
    # the package's own measurements (all token counts swept, not only the curve's powers of two)
    pytest.importorskip("aiconfigurator_core")
    from aisize.kernels import importer

    model, fmt, gpu, engine, tp, ep = case
    shape, variant = _variant(case)
    df = importer.source_points(kernels.table(gpu, engine, "moe").meta)
    sel = ((df.hidden == shape[0]) & (df.inter == shape[1]) & (df.topk == shape[2]) & (df.num_experts == shape[3])
           & (df.tp == tp) & (df.ep == ep))
    for k, v in variant.items():
        sel &= df[k] == v
    if fmt == "nvfp4" and engine == "trtllm":  # up to 128 tokens its low-latency twin (the next test)
        sel &= df.tokens > KM.LOW_LATENCY_MAX_TOKENS
    df = df[sel]
    assert len(df) >= 10
    err = np.abs(KM.seconds(KM.curve(gpu, engine, fmt, shape, tp, ep), df.tokens.to_numpy())
                 / df.seconds.to_numpy() - 1.0)
    assert np.median(err) <= 0.05, f"median {np.median(err):.1%}, worst {err.max():.1%} of {len(df)}"


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


def test_deepseek_r1_nvfp4_on_b200_follows_aiconfigurators_own_engine():
    # AIConfigurator 0.12.0's engine (aiconfigurator_core.sdk.engine._evaluate_single_op on its MoE op: DeepSeek-R1
    # NVFP4, b200_sxm, TensorRT-LLM 1.3.0rc20, MoE TP 1 x EP 8, power_law_1.01), one layer [us]: it reads the
    # low-latency twin up to 128 tokens and the regular sweep above
    engine = {1: 35.8, 8: 65.1, 64: 112.8, 256: 291.2, 1024: 336.5, 4096: 544.3, 16384: 1687.2}
    lookup = KM.curve("b200", "trtllm", "nvfp4", KM.moe_shape(models.resolve("deepseek-r1")), 1, 8)
    ours = KM.seconds(lookup, np.array(list(engine), dtype=float)) * 1e6
    np.testing.assert_allclose(ours, list(engine.values()), rtol=0.10)
