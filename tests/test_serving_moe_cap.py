"""moe_source="kernel_cap": a one-GPU replica's routed experts never take longer than the engine's measured MoE
operator (aisize.serving.moe_cap), judged on NVIDIA's audited MLPerf Inference Mixtral 8x7B results
(data/validation/mlperf_inference_mixtral.csv; docs/calibration-mixtral-mlperf.md)."""

import csv
from pathlib import Path

import numpy as np
import pytest

from aisize import serving
from aisize.serving import kernel_moe as KM
from aisize.serving.hardware import device
from aisize.serving.iteration import _experts, achieved_rates
from aisize.serving.moe_cap import capped_experts_seconds

from moe_step import costs_of

CAP = serving.CALIBRATION.with_(moe_source="kernel_cap")
ROOFLINE = serving.CALIBRATION.with_(moe_source="roofline")
MLPERF = Path(__file__).resolve().parents[1] / "data" / "validation" / "mlperf_inference_mixtral.csv"


def _mixtral_h100(calib):
    costs = costs_of("mixtral-8x7b", "fp8")
    return costs, achieved_rates(device("h100-sxm", "fp8", "fp8"), calib, "trtllm")


def test_mixtral_experts_on_one_h100_read_the_measured_operator_where_the_roofline_is_longer():
    # 1,024 tokens through 32 MoE layers: TensorRT-LLM's FP8 CUTLASS MoE measured on H100 (Mixtral's own shape, TP 1
    # x EP 1, AIConfigurator's power-law 1.2 routing) takes 27 ms; the roofline at expert_gemm_efficiency 0.2822 of
    # the dense FP8 rate (0.69 of 1,979 TFLOP/s: 19.6 % of peak) takes 2.76 times as long
    costs, rates = _mixtral_h100(CAP)
    roof = float(_experts(costs, rates, CAP, 1024.0, 1.0, 1.0))
    measured = costs.moe_layers * float(KM.seconds(KM.curve("h100-sxm", "trtllm", "fp8", KM.moe_shape(costs.model),
                                                            1, 1), 1024.0))
    assert measured == pytest.approx(27.0e-3, rel=0.03)
    assert roof / measured == pytest.approx(2.76, rel=0.03)
    got = float(capped_experts_seconds(costs, "h100-sxm", "trtllm", 1024.0, 1.0, 1.0, roof))
    assert got == pytest.approx(measured, rel=1e-12)


def test_the_roofline_stays_where_it_is_shorter_on_several_gpus_and_without_tables():
    costs, rates = _mixtral_h100(CAP)
    tokens = np.array([1024.0, 4096.0])
    roof = _experts(costs, rates, CAP, tokens, 2.0, 1.0)
    np.testing.assert_array_equal(capped_experts_seconds(costs, "h100-sxm", "trtllm", tokens, 2.0, 1.0, roof), roof)
    np.testing.assert_array_equal(capped_experts_seconds(costs, "mi355x", "trtllm", tokens, 1.0, 1.0, roof), roof)
    tiny = roof * 1e-3  # a roofline below the silicon keeps its own time
    np.testing.assert_array_equal(capped_experts_seconds(costs, "h100-sxm", "trtllm", tokens, 1.0, 1.0, tiny), tiny)
    fp4 = costs_of("qwen3-30b-a3b", "nvfp4")  # NVFP4 experts keep the roofline (moe_cap.CAPPED_FORMATS)
    r4 = _experts(fp4, achieved_rates(device("b200", "nvfp4", "fp8"), CAP, "trtllm"), CAP, tokens, 1.0, 1.0)
    assert KM.curve("b200", "trtllm", "nvfp4", KM.moe_shape(fp4.model), 1, 1) is not None
    np.testing.assert_array_equal(capped_experts_seconds(fp4, "b200", "trtllm", tokens, 1.0, 1.0, r4), r4)
    g = np.array([1.0, 8.0])  # broadcast over splits: only the one-GPU replica is capped
    both = capped_experts_seconds(costs, "h100-sxm", "trtllm", 4096.0, g, np.array([1.0, 8.0]), np.array([1.0, 1.0]))
    assert both[0] < 1.0 and both[1] == 1.0


def test_the_switch_changes_only_the_routed_experts_of_the_iteration():
    kw = dict(weight_precision="fp8", input_tokens=450, output_tokens=145, engine="trtllm", max_batch_size=896,
              max_num_tokens=8192)
    a = serving.estimate("mixtral-8x7b", "h100-sxm", tensor_parallel=1, calibration=ROOFLINE, **kw)
    b = serving.estimate("mixtral-8x7b", "h100-sxm", tensor_parallel=1, calibration=CAP, **kw)
    assert b.iteration_breakdown["experts_seconds"] < 0.5 * a.iteration_breakdown["experts_seconds"]
    for part in ("linear_seconds", "decode_attention_seconds", "elementwise_seconds", "host_seconds"):
        assert b.iteration_breakdown[part] == pytest.approx(a.iteration_breakdown[part], rel=1e-12)


def _mlperf(accelerator, scenario, round_):
    for row in csv.DictReader(MLPERF.open()):
        if (row["accelerator"], row["scenario"], row["round"]) == (accelerator, scenario, round_):
            return row
    raise LookupError((accelerator, scenario, round_))


# The benchmark's mean prompt length is not stated in the sources read (docs/calibration-mixtral-mlperf.md); these
# tests bracket it at 300 and 450 tokens (one GSM8K sample NVIDIA's preprocessing shows has 657, the cap is 2,048).
PROMPTS = (300, 450)


@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("accelerator", ["h100-sxm", "h200-sxm"])
def test_the_shipped_estimate_sustains_nvidias_audited_server_rate_per_gpu(accelerator, prompt):
    # MLPerf Inference v4.1, NVIDIA, 8 GPUs each serving its own TP 1 replica (FP8, TensorRT-LLM): H100 348.06 and
    # H200 391.79 completed samples/s in the Server scenario (TTFT p99 <= 2 s, TPOT p99 <= 200 ms), 145.9 output
    # tokens a sample; at 43.5 and 49.0 requests/s a GPU the roofline's experts read utilisation 1.49 to 2.08
    # (unsustainable), the capped ones 0.57 to 0.80
    row = _mlperf(accelerator, "Server", "v4.1")
    per_gpu = float(row["samples_per_s"]) / int(row["gpus"])
    out = float(row["output_tokens_per_s"]) / float(row["samples_per_s"])
    kw = dict(tensor_parallel=1, weight_precision="fp8", input_tokens=prompt, output_tokens=round(out),
              engine="trtllm", max_batch_size=int(row["max_batch_size"]), max_num_tokens=int(row["max_num_tokens"]),
              requests_per_s=per_gpu)
    shipped = serving.estimate("mixtral-8x7b", accelerator, **kw)
    assert shipped.stable and shipped.utilisation < 0.85
    assert shipped.tpot_p99_s < float(row["tpot_p99_ms"]) / 1e3 and shipped.ttft_p99_s < 2.0
    assert not serving.estimate("mixtral-8x7b", accelerator, calibration=ROOFLINE, **kw).stable


@pytest.mark.parametrize("accelerator", ["h100-sxm", "h200-sxm"])
def test_the_shipped_max_throughput_brackets_nvidias_offline_result(accelerator):
    # Offline (no latency limit), per GPU: H100 52,415.9 / 8 = 6,552 and H200 59,022.3 / 8 = 7,378 output tokens/s.
    # Capped, 300 and 700 prompt tokens read 1.59x and 0.84x (H100), 1.83x and 0.95x (H200): the published figure lies
    # between; the roofline's experts read 0.63x to 0.65x at 300 tokens and less at 700
    row = _mlperf(accelerator, "Offline", "v4.1")
    published = float(row["output_tokens_per_s"]) / int(row["gpus"])
    kw = dict(tensor_parallel=1, weight_precision="fp8", output_tokens=146, engine="trtllm",
              max_batch_size=int(row["max_batch_size"]), max_num_tokens=int(row["max_num_tokens"]))
    short, long_ = (serving.estimate("mixtral-8x7b", accelerator, input_tokens=p, **kw).output_tokens_per_s
                    for p in (300, 700))
    assert long_ < published < short
    for p in (300, 700):
        assert serving.estimate("mixtral-8x7b", accelerator, input_tokens=p, calibration=ROOFLINE,
                                **kw).output_tokens_per_s < 0.7 * published
