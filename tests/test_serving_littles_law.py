"""The Little's-law root finder behind every latency at a request rate: B = λ·O·T(B), at most the slots."""

import numpy as np

from aisize.serving.latency import littles_law_concurrency


def _kinked(intercept, knee_share=0.45, flat_share=0.005):
    """λ·O·T(B) for a replica that turns compute-bound at its root: h(B) = λ·O·T(B) - B falls at
    ``knee_share`` per request below the root and at only ``flat_share`` above it (nearly flat, as near
    saturation), with the root at intercept / knee_share. Returns (λ·O, T) with λ·O = 1 token/s."""
    root = intercept / knee_share

    def t(b):
        b = np.asarray(b, dtype=float)
        return np.where(b < root, intercept + (1.0 - knee_share) * b,
                        intercept + (1.0 - knee_share) * root + (1.0 - flat_share) * (b - root))

    return root, t


def test_converges_where_h_is_nearly_flat_beyond_the_root():
    # the shape the serving model takes near saturation (a 16 x 16 latency grid had such points):
    # from the whole of (0, slots], regula falsi crawled in from the flat side and stopped 50 % off
    intercept = np.array([117.0, 40.0, 3.0])
    slots = np.array([12288.0, 4096.0, 858.0])
    root, t = _kinked(intercept)
    b = littles_law_concurrency(1.0, t, slots)
    np.testing.assert_allclose(b, np.broadcast_to(root, b.shape), rtol=1e-9)


def test_takes_the_lowest_root_where_the_iteration_time_steps_up():
    # λ·O·T steps up by 7 at B = 300 (a tile or graph size filling): h = 1 - B/100 below it, zero at
    # 100, and 8 - B/100 above it, zero again at 800. A replica filling from empty stops at 100.
    def t(b):
        b = np.asarray(b, dtype=float)
        return 1.0 + 0.99 * b + np.where(b < 300.0, 0.0, 7.0)

    b = littles_law_concurrency(np.array([1.0]), t, 4096.0)
    np.testing.assert_allclose(b, 100.0, rtol=1e-9)


def test_linear_iteration_time_gives_the_closed_form():
    # T(B) = T0 + s·B (memory-bound decode): B = λO·T0 / (1 - λO·s)
    t0, s = 0.02, 1e-5
    rate = np.array([100.0, 1000.0, 50000.0, 99000.0])
    b = littles_law_concurrency(rate, lambda x: t0 + s * np.asarray(x), 1e6)
    np.testing.assert_allclose(b, rate * t0 / (1.0 - rate * s), rtol=1e-9)


def test_returns_the_slots_when_the_replica_saturates():
    # λO·T(slots) >= slots: every slot is taken (the caller reports the queue as unstable)
    b = littles_law_concurrency(np.array([10.0, 1e6]), lambda x: 0.02 + 1e-5 * np.asarray(x), 256.0)
    assert b[1] == 256.0 and b[0] < 256.0


def test_no_load_gives_no_concurrency_and_no_nan():
    b = littles_law_concurrency(np.array([0.0, 1e-9]), lambda x: 0.01 + 0.0 * np.asarray(x), 512.0)
    assert np.all(np.isfinite(b)) and np.all(b <= 1e-8)


def test_returns_its_last_evaluation():
    # the contract loaded_state relies on to keep that steady state instead of computing it again
    seen = []

    def t(x):
        seen.append(x)
        return 0.02 + 1e-5 * np.asarray(x)

    b = littles_law_concurrency(np.array([100.0, 5000.0]), t, 1024.0)
    assert seen[-1] is b


def test_a_bracket_from_nearby_rates_finds_the_same_roots_without_the_scan():
    # the SLO search refines between two grid rates it solved: their roots bracket every rate between
    t0, s = 0.02, 1e-5
    t = lambda x: t0 + s * np.asarray(x)  # noqa: E731
    grid = np.array([1000.0, 2000.0])
    b_grid = littles_law_concurrency(grid, t, 1e6)
    rate = np.linspace(1000.0, 2000.0, 9)[1:-1]
    calls = []

    def counted(x):
        calls.append(np.shape(x))
        return t(x)

    warm = littles_law_concurrency(rate, counted, 1e6, bracket=(b_grid[0], t(b_grid[0]), b_grid[1], t(b_grid[1])))
    np.testing.assert_allclose(warm, rate * t0 / (1.0 - rate * s), rtol=1e-9)
    assert all(c == rate.shape for c in calls)  # no scan: every evaluation is one point per rate
    # a bracket whose top is the slots, where the replica saturates, answers the slots
    b = littles_law_concurrency(np.array([1e6]), t, 256.0, bracket=(100.0, t(100.0), 256.0, t(256.0)))
    assert b[0] == 256.0


def test_loaded_state_near_a_solved_rate_matches_a_cold_solve():
    from aisize import models
    from aisize.serving import latency
    from aisize.serving.calibration import CALIBRATION
    from aisize.serving.costs import model_costs, weight_formats
    from aisize.serving.hardware import device
    from aisize.serving.iteration import achieved_rates
    from aisize.serving.shapes import ReplicaShape

    costs = model_costs(models.resolve("llama-3.1-70b"), weight_formats("fp8"), "fp8")
    rates = achieved_rates(device("h100-sxm", "fp8", "fp8"), CALIBRATION)
    kw = dict(capacity_requests_per_s=20.0, slots=256.0, input_tokens=2000, output_tokens=400,
              max_num_tokens=8192, chunked_prefill=True, shape=ReplicaShape(4, 1, 1, None))
    ends = latency.loaded_state(costs, rates, CALIBRATION, requests_per_s=np.array([4.0, 12.0]), **kw)
    between = np.array([6.0, 9.0, 11.5])
    cold = latency.loaded_state(costs, rates, CALIBRATION, requests_per_s=between, **kw)
    t = ends.iteration_seconds
    warm = latency.loaded_state(costs, rates, CALIBRATION, requests_per_s=between, near=(4.0, t[0], 12.0, t[1]), **kw)
    np.testing.assert_allclose(warm.ttft_seconds, cold.ttft_seconds, rtol=1e-9)
    np.testing.assert_allclose(warm.tpot_p95_seconds, cold.tpot_p95_seconds, rtol=1e-9)


def test_a_bracket_that_misses_the_root_is_scanned_for_instead():
    t0, s = 0.02, 1e-5
    t = lambda x: t0 + s * np.asarray(x)  # noqa: E731
    rate = np.array([1500.0])
    wrong = (1.0, t(1.0), 2.0, t(2.0))  # h > 0 at both ends: the root lies far above
    b = littles_law_concurrency(rate, t, 1e6, bracket=wrong)
    np.testing.assert_allclose(b, rate * t0 / (1.0 - rate * s), rtol=1e-9)
