"""moe_source="engine_kernels": the measured MoE operator under the engines of MOE_KERNEL_ENGINES (SGLang), the
roofline under the others (aisize.serving.iteration._kernel_source; docs/calibration.md, issue 48)."""

import json

import numpy as np
import pytest

from aisize import kernels, models, serving
from aisize.serving import kernel_moe as KM
from aisize.serving.calibration import MOE_KERNEL_ENGINES, from_json
from aisize.serving.costs import model_costs, weight_formats
from aisize.serving.hardware import device
from aisize.serving.iteration import achieved_rates, iteration_time

ENGINE = serving.CALIBRATION.with_(moe_source="engine_kernels")
KERNELS = serving.CALIBRATION.with_(moe_source="kernels")
ROOFLINE = serving.CALIBRATION.with_(moe_source="roofline")
R1 = model_costs(models.resolve("deepseek-r1"), weight_formats("fp8"), "fp8")
STEP = dict(decode_sequences=np.array([8.0, 800.0]), decode_context=2000.0, prefill_tokens=0.0, prefill_prompts=0.0,
            prompt_tokens=1000.0, gpus=np.array([8.0, 8.0]), expert_parallel=8.0)


def _experts(calib, gpu, engine):
    dev = device(gpu, "fp8", "fp8")
    return iteration_time(R1, achieved_rates(dev, calib, engine), calib, **STEP).experts_seconds


def test_only_sglang_reads_its_measured_moe_operator():
    assert MOE_KERNEL_ENGINES == {"sglang"}
    dev = device("b200", "fp8", "fp8")
    assert achieved_rates(dev, ENGINE, "sglang").kernel_moe == ("b200", "sglang")
    for other in ("trtllm", "vllm"):
        assert achieved_rates(dev, ENGINE, other).kernel_moe is None
        assert achieved_rates(dev, KERNELS, other).kernel_moe == ("b200", other)


@pytest.mark.parametrize("gpu", ["b200", "h200-sxm"])
def test_sglang_takes_the_tables_and_the_other_engines_keep_the_roofline(gpu):
    np.testing.assert_array_equal(_experts(ENGINE, gpu, "sglang"), _experts(KERNELS, gpu, "sglang"))
    np.testing.assert_array_equal(_experts(ENGINE, gpu, "trtllm"), _experts(ROOFLINE, gpu, "trtllm"))
    # the switch does change SGLang's step (else this test could not fail)
    assert not np.allclose(_experts(ENGINE, gpu, "sglang"), _experts(ROOFLINE, gpu, "sglang"), rtol=0.02)


@pytest.mark.parametrize("gpu,kernel", [("b200", "sglang_flashinfer_trtllm_moe"), ("gb200", "sglang_flashinfer_trtllm_moe"),
                                        ("h200-sxm", "sglang_fused_moe_triton")])
def test_sglang_reads_the_moe_runner_its_recipes_ran(gpu, kernel):
    """The recipes set ``--moe-runner-backend flashinfer_trtllm`` on Blackwell (NVIDIA/srt-slurm recipes/b200-fp8)
    and keep SGLang's Triton fused MoE on Hopper: the curve is that kernel's block-scaled FP8 sweep."""
    shape = KM.moe_shape(R1.model)
    t = kernels.table(gpu, "sglang", "moe")
    lookup = KM.curve(gpu, "sglang", "fp8", shape, 1, 8)
    want = t.lookup(dict(kernel=kernel, dtype="fp8_block", distribution=shape[5]), hidden=shape[0], inter=shape[1],
                    topk=shape[2], num_experts=shape[3], tp=1, ep=8, tokens=np.exp(lookup[0]))
    np.testing.assert_allclose(lookup[1], np.log(want.seconds), rtol=1e-9)


def test_a_calibration_file_may_name_engine_kernels():
    assert from_json(json.dumps({"moe_source": "engine_kernels"})).moe_source == "engine_kernels"
    with pytest.raises(ValueError, match="moe_source='sglang' is not allowed: one of .*engine_kernels"):
        from_json(json.dumps({"moe_source": "sglang"}))

