"""Disaggregated pools are values (issue 47.1): a prefill and a decode :class:`~aisize.serving.replica.Replica` and
their KV link, built once as a :class:`~aisize.serving.disaggregated.PoolPair`, carried by the sized pools and the
estimate of given pools; every latency and curve of them reads its typed fields (no dict of what a curve needs).

The figures are pinned to a published deployment (InferenceX, data/validation/serving_disagg.csv disagg-001), to
hand arithmetic from the model's published architecture, and to the plan's figures before the refactor.
"""

from __future__ import annotations

import numpy as np
import pytest

from aisize import serving
from aisize.plan import plan
from aisize.scenario import preset
from aisize.serving.disaggregated import DisaggregatedPools, PoolPair, pools_curve, pools_latency
from aisize.serving.pools import pools_state
from aisize.serving.replica import Replica

# disagg-001: DeepSeek-R1-0528 fp8 on B200, SGLang (Dynamo), 1 prefill and 1 decode worker of TP 8 EP 8, 922/922
# tokens, 4 requests in flight: 24.2 output tokens/s per GPU (all 16 GPUs), mean TPOT 9.80 ms (SemiAnalysis
# InferenceX run 23266829671, row source in the CSV)
PUBLISHED_TOKENS_PER_S_PER_GPU, PUBLISHED_TPOT_S = 24.20498481799611, 9.80376e-3
POOL = dict(replicas=1, tensor_parallel=8, expert_parallel=8, attention_dp=1)


@pytest.fixture(scope="module")
def published():
    return serving.estimate_disaggregated("deepseek-r1", "b200", prefill=POOL, decode=POOL, weight_precision="fp8",
                                          kv_precision="fp8", input_tokens=922, output_tokens=922, concurrency=4,
                                          engine="sglang")


def test_the_estimate_of_given_pools_carries_its_two_replicas(published):
    pair = published.pair
    assert isinstance(pair, PoolPair)
    assert isinstance(pair.prefill, Replica) and isinstance(pair.decode, Replica)
    assert pair.prefill.costs is pair.decode.costs and pair.prefill.rates is pair.decode.rates  # built once
    assert pair.decode.shape.tensor_parallel == 8 and pair.decode.shape.expert_parallel == 8
    assert (pair.input_tokens, pair.output_tokens) == (922, 922)
    assert not hasattr(published, "context")
    # the figures and the curve read the pair: the estimate's state at its rate is pools_state's
    s = pools_state(pair, published.prefill.replicas, published.decode.replicas, np.array([published.requests_per_s]))
    assert float(s["tpot"][0]) == pytest.approx(published.tpot_s, rel=1e-12)
    assert float(s["ttft99"][0]) == pytest.approx(published.ttft_p99_s, rel=1e-12)
    at = published.latency_at(np.array([published.requests_per_s]))
    assert float(at["ttft95"][0]) == float(s["ttft95"][0])


def test_the_published_deployment_reads_within_15_percent(published):
    per_gpu = published.output_tokens_per_s / published.gpus
    assert per_gpu == pytest.approx(PUBLISHED_TOKENS_PER_S_PER_GPU, rel=0.15)
    assert published.tpot_s == pytest.approx(PUBLISHED_TPOT_S, rel=0.15)
    assert published.tpot_s <= published.tpot_p95_s <= published.tpot_p99_s
    assert published.ttft_s <= published.ttft_p95_s <= published.ttft_p99_s


def test_a_curve_over_load_passes_through_the_estimate(published):
    curve = serving.disaggregated_curve(published, 48)
    again = serving.estimate_disaggregated("deepseek-r1", "b200", prefill=POOL, decode=POOL, weight_precision="fp8",
                                           kv_precision="fp8", input_tokens=922, output_tokens=922,
                                           requests_per_s=float(curve["requests_per_s"][20]), engine="sglang")
    for key, field in (("ttft_seconds", "ttft_s"), ("ttft_p99_seconds", "ttft_p99_s"),
                       ("tpot_p99_seconds", "tpot_p99_s")):
        assert float(curve[key][20]) == pytest.approx(getattr(again, field), rel=1e-9)


@pytest.fixture(scope="module")
def rag_chat():
    return next(i for i in plan(preset("serving-at-scale")).inference if i.serving_mode == "disaggregated")


def test_the_sized_pools_carry_a_pair_and_their_kv_transfer_by_hand(rag_chat):
    pools = rag_chat.pools
    assert isinstance(pools, DisaggregatedPools) and isinstance(pools.pair, PoolPair)
    assert pools.prefill_shape is pools.pair.prefill.shape and pools.decode_shape is pools.pair.decode.shape
    # sized with the estimate's model: the decode replica keeps the engine's batch limit (TensorRT-LLM's 2,048), its
    # slots the KV pool bounds, and the batch at the planned rate below them
    assert pools.pair.decode.limits.max_batch_size == 2048
    assert pools.decode_batch <= pools.pair.decode_slots
    # Llama 3.3 70B (config.json: 80 layers, 8 KV heads of 128) at an fp8 KV cache: K and V, 1 byte each
    kv_per_token = 80 * 8 * 128 * 2 * 1
    assert kv_per_token == 163_840
    assert pools.kv_bytes_per_request == 4096 * kv_per_token == 671_088_640
    # shipped by the one prefill GPU of a TP 1 replica over its 400 Gbit/s NIC at the 0.8 link efficiency
    assert pools.prefill_shape.gpus == 1
    assert pools.pair.kv_link_bytes_per_s == pytest.approx(0.8 * 50e9)
    assert pools.kv_transfer_s == pytest.approx(671_088_640 / (1 * 0.8 * 50e9), rel=1e-9)  # 16.8 ms


def test_the_plan_reads_the_figures_of_the_pools_it_bought(rag_chat):
    # `aisize size` of serving-at-scale once size_pools evaluated candidates with estimate_disaggregated's model
    # (before, its own prefill queue bought 10 + 3 replicas of TP 4, 52 GPUs, at a TTFT p95 of 0.777 s)
    p = rag_chat.pools
    assert (p.prefill_replicas, p.decode_replicas, p.prefill_gpus, p.decode_gpus) == (19, 6, 19, 12)
    assert rag_chat.gpus == 31 and rag_chat.ttft_met and rag_chat.tpot_met
    # the mean TTFT and the knee count the wait for a decode slot (0.9 ms at 30 requests/s, 75 % of the slots busy)
    for got, was in ((rag_chat.ttft_seconds, 1.216422), (rag_chat.ttft_p95_seconds, 1.369959),
                     (rag_chat.tpot_p95_seconds, 0.0338957), (rag_chat.ttft_p99_seconds, 1.539954),
                     (rag_chat.tpot_p99_seconds, 0.0349031), (rag_chat.knee_requests_per_s, 33.82270)):
        assert got == pytest.approx(was, rel=2e-5)


def test_the_sizing_curve_reads_the_pair(rag_chat):
    pools = rag_chat.pools
    curve = pools_curve(pools, 30.0)
    lat = pools_latency(pools, curve["requests_per_s"])
    o = pools.pair.output_tokens
    assert np.allclose(curve["latency_p99_seconds"], lat["ttft_p99_seconds"] + (o - 1) * lat["tpot_p99_seconds"])
    assert np.all(curve["latency_mean_seconds"] <= curve["latency_p95_seconds"])
    assert np.all(curve["latency_p95_seconds"] <= curve["latency_p99_seconds"])
