"""Tensor-parallel all-reduces from the all-reduce kernels measured on the GPU (aisize.serving.kernel_allreduce)."""

import numpy as np
import pytest

from aisize import kernels, serving
from aisize.serving import kernel_allreduce as KA
from aisize.serving.calibration import from_json
from aisize.serving.iteration import iteration_time

KERNELS = serving.CALIBRATION.with_(allreduce_source="kernels")
HIDDEN_BYTES = 7168 * 2.0  # one DeepSeek-R1 token's hidden state in bf16


def test_measured_points_are_read_as_the_tables_give_them():
    # NVIDIA's measurements (aiconfigurator-core, distilled in data/kernels): B200 under TensorRT-LLM, 8 GPUs
    tokens = np.array([1.0, 4.0, 64.0, 256.0])
    got = KA.allreduce_seconds("b200", "trtllm", tokens * HIDDEN_BYTES, 8, np.full(4, 1.0))
    direct = kernels.allreduce_seconds("b200", "trtllm", tokens * HIDDEN_BYTES, np.full(4, 8.0))
    assert np.allclose(got, direct, rtol=1e-12)
    # latency-bound at a decode batch, bandwidth-bound beyond: 5 to 7 us, then 16.5 and 37.5 us
    assert 4e-6 < got[0] < 7e-6 and 4e-6 < got[1] < 7e-6
    assert got[2] == pytest.approx(16.5e-6, rel=0.05) and got[3] == pytest.approx(37.5e-6, rel=0.05)
    # the engine's own trtllm-serve and trtllm-bench read the same TensorRT-LLM table
    assert np.allclose(KA.allreduce_seconds("b200", "trtllm-bench", tokens * HIDDEN_BYTES, 8, 1.0), direct)


def test_cases_without_a_measurement_keep_the_roofline():
    roof = np.array([3e-6, 3e-6, 3e-6])
    # one GPU: no all-reduce at all
    assert np.all(KA.allreduce_seconds("b200", "trtllm", HIDDEN_BYTES, 1, roof) == 0.0)
    # GB200's sweeps stop at 4 GPUs: 8 keeps the roofline, 4 is read
    got = KA.allreduce_seconds("gb200", "trtllm", HIDDEN_BYTES, np.array([8.0, 4.0, 2.0]), roof)
    assert got[0] == 3e-6 and got[1] != 3e-6 and got[2] != 3e-6
    # no tables for AMD GPUs, nor for an engine without them
    assert np.all(KA.allreduce_seconds("mi355x", "sglang", HIDDEN_BYTES, 8, roof) == roof)
    assert np.all(KA.allreduce_seconds("b200", "atom", HIDDEN_BYTES, 8, roof) == roof)


def _decode(calibration, batch=4.0):
    rep = serving.replica("deepseek-r1", "b200", tensor_parallel=8, weight_precision="fp8", kv_precision="fp8",
                          input_tokens=922, output_tokens=922, concurrency=4, engine="trtllm", attention_dp=1,
                          expert_parallel=1, calibration=calibration)
    return iteration_time(rep.costs, rep.rates, rep.calibration, decode_sequences=batch, decode_context=1383.0,
                          prefill_tokens=0.0, prefill_prompts=0.0, prompt_tokens=922.0, **rep.shape.kwargs())


def test_the_iteration_reads_two_measured_all_reduces_a_layer():
    roof, meas = _decode(serving.CALIBRATION), _decode(KERNELS)
    one = float(kernels.allreduce_seconds("b200", "trtllm", 4 * HIDDEN_BYTES, 8))
    assert float(meas.communication_seconds) == pytest.approx(2 * 61 * one, rel=1e-9)
    assert meas.communication_seconds < roof.communication_seconds  # 6 us measured, the roofline's latency 10 us
    for part in ("linear_seconds", "experts_seconds", "decode_attention_seconds", "overhead_seconds"):
        assert float(getattr(meas, part)) == float(getattr(roof, part))  # everything else is the roofline's


def test_the_shipped_calibration_keeps_the_roofline_and_the_switch_is_checked():
    assert serving.CALIBRATION.allreduce_source == "roofline"
    assert from_json('{"allreduce_source": "kernels"}').allreduce_source == "kernels"
    with pytest.raises(ValueError, match="allreduce_source='tables' is not allowed: one of roofline, kernels"):
        from_json('{"allreduce_source": "tables"}')
