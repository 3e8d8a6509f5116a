"""The serving closed forms against a simpy simulation of the same continuous-batching scheduler.

Both use the same iteration model, so this checks the batching and queueing approximations of
aisize.serving.steady and aisize.serving.latency, not the roofline. The grid (stated here):

- capacity (every request waiting at t = 0, 8 x the replica's concurrency of requests): Llama 3.1 8B
  FP8 on H100 at 1024/256 and 128/1024, Llama 3.1 70B FP8 on H200 at 2048/256 (TensorRT-LLM limits),
  Qwen3-30B-A3B NVFP4 on B200 at 1024/256, and Llama 3.1 8B under vLLM limits (chunked prefill);
- Poisson arrivals at 30 % and 60 % of capacity for the same replicas at the first length pair
  each (2048/256 for the 70B): mean TTFT and mean TPOT, over max(1,200, 10 x the batch) requests;
- a closed loop (a client holding C requests in flight, no think time) at C = 8, 64 and 256 for
  Llama 3.1 8B FP8 on H100 (vLLM, 1000/200), DeepSeek-R1 FP8 on 8 x B200 (SGLang, EP 8, 900/200) and
  DeepSeek-R1 NVFP4 on 8 x B200 (TensorRT-LLM serve, 3000/200): output tokens/s and mean TPOT, over
  max(60, 8 x C) requests with lengths of CV 0.1 (the first ones spread over one request lifetime).

Tolerance: 10 % (the serving issue's bar) on throughput and TPOT; the closed loop's mean TTFT, a few
iterations at these loads, within 25 %. Seeds are fixed, so the runs repeat exactly.
"""

import pytest

from aisize import serving
from aisize.serving.simulate import simulate_estimate

pytestmark = pytest.mark.slow

REPLICAS = {
    "8b-trtllm": ("llama-3.1-8b", "h100-sxm", "fp8", 1024, 256, "trtllm"),
    "8b-trtllm-decode": ("llama-3.1-8b", "h100-sxm", "fp8", 128, 1024, "trtllm"),
    "70b-trtllm": ("llama-3.1-70b", "h200-sxm", "fp8", 2048, 256, "trtllm"),
    "qwen3-moe-trtllm": ("qwen3-30b-a3b", "b200", "nvfp4", 1024, 256, "trtllm"),
    "8b-vllm-chunked": ("llama-3.1-8b", "h100-sxm", "fp8", 1024, 256, "vllm"),
}
TOLERANCE = 0.10


def _estimate(name, **kw):
    model, gpu, wp, i, o, engine = REPLICAS[name]
    return serving.estimate(model, gpu, tensor_parallel=1, weight_precision=wp, kv_precision="fp8", input_tokens=i,
                            output_tokens=o, engine=engine, **kw)


@pytest.mark.parametrize("name", sorted(REPLICAS))
def test_capacity_matches_the_simulation(name):
    cap = _estimate(name)
    sim = simulate_estimate(cap, requests=int(8 * cap.max_concurrency))
    assert sim.output_tokens_per_s == pytest.approx(cap.output_tokens_per_s, rel=TOLERANCE)


@pytest.mark.parametrize("load", [0.3, 0.6])
@pytest.mark.parametrize("name", ["8b-trtllm", "70b-trtllm", "qwen3-moe-trtllm", "8b-vllm-chunked"])
def test_mean_latencies_under_poisson_load_match_the_simulation(name, load):
    rate = load * _estimate(name).max_requests_per_s
    est = _estimate(name, requests_per_s=rate)
    sim = simulate_estimate(est, requests_per_s=rate, requests=max(1200, int(10 * est.batch_size)), seed=7)
    assert est.stable
    assert sim.ttft_seconds == pytest.approx(est.ttft_s, rel=TOLERANCE)
    assert sim.tpot_seconds == pytest.approx(est.tpot_s, rel=TOLERANCE)
    assert sim.concurrency == pytest.approx(est.batch_size, rel=0.15)  # Little's law, both sides


def test_the_simulation_is_reproducible():
    est = _estimate("8b-trtllm", requests_per_s=5.0)
    a = simulate_estimate(est, requests_per_s=5.0, requests=200, seed=3)
    b = simulate_estimate(est, requests_per_s=5.0, requests=200, seed=3)
    assert a == b


CLOSED = {
    "8b-vllm": ("llama-3.1-8b", "h100-sxm", 1, "fp8", 1000, 200, "vllm", None),
    "dsr1-sglang-ep8": ("deepseek-r1", "b200", 8, "fp8", 900, 200, "sglang", 8),
    "dsr1-trtllm-nvfp4": ("deepseek-r1", "b200", 8, "nvfp4", 3000, 200, "trtllm", 1),
}


@pytest.mark.parametrize("concurrency", [8, 64, 256])
@pytest.mark.parametrize("name", sorted(CLOSED))
def test_closed_loop_matches_the_simulation(name, concurrency):
    model, gpu, tp, wp, i, o, engine, ep = CLOSED[name]
    est = serving.estimate(model, gpu, tensor_parallel=tp, weight_precision=wp, kv_precision="fp8", input_tokens=i,
                           output_tokens=o, concurrency=concurrency, engine=engine, expert_parallel=ep,
                           attention_dp=1 if ep else None)
    sim = simulate_estimate(est, concurrency=concurrency, requests=max(60, 8 * concurrency), length_cv=0.1, seed=3)
    assert sim.output_tokens_per_s == pytest.approx(est.output_tokens_per_s, rel=TOLERANCE)
    assert sim.tpot_seconds == pytest.approx(est.tpot_s, rel=TOLERANCE)
    assert sim.ttft_seconds == pytest.approx(est.ttft_s, rel=0.25)
    assert sim.concurrency == pytest.approx(est.batch_size, rel=0.05)
