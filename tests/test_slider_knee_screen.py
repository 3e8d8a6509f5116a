"""The knee's screen (issue 51 item 2) changes no plan: one batched solve steps the top-up walk over counts clearly
past the knee, and every count the walk stops at is solved alone.

:func:`aisize.serving.curves.above_threshold` answers for the counts of a walk at once; its batched solve differs
from a rate solved alone in the last digits, so it answers only where the latency ratio clears the threshold by
:data:`~aisize.serving.curves.SCREEN_MARGIN`. Checked here: its verdicts against each rate's
:func:`~aisize.serving.curves.latency_elasticity` alone, the plans of a sweep with and without the screen (the
same JSON, and the screen did skip counts), and that it refuses to answer inside the margin. No timings are asserted
(``benchmarks/bench_sliders.py`` measures them).
"""

from __future__ import annotations

import numpy as np

from aisize.plan import clear_caches, plan
from aisize.plan import context as C
from aisize.plan import knee as K
from aisize.plan import replica_count as RC
from aisize.present.export import to_json
from aisize.scenario import DEFAULT_PRESET, from_dict, preset, to_dict
from aisize.serving import curves

MOVES = [("requests_per_s", 60.0), ("requests_per_s", 200.0), ("requests_per_s", 230.0), ("prompt_tokens", 1152),
         ("output_tokens", 384), ("output_cv", 0.8), ("prompt_cv", 0.6), ("tpot_target_ms", 30.0)]


def _service(d) -> dict:
    return next(w for w in d["workloads"] if w["kind"] == "inference")


def _off(w, est, shape, start, *args):
    """A knee screen that screens nothing (the walk solves every count alone)."""
    return start


def _sweep(monkeypatch, screen) -> tuple[list, int]:
    """(to_json of each plan of the default preset's service swept through MOVES, counts screened past the knee)."""
    clear_caches()
    past = [0]
    real = K.above_threshold

    def counted(*args, **kwargs):
        got = real(*args, **kwargs)
        past[0] += sum(v is True for v in got)
        return got
    monkeypatch.setattr(RC, "_knee_screen", screen)
    monkeypatch.setattr(K, "above_threshold", counted)
    d, out = to_dict(preset(DEFAULT_PRESET)), []
    for field, value in MOVES:
        _service(d)[field] = value
        out.append(to_json(plan(from_dict(d))))
    clear_caches()
    monkeypatch.undo()
    return out, past[0]


def test_plans_are_the_same_with_and_without_the_screen(monkeypatch):
    screened, past = _sweep(monkeypatch, RC._knee_screen)
    alone, none = _sweep(monkeypatch, _off)
    assert screened == alone
    assert past >= 4 and none == 0  # the screen stepped over counts (else this compares nothing)


def test_a_screen_that_skips_the_stop_changes_the_plan(monkeypatch):
    """The comparison above can fail: a screen calling every count past the knee walks to the end."""
    def every(*args, **kwargs):
        return [True] * len(args[1])
    monkeypatch.setattr(curves, "above_threshold", every)
    monkeypatch.setattr(K, "above_threshold", every)
    clear_caches()
    d, wrong = to_dict(preset(DEFAULT_PRESET)), []
    for field, value in MOVES:
        _service(d)[field] = value
        wrong.append(to_json(plan(from_dict(d))))
    monkeypatch.undo()
    alone, _ = _sweep(monkeypatch, _off)
    assert wrong != alone


def test_verdicts_equal_each_rate_alone():
    """Every verdict the screen gives is what the elasticity of that rate solved alone says, near the knee too."""
    from aisize.plan.replica_count import _estimates
    clear_caches()
    d = to_dict(preset(DEFAULT_PRESET))
    _service(d)["requests_per_s"] = 200.0
    plan(from_dict(d))
    ests = [v[1] for v in _estimates._entries.values()]
    assert ests
    checked = 0
    for est in ests:
        rates = list(np.linspace(0.3, 0.97, 25) * est.max_requests_per_s)
        for statistic in ("mean", "p95"):
            got = curves.above_threshold(est, rates, C.KNEE_ELASTICITY, statistic=statistic)
            for r, v in zip(rates, got):
                alone = curves.latency_elasticity(est, r, statistic=statistic)
                if v is not None:
                    assert v == (alone > C.KNEE_ELASTICITY), (r, alone)
                    checked += 1
            assert any(got) and not all(got)  # both sides of the knee are in the range
    assert checked >= 50
    clear_caches()


def test_no_verdict_inside_the_margin():
    """A threshold set at a rate's own elasticity (the latency ratio exactly on it) gets None, not a guess."""
    from aisize.plan.replica_count import _estimates
    clear_caches()
    plan(preset(DEFAULT_PRESET))
    est = next(v[1] for v in _estimates._entries.values())
    r = 0.8 * est.max_requests_per_s
    e = curves.latency_elasticity(est, r, statistic="p95")
    assert curves.above_threshold(est, [r], e, statistic="p95") == [None]
    assert curves.above_threshold(est, [r], e + 1.0, statistic="p95") == [False]
    assert curves.above_threshold(est, [r], e - 1.0, statistic="p95") == [True]
    assert curves.above_threshold(est, [1.01 * est.max_requests_per_s], 2.0) == [True]  # past capacity: inf
    clear_caches()


def test_a_batch_differs_from_each_rate_alone_far_inside_the_margin():
    """The margin's reason: the latency ratio a batched solve gives each rate is within 1e-6 of the rate's alone
    (measured: 4e-11 at most), a thousandth of SCREEN_MARGIN."""
    from aisize.plan.replica_count import _estimates
    clear_caches()
    d, ests = to_dict(preset(DEFAULT_PRESET)), []
    _service(d)["requests_per_s"] = 200.0
    for cv in (0.0, 0.8):  # every prompt of the mean length (the TTFT mixture), and a length distribution
        _service(d)["output_cv"] = cv
        plan(from_dict(d))
        ests += [v[1] for v in _estimates._entries.values()]
    worst, n = 0.0, 0
    for est in ests:
        rates = np.linspace(0.3, 0.95, 12) * est.max_requests_per_s
        rises = [curves.rise_within(r, est.max_requests_per_s) for r in rates]
        both = curves._loaded(est, np.ravel([[r, r * (1 + q)] for r, q in zip(rates, rises)]))
        total = both.ttft_p95_seconds + (est.output_tokens - 1) * both.tpot_p95_seconds
        for j, (r, q) in enumerate(zip(rates, rises)):
            one = curves._loaded(est, np.array([r, r * (1 + q)]))
            alone = one.ttft_p95_seconds + (est.output_tokens - 1) * one.tpot_p95_seconds
            if np.all(np.isfinite(alone)):
                worst = max(worst, abs(alone[1] / alone[0] - total[2 * j + 1] / total[2 * j]))
                n += 1
    assert n >= 24 and worst < 1e-3 * curves.SCREEN_MARGIN
    clear_caches()
