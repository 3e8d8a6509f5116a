"""moe_layer_source="format_kernels": the fitted MoE-layer fixed time scaled to the expert format by the measured
MoE operators' small-batch time (aisize.serving.moe_format) at every batch; off in the shipped calibration (so is
"low_latency_kernels", the same only where TensorRT-LLM's low-latency NVFP4 kernels run:
tests/test_serving_nvfp4_low_latency.py)."""

import json

import numpy as np
import pytest

from aisize import serving
from aisize.serving import kernel_moe as KM
from aisize.serving import moe_format as MF
from aisize.serving.calibration import from_json
from aisize.serving.hardware import device
from aisize.serving.iteration import achieved_rates, iteration_time

from moe_step import STEP, costs_of

SCALED = serving.CALIBRATION.with_(moe_layer_source="format_kernels")
FITTED = serving.CALIBRATION.with_(moe_layer_source="fitted")
_costs = costs_of


def test_the_ratio_is_the_geometric_mean_of_the_measured_times_at_one_to_eight_tokens():
    # DeepSeek-R1 on B200 under TensorRT-LLM at TP 1 x EP 8: the NVFP4 operator at 1, 2, 4, 8 tokens over the
    # block-scaled FP8 one (about 45 against 77 us a layer), each read from the committed tables
    shape = KM.moe_shape(_costs("deepseek-r1", "nvfp4").model)
    nv, f8 = (np.exp(KM.curve("b200", "trtllm", f, shape, 1, 8)[1][:4]) for f in ("nvfp4", "fp8"))
    assert nv.mean() == pytest.approx(45.5e-6, rel=0.05) and f8.mean() == pytest.approx(77e-6, rel=0.05)
    want = float(np.exp(np.mean(np.log(nv)) - np.mean(np.log(f8))))
    assert MF.ratio("b200", "trtllm", "nvfp4", shape, 1, 8) == pytest.approx(want, rel=1e-12)
    assert 0.5 < want < 0.75


def test_fp8_no_tables_and_dense_models_keep_the_fitted_time():
    shape = KM.moe_shape(_costs("deepseek-r1", "fp8").model)
    assert MF.ratio("b200", "trtllm", "fp8", shape, 1, 8) == 1.0  # the reference format itself
    assert MF.ratio("mi355x", "sglang", "mxfp4", shape, 1, 8) == 1.0  # a GPU without measured tables
    assert MF.scale(_costs("llama-3.1-8b", "nvfp4"), "b200", "trtllm", 8.0, 8.0) == 1.0  # no MoE layer


def test_another_engines_table_on_the_same_gpu_stands_in():
    # vLLM's B200 table has no DeepSeek-R1 sweep at TP 2 x EP 4; SGLang's has both formats there
    shape = KM.moe_shape(_costs("deepseek-r1", "nvfp4").model)
    assert KM.curve("b200", "vllm", "nvfp4", shape, 2, 4) is None
    assert MF.ratio("b200", "vllm", "nvfp4", shape, 2, 4) == MF.ratio("b200", "sglang", "nvfp4", shape, 2, 4) != 1.0


def test_the_switch_scales_only_the_moe_layer_fixed_time():
    costs = _costs("deepseek-r1", "nvfp4")
    dev = device("b200", "nvfp4", "fp8")
    on = iteration_time(costs, achieved_rates(dev, SCALED, "trtllm"), SCALED, **STEP)
    base = FITTED
    off = iteration_time(costs, achieved_rates(dev, base, "trtllm"), base, **STEP)
    r = MF.ratio("b200", "trtllm", "nvfp4", KM.moe_shape(costs.model), 1, 8)
    want = costs.moe_layers * base.value("moe_layer_seconds", "blackwell") * (r - 1.0)
    np.testing.assert_allclose(on.overhead_seconds - off.overhead_seconds, want, rtol=1e-9)
    np.testing.assert_allclose(on.experts_seconds, off.experts_seconds, rtol=1e-12)
    # broadcast over splits: each (GPUs, EP) pair reads its own ratio
    g, ep = np.array([8.0, 8.0, 4.0]), np.array([8.0, 1.0, 4.0])
    got = MF.scale(costs, "b200", "trtllm", g, ep)
    assert list(got) == [MF.ratio("b200", "trtllm", "nvfp4", KM.moe_shape(costs.model), int(a // b), int(b))
                         for a, b in zip(g, ep)]


def test_the_shipped_calibration_keeps_it_off_and_a_file_may_name_it():
    assert serving.CALIBRATION.moe_layer_source == "fitted"
    assert from_json(json.dumps({"moe_layer_source": "format_kernels"})).moe_layer_source == "format_kernels"
    with pytest.raises(ValueError, match="moe_layer_source='kernels' is not allowed: one of fitted, format_kernels, "
                                         "low_latency_kernels"):
        from_json(json.dumps({"moe_layer_source": "kernels"}))
