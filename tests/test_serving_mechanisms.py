"""Serving mechanisms the held-out deployments need (issue 48.4), each against a worked number."""

import pytest

from aisize import models, serving
from aisize.serving.costs import model_costs, weight_formats
from aisize.serving.memory import weights_per_gpu_bytes
from aisize.serving.shapes import expert_slots


def test_expert_slots_round_up_to_a_multiple_of_the_expert_parallel_ranks():
    # DeepSeek's 256 routed experts: EP 8 and 32 divide them; EP 24 holds 264 slots (11 a rank), EP 48 288 (6)
    assert [float(expert_slots(256, ep)) for ep in (1, 8, 24, 32, 48)] == [256, 256, 264, 256, 288]


def test_ep_that_does_not_divide_the_experts_holds_redundant_copies_in_memory():
    costs = model_costs(models.resolve("deepseek-r1"), weight_formats("fp8"), "fp8")
    # one fp8 expert of DeepSeek-V3/R1: gate, up and down, 3 x 7,168 x 2,048 weights at 1 byte (+ block scales)
    assert costs.expert_bytes == pytest.approx(3 * 7168 * 2048, rel=0.01)
    even = weights_per_gpu_bytes(costs, 24, 24, 1)
    slotted = weights_per_gpu_bytes(costs, 24, 24, 1, expert_parallel=24)
    # 8 redundant slots on each of the 58 MoE layers, spread over 24 GPUs
    assert slotted - even == pytest.approx(58 * 8 * costs.expert_bytes / 24, rel=1e-9)
    assert weights_per_gpu_bytes(costs, 32, 32, 1, expert_parallel=32) == pytest.approx(
        weights_per_gpu_bytes(costs, 32, 32, 1), rel=1e-12)


@pytest.mark.parametrize("ep", [24, 48])
def test_sglang_wide_ep_that_does_not_divide_256_experts_is_estimated(ep):
    est = serving.estimate("deepseek-r1", "h200-sxm", tensor_parallel=ep, attention_dp=ep, expert_parallel=ep,
                           weight_precision="fp8", input_tokens=1000, output_tokens=1000, engine="sglang")
    assert est.feasible and est.output_tokens_per_s > 0


def test_more_expert_parallel_ranks_than_experts_is_refused_with_the_numbers():
    with pytest.raises(ValueError, match=r"expert_parallel=16 is not allowed for 'mixtral-8x7b': at most its 8"):
        serving.estimate("mixtral-8x7b", "h100-sxm", tensor_parallel=16, expert_parallel=16, input_tokens=100,
                         output_tokens=100)


def test_an_all_reduce_across_servers_runs_hierarchically_over_both_links():
    from aisize.serving.iteration_comm import SCALEOUT_STEP_SECONDS, all_reduce_seconds

    s, nvlink, nic, lat = 1e6, 360e9, 40e9, 1e-5  # 1 MB; achieved NVLink and NIC rates per GPU
    inside = 2 * 7 / 8 * s / nvlink + lat  # reduce-scatter + all-gather among 8 GPUs of a server
    across = 2 * 1 / 2 * (s / 8) / nic + 2 * SCALEOUT_STEP_SECONDS  # the 1/8 shard over 2 servers
    got = all_reduce_seconds(s, 16, nvlink, lat, scaleup_domain=8, scaleout_bytes_per_s=nic)
    assert float(got) == pytest.approx(inside + across, rel=1e-12)
    # within one server, the ring as before
    assert float(all_reduce_seconds(s, 8, nvlink, lat, scaleup_domain=8, scaleout_bytes_per_s=nic)) == \
        pytest.approx(2 * 7 / 8 * s / nvlink + lat, rel=1e-12)


def test_tp16_over_two_h100_servers_crosses_their_nics():
    # a TP 16 replica of DeepSeek-R1 spans two 8-GPU H100 servers: its collectives cross the NICs; at 128
    # decoding sequences per attention-DP rank the dispatch to the other server outweighs the NVLink gather
    kw = dict(tensor_parallel=16, expert_parallel=16, weight_precision="fp8", input_tokens=1000,
              output_tokens=1000, concurrency=64, engine="sglang")
    from aisize.serving.estimate import replica_of

    for dp in (1, 16):
        est = serving.estimate("deepseek-r1", "h100-sxm", attention_dp=dp, **kw)
        shape = replica_of(est).shape
        assert shape.scaleup_domain == 8 and shape.scaleout_bytes_per_s == pytest.approx(50e9)  # 8 x 400 Gb/s / 8
    one_domain = serving.estimate("deepseek-r1", "gb200", attention_dp=16, **kw)  # NVL72: one domain
    assert replica_of(one_domain).shape.scaleup_domain is None

    rep = replica_of(serving.estimate("deepseek-r1", "h100-sxm", attention_dp=16, **kw))
    step = dict(decode_sequences=2048.0, decode_context=1500.0, prefill_tokens=0.0, prefill_prompts=0.0,
                prompt_tokens=1000.0)
    from aisize.serving.iteration import iteration_time

    spanning = iteration_time(rep.costs, rep.rates, rep.calibration, **step, **rep.shape.kwargs())
    kwargs = dict(rep.shape.kwargs(), scaleup_domain=None, scaleout_bytes_per_s=None)
    nvlink_only = iteration_time(rep.costs, rep.rates, rep.calibration, **step, **kwargs)
    assert float(spanning.communication_seconds) > 1.5 * float(nvlink_only.communication_seconds)
    assert float(spanning.linear_seconds) == float(nvlink_only.linear_seconds)


@pytest.mark.parametrize("ep, dispatch_us, combine_us", [(16, 118, 195), (32, 155, 273), (64, 173, 314),
                                                          (128, 192, 369), (256, 194, 360)])
def test_cross_server_dispatch_reproduces_deepeps_published_low_latency_kernels(ep, dispatch_us, combine_us):
    # deepseek-ai/DeepEP README, "Low-latency kernels with pure RDMA": H800, one CX7 400 Gb/s NIC per GPU,
    # 128 tokens per batch, 7,168 hidden, top-8 experts, FP8 dispatch and BF16 combine
    from aisize.serving.calibration import CALIBRATION
    from aisize.serving.iteration_comm import cross_server_dispatch_seconds

    nic = 400e9 / 8 * CALIBRATION.link_efficiency
    got = cross_server_dispatch_seconds(128.0, 8, ep, ep, 8, 7168, nic)
    assert float(got) == pytest.approx((dispatch_us + combine_us) * 1e-6, rel=0.15)


def test_an_uncalibrated_gpu_gives_the_range_of_the_calibrated_generations_not_a_point_alone():
    kw = dict(tensor_parallel=1, weight_precision="fp8", input_tokens=1000, output_tokens=1000, engine="vllm")
    est = serving.estimate("llama-3.1-8b", "mi325x", **kw)  # CDNA3: no public run calibrates it
    lo, hi = est.output_tokens_per_s_range
    assert est.uncalibrated and lo < hi and lo <= est.output_tokens_per_s <= hi
    # the low end is the MI325X under CDNA4's (MI355X's) fitted efficiencies, its nearest calibrated generation
    cdna4 = serving.estimate("llama-3.1-8b", "mi325x", calibration=serving.CALIBRATION.with_(
        fallback_generation="cdna4"), **kw)
    assert cdna4.output_tokens_per_s in (lo, hi)
    assert est.tpot_range_s[0] <= est.tpot_s <= est.tpot_range_s[1]
    assert est.max_output_tokens_per_s_range == est.output_tokens_per_s_range  # flat out, served = capacity
    # at a given rate the served figure is the rate's; the capacity and the latencies carry the spread
    at_rate = serving.estimate("llama-3.1-8b", "mi325x", requests_per_s=2.0, **kw)
    lo_r, hi_r = at_rate.output_tokens_per_s_range
    assert lo_r == pytest.approx(hi_r) and at_rate.max_output_tokens_per_s_range[0] < at_rate.max_output_tokens_per_s_range[1]
    assert at_rate.tpot_range_s[0] < at_rate.tpot_range_s[1]
    assert any("no public run calibrates" in n and "cdna4" in n for n in est.notes)
    # a calibrated GPU carries no range
    assert serving.estimate("llama-3.1-8b", "h100-sxm", **kw).output_tokens_per_s_range == ()
