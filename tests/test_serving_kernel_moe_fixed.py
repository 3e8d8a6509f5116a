"""moe_source="kernel_fixed": the roofline's routed experts plus the measured operator's fixed time per MoE layer
(aisize.serving.kernel_moe.fixed_seconds)."""

import json

import numpy as np
import pytest

from aisize import serving
from aisize.serving import kernel_moe as KM
from aisize.serving.calibration import from_json
from aisize.serving.hardware import device
from aisize.serving.iteration import _experts, achieved_rates, iteration_time

from moe_step import STEP, costs_of

FIXED = serving.CALIBRATION.with_(moe_source="kernel_fixed")
ROOFLINE = serving.CALIBRATION.with_(moe_source="roofline")
_costs = costs_of


def test_one_token_through_deepseek_r1_on_h200_under_sglang_is_the_measured_point():
    # AIConfigurator's SGLang FP8 block-scaled MoE on H200, DeepSeek-R1's shape at EP 8: one token takes ~92 us
    # per layer, 2.8x the ~33 us its top-8 experts' FP8 weights take at the roofline's expert HBM share
    costs = _costs("deepseek-r1", "fp8")
    rates = achieved_rates(device("h200-sxm", "fp8", "fp8"), FIXED, "sglang")
    one = float(KM.seconds(KM.curve("h200-sxm", "sglang", "fp8", KM.moe_shape(costs.model), 1, 8), 1.0))
    assert one == pytest.approx(91.7e-6, rel=0.03)
    roof = float(_experts(costs, rates, FIXED, 1.0, 8.0, 8.0))
    assert roof / costs.moe_layers == pytest.approx(32.5e-6, rel=0.05)
    got = float(KM.fixed_seconds(costs, "h200-sxm", "sglang", 8.0, 8.0, lambda t: _experts(costs, rates, FIXED, t, 8.0, 8.0)))
    assert got == pytest.approx(costs.moe_layers * one - roof, rel=1e-9)
    assert got / costs.moe_layers == pytest.approx(59e-6, rel=0.06)


def test_the_switch_adds_the_fixed_time_to_the_overhead_and_keeps_the_roofline_experts():
    costs = _costs("deepseek-r1", "fp8")
    dev = device("h200-sxm", "fp8", "fp8")
    on_rates = achieved_rates(dev, FIXED, "sglang")
    on = iteration_time(costs, on_rates, FIXED, **STEP)
    off = iteration_time(costs, achieved_rates(dev, ROOFLINE, "sglang"), ROOFLINE, **STEP)
    np.testing.assert_allclose(on.experts_seconds, off.experts_seconds, rtol=1e-12)
    fixed = KM.fixed_seconds(costs, "h200-sxm", "sglang", 8.0, 8.0,
                             lambda t: _experts(costs, on_rates, FIXED, t, 8.0, 8.0))
    assert float(fixed) > 0
    np.testing.assert_allclose(on.overhead_seconds - off.overhead_seconds, float(fixed), rtol=1e-9)


def test_no_table_no_fixed_time_and_never_negative():
    # MI355X has no measured tables; a dense model has no MoE layer: both keep the roofline alone
    dev = device("mi355x", "fp8", "fp8")
    costs = _costs("deepseek-r1", "fp8")
    a = iteration_time(costs, achieved_rates(dev, FIXED, "sglang"), FIXED, **STEP)
    b = iteration_time(costs, achieved_rates(dev, ROOFLINE, "sglang"), ROOFLINE, **STEP)
    np.testing.assert_allclose(a.seconds, b.seconds, rtol=1e-12)
    dense = _costs("llama-3.1-8b", "fp8")
    assert float(KM.fixed_seconds(dense, "h200-sxm", "trtllm", 1.0, 1.0, lambda t: 0.0)) == 0.0
    # a roofline above the measured point gives zero, not a negative time
    big = KM.fixed_seconds(costs, "h200-sxm", "sglang", np.array([8.0]), np.array([8.0]), lambda t: 1.0)
    assert float(big[0]) == 0.0


def test_a_calibration_file_may_name_kernel_fixed_for_moe_only():
    assert from_json(json.dumps({"moe_source": "kernel_fixed"})).moe_source == "kernel_fixed"
    with pytest.raises(ValueError, match="gemm_source='kernel_fixed' is not allowed: one of roofline, kernels"):
        from_json(json.dumps({"gemm_source": "kernel_fixed"}))
