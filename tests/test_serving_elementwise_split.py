"""elementwise_source="split": the counted hidden-size elementwise traffic (REPLICATED_ELEMENTWISE_BYTES) on every GPU
of a tensor-parallel group and the fitted rest divided over it; off in the shipped calibration."""

import json

import numpy as np
import pytest

from aisize import models, serving
from aisize.serving.calibration import REPLICATED_ELEMENTWISE_BYTES, from_json
from aisize.serving.costs import model_costs, weight_formats
from aisize.serving.hardware import device
from aisize.serving.iteration import achieved_rates, iteration_time

BASE = serving.CALIBRATION
STEP = dict(decode_sequences=np.array([4.0, 64.0]), decode_context=2000.0, prefill_tokens=np.array([0.0, 7373.0]),
            prefill_prompts=np.array([0.0, 1.0]), prompt_tokens=7373.0)


def _elementwise(cal, gpus, attention_dp=1):
    costs = model_costs(models.resolve("deepseek-r1"), weight_formats("nvfp4"), "fp8")
    rates = achieved_rates(device("b200", "nvfp4", "fp8"), cal, "trtllm")
    it = iteration_time(costs, rates, cal, gpus=gpus, attention_dp=attention_dp, expert_parallel=gpus, **STEP)
    return it.elementwise_seconds, costs, rates


def test_the_counted_part_is_two_norms_two_residual_adds_and_two_quantizations():
    # 16-bit activations: norm 2 read + 2 write; add 2 + 2 read + 2 write; quantize 2 read + 1 write (8-bit)
    assert REPLICATED_ELEMENTWISE_BYTES == 2 * (2 + 2) + 2 * (2 + 2 + 2) + 2 * (2 + 1)


def test_one_gpu_reads_the_same_traffic_when_the_fitted_part_is_the_rest():
    split = BASE.with_(elementwise_source="split",
                       elementwise_bytes_per_token=BASE.elementwise_bytes_per_token - REPLICATED_ELEMENTWISE_BYTES)
    np.testing.assert_allclose(_elementwise(split, 1)[0], _elementwise(BASE, 1)[0], rtol=1e-12)


def test_tensor_parallelism_divides_only_the_fitted_part():
    split = BASE.with_(elementwise_source="split", elementwise_bytes_per_token=100.0)
    got, costs, rates = _elementwise(split, 4)
    tokens = STEP["decode_sequences"] + STEP["prefill_tokens"]
    want = (REPLICATED_ELEMENTWISE_BYTES + 100.0 / 4) * costs.hidden * costs.layers * tokens / rates.memory_bytes_per_s
    np.testing.assert_allclose(got, want, rtol=1e-12)
    replicated, _, _ = _elementwise(BASE.with_(elementwise_bytes_per_token=100.0), 4)
    assert np.all(got < replicated)  # the shipped form charges all of it to every GPU


def test_under_attention_dp_a_rank_keeps_its_own_tokens_work():
    # 4 GPUs, 4 attention groups: TP 1 inside each group, so nothing divides a group's traffic
    split = BASE.with_(elementwise_source="split", elementwise_bytes_per_token=100.0)
    dp4, _, _ = _elementwise(split, 4, attention_dp=4)
    one = BASE.with_(elementwise_bytes_per_token=100.0 + REPLICATED_ELEMENTWISE_BYTES)
    np.testing.assert_allclose(dp4, _elementwise(one, 4, attention_dp=4)[0], rtol=1e-12)


def test_the_shipped_calibration_keeps_it_off_and_a_file_may_name_it():
    assert BASE.elementwise_source == "replicated"
    assert from_json(json.dumps({"elementwise_source": "split"})).elementwise_source == "split"
    with pytest.raises(ValueError, match="elementwise_source='kernels' is not allowed: one of replicated, split"):
        from_json(json.dumps({"elementwise_source": "kernels"}))
