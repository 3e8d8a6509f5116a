"""moe_source="kernel_cap_split": TensorRT-LLM's NVFP4 routed experts on a split replica never take longer than the
engine's operator measured at that split (aisize.serving.moe_cap.SPLIT_CAPPED), the disaggregated GB200/GB300 NVFP4
prefill pools of issue 48 (docs/calibration-nvfp4-prefill.md)."""

import numpy as np
import pytest

from aisize import serving
from aisize.serving import kernel_moe as KM
from aisize.serving.hardware import device
from aisize.serving.iteration import _experts, achieved_rates, iteration_time
from aisize.serving.moe_cap import capped_experts_seconds

from moe_step import costs_of

SPLIT = serving.CALIBRATION.with_(moe_source="kernel_cap_split")
ONE_GPU = serving.CALIBRATION.with_(moe_source="kernel_cap")
# one prefill iteration of the srt-slurm recipes' GB200 workers: 4 GPUs, attention DP 4 x EP 4, 16,384 tokens a rank
# budget, 922-token prompts: 16 whole prompts a rank, 64 through every MoE layer of the replica
PREFILL = dict(decode_sequences=0.0, decode_context=922.0, prefill_tokens=64 * 922.0, prefill_prompts=64.0,
               prompt_tokens=922.0, gpus=4, attention_dp=4, expert_parallel=4, graphed=False)


def _step(calib, fmt="nvfp4", gpu="gb200"):
    costs = costs_of("deepseek-r1", fmt)
    rates = achieved_rates(device(gpu, fmt, "fp8"), calib, "trtllm")
    return costs, rates, iteration_time(costs, rates, calib, **PREFILL)


def test_the_shipped_calibration_caps_split_nvfp4_experts():
    # shipped 2026-12-06: held out, tokens/s +13 and +12 runs, TPOT +7 and -3 (docs/calibration-nvfp4-prefill.md)
    assert serving.CALIBRATION.moe_source == "kernel_cap_split"


def test_at_most_128_tokens_the_low_latency_twin_is_not_read():
    costs = costs_of("deepseek-r1", "nvfp4")
    rates = achieved_rates(device("gb200", "nvfp4", "fp8"), SPLIT, "trtllm")
    tokens = np.array([64.0, 128.0, 129.0, 4096.0])
    roof = _experts(costs, rates, SPLIT, tokens, 4.0, 4.0)
    measured = KM.experts_seconds(costs, "gb200", "trtllm", tokens, 4.0, 4.0, lambda: np.inf)
    assert rates.kernel_moe_cap_split
    got = capped_experts_seconds(costs, "gb200", "trtllm", tokens, 4.0, 4.0, roof, split=True)
    np.testing.assert_allclose(got, np.where(tokens > 128.0, np.minimum(roof, measured), roof), rtol=1e-12)
    assert got[3] < roof[3]  # 4,096 tokens: the CUTLASS operator (0.81 of the roofline) reads


def test_nvfp4_prefill_experts_on_gb200_at_ep4_read_the_operator_measured_at_that_split():
    costs, rates, it = _step(SPLIT)
    tokens = PREFILL["prefill_tokens"]
    roof = float(_experts(costs, rates, SPLIT, tokens, 4.0, 4.0))
    lookup = KM.curve("gb200", "trtllm", "nvfp4", KM.moe_shape(costs.model), 1, 4)  # moe_tp 1 x moe_ep 4
    measured = costs.moe_layers * float(KM.seconds(lookup, tokens))
    # the measured CUTLASS NVFP4 operator (16,384 tokens measured, linear beyond) is 0.63 of the roofline
    assert measured / roof == pytest.approx(0.63, abs=0.02)
    assert float(it.experts_seconds) == pytest.approx(measured, rel=1e-12)
    _, _, before = _step(ONE_GPU)  # the one-GPU cap leaves a split replica on the roofline
    assert float(before.experts_seconds) == pytest.approx(roof, rel=1e-12)
    assert float(before.seconds) / float(it.seconds) == pytest.approx(1.28, abs=0.03)


def test_fp8_experts_on_a_split_stay_on_the_roofline():
    costs, rates, it = _step(SPLIT, fmt="fp8")
    roof = float(_experts(costs, rates, SPLIT, PREFILL["prefill_tokens"], 4.0, 4.0))
    assert float(it.experts_seconds) == pytest.approx(roof, rel=1e-12)


def test_the_cap_never_lengthens_the_roofline():
    # B200 at EP 8: the measured NVFP4 operator is longer than the roofline at every token count; the roofline stays
    costs = costs_of("deepseek-r1", "nvfp4")
    rates = achieved_rates(device("b200", "nvfp4", "fp8"), SPLIT, "trtllm")
    tokens = np.array([16.0, 2048.0, 32768.0])
    roof = _experts(costs, rates, SPLIT, tokens, 8.0, 8.0)
    got = capped_experts_seconds(costs, "b200", "trtllm", tokens, 8.0, 8.0, roof, split=True)
    assert np.all(got <= roof)
    assert got == pytest.approx(roof, rel=1e-12)


def test_the_disaggregated_gb200_nvfp4_prefill_pool_carries_more():
    # the pools of disaggregated row 44 (GB200, 3 prefill workers of 4 GPUs, 5 decode workers of 4, 922/922, C =
    # 16,130; its decode batch limit left to the engine here): prefill-bound at 6,490 output tokens/s a GPU with the
    # one-GPU cap, 1.20 times that with the split cap (the published run: 7,329)
    kw = dict(prefill=dict(replicas=3, tensor_parallel=4, expert_parallel=4, attention_dp=4),
              decode=dict(replicas=5, tensor_parallel=4, expert_parallel=4, attention_dp=4),
              weight_precision="nvfp4", kv_precision="fp8", input_tokens=922, output_tokens=922,
              concurrency=16130.0, engine="trtllm")
    new = serving.estimate_disaggregated("deepseek-r1", "gb200", calibration=SPLIT, **kw)
    old = serving.estimate_disaggregated("deepseek-r1", "gb200", calibration=ONE_GPU, **kw)
    assert old.output_tokens_per_s / old.gpus == pytest.approx(6490.0, rel=0.01)
    assert new.output_tokens_per_s / old.output_tokens_per_s == pytest.approx(1.20, abs=0.01)
