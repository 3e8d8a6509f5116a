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
