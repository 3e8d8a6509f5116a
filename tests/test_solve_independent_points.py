"""Each point of a batched Little's-law solve settles on its own (aisize.serving.latency.littles_law_concurrency):
its root is the one it has solved alone, to the bit, whatever else is solved beside it, and a bracket that does not
hold one point's root is set aside for that point only. The sizing screen relies on it to solve its grid and every
shape's knee curve in one call (aisize.serving.sizing._shape_grid; docs/speed-solve.md)."""

import numpy as np
import pytest

from aisize.serving.latency import littles_law_concurrency


def _kinked(x):
    """An iteration time that steps up where a batch fills a tile, and is flat past it (elementwise)."""
    x = np.asarray(x, dtype=float)
    return 0.01 + 1e-4 * x + 0.004 * (x > 37.0) + 0.002 * np.floor(x / 64.0)


def _curved(x):
    x = np.asarray(x, dtype=float)
    return 0.011 + 2e-5 * x ** 1.3


# settling in a few steps, on a kink, saturated, barely loaded, near saturation (many steps)
RATES = np.array([2000.0, 3700.0, 1e6, 1e-3, 9000.0, 5500.0, 120.0])
SLOTS = np.array([512.0, 512.0, 256.0, 512.0, 4096.0, 512.0, 512.0])


def _bits(x):
    return np.asarray(x, dtype=float).tobytes()


def _alone(rate, seconds, slots, bracket=None):
    return littles_law_concurrency(np.array([rate]), seconds, slots, bracket)[0]


@pytest.mark.parametrize("seconds", [_kinked, _curved])
def test_a_batched_point_is_its_own_solve_to_the_bit(seconds):
    steps = []

    def counted(x):
        steps.append(np.shape(x))
        return seconds(x)
    batch = littles_law_concurrency(RATES, counted, SLOTS)
    alone = [_alone(r, seconds, s) for r, s in zip(RATES, SLOTS)]
    assert [_bits(b) for b in batch] == [_bits(a) for a in alone]
    # and in any company: each point beside one other, in either order
    for i in range(len(RATES)):
        for j in (0, len(RATES) - 1):
            pair = littles_law_concurrency(RATES[[i, j]], seconds, SLOTS[[i, j]])
            assert _bits(pair[0]) == _bits(alone[i]) and _bits(pair[1]) == _bits(alone[j])


def test_the_last_evaluation_is_returned_with_every_point_at_its_root():
    asked = []

    def seconds(x):
        asked.append(np.array(x, copy=True))
        return _curved(x)
    got = littles_law_concurrency(RATES, seconds, SLOTS)
    assert _bits(asked[-1]) == _bits(got)  # loaded_state keeps that evaluation instead of making it again


def test_a_bracket_set_aside_for_one_point_only():
    t = _curved
    rates = np.array([1500.0, 3000.0, 6000.0])
    roots = [_alone(r, t, 4096.0) for r in rates]
    lo, hi = 0.5 * np.array(roots), 1.5 * np.array(roots)
    lo[1], hi[1] = 1.0, 2.0  # h > 0 at both ends: the second point's root lies far above
    bracket = (lo, t(lo), hi, t(hi))
    got = littles_law_concurrency(rates, t, 4096.0, bracket)
    for k in range(3):
        own = tuple(np.array([v[k]]) for v in bracket)
        assert _bits(got[k]) == _bits(_alone(rates[k], t, 4096.0, own))
    assert _bits(got[1]) == _bits(roots[1])  # scanned for, as with no bracket
    np.testing.assert_allclose(got, roots, rtol=1e-9)


def test_every_shapes_knee_rides_the_grids_solve_with_the_figures_of_its_own():
    from aisize.serving import sizing
    from screen_case import choose, cold_shapes

    arch, engine, shapes = cold_shapes()
    grids, solves = [], []
    real_grid, real_loaded = sizing._shape_grid, sizing.loaded_state

    def kept_grid(*a):
        grids.append(real_grid(*a))
        return grids[-1]

    def counted(*a, **kw):
        solves.append(np.shape(kw["requests_per_s"]))
        return real_loaded(*a, **kw)
    try:
        sizing._shape_grid, sizing.loaded_state = kept_grid, counted
        fleet = choose(arch, engine, shapes)
        g = grids[-1]
        rows = len(g.fitting)
        assert fleet.feasible and rows >= 3 and solves == [(rows, sizing.RATE_GRID + sizing.KNEE_POINTS),
                                                           (rows, 2 ** sizing.SEARCH_BITS - 1)]
        knees = [fleet.knee_of(s) for s, _ in g.fitting]
        assert len(solves) == 2  # every shape's knee read from the grid's solve, none solved again
        # each shape's knee curve solved without the grid's rates beside it: the same roots, the same knee
        lam = g.capacity[:, None] * np.linspace(0.01, 0.99, sizing.KNEE_POINTS)[None, :]
        ls = g.at(lam, state=True)[-1]
        mean = np.broadcast_to(ls.ttft_seconds + (300 - 1) * ls.tpot_seconds, lam.shape)
        alone = [sizing.knee(lam[k], mean[k]) for k in range(rows)]
        np.testing.assert_allclose(knees, alone, rtol=1e-12)
    finally:
        sizing._shape_grid, sizing.loaded_state = real_grid, real_loaded
        sizing._shape_grid.cache_clear()
        sizing._slo_rates.cache_clear()
