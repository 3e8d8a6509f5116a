"""A load-free replica met for the first time seeds the replica count's rate bounds from one batched solve
(:func:`aisize.plan.rate_bounds.seed`, :func:`aisize.serving.curves.screen_rates`; issue 51 item 2): a prompt or
output move then solves alone only the counts whose figures lie near a threshold. Every plan must be the one the
search makes without the seed; no timings are asserted here (``benchmarks/bench_sliders.py`` measures them)."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import aisize.serving.estimate  # noqa: F401 (the module, which aisize.serving's function of the same name hides)
from aisize.plan import clear_caches
from aisize.plan import rate_bounds as RB
from aisize.plan import replica_count as RC
from aisize.serving import lengths as L
from aisize.serving.curves import above_threshold, latency_elasticity, screen_rates
from preset_plans import plans_json

E = sys.modules["aisize.serving.estimate"]
KW = dict(weight_precision="bf16", kv_precision="bf16", engine="trtllm", input_tokens=1024, output_tokens=256)


@pytest.mark.parametrize("model, args", [
    ("llama-3-8b", dict(tensor_parallel=1)), ("llama-3-8b", dict(tensor_parallel=2, engine="vllm")),
    ("llama-3-70b", dict(tensor_parallel=4, weight_precision="fp8", kv_precision="fp8", engine="sglang")),
    ("llama-3.1-8b", dict(tensor_parallel=1, speculative_method="eagle3", speculative_tokens=3)),
    ("llama-3-8b", dict(tensor_parallel=8, input_tokens=3800, output_tokens=700))])
def test_the_batch_gives_each_rates_probe_to_the_solvers_rounding(model, args):
    # the seed compares the batch's figures with the targets as the probe's would be: the same figures but for the
    # root's rounding (far inside the bounds' 0.1 % margin), and the same stability
    kw = KW | args
    fits, cap = E.estimate_capacity(model, "h100-sxm", **kw)
    assert fits
    rates = [float(r) for r in np.linspace(0.02, 1.05, 25) * cap]
    est = E.estimate(model, "h100-sxm", requests_per_s=rates[10], **kw)
    assert RB.seedable(type("W", (), {"length_cv": 0.0})(), est)
    (stable, ttft, tpot), _ = screen_rates(est, rates, (), 2.0, statistic="p95")
    (_, ttft99, tpot99), _ = screen_rates(est, rates, (), 2.0, statistic="p99")
    reps, both = None, 0
    for r, ok, a, b, a99, b99 in zip(rates, stable, ttft, tpot, ttft99, tpot99):
        p = E.probe(model, "h100-sxm", requests_per_s=r, replicas=reps, **kw)
        reps = p.replicas
        assert bool(ok) == bool(p.stable), r
        if p.stable:
            both += 1
            assert a == pytest.approx(p.ttft_p95_s, rel=1e-5) and b == pytest.approx(p.tpot_p95_s, rel=1e-5), r
            assert a99 == pytest.approx(p.ttft_p99_s, rel=1e-5) and b99 == pytest.approx(p.tpot_p99_s, rel=1e-5), r
    assert 15 < both < len(rates)  # stable and unstable rates both compared


def test_the_knee_verdicts_are_each_rates_elasticity_and_the_screens():
    est = E.estimate("llama-3-8b", "h100-sxm", tensor_parallel=1, requests_per_s=10.0, **KW)
    rates = [float(r) for r in np.linspace(0.05, 0.99, 30) * est.max_requests_per_s]
    targets = rates[::3]
    _, verdicts = screen_rates(est, targets, rates, 2.0, statistic="p95")
    assert verdicts == above_threshold(est, rates, 2.0, statistic="p95")  # the extra points change no verdict
    told = [v for v in verdicts if v is not None]
    assert True in told and False in told
    for r, v in zip(rates, verdicts):
        if v is not None:
            assert v == (latency_elasticity(est, r, statistic="p95") > 2.0), r


_plans = plans_json


SWEEPS = [
    [{"requests_per_s": 200.0, "prompt_tokens": p} for p in (700, 900, 1024, 1300, 1700, 2200)],
    [{"requests_per_s": 200.0, "output_tokens": o} for o in (100, 180, 256, 330, 430, 560)],
    [{"requests_per_s": r, "prompt_tokens": 1024 + 97 * k} for k, r in enumerate((20.0, 60.0, 430.0, 630.0))],
    [{"requests_per_s": 300.0, "output_tokens": 256 + 31 * k, "tpot_target_ms": 31.0} for k in range(4)],
]


def _seeded(monkeypatch) -> list:
    """Records each seed (the counts' rates it showed the bounds)."""
    got, real = [], RB.seed

    def seed(w, est, *args):
        got.append(w.requests_per_s)
        return real(w, est, *args)
    monkeypatch.setattr(RC, "seed", seed)
    return got


@pytest.mark.parametrize("k", range(len(SWEEPS)))
def test_a_sweep_plans_what_it_plans_without_the_seed(monkeypatch, k):
    clear_caches()
    seeded = _seeded(monkeypatch)
    fast = _plans(SWEEPS[k])
    assert len(seeded) >= len(SWEEPS[k]) // 2  # the seed ran
    clear_caches()
    monkeypatch.setattr(RC, "seed", lambda *args: None)
    assert _plans(SWEEPS[k]) == fast
    clear_caches()


def _mean(real):
    def seed(est, rates, knee_rates, threshold, **kw):  # the mean latencies against the p95 targets
        return real(est, rates, knee_rates, threshold, **kw | {"statistic": "mean"})
    return seed


def _kneeless(real):
    def seed(est, rates, knee_rates, threshold, **kw):  # every count told clear of the knee below it
        got, verdicts = real(est, rates, knee_rates, threshold, **kw)
        return got, [None if v is None else False for v in verdicts]
    return seed


@pytest.mark.parametrize("k, wrong", [(2, _mean), (0, _kneeless)])
def test_a_wrong_seed_changes_the_plans(monkeypatch, k, wrong):
    # the equality above can fail: a seed of the wrong statistic (the curve's default, a plausible slip), or one
    # that tells the walk every count is below the knee, plans other fleets
    clear_caches()
    right = _plans(SWEEPS[k])
    clear_caches()
    monkeypatch.setattr(RB, "screen_rates", wrong(RB.screen_rates))
    assert _plans(SWEEPS[k]) != right
    clear_caches()


def test_the_seed_spares_the_bisections_probes(monkeypatch):
    def probes(seed) -> int:
        clear_caches()
        calls, real = [], RC._probe

        def counted(*args):
            calls.append(args[5])
            return real(*args)
        monkeypatch.setattr(RC, "_probe", counted)
        if not seed:
            monkeypatch.setattr(RC, "seed", lambda *args: None)
        _plans(SWEEPS[0])
        monkeypatch.undo()
        clear_caches()
        return len(calls)
    assert probes(True) < probes(False)


def test_only_a_replica_the_batch_solves_as_a_probe_is_seeded():
    est = E.estimate("llama-3-8b", "h100-sxm", tensor_parallel=1, requests_per_s=10.0, **KW)
    w = type("W", (), {"length_cv": 0.0})()
    assert RB.seedable(w, est)
    w.length_cv = 0.5  # the curve leaves the lengths' spread out of its admission queue
    assert not RB.seedable(w, est)
    w.length_cv = 0.0
    assert not RB.seedable(w, type("Est", (), {})())  # no replica to solve
    spread = E.estimate("llama-3-8b", "h100-sxm", tensor_parallel=1, requests_per_s=10.0,
                        length_distribution=L.Lengths.lognormal(1024, 256, 0.4, 0.7), **KW)
    assert spread.lengths is not None and not RB.seedable(w, spread)


def test_the_seed_counts_span_the_bisection_and_the_walk_ahead():
    class Bounds:
        def __init__(self):
            self.rates = []

        def saw(self, rate, gap):
            self.rates.append(rate)
    est = E.estimate("llama-3-8b", "h100-sxm", tensor_parallel=1, requests_per_s=10.0, **KW)
    w = type("W", (), {"requests_per_s": 200.0, "slo_statistic": "p95", "length_cv": 0.0})()
    seen, knee = Bounds(), Bounds()
    RB.seed(w, est, 1, 12, 18, math.inf, RC.TOP_UP_SHARE, seen, knee, 1.0, 0.05)
    assert sorted(200.0 / r for r in seen.rates) == pytest.approx(list(range(13, 18)))
    assert len(knee.rates) <= 5 + 1 + RB.SEED_AHEAD
    seen = Bounds()
    RB.seed(w, est, 1, 100, 400, math.inf, RC.TOP_UP_SHARE, seen, Bounds(), 1.0, 0.05)
    counts = sorted(round(200.0 / r) for r in seen.rates)
    assert len(counts) <= RB.SEED_COUNTS and counts[0] == 101 and counts[-1] == 399


def test_a_target_move_seeds_nothing(monkeypatch):
    # a target's move re-plans the replicas already met from their kept probes: a seed there would be new work
    clear_caches()
    _plans([{"requests_per_s": 200.0}])
    seeded = _seeded(monkeypatch)
    _plans([{"requests_per_s": 200.0, "ttft_target_ms": t} for t in (900.0, 800.0, 700.0)])
    assert seeded == []
    _plans([{"requests_per_s": 200.0, "prompt_tokens": 1400}])  # a new replica is seeded
    assert seeded
    clear_caches()
