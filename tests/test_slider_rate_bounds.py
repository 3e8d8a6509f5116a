"""The replica count's tests answered from the rates seen before (issue 51 item 2): a load-free replica meets its
targets, and sits below the knee, at every per-replica rate below one where it did and at none above one where it
did not (:class:`aisize.plan.replica_count._Bounds`), so a request-rate move re-checks only the counts whose rates
lie between those seen. Every plan must be the one the search makes computing each test; no timings are asserted
here (``benchmarks/bench_sliders.py`` measures them)."""

from __future__ import annotations

import collections
import math
import random
import sys
import types

import numpy as np
import pytest

import aisize.serving.estimate  # noqa: F401 (the module, which aisize.serving's function of the same name hides)
from aisize.plan import clear_caches
from aisize.plan import knee as K
from aisize.plan import replica_count as RC
from aisize.serving import lengths as L
from aisize.serving.curves import latency_elasticity
from preset_plans import plans_json

E = sys.modules["aisize.serving.estimate"]


def test_bounds_answer_only_beyond_clear_verdicts():
    b = RC._Bounds()
    assert b.says(1.0) is None
    b.saw(10.0, -0.5)  # met, clearly
    b.saw(20.0, 0.5)  # missed, clearly
    assert [b.says(r) for r in (5.0, 10.0, 15.0, 20.0, 25.0)] == [True, True, None, False, False]
    b.saw(12.0, -0.5 * RC.BOUND_MARGIN)  # met, within a rounding of the threshold: bounds nothing
    b.saw(18.0, 0.5 * RC.BOUND_MARGIN)
    assert b.says(11.0) is None and b.says(19.0) is None
    b.saw(19.5, math.inf)  # unstable: clearly missed
    assert b.says(19.5) is False
    b.saw(17.0, float("nan"))  # no figure: a miss that bounds nothing
    assert b.says(17.5) is None and b.says(16.0) is None
    b.saw(17.2, -0.5)  # met above a miss: the test is not monotone here, so nothing is answered again
    assert [b.says(r) for r in (1.0, 10.0, 17.1, 30.0)] == [None] * 4


def _plans(steps) -> list[str]:
    """The default preset's plans with every inference service at each step (not only rate-given ones)."""
    return plans_json(steps, rate_given_only=False)


RATES = [float(x) for x in np.geomspace(1.0, 630.0, 28)]


def _sweeps() -> list[list[dict]]:
    shuffled = RATES[:]
    random.Random(51).shuffle(shuffled)
    up_down = RATES + RATES[::-1]
    return [
        [{"requests_per_s": r} for r in up_down + shuffled],
        [{"requests_per_s": r, "output_cv": 0.7, "prompt_cv": 0.4} for r in up_down[::2]],
        # the targets near where a count's rate sits (each target its own bounds)
        [{"requests_per_s": 200.0 * (1 + 0.01 * k), "tpot_target_ms": t} for t in (31.0, 50.0)
         for k in range(12)],
        [{"requests_per_s": 120.0 * (1 + 0.013 * k), "ttft_target_ms": t, "slo_statistic": s}
         for t, s in ((180.0, "p99"), (400.0, "p95")) for k in range(10)],
    ]


def _answered(monkeypatch) -> list:
    """Records each answer the bounds give (rate, answer)."""
    said, real = [], RC._Bounds.says

    def says(self, rate):
        got = real(self, rate)
        if got is not None:
            said.append((rate, got))
        return got
    monkeypatch.setattr(RC._Bounds, "says", says)
    return said


@pytest.mark.parametrize("k", range(4))
def test_a_sweep_plans_what_computing_every_test_plans(monkeypatch, k):
    steps = _sweeps()[k]
    clear_caches()
    said = _answered(monkeypatch)
    fast = _plans(steps)
    assert any(s for _, s in said) and len(said) >= len(steps) // 2  # the bounds answered, both ways
    clear_caches()
    monkeypatch.setattr(RC._Bounds, "says", lambda self, rate: None)  # every test computed, as before the bounds
    assert _plans(steps) == fast
    clear_caches()


def test_the_sweep_tells_a_wrong_answer(monkeypatch):
    # the equality above can fail: bounds that answer past the first rate seen (as if every rate met the targets
    # and sat below the knee once one did) plan other fleets
    steps = _sweeps()[0][:28]
    clear_caches()
    right = _plans(steps)
    clear_caches()
    monkeypatch.setattr(RC._Bounds, "says", lambda self, rate: True if self.passed > -math.inf else None)
    assert _plans(steps) != right
    clear_caches()


DENSE = dict(weight_precision="bf16", kv_precision="bf16", engine="trtllm")


@pytest.mark.parametrize("tp, lengths", [(1, None), (2, (0.4, 0.7)), (8, None)])
def test_a_load_free_replicas_tests_are_monotone_in_its_rate(tp, lengths):
    # what the bounds rest on, at the default service's lengths: each latency the targets read rises with the
    # rate per replica (a pass below a pass, a miss above a miss), and so does the knee's elasticity
    kw = dict(DENSE, tensor_parallel=tp, input_tokens=1024, output_tokens=256)
    if lengths:
        kw["length_distribution"] = L.Lengths.lognormal(1024, 256, *lengths)
    fits, cap = E.estimate_capacity("llama-3-8b", "h100-sxm", **kw)
    assert fits
    rates = np.linspace(0.01, 0.995, 60) * cap
    probes, reps = [], None
    for r in rates:
        p = E.probe("llama-3-8b", "h100-sxm", requests_per_s=float(r), replicas=reps, **kw)
        probes.append(p)
        reps = p.replicas
    for name in ("ttft_p95_s", "tpot_p95_s", "ttft_p99_s", "tpot_p99_s", "ttft_s", "tpot_s"):
        got = np.array([getattr(p, name) for p in probes])
        assert np.all(np.diff(got) >= 0), name
    est = probes[30].estimate()
    el = np.array([latency_elasticity(est, float(r), statistic="p95") for r in rates[::3]])
    assert np.all(np.diff(el) >= 0) and el[0] < 2.0 < el[-1]


class _Est:
    """What the replica count's search reads of an estimate: a replica of capacity 40 requests/s whose TTFT at p95
    is ``latency(rate)`` [s]."""

    def __init__(self, rate, latency):
        self.feasible = self.stable = True
        self.max_requests_per_s, self.requests_per_s = 40.0, rate
        self.ttft_p95_s, self.tpot_p95_s = latency(rate), 0.0


def _searches(monkeypatch, latency, totals, bounds=True) -> list:
    """(replicas, met) of :func:`~aisize.plan.replica_count._fewest_meeting` at each total rate in turn, for a
    load-free replica whose TTFT is ``latency`` (target 1 s), from the count at which it runs 60 % busy."""
    shape, arch, ctx = collections.namedtuple("Shape", "gpus")(1), object(), types.SimpleNamespace(accelerator=object())
    one, w = {"calibration": object()}, types.SimpleNamespace(slo_statistic="p95", requests_per_s=None)

    def estimate(w, ctx, policies, arch, shape, n, one):
        return None, _Est(w.requests_per_s / n, latency)
    monkeypatch.setattr(RC, "load_free", lambda w, arch: True)
    monkeypatch.setattr(RC, "_evaluate", estimate)
    monkeypatch.setattr(RC, "_probe", estimate)
    monkeypatch.setattr(RC, "_capacity", lambda ctx, arch, shape, one: (True, 40.0))
    monkeypatch.setattr(RC, "_seen", RC._Kept(4))
    if not bounds:
        monkeypatch.setattr(RC._Bounds, "says", lambda self, rate: None)
    out = []
    for total in totals:
        w.requests_per_s = total
        got = RC._fewest_meeting(w, ctx, None, arch, shape, math.ceil(total / 24.0), one, 1.0, 1.0)
        out.append((got[0], got[3]))
    monkeypatch.undo()
    return out


TOTALS = [float(x) for x in np.geomspace(3.0, 900.0, 150)]


def test_the_search_with_bounds_is_the_bisection_where_latency_rises(monkeypatch):
    # meets below 20 requests/s per replica, at every count and its boundary (20.0 itself: total = 20 x count)
    totals = TOTALS + TOTALS[::-1] + [20.0 * n for n in range(1, 40)] + [20.0 * n + 1e-9 for n in range(1, 40)]
    said = _answered(monkeypatch)
    fast = _searches(monkeypatch, lambda r: r / 20.0, totals)
    assert len(said) > len(totals) // 2  # counts answered without an estimate
    assert fast == _searches(monkeypatch, lambda r: r / 20.0, totals, bounds=False)


def test_the_search_falls_back_where_latency_does_not_rise(monkeypatch):
    # a miss between 14 and 15 requests/s per replica below passes up to 20: once a pass is seen above a miss the
    # bounds answer nothing, and every search from there is the bisection's
    def bumpy(r):
        return 1.5 if 14.0 < r < 15.0 else r / 20.0
    totals = [14.5 * 3, 14.5 * 7] + TOTALS  # the miss at 14.5, then passes above it
    said = _answered(monkeypatch)
    fast = _searches(monkeypatch, bumpy, totals)
    assert fast == _searches(monkeypatch, bumpy, totals, bounds=False)
    assert len(said) < 5  # the bounds answered nearly nothing (where latency rises: hundreds, above)


@pytest.mark.parametrize("tp, lengths", [(1, None), (2, (0.4, 0.7))])
def test_the_walk_reads_a_kept_estimate_of_the_replica_as_its_own(tp, lengths):
    # the knee's walk solves a count on the replica's kept estimate at another rate (load-free: the curve is the
    # same): each count's elasticity, and the screen's verdicts, equal those read off its own estimate
    kw = dict(DENSE, tensor_parallel=tp, input_tokens=1024, output_tokens=256)
    if lengths:
        kw["length_distribution"] = L.Lengths.lognormal(1024, 256, *lengths)
    cap = E.estimate_capacity("llama-3-8b", "h100-sxm", **kw)[1]
    kept = E.probe("llama-3-8b", "h100-sxm", requests_per_s=0.3 * cap, **kw).estimate()
    for share in (0.5, 0.7, 0.75, 0.9):
        own = E.probe("llama-3-8b", "h100-sxm", requests_per_s=share * cap, **kw).estimate()
        rate = own.requests_per_s
        assert latency_elasticity(K._at_rate(kept, rate), rate, statistic="p95") == \
            latency_elasticity(own, rate, statistic="p95")
        rates = [rate, 0.95 * rate, 0.9 * rate]
        assert K.above_threshold(kept, rates, 2.0, statistic="p95") == \
            K.above_threshold(own, rates, 2.0, statistic="p95")
