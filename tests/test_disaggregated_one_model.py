"""One model of disaggregated pools (issues 47 and 49.2): the planner's sizing search evaluates candidate pools with
:func:`aisize.serving.estimate_disaggregated`'s model, so at the counts it buys its TTFT and TPOT at the target's
statistic ARE the estimate's and the plan's.

Why the estimate's model and not the former sizing screen's (a G/G/c queue of replicas at service T/q, plus the
running iteration's residual and a full iteration of its own): on the published runs of
../shared/reference/serving_disagg.csv that report a mean TTFT, at low load where the prefill queue's structure is
all there is, the estimate is within 15 % and the screen's structure 3-5x over (rows pinned below); a prompt that
reaches an idle replica runs alone, it does not wait for a residual nor ride a full iteration. And the pools bought
meet their target in a discrete-event simulation of what a prefill replica does (whole prompts batched per
iteration, first come first served across replicas), written here, not the model's formula.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest

from aisize import serving
from aisize.fleet.hetero import heterogeneous, nic_bytes_per_s_per_gpu
from aisize.plan import plan
from aisize.queueing import ggc
from aisize.scenario import io, preset
from aisize.serving.disaggregated import pool_spec, size_pools
from aisize.serving.iteration import iteration_time
from aisize.serving.pool_pair import pools_state

TTFT_TARGET_S, TPOT_TARGET_S, RATE = 1.5, 0.040, 30.0  # serving-at-scale's "RAG chat 70B"
FIELDS = {"mean": ("ttft_s", "tpot_s"), "p95": ("ttft_p95_s", "tpot_p95_s"), "p99": ("ttft_p99_s", "tpot_p99_s")}
PLAN = {"mean": ("ttft_seconds", "tpot_seconds"), "p95": ("ttft_p95_seconds", "tpot_p95_seconds"),
        "p99": ("ttft_p99_seconds", "tpot_p99_seconds")}


def _service(stat: str, **update):
    d = preset("serving-at-scale").model_dump(mode="json", exclude_none=True)
    k = next(j for j, w in enumerate(d["workloads"]) if w.get("serving") == "disaggregated")
    d["workloads"][k].update(slo_statistic=stat, **update)
    return next(i for i in plan(io.from_dict(d)).inference if i.name == d["workloads"][k]["name"])


@pytest.fixture(scope="module")
def by_statistic():
    return {s: _service(s) for s in ("mean", "p95", "p99")}


def _estimate(svc, n_p=None, n_d=None):
    p = svc.pools
    arch = p.pair.decode.model
    return serving.estimate_disaggregated(
        arch, "h100-sxm", prefill=pool_spec(arch, p.prefill_shape, n_p or p.prefill_replicas),
        decode=pool_spec(arch, p.decode_shape, n_d or p.decode_replicas), weight_precision="fp8", kv_precision="fp8",
        input_tokens=4096, output_tokens=512, requests_per_s=RATE, engine="trtllm", kv_link_bytes_per_s=50e9)


@pytest.mark.parametrize("stat", ["mean", "p95", "p99"])
def test_the_sizing_saw_the_estimates_latency_at_the_pools_it_bought(by_statistic, stat):
    svc = by_statistic[stat]
    pools, est = svc.pools, _estimate(svc)
    ft, fd = FIELDS[stat]
    assert pools.ttft_statistic_s == pytest.approx(getattr(est, ft), rel=1e-12)
    assert pools.tpot_statistic_s == pytest.approx(getattr(est, fd), rel=1e-12)
    pt, pd = PLAN[stat]
    assert getattr(svc, pt) == pytest.approx(pools.ttft_statistic_s, rel=1e-12)  # the plan shows the same figure
    assert getattr(svc, pd) == pytest.approx(pools.tpot_statistic_s, rel=1e-12)
    assert svc.gpus == pools.prefill_gpus + pools.decode_gpus == est.gpus
    # the target is met at its statistic, and one replica fewer on either side misses it (the fewest GPUs)
    assert svc.ttft_met and svc.tpot_met
    assert getattr(est, ft) <= TTFT_TARGET_S and getattr(est, fd) <= TPOT_TARGET_S
    if pools.prefill_replicas > 1:
        assert not getattr(_estimate(svc, n_p=pools.prefill_replicas - 1), ft) <= TTFT_TARGET_S
    if pools.decode_replicas > 1:
        assert not getattr(_estimate(svc, n_d=pools.decode_replicas - 1), fd) <= TPOT_TARGET_S


def test_serving_at_scale_buys_what_the_estimate_needs(by_statistic):
    # measured at this commit (was 36, 52 and 56 GPUs when the screen's own queue sized the pools)
    assert [by_statistic[s].gpus for s in ("mean", "p95", "p99")] == [30, 31, 32]
    assert [by_statistic[s].pools.prefill_replicas for s in ("mean", "p95", "p99")] == [18, 19, 20]
    assert by_statistic["p99"].pools.prefill_shape.gpus == 1 and by_statistic["p99"].pools.decode_shape.gpus == 2


def _prefill_seconds(pair) -> np.ndarray:
    """A prefill iteration of k = 1 .. prompts-per-iteration whole prompts on the pair's prefill replica [s]."""
    rep = pair.prefill
    i, budget = rep.input_tokens, rep.limits.max_num_tokens
    spans = max(math.ceil(i / budget), 1)
    return np.array([float(iteration_time(rep.costs, rep.rates, rep.calibration, decode_sequences=0.0,
                                          decode_context=float(i), prefill_tokens=k * min(i, budget),
                                          prefill_prompts=float(k), prompt_tokens=float(i), graphed=False,
                                          **rep.shape.kwargs()).seconds) * spans
                     for k in range(1, pair.prefill_prompts + 1)])


def _simulated_waits(rate, seconds, replicas, customers=300_000, seed=7):
    """Arrival to the end of its prefill iteration, by direct simulation: Poisson arrivals, one FIFO queue, a free
    replica takes every waiting prompt up to its iteration's prompts and runs them for ``seconds[k - 1]`` (the
    first 10 % dropped) [s]."""
    arrivals = np.cumsum(np.random.default_rng(seed).exponential(1.0 / rate, customers))
    free, out, i, most = [0.0] * replicas, np.empty(customers), 0, len(seconds)
    while i < customers:
        start = max(heapq.heappop(free), arrivals[i])
        j = min(int(np.searchsorted(arrivals, start, "right")), i + most)
        end = start + seconds[j - i - 1]
        out[i:j] = end - arrivals[i:j]
        heapq.heappush(free, end)
        i = j
    return out[customers // 10:]


@pytest.mark.parametrize("stat", ["p95", "p99"])
def test_the_pools_bought_meet_their_tail_target_in_a_simulated_prefill_pool(by_statistic, stat):
    pools = by_statistic[stat].pools
    pair = pools.pair
    ttft = (_simulated_waits(RATE, _prefill_seconds(pair), pools.prefill_replicas)
            + pair.calibration.request_seconds + pair.kv_transfer_seconds)
    q = {"p95": 0.95, "p99": 0.99}[stat]
    simulated = float(np.quantile(ttft, q))
    assert simulated <= TTFT_TARGET_S
    assert pools.ttft_statistic_s == pytest.approx(simulated, rel=0.10)  # measured: -2 % at p95, -4 % at p99
    s = pools_state(pair, pools.prefill_replicas, pools.decode_replicas, np.array([RATE]))
    assert float(s[{"p95": "ttft95", "p99": "ttft99"}[stat]][0]) == pools.ttft_statistic_s


# Published runs with a mean TTFT at low load (SemiAnalysis InferenceX, ../shared/reference/serving_disagg.csv rows
# 45 and 56; Dynamo + TensorRT-LLM, 922/922 tokens; 1 prefill worker TP 4 EP 4 attention DP, 4 decode workers
# TEP 8). pub: mean TTFT [s].
ROWS = [
    # row 45: nvidia/DeepSeek-R1-0528-FP4-v2, GB200, C=24, recipe ..._tep8_batch32_...; run 23438524239
    dict(model="deepseek-r1", accelerator="gb200", weight_precision="nvfp4", concurrency=24, max_batch_size=32,
         pub=0.2209751),
    # row 56: deepseek-ai/DeepSeek-R1-0528 fp8, GB300, C=4, recipe ..._tep8_batch1_...; run 21785935852
    dict(model="deepseek-r1", accelerator="gb300", weight_precision="fp8", concurrency=4, max_batch_size=1,
         pub=0.2390425),
]


@pytest.mark.parametrize("row", ROWS, ids=["row45-gb200", "row56-gb300"])
def test_published_low_load_ttft_backs_the_estimates_queue_not_the_screens(row):
    row = dict(row)
    pub = row.pop("pub")
    est = serving.estimate_disaggregated(
        row.pop("model"), row.pop("accelerator"), **row, kv_precision="fp8", input_tokens=922, output_tokens=922,
        engine="trtllm", prefill=dict(replicas=1, tensor_parallel=4, expert_parallel=4, attention_dp=4),
        decode=dict(replicas=4, tensor_parallel=8, expert_parallel=8, attention_dp=1))
    assert est.ttft_s == pytest.approx(pub, rel=0.15)
    # the former screen at the same pair and throughput: the wait of replicas serving at T/q, then the residual of
    # a running full iteration (T/2) and a full iteration of its own
    p = est.pair
    wait = float(ggc(est.requests_per_s, p.prefill_seconds / p.prefill_prompts, 1, service_cv=0.0).wait_mean_seconds)
    screen = p.calibration.request_seconds + p.kv_transfer_seconds + wait + 1.5 * p.prefill_seconds
    assert screen > 2.5 * pub


def test_a_target_no_pool_meets_says_which_and_the_best_it_found(by_statistic):
    pools = by_statistic["p95"].pools
    kw = dict(weight_precision="fp8", kv_precision="fp8", input_tokens=4096, output_tokens=512, requests_per_s=RATE,
              statistic="p95", shapes=[pools.prefill_shape, pools.decode_shape], engine=pools.pair.decode.engine,
              calibration=pools.pair.calibration, scaleout_bytes_per_s=50e9)
    arch = pools.pair.decode.model
    short = size_pools(arch, "h100-sxm", ttft_target_s=0.1, tpot_target_s=TPOT_TARGET_S, **kw)
    assert not short.feasible and short.gpus == 0
    # a lone 4,096-token prompt's prefill takes about 0.5 s on TP 1 or 2: no count of replicas reaches 100 ms
    assert "no prefill pool meets the TTFT p95 target 100 ms (best" in short.reason
    fast = size_pools(arch, "h100-sxm", ttft_target_s=TTFT_TARGET_S, tpot_target_s=0.001, **kw)
    assert not fast.feasible and "no decode pool meets the TPOT p95 target 1 ms" in fast.reason


def test_a_heterogeneous_pair_reads_the_same_model_on_one_server_type():
    # fleet.hetero sizes each side with cheapest_pool: on one server type its row is estimate_disaggregated's figure
    # at the pools it buys, at the rate and the statistic (it was the search's unloaded latency)
    t = heterogeneous("llama-3.3-70b", prefill_servers=["dgx-h100"], decode_servers=["dgx-h100"], requests_per_s=20,
                      input_tokens=4096, output_tokens=512, ttft_target_s=1.5, tpot_target_s=0.04,
                      usd_per_gpu_hour={"dgx-h100": 3.0}, statistic="p99").iloc[0]
    assert t.feasible
    est = serving.estimate_disaggregated(
        "llama-3.3-70b", "h100-sxm", prefill=dict(replicas=int(t.prefill_replicas),
                                                  tensor_parallel=int(t.prefill_gpus_per_replica)),
        decode=dict(replicas=int(t.decode_replicas), tensor_parallel=int(t.decode_gpus_per_replica)),
        input_tokens=4096, output_tokens=512, requests_per_s=20.0,
        kv_link_bytes_per_s=nic_bytes_per_s_per_gpu("dgx-h100"))
    assert t.ttft_s == pytest.approx(est.ttft_p99_s, rel=1e-12) and t.ttft_s <= 1.5
    assert t.tpot_s == pytest.approx(est.tpot_p99_s, rel=1e-12) and t.tpot_s <= 0.04
    assert est.prefill_utilisation < 0.8  # the pair's stated headroom (target_utilisation) holds too
