"""A load-free replica met for the first time is seeded before any probe, from its replica flat out
(:func:`aisize.serving.estimate.replica_estimate`, :func:`aisize.plan.replica_count._seed_first`; issue 51 item 2):
a prompt or output move then makes no probe at the screen's count. Every plan must be the one the search makes
probing first; no timings are asserted here (``benchmarks/bench_sliders.py`` measures them)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import aisize.serving.estimate  # noqa: F401 (the module, which aisize.serving's function of the same name hides)
from aisize.plan import clear_caches
from aisize.plan import replica_count as RC
from aisize.serving import lengths as L
from aisize.serving.curves import latency_curve, latency_elasticity, screen_rates
from preset_plans import plans_json

E = sys.modules["aisize.serving.estimate"]
KW = dict(weight_precision="bf16", kv_precision="bf16", engine="trtllm", input_tokens=1024, output_tokens=256)
CASES = [("llama-3-8b", dict(tensor_parallel=1)), ("llama-3-8b", dict(tensor_parallel=2, engine="vllm")),
         ("llama-3-70b", dict(tensor_parallel=4, weight_precision="fp8", kv_precision="fp8", engine="sglang")),
         ("llama-3.1-8b", dict(tensor_parallel=1, speculative_method="eagle3", speculative_tokens=3))]


@pytest.mark.parametrize("model, args", CASES)
def test_the_replica_flat_out_reads_as_the_estimate_at_any_rate(model, args):
    # what the seed and the knee's walk read of an estimate, to the bit: the curve, the elasticity, the batch
    kw = KW | args
    flat = E.replica_estimate(model, "h100-sxm", **kw)
    fits, cap = E.estimate_capacity(model, "h100-sxm", **kw)
    assert fits and flat.feasible and flat.max_requests_per_s == cap
    rates = [0.2 * cap, 0.55 * cap, 0.8 * cap]
    for rate in rates:
        own = E.probe(model, "h100-sxm", requests_per_s=rate, replicas=(flat.replica,), **kw).estimate()
        assert own.replica is flat.replica and own.max_requests_per_s == flat.max_requests_per_s
        for field in ("max_concurrency", "max_batch_size", "max_num_tokens", "speculation", "kv_reuse", "lengths"):
            assert getattr(own, field) == getattr(flat, field), field
        assert latency_elasticity(flat, rate, statistic="p95") == latency_elasticity(own, rate, statistic="p95")
        a, b = screen_rates(flat, rates, rates, 2.0, statistic="p99"), screen_rates(own, rates, rates, 2.0,
                                                                                    statistic="p99")
        assert a[1] == b[1] and all(np.array_equal(x, y) for x, y in zip(a[0], b[0]))
    curve = latency_curve(flat, 12)
    assert curve.equals(latency_curve(E.probe(model, "h100-sxm", requests_per_s=0.4 * cap, **kw).estimate(), 12))


def test_the_replica_flat_out_is_none_where_a_rate_enters_its_curve():
    spread = L.Lengths.lognormal(1024, 256, 0.4, 0.7)
    assert E.replica_estimate("llama-3-8b", "h100-sxm", tensor_parallel=1, length_distribution=spread, **KW) is None
    # an MoE stage's expert-parallel split is picked at the load: more than one candidate
    assert E.replica_estimate("deepseek-r1", "h200-sxm", tensor_parallel=8, weight_precision="fp8",
                              kv_precision="fp8", input_tokens=1024, output_tokens=256) is None
    with pytest.raises(ValueError, match="requests_per_s=5.0"):
        E.replica_estimate("llama-3-8b", "h100-sxm", tensor_parallel=1, requests_per_s=5.0, **KW)


SWEEPS = [
    [{"requests_per_s": 200.0, "prompt_tokens": p} for p in (700, 900, 1024, 1300, 1822, 2207, 2674)],
    [{"requests_per_s": 200.0, "output_tokens": o} for o in (100, 180, 256, 330, 430, 560)],
    [{"requests_per_s": r, "prompt_tokens": 1024 + 97 * k} for k, r in enumerate((20.0, 60.0, 430.0, 630.0))],
    [{"requests_per_s": 300.0, "output_tokens": 256 + 31 * k, "tpot_target_ms": 31.0} for k in range(4)],
    # tight targets: the screen's count misses them as estimated (the top-up), then the next move probes first
    [{"requests_per_s": 200.0, "ttft_target_ms": t, "prompt_tokens": p}
     for t, p in ((200.0, 1024), (200.0, 1100), (150.0, 1100), (250.0, 1300), (200.0, 1500))],
]
SEEDED = 4  # the first sweeps seed before a probe at half their plans or more


def _counted(monkeypatch) -> dict:
    """Counts the seeds before a probe and the probes (made anew or completed into the estimate)."""
    got = {"first": 0, "probes": 0}
    real_first, real_probed = RC._seed_first, RC._probed

    def first(*args):
        before = len(RC._curves._entries)
        real_first(*args)
        got["first"] += len(RC._curves._entries) > before

    def probed(*args):
        got["probes"] += 1
        return real_probed(*args)
    monkeypatch.setattr(RC, "_seed_first", first)
    monkeypatch.setattr(RC, "_probed", probed)
    return got


@pytest.mark.parametrize("k", range(len(SWEEPS)))
def test_a_sweep_plans_what_it_plans_probing_first(monkeypatch, k):
    clear_caches()
    fast = _counted(monkeypatch)
    seeded = plans_json(SWEEPS[k])
    assert fast["first"] >= len(SWEEPS[k]) // 2 or k >= SEEDED  # seeded before a probe
    assert k < SEEDED or any(RC._MISSED.values())  # the tight sweep reaches the top-up
    monkeypatch.undo()
    clear_caches()
    slow = _counted(monkeypatch)
    monkeypatch.setattr(RC, "_seed_first", lambda *args: None)  # probe at the screen's count, then seed
    assert plans_json(SWEEPS[k]) == seeded
    assert fast["probes"] < slow["probes"] or k >= SEEDED
    clear_caches()


def test_a_seed_of_another_replica_changes_the_plans(monkeypatch):
    # the equality above can fail: the seed read off a replica other than the one probed (its prompt twice as
    # long) tells the bounds wrong counts, and the plans differ
    clear_caches()
    right = plans_json(SWEEPS[0])
    clear_caches()
    real = E.replica_estimate

    def other(model, accelerator, **kw):
        return real(model, accelerator, **kw | {"input_tokens": 2 * kw["input_tokens"], "replicas": None})
    monkeypatch.setattr(RC, "replica_estimate", other)
    assert plans_json(SWEEPS[0]) != right
    clear_caches()


def test_a_replica_walked_before_is_not_seeded_again(monkeypatch):
    clear_caches()
    plans_json([{"requests_per_s": 200.0, "prompt_tokens": 1500}])
    got = _counted(monkeypatch)
    plans_json([{"requests_per_s": 200.0 * f, "prompt_tokens": 1500} for f in (1.05, 1.1)])  # rate moves
    plans_json([{"requests_per_s": 200.0, "prompt_tokens": 1500, "ttft_target_ms": t} for t in (900.0, 700.0)])
    assert got["first"] == 0
    plans_json([{"requests_per_s": 200.0, "prompt_tokens": 1700}])  # a new replica is
    assert got["first"] >= 1
    clear_caches()


def test_a_shape_met_past_the_best_ones_gpus_is_dropped_before_its_estimate(monkeypatch):
    # _fewest_replicas gives up on a shape whose fewest replicas meeting the targets already need more GPUs than
    # the best shape found (the knee only adds replicas): each plan picks what sizing every screened shape with
    # no floor picks (tests/test_slider_speed.py's long way), and the early return is taken
    from test_slider_speed import _check_same
    from aisize.scenario import from_dict, preset, to_dict
    past, real = [], RC._fewest_meeting

    def meeting(w, ctx, policies, arch, shape, n, one, ttft_t, tpot_t, floor=float("inf")):
        got = real(w, ctx, policies, arch, shape, n, one, ttft_t, tpot_t, floor)
        past.append(got is not None and got[3] and got[0] * shape.gpus > floor)
        return got
    monkeypatch.setattr(RC, "_fewest_meeting", meeting)
    clear_caches()
    for prompt in (700, 1300, 1822, 2207, 2674, 3200):
        data = to_dict(preset("xe9680-genai"))
        for w in data["workloads"]:
            if w["kind"] == "inference":
                w.update(requests_per_s=20.0, prompt_tokens=prompt)
        assert _check_same(from_dict(data)) == 1
    assert any(past)
    clear_caches()


@pytest.mark.parametrize("rate", [20.0, 200.0])
def test_a_floor_above_the_count_met_sizes_as_no_floor(rate):
    # the give-up is only for more GPUs than the floor: one GPU above the count the search ends at sizes as with
    # no floor, and a floor below the count met gives up (a give-up at fewer GPUs would lose shapes that win)
    from test_slider_speed import _sized_calls
    from aisize.scenario import from_dict, preset, to_dict
    data = to_dict(preset("xe9680-genai"))
    for w in data["workloads"]:
        if w["kind"] == "inference":
            w.update(requests_per_s=rate, prompt_tokens=1500)
    (w, ctx, policies, arch, fleet, kw, engine, cal, ttft_t, tpot_t), _ = _sized_calls(from_dict(data))[0]
    for shape, n, _ in fleet.ranked[:3]:
        one = RC._one(w, shape, kw, engine, cal)
        free = RC._fewest_replicas(w, ctx, policies, arch, shape, n, one, ttft_t, tpot_t)
        met = RC._fewest_meeting(w, ctx, policies, arch, shape, n, one, ttft_t, tpot_t)
        assert free is not None and free[3] and met[3]
        above = RC._fewest_replicas(w, ctx, policies, arch, shape, n, one, ttft_t, tpot_t, free[0] * shape.gpus + 1)
        assert above[0] == free[0] and above[2] == free[2]
        assert RC._fewest_replicas(w, ctx, policies, arch, shape, n, one, ttft_t, tpot_t,
                                   met[0] * shape.gpus - 1) is None
