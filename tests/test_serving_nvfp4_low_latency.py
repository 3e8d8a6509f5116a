"""moe_layer_source="low_latency_kernels" (not shipped: it loses runs leaving one model out): under TensorRT-LLM,
NVFP4 experts and at most 128 tokens through a MoE layer, the fitted MoE-layer fixed time is scaled by the measured
operators' NVFP4/FP8 small-batch ratio (aisize.serving.moe_format.low_latency_scale); elsewhere it stands as fitted
(docs/calibration-nvfp4.md)."""

import numpy as np
import pytest

from aisize import serving
from aisize.serving import kernel_moe as KM
from aisize.serving import moe_format as MF
from aisize.serving.hardware import device
from aisize.serving.iteration import achieved_rates, iteration_time

from moe_step import STEP, costs_of

FITTED = serving.CALIBRATION  # the shipped one
LOW = FITTED.with_(moe_layer_source="low_latency_kernels")


def _overhead(costs, engine, calib, gpu="b200", **step):
    rates = achieved_rates(device(gpu, costs.formats, "fp8"), calib, engine)
    return iteration_time(costs, rates, calib, **{**STEP, **step}).overhead_seconds


def test_a_published_trtllm_nvfp4_decode_at_16_in_flight():
    # InferenceX run 21640806486 (TensorRT-LLM 1.2.0rc6.post2, 4 x B200, nvidia/DeepSeek-R1-0528-FP4-v2, 922/922
    # tokens, 16 in flight; reference serving_load.csv row 41): TPOT 12.48 ms published. As fitted the MoE layers'
    # fixed time reads it 13.5 % long; the low-latency kernels' measured ratio at TP 4 x EP 1 (0.25) brings it in
    kw = dict(tensor_parallel=4, weight_precision="nvfp4", kv_precision="fp8", input_tokens=922, output_tokens=922,
              concurrency=16, engine="trtllm", attention_dp=1)
    published = 12.47589e-3
    low = serving.estimate("deepseek-r1", "b200", calibration=LOW, **kw).tpot_s
    fitted = serving.estimate("deepseek-r1", "b200", **kw).tpot_s
    assert abs(low / published - 1.0) < 0.05
    assert fitted / published - 1.0 > 0.10


def test_only_small_batches_are_scaled_by_the_measured_ratio():
    costs = costs_of("deepseek-r1", "nvfp4")
    r = MF.ratio("b200", "trtllm", "nvfp4", KM.moe_shape(costs.model), 1, 8)
    assert 0.55 < r < 0.7  # TRTLLM-Gen NVFP4 against the block-scaled FP8 operator at TP 1 x EP 8
    seqs = np.array([4.0, 128.0, 129.0, 256.0])  # tokens through a MoE layer: one a sequence
    got = _overhead(costs, "trtllm", LOW, decode_sequences=seqs) - _overhead(costs, "trtllm", FITTED,
                                                                                 decode_sequences=seqs)
    want = costs.moe_layers * FITTED.value("moe_layer_seconds", "blackwell") * (r - 1.0)
    np.testing.assert_allclose(got, [want, want, 0.0, 0.0], rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("model, fmt, engine", [("deepseek-r1", "fp8", "trtllm"), ("deepseek-r1", "nvfp4", "sglang"),
                                                ("deepseek-r1", "nvfp4", "vllm"), ("qwen3-30b-a3b", "bf16", "trtllm")])
def test_other_formats_and_engines_keep_the_fitted_time(model, fmt, engine):
    costs = costs_of(model, fmt)
    np.testing.assert_array_equal(_overhead(costs, engine, LOW), _overhead(costs, engine, FITTED))
