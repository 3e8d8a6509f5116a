"""TTFT and TPOT at p99 beside the mean and p95 (issue 48, item 4): the models that give the p95, at q = 0.99.

The p99 comes from the same terms as the p95 with the quantile as a parameter: each queue's Erlang C tail at
1 % (:func:`aisize.queueing.mgc_wait`), the batch's Poisson fluctuation and the binomial spread of prefills at
z = 2.326, the running iteration's rest and the balancing wait at their 99th percentiles. The p95 and mean
figures are pinned to what they were before the p99 was added.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from aisize import serving
from aisize.plan import plan
from aisize.queueing import ggc, mgc_wait
from aisize.scenario import preset
from aisize.serving import lengths as L
from aisize.serving.engine import ENGINES
from aisize.serving.estimate import replica_of
from aisize.serving.latency import loaded_state
from aisize.serving.pool_pair import pools_state
from aisize.serving.steady import balance_wait_iterations, steady_state
from aisize.serving.tails import Z95, Z99, exponential_quantile_factor, normal_quantile

KW = dict(tensor_parallel=1, weight_precision="fp8", kv_precision="fp8", input_tokens=1024, output_tokens=256)
BALANCED = ENGINES["trtllm"].with_(attention_dp_balance_iters=60)
DSR1 = dict(tensor_parallel=4, expert_parallel=4, attention_dp=4, weight_precision="nvfp4", kv_precision="fp8",
            input_tokens=7373, output_tokens=922, engine=BALANCED, max_batch_size=64, max_num_tokens=8384)
POOLS = dict(prefill=dict(replicas=1, tensor_parallel=4, expert_parallel=4, attention_dp=4),
             decode=dict(replicas=1, tensor_parallel=16, expert_parallel=16, attention_dp=16),
             weight_precision="nvfp4", kv_precision="fp8", input_tokens=922, output_tokens=922, engine="trtllm")


def _figures(e):
    return e.ttft_s, e.ttft_p95_s, e.tpot_s, e.tpot_p95_s


def _ordered(mean, p95, p99):
    """p99 >= p95 (to rounding: figures the model caps, such as a timeout, may tie) >= the mean, less 1e-6 of it:
    where fewer than 5 % of requests queue the p95 wait is 0, while the mean holds their (tiny) share."""
    return p99 >= p95 * (1 - 1e-12) and p95 >= mean * (1 - 1e-6)


def test_the_queue_tail_at_a_quantile_is_the_mm1_tail():
    # M/M/1 at rho 0.8, S = 1 s: P(W > t) = 0.8 e^(-0.2 t), so t_q = 5 ln(0.8 / (1 - q))
    stable, p_wait, mean, p95, p99 = mgc_wait(0.8, 1.0, 1, service_cv=1.0, quantiles=(0.95, 0.99))
    assert stable and p_wait == pytest.approx(0.8) and mean == pytest.approx(4.0)
    assert p95 == pytest.approx(5 * math.log(16), rel=1e-12) and p95 == pytest.approx(13.86, abs=0.01)
    assert p99 == pytest.approx(5 * math.log(80), rel=1e-12) and p99 == pytest.approx(21.91, abs=0.01)
    g = ggc(0.8, 1.0, 1)  # the exact M/M/1 percentiles agree
    assert (p95, p99) == pytest.approx((g.wait_p95_seconds, g.wait_p99_seconds), rel=1e-6)
    # callers that ask for nothing get the p95 as before, the same number
    assert mgc_wait(0.8, 1.0, 1, service_cv=1.0) == (stable, p_wait, mean, p95)
    # a queue that waits less often than 1 % of the time has no wait at p99; an unstable one an infinite one
    assert mgc_wait(0.005, 1.0, 1, quantiles=(0.99,))[3] == 0.0
    assert all(math.isinf(w) for w in mgc_wait(1.2, 1.0, 1, quantiles=(0.95, 0.99))[2:])
    with pytest.raises(ValueError, match="quantiles"):
        mgc_wait(0.8, 1.0, 1, quantiles=(1.0,))


def test_the_quantile_constants():
    assert normal_quantile(0.95) == Z95 == pytest.approx(1.6448536, abs=1e-7)
    assert normal_quantile(0.99) == Z99 == pytest.approx(2.3263479, abs=1e-7)
    assert normal_quantile(0.9) == pytest.approx(1.2815516, abs=1e-7)
    assert exponential_quantile_factor(0.99) == pytest.approx(-math.log(0.01)) == pytest.approx(4.605, abs=1e-3)
    on = ENGINES["trtllm"].with_(attention_dp_balance_iters=60).launch(64, 8)
    mean, p99 = balance_wait_iterations(on, 8, 0.5, ranks_full=True, quantile=0.99)
    assert p99 == pytest.approx(min(math.log(100) * mean, 60.0))
    assert balance_wait_iterations(on, 8, 0.5, ranks_full=True)[1] == min(3.0 * mean, 60.0)  # p95 as fitted


# the figures before the p99 was added (mean TTFT, TTFT p95, mean TPOT, TPOT p95), to the last bit
# (the TTFT p95 since the running iteration's rest is its exact quantile, tails.residual_quantile; the open loops'
# since a rate-driven TTFT p95 is the larger of that and the iteration mixture's, latency.replica_ttft_quantiles;
# the balance and disagg cases since TensorRT-LLM's attention-DP exchange is read from NCCL's tables by per-rank
# sizes and a closed loop's prompt goes to the rank that freed a slot: docs/calibration.md, "Long prompts under
# attention DP"; the balance and disagg cases since TensorRT-LLM's NVFP4 experts are capped on splits by the measured
# operator, moe_source="kernel_cap_split")
BEFORE = {
    ("open", "vllm", 10.0): (0.17368889957879177, 0.1881920841203938, 0.006291520106496145, 0.007066003467118423),
    ("open", "trtllm", 20.0): (0.18728885446125618, 0.2124644896102696, 0.008271923958751471, 0.009304284841865674),
    ("closed", "vllm", 128): (0.19195043748955637, 0.20876775676125153, 0.019250465524380297, 0.02023315390621238),
    ("closed", "trtllm", 1024): (7.30844462355807, 7.348723536616525, 0.08593620541335305, 0.08710257116059787),
    ("lengths", "vllm", 10.0): (0.175827784204233, 0.21853186965936122, 0.006361210287115819, 0.0075636814384136),
    ("balance", "closed", 256): (2.6831877661476717, 4.7112434545322435, 0.06023676006854622, 0.06612876708571419),
    ("balance", "open", 0.5): (0.8705949356823242, 1.4316919104364465, 0.01404999276888135, 0.017124218789804656),
    ("disagg", "closed", 2048): (4.586595732832083, 12.850866616163447, 0.01811381057332462, 0.018363345490240136),
    ("disagg", "open", 2.0): (0.19810217496355104, 0.19810217496355104, 0.010829109872007383, 0.011312366414454413),
}


def _case(kind, how, load):
    if kind in ("open", "closed"):
        return serving.estimate("llama-3.1-8b", "h100-sxm", **KW, engine=how,
                                **({"requests_per_s": load} if kind == "open" else {"concurrency": load}))
    if kind == "lengths":
        return serving.estimate("llama-3.1-8b", "h100-sxm", **KW, engine=how, requests_per_s=load,
                                length_distribution=L.Lengths.lognormal(1024, 256, 1.0, 1.0))
    if kind == "balance":
        return serving.estimate("deepseek-r1", "b200", **DSR1,
                                **({"requests_per_s": load} if how == "open" else {"concurrency": load}))
    return serving.estimate_disaggregated("deepseek-r1", "gb200", **POOLS,
                                          **({"requests_per_s": load} if how == "open" else {"concurrency": load}))


@pytest.mark.parametrize("case", list(BEFORE), ids=lambda c: "-".join(map(str, c)))
def test_the_mean_and_p95_do_not_move_and_the_p99_lies_beyond(case):
    est = _case(*case)
    assert _figures(est) == BEFORE[case]
    assert _ordered(est.ttft_s, est.ttft_p95_s, est.ttft_p99_s), case
    assert _ordered(est.tpot_s, est.tpot_p95_s, est.tpot_p99_s), case


@pytest.mark.parametrize("engine", ["vllm", "trtllm"])
def test_p99_beyond_p95_beyond_the_mean_over_loads(engine):
    base = serving.estimate("llama-3.1-8b", "h100-sxm", **KW, engine=engine, requests_per_s=1.0)
    for share in (0.02, 0.1, 0.3, 0.5, 0.7, 0.85, 0.95, 0.99):  # open loop, up to the knee and past it
        e = serving.estimate("llama-3.1-8b", "h100-sxm", **KW, engine=engine,
                             requests_per_s=share * base.max_requests_per_s)
        assert _ordered(e.ttft_s, e.ttft_p95_s, e.ttft_p99_s), share
        assert _ordered(e.tpot_s, e.tpot_p95_s, e.tpot_p99_s), share
        assert e.ttft_p99_s > e.ttft_s and e.tpot_p99_s > e.tpot_s
    for c in (1, 4, 16, 64, 256, 1024, 4096):  # closed loop, into the queue for slots
        e = serving.estimate("llama-3.1-8b", "h100-sxm", **KW, engine=engine, concurrency=c)
        assert _ordered(e.ttft_s, e.ttft_p95_s, e.ttft_p99_s), c
        assert _ordered(e.tpot_s, e.tpot_p95_s, e.tpot_p99_s), c
    over = serving.estimate("llama-3.1-8b", "h100-sxm", **KW, engine=engine,
                            requests_per_s=1.5 * base.max_requests_per_s)
    assert not over.stable and math.isinf(over.ttft_p99_s) and math.isinf(over.tpot_p99_s)
    flat = serving.estimate("llama-3.1-8b", "h100-sxm", **KW, engine=engine)  # flat out: no spread modelled
    assert (flat.ttft_p99_s, flat.tpot_p99_s) == (flat.ttft_p95_s, flat.tpot_p95_s)


def test_p99_beyond_p95_of_disaggregated_pools_over_loads():
    for c in (1, 16, 64, 256, 1024, 2048, 8192):
        e = serving.estimate_disaggregated("deepseek-r1", "gb200", **POOLS, concurrency=c)
        s = pools_state(e.pair, 1, 1, np.array([e.requests_per_s]), slot_wait=False)
        assert s["ttft"][0] == pytest.approx(e.ttft_s, rel=1e-9) and s["ttft95"][0] == e.ttft_p95_s, c
        waits = e.ttft_s - (e.pair.head_seconds + s["t_pre"][0])  # the prefill queue's, mean
        # where fewer than 5 % of prompts queue the p95 wait is 0 while the mean holds their share (a discrete-event
        # simulation of a prefill pool shows it too: docs/serving-replica.md, "Disaggregated pools"), so the TTFT
        # p95 lies at or above the mean less that share, not above the mean itself (C = 1,024: 0.3975 s, 0.3983 s)
        assert e.ttft_p99_s >= e.ttft_p95_s >= e.ttft_s - waits * (1 + 1e-9) and waits >= 0.0, c
        if s["rho"][0] > 0.9:  # most prompts queue: the tail lies beyond the mean
            assert e.ttft_p95_s > e.ttft_s, c
        assert _ordered(e.tpot_s, e.tpot_p95_s, e.tpot_p99_s), c
    curve = serving.disaggregated_curve(e, 48)  # open loop, 1 % to 99 % of the pools' capacity
    assert np.all(curve["ttft_p99_seconds"] >= curve["ttft_p95_seconds"])
    assert np.all(curve["tpot_p99_seconds"] >= curve["tpot_p95_seconds"])
    assert np.all(curve["tpot_p95_seconds"] >= curve["tpot_seconds"])
    assert curve["ttft_p99_seconds"][-1] > curve["ttft_p95_seconds"][-1]  # the prefill queue's tail near capacity
    assert np.all(curve["latency_p99_seconds"] >= curve["latency_p95_seconds"])
    over = serving.estimate_disaggregated("deepseek-r1", "gb200", **POOLS, requests_per_s=2 * e.max_requests_per_s)
    assert math.isinf(over.ttft_p99_s) and math.isinf(over.tpot_p99_s)
    small = dict(POOLS, prefill=dict(replicas=1, tensor_parallel=1), decode=dict(replicas=1, tensor_parallel=1))
    none = serving.estimate_disaggregated("deepseek-r1", "h100-sxm", **small, concurrency=8, if_infeasible="result")
    assert not none.feasible and math.isinf(none.ttft_p99_s) and math.isinf(none.tpot_p99_s)


def test_tpot_p99_takes_the_batch_at_b_plus_z99_root_b():
    # open loop: the batch at its 99th percentile B + 2.326 sqrt(B) sets the iteration, and a request's iterations
    # carry prefills at their binomial 99th percentile; by hand from the steady state at that batch
    est = serving.estimate("llama-3.1-8b", "h100-sxm", **KW, engine="trtllm", requests_per_s=20.0)
    r = replica_of(est)
    launch = r.engine.launch(est.max_batch_size, r.groups)
    common = dict(input_tokens=1024, output_tokens=256, max_num_tokens=est.max_num_tokens * r.groups,
                  chunked_prefill=r.engine.chunked_prefill, shape=r.shape, launch=launch)
    ls = loaded_state(r.costs, r.rates, r.calibration, requests_per_s=20.0,
                      capacity_requests_per_s=est.max_requests_per_s, slots=est.max_concurrency, **common)
    assert float(ls.tpot_p99_seconds) == est.tpot_p99_s and float(ls.tpot_p95_seconds) == est.tpot_p95_s
    mean, t0, t1 = float(ls.iteration_seconds), float(ls.decode_iteration_seconds), float(ls.prefill_iteration_seconds)
    p = (mean - t0) / (t1 - t0)  # share of iterations carrying prefills
    b = float(ls.concurrency)

    def by_hand(z):
        hi = steady_state(r.costs, r.rates, r.calibration, concurrency=min(b + z * math.sqrt(b), est.max_concurrency),
                          arrivals="poisson", **common)
        spread = min(p + z * math.sqrt(p * (1 - p) / 255), 1.0)
        h0, h1 = float(hi.decode_iteration_seconds), float(hi.prefill_iteration_seconds)
        return max(h0 + (h1 - h0) * spread, mean)

    assert by_hand(2.326) == pytest.approx(est.tpot_p99_s, rel=2e-4)
    assert by_hand(Z99) == pytest.approx(est.tpot_p99_s, rel=1e-6)
    assert by_hand(Z95) == pytest.approx(est.tpot_p95_s, rel=1e-6)
    assert by_hand(Z95) != pytest.approx(est.tpot_p99_s, rel=1e-3)  # the p99 is not the p95 relabelled


def test_a_plan_reads_its_p99_from_the_estimate():
    planned = plan(preset("serving-at-scale"))
    kinds = set()
    for i in planned.inference:
        est = i.pools_estimate if i.pools_estimate is not None else i.estimate
        kinds.add(i.serving_mode)
        assert (i.ttft_p99_seconds, i.tpot_p99_seconds) == (est.ttft_p99_s, est.tpot_p99_s)
        steps = (i.latency_p95_seconds - i.ttft_p95_seconds) / i.tpot_p95_seconds  # output tokens - 1
        assert i.latency_p99_seconds == pytest.approx(i.ttft_p99_seconds + steps * i.tpot_p99_seconds, rel=1e-9)
        assert i.ttft_p99_seconds >= i.ttft_p95_seconds and i.tpot_p99_seconds >= i.tpot_p95_seconds
    assert kinds == {"aggregated", "disaggregated"}


def test_the_latency_curve_carries_p99_at_or_above_p95():
    from aisize.serving.curves import latency_curve

    est = serving.estimate("llama-3.1-8b", "h100-sxm", tensor_parallel=1, weight_precision="fp8",
                           input_tokens=1000, output_tokens=200, requests_per_s=5.0, engine="vllm")
    c = latency_curve(est, points=12)
    for what in ("ttft", "tpot"):
        assert (c[f"{what}_p99_seconds"] >= c[f"{what}_p95_seconds"] * (1 - 1e-6)).all()
    assert (c["latency_p99_seconds"] == c["ttft_p99_seconds"] + 199 * c["tpot_p99_seconds"]).all()
