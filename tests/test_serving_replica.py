"""A serving replica is a value (issue 47 item 1, docs/serving-replica.md): built once, evaluated at a load."""

import dataclasses

import numpy as np
import pytest

from aisize import serving
from aisize.serving.curves import _loaded, latency_curve
from aisize.serving.estimate import replica_of
from aisize.serving.replica import Latency, Load, Replica, ReplicaState, evaluate

# GPUStack Performance Lab, Qwen3-8B on one H100 SXM, vLLM v0.11.0, bf16 weights and KV, ShareGPT prompts
# (233 in, 221 out on average), vllm bench serve --max-concurrency 4: 496.88 output tokens/s/GPU, mean TPOT
# 7.38 ms, mean TTFT 64 ms (../shared/reference/serving_load.csv; gpustack/gpustack @ 6ceec5b,
# docs/performance-lab/qwen3-8b/h100-latency.md)
QWEN = dict(tensor_parallel=1, weight_precision="bf16", kv_precision="bf16", input_tokens=233, output_tokens=221,
            engine="vllm")


def test_a_replica_evaluated_at_a_published_closed_loop_gives_its_figures():
    rep = serving.replica("qwen3-8b", "h100-sxm", concurrency=4, **QWEN)
    state = evaluate(rep, Load(concurrency=4))
    assert isinstance(state, ReplicaState) and isinstance(state.tpot, Latency)
    assert state.tpot.mean_seconds == pytest.approx(7.38e-3, rel=0.05)
    assert state.requests_per_s * rep.output_tokens / rep.shape.gpus == pytest.approx(496.88, rel=0.05)
    # the statistics are ordered, and the batch holds at most the loop's requests
    for lat in (state.ttft, state.tpot):
        assert lat.mean_seconds <= lat.p95_seconds <= lat.p99_seconds
    assert 0 < state.batch <= 4


@pytest.mark.parametrize("load", [dict(), dict(concurrency=4), dict(requests_per_s=5.0)])
def test_the_estimate_carries_the_replica_it_evaluated_and_its_state(load):
    est = serving.estimate("qwen3-8b", "h100-sxm", **load, **QWEN)
    rep = serving.replica("qwen3-8b", "h100-sxm", **load, **QWEN)
    assert isinstance(est.replica, Replica)
    assert (rep.shape, rep.limits, rep.engine, rep.costs) == (est.replica.shape, est.replica.limits,
                                                              est.replica.engine, est.replica.costs)
    state = evaluate(rep, Load(**load))
    assert state == est.state
    assert (est.ttft_s, est.ttft_p95_s, est.ttft_p99_s) == dataclasses.astuple(state.ttft)
    assert (est.tpot_s, est.tpot_p95_s, est.tpot_p99_s) == dataclasses.astuple(state.tpot)
    assert est.batch_size == state.batch and est.kv_pool_bytes == float(state.memory.kv_pool_bytes)
    assert est.weights_per_gpu_bytes == float(state.memory.weights_bytes)


def test_a_replica_is_frozen_and_takes_the_estimates_arguments():
    rep = serving.replica("qwen3-8b", "h100-sxm", **QWEN)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rep.input_tokens = 1
    with pytest.raises(TypeError, match="bogus"):
        serving.replica("qwen3-8b", "h100-sxm", bogus=1, **QWEN)
    with pytest.raises(ValueError, match="input_tokens"):
        serving.replica("qwen3-8b", "h100-sxm", **{**QWEN, "input_tokens": -3})


def test_a_model_that_does_not_fit_has_no_state():
    est = serving.estimate("llama-3-70b", "l4", tensor_parallel=1, input_tokens=1000, output_tokens=200)
    assert not est.feasible and est.state is None
    assert evaluate(est.replica, Load()) is None


def test_a_curve_reads_the_replica_the_estimate_ran_its_stage_link_included():
    # 2 stages x TP 8 = 16 H100s: the stages sit on two 8-GPU servers and talk over the scale-out NIC. The curve
    # rebuilt the replica without that link (NVLink between stages), so at the estimate's own rate it gave a
    # TTFT 0.23 % below the estimate's (0.3023 s against 0.3030 s); reading est.replica it gives the estimate's figure
    est = serving.estimate("deepseek-r1", "h100-sxm", weight_precision="fp8", input_tokens=2000, output_tokens=500,
                           tensor_parallel=8, pipeline_parallel=2, requests_per_s=0.5)
    assert est.replica.shape.stage_link_bytes_per_s is not None
    curve = latency_curve(est, 2)  # rates from 1 % to 99 % of capacity, fleet of one replica
    assert curve["ttft_seconds"].is_monotonic_increasing
    ls = _loaded(est, np.array([est.requests_per_s]))
    assert float(ls.ttft_seconds[0]) == pytest.approx(est.ttft_s, rel=1e-6)
    assert curve["ttft_seconds"].iloc[0] < est.ttft_s  # 1 % of capacity is below the estimate's 0.5 requests/s


def test_another_calibration_changes_the_rates_not_the_replica():
    est = serving.estimate("qwen3-8b", "h100-sxm", concurrency=4, **QWEN)
    other = est.calibration_record.with_(fallback_generation="blackwell")
    assert replica_of(est) is est.replica
    again = replica_of(est, other)
    assert again.calibration is other and (again.shape, again.limits) == (est.replica.shape, est.replica.limits)


def test_reuse_and_lengths_settle_into_the_state_the_estimate_reads():
    from aisize.serving import lengths as L
    from aisize.serving.prefix import Reuse

    kw = dict(tensor_parallel=1, weight_precision="fp8", kv_precision="fp8", input_tokens=8000, output_tokens=300,
              engine="vllm", requests_per_s=2.0)
    est = serving.estimate("llama-3.1-8b", "h100-sxm", prefix=Reuse(shared_tokens=1000, turns=8, think_time_s=30),
                           length_distribution=L.Lengths(L.lognormal(8000, 1.0), L.lognormal(300, 0.8)), **kw)
    s = est.state
    assert s.kv_reuse is est.kv_reuse and s.lengths is est.lengths
    assert (est.ttft_s, est.ttft_p95_s, est.ttft_p99_s) == dataclasses.astuple(s.ttft)
    assert (est.tpot_s, est.tpot_p95_s, est.tpot_p99_s) == dataclasses.astuple(s.tpot)
    # the settled state is not the replica's plain one: reuse saves prefill, the spread of lengths widens the tails
    plain = evaluate(est.replica, Load(requests_per_s=2.0))
    assert s.ttft.mean_seconds < plain.ttft.mean_seconds and s.kv_reuse.prefill_saved_share > 0.5
    assert s.tpot.p99_seconds > s.tpot.p95_seconds > s.tpot.mean_seconds


def test_an_estimate_without_its_replica_is_refused_by_name():
    est = serving.estimate("qwen3-8b", "h100-sxm", **QWEN)
    with pytest.raises(ValueError, match="carries no replica"):
        replica_of(dataclasses.replace(est, replica=None))
