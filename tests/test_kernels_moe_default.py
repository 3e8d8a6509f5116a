"""``aisize.kernels.moe_seconds`` with no kernel named reads the engine's regular MoE kernel, never its low-latency
twin: TensorRT-LLM runs ``moe_torch_flow_min_latency`` at 128 tokens and below only (AIConfigurator's engine and
``aisize.serving.kernel_moe`` switch there), yet its sweep reaches 16,384 tokens, where it reads 3 to 4 times
faster than the kernel the engine runs. A default that picked it misled an analysis (docs/calibration.md, helper X)."""

import math

import aisize.kernels as K
from aisize.serving import kernel_moe as KM
from aisize.serving.costs import model_costs, weight_formats
from aisize import models

R1 = dict(hidden=7168, inter=2048, topk=8, num_experts=256)


def test_the_default_is_the_regular_kernel_and_the_low_latency_one_is_read_by_name():
    default = K.moe_seconds("b200", "trtllm", "nvfp4", 7373, **R1, tp=4)
    regular = K.moe_seconds("b200", "trtllm", "nvfp4", 7373, **R1, tp=4, kernel="moe_torch_flow_cutlass")
    low = K.moe_seconds("b200", "trtllm", "nvfp4", 7373, **R1, tp=4, kernel="moe_torch_flow_min_latency")
    assert default == regular
    assert low < 0.5 * regular  # the twin's sweep beyond its range reads far faster: never a default


def test_the_default_agrees_with_the_serving_curve_above_the_low_latency_range():
    # the serving curve (power-law routing for DeepSeek) is log-log between its powers of two: at 8,192 tokens it
    # is the regular kernel's measured point
    costs = model_costs(models.resolve("deepseek-r1"), weight_formats("nvfp4"), "fp8")
    curve = KM.curve("b200", "trtllm", "nvfp4", KM.moe_shape(costs.model), 4, 1)
    served = float(KM.seconds(curve, 8192.0))
    direct = K.moe_seconds("b200", "trtllm", "nvfp4", 8192, **R1, tp=4, distribution="power_law_1.01")
    assert math.isclose(served, direct, rel_tol=0.02)


def test_a_table_with_no_low_latency_twin_keeps_its_default():
    assert K.moe_seconds("h200-sxm", "trtllm", "fp8_block", 4096, **R1, tp=1, ep=8) > 0
