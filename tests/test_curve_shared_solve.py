"""A move's elasticity at the estimate's rate and the app's latency curve of the same replica are one solve
(:func:`aisize.serving.curves._shared`, issue 51 item 2): the curve asks no solve of its own after the elasticity,
each figure is that of separate solves to 1e-9 (each point's root is its own alone), and neither depends on which
was asked first."""

import numpy as np
import pytest

from aisize.plan import clear_caches, plan
from aisize.scenario import preset
from aisize.serving import curves

# a service through the estimate (a length spread) and one without, at their planned rates
SERVICES = [("agentic-coding", 0), ("xe9680-genai", 0), ("shared-cluster", 2)]
_PLANS = {}


def _estimate(name, k):
    if name not in _PLANS:
        _PLANS[name] = plan(preset(name))
    return _PLANS[name].inference[k].estimate


def _separately(est):
    """The curve and the elasticity as main solved them: the curve's rates with the estimate's own rate, and the
    elasticity's five rates, each its own solve."""
    lam = est.requests_per_s
    rise = curves.rise_within(lam, est.max_requests_per_s)
    el = curves._loaded(est, lam * np.concatenate([[1.0], 1.0 + rise * curves._RISES]))
    total = np.asarray(el.ttft_seconds) + (est.output_tokens - 1) * np.asarray(el.tpot_seconds)
    elasticity = curves.elasticity(float(total[0]), float(total[1]), rise)
    per = np.linspace(0.01, 0.99, curves.CURVE_POINTS) * est.max_requests_per_s
    ls = curves._loaded(est, per)
    cols = {k: np.asarray(getattr(ls, k), dtype=float) for k in curves._OWN}
    return elasticity, curves._through_the_estimate(est, cols)


@pytest.mark.parametrize("name,k", SERVICES)
def test_the_shared_solve_gives_the_separate_figures(name, k):
    est = _estimate(name, k)
    assert curves._own_rate(est) > 0 and curves._shared(est) is not None
    clear_caches()
    alone, cols = _separately(est)
    clear_caches()
    e = curves.latency_elasticity(est, est.requests_per_s)
    curve = curves.latency_curve(est)
    assert np.isfinite(alone) and e == pytest.approx(alone, rel=1e-9, abs=0)
    for col, want in cols.items():
        np.testing.assert_allclose(curve[col].to_numpy(), want, rtol=1e-9, atol=0)


@pytest.mark.parametrize("name,k", SERVICES)
def test_the_curve_after_the_elasticity_solves_nothing_and_the_order_does_not_matter(name, k, monkeypatch):
    est = _estimate(name, k)
    clear_caches()
    first = curves.latency_curve(est), curves.latency_elasticity(est, est.requests_per_s)
    clear_caches()
    solves = []
    real = curves._loaded
    monkeypatch.setattr(curves, "_loaded", lambda e, r, c=None: solves.append(np.size(r)) or real(e, r, c))
    e = curves.latency_elasticity(est, est.requests_per_s)
    curve = curves.latency_curve(est)
    assert solves == [1 + len(curves._RISES) + curves.CURVE_POINTS]  # one solve for both
    assert e == first[1]  # to the bit, whichever came first
    assert curve.equals(first[0])
    curve["ttft_seconds"] *= 2.0  # the frame is the caller's: the kept solve is untouched
    assert curves.latency_curve(est).equals(first[0]) and solves == [55]


def test_another_rate_or_rise_or_points_solves_as_before(monkeypatch):
    est = _estimate("xe9680-genai", 0)
    clear_caches()
    solves = []
    real = curves._loaded
    monkeypatch.setattr(curves, "_loaded", lambda e, r, c=None: solves.append(np.size(r)) or real(e, r, c))
    curves.latency_elasticity(est, 0.5 * est.requests_per_s)
    curves.latency_elasticity(est, est.requests_per_s, rise=0.05)
    curves.latency_curve(est, 40)
    assert solves == [5, 5, 40 + (1 if curves._passes_through(est) else 0)]
