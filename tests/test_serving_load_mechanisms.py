"""Fixed-concurrency serving mechanisms against published closed-loop runs (issue 48).

The published figures are SemiAnalysis InferenceX results (``benchmark_serving.py --max-concurrency C
--request-rate inf --random-range-ratio 0.8 --num-prompts 10*C``), the rows of
``../shared/reference/serving_load.csv`` named in each test; docs/estimates.md, "Fixed concurrency and MTP
by class (2026-12-05)", gives the classes of misses these tests stand beside.
"""

import pytest

from aisize import serving
from aisize.serving.engine import ENGINES

# InferenceX run 23552373331 (SGLang v0.5.9-cu130, B200, DeepSeek-R1-0528 fp8, TP8 EP1, kv fp8, ISL/OSL
# 8192/1024 nominal with range ratio 0.8: means 922/922, C = 16). Its recipe
# (benchmarks/single_node/dsr1_fp8_b200.sh) sets --scheduler-recv-interval 30 for C >= 16 at TP 8.
SGLANG_B200_C16 = dict(tok_per_gpu=143.8, tpot_ms=13.18, ttft_ms=402.0)
# InferenceX run 22469096331 (SGLang v0.5.9-rocm700, MI355X, DeepSeek-R1-0528 MXFP4, TP4, C = 64).
MI355X_TP4_C64 = dict(tok_per_gpu=582.2, tpot_ms=26.25, ttft_ms=549.0)


def _dsr1(accelerator, tp, weights, concurrency, engine):
    return serving.estimate("deepseek-r1", accelerator, tensor_parallel=tp, weight_precision=weights,
                            kv_precision="fp8", input_tokens=922, output_tokens=922, concurrency=concurrency,
                            engine=engine, attention_dp=1)


def test_published_closed_loop_obeys_the_response_time_law():
    """A closed loop of C requests with no think time: throughput = C / (TTFT + (O - 1)·TPOT) per request.
    The published run's own mean TTFT and TPOT give its published tokens/s per GPU within 5 % (its
    start and drain over 10·C prompts take the rest), so TTFT and TPOT compose and are judged apart."""
    r, c, o, gpus = MI355X_TP4_C64, 64, 922, 4
    law = c * o / (r["ttft_ms"] / 1e3 + (o - 1) * r["tpot_ms"] / 1e3) / gpus
    assert law == pytest.approx(r["tok_per_gpu"], rel=0.05)


def test_estimate_composes_its_own_ttft_and_tpot_and_meets_the_published_run():
    est = _dsr1("mi355x", 4, "mxfp4", 64, "sglang")
    per_request = 922 / (est.ttft_s + 921 * est.tpot_s)
    assert est.output_tokens_per_s == pytest.approx(64 * per_request, rel=1e-6)
    assert est.output_tokens_per_s_per_gpu == pytest.approx(MI355X_TP4_C64["tok_per_gpu"], rel=0.15)
    assert 1e3 * est.tpot_s == pytest.approx(MI355X_TP4_C64["tpot_ms"], rel=0.15)


def test_scheduler_recv_interval_gives_the_published_ttft():
    """SGLang polls for new requests once every N decode iterations: a request waits (N - 1) / 2 of them
    on average. With the recipe's N = 30 the estimate meets the run's mean TTFT (402 ms); polling every
    iteration it reads about half of it, so the mechanism, not a constant, closes the gap."""
    polled = _dsr1("b200", 8, "fp8", 16, ENGINES["sglang"].with_(scheduler_recv_interval=30))
    every = _dsr1("b200", 8, "fp8", 16, "sglang")
    r = SGLANG_B200_C16
    assert 1e3 * polled.ttft_s == pytest.approx(r["ttft_ms"], rel=0.15)
    assert 1e3 * every.ttft_s < 0.7 * r["ttft_ms"]
    # the wait is 14.5 mean iterations, each the run's TPOT at this batch
    assert polled.ttft_s - every.ttft_s == pytest.approx(14.5 * every.tpot_s, rel=0.1)
    assert polled.output_tokens_per_s_per_gpu == pytest.approx(r["tok_per_gpu"], rel=0.15)
    assert 1e3 * polled.tpot_s == pytest.approx(r["tpot_ms"], rel=0.15)
    assert polled.ttft_s < polled.ttft_p95_s < polled.ttft_p99_s


def test_scheduler_recv_interval_in_an_open_loop_too():
    kw = dict(tensor_parallel=8, weight_precision="fp8", kv_precision="fp8", input_tokens=922, output_tokens=922,
              requests_per_s=0.5, attention_dp=1)
    every = serving.estimate("deepseek-r1", "b200", engine="sglang", **kw)
    polled = serving.estimate("deepseek-r1", "b200", engine=ENGINES["sglang"].with_(scheduler_recv_interval=11),
                              **kw)
    assert polled.ttft_s - every.ttft_s == pytest.approx(5.0 * every.tpot_s, rel=0.1)


@pytest.mark.parametrize("key, value", [("sglang", 0), ("trtllm", 30), ("vllm", 2)])
def test_scheduler_recv_interval_is_checked(key, value):
    with pytest.raises(ValueError, match="scheduler_recv_interval"):
        ENGINES[key].with_(scheduler_recv_interval=value)
