"""The Little's-law steps on an array of roots (aisize.serving.littles_law._array_steps) are the numpy loop they replace,
to the bit: every array passed to the iteration time and the root returned (docs/speed-solve.md, issue 51 item 2).

The loop below is littles_law_concurrency's steps as they were for an array (at a0097d6): np.where for every choice,
nan_to_num and np.clip on every x, an errstate per division and Illinois's halving by the side each point's last
step fell on. The cases: settling points, a kink, saturation, a nearly flat h, a jump and a drop that make Illinois halve either end, an iteration time that is NaN or
infinite at some concurrencies (nan_to_num's replacements), two points of equal h (a zero divisor) and a bracket
that does not hold some points' roots.
"""

from __future__ import annotations

import numpy as np
import pytest

from aisize.serving import littles_law as L
from test_solve_independent_points import _curved, _kinked


def _reference(tokens_per_s, iteration_seconds, lo, h_lo, hi, h_hi):
    rate = np.asarray(tokens_per_s, dtype=float)
    side = np.zeros(np.shape(lo))
    p, h_p, b, h_b = lo, h_lo, hi, h_hi
    frozen = last = None
    for _ in range(L._MAX_ITERATIONS):
        with np.errstate(invalid="ignore", divide="ignore"):
            secant = b - h_b * (b - p) / (h_b - h_p)
        with np.errstate(invalid="ignore", divide="ignore"):
            falsi = (lo * h_hi - hi * h_lo) / (h_hi - h_lo)
        inside = (secant > lo) & (secant < hi)
        x = np.where(h_hi >= 0, hi, np.where(inside, secant, falsi))
        x = np.clip(np.where(np.isnan(x), 1e-9, np.where(np.isinf(x), np.copysign(np.finfo(float).max, x), x)),
                    lo, hi)
        if frozen is not None:
            x = np.where(frozen, b, x)
        t = iteration_seconds(x)
        h_x = rate * t - x
        settled = abs(x - b) <= L._TOLERANCE * x
        if np.all(settled):
            return x
        frozen = settled if frozen is None else frozen | settled
        p, h_p, b, h_b = b, h_b, x, h_x
        last = x
        right = h_x < 0
        hi, h_hi = np.where(right, x, hi), np.where(right, h_x, h_hi)
        lo, h_lo = np.where(right, lo, x), np.where(right, h_lo, h_x)
        h_lo = np.where(right & (side == -1), h_lo / 2, h_lo)
        h_hi = np.where(~right & (side == 1), h_hi / 2, h_hi)
        side = np.where(right, -1, 1)
    return last


def _flat(x):  # h nearly flat past the root: many Illinois steps
    x = np.asarray(x, dtype=float)
    return 0.02 + 0.98 * 0.02 * np.minimum(x, 300.0) / 300.0


def _jump(x):  # a jump past the root's side: the secant falls outside, Illinois halves a stale end
    x = np.asarray(x, dtype=float)
    return 0.02306093466151905 + 1.5837345718586525e-05 * x ** 1.8407538096547928 + 0.00413654640820602 * (x > 213.9)


def _drop(x):  # a drop past the root: Illinois halves the other end
    x = np.asarray(x, dtype=float)
    return 0.09888296109023864 + 1.5360841657971529e-07 * x ** 1.8656528115653295 - 0.02906478074231289 * (x > 213.7)


def _holes(x):  # NaN and infinite at some concurrencies: nan_to_num's replacements and a zero divisor
    x = np.asarray(x, dtype=float)
    t = _curved(x)
    with np.errstate(invalid="ignore"):
        return np.where((x > 30.0) & (x < 31.0), np.nan, np.where((x > 200.0) & (x < 260.0), np.inf, t))


RATES = np.array([2000.0, 3700.0, 1e6, 1e-3, 9000.0, 5500.0, 120.0, 14000.0, 2400.0, 1132.06481634, 2817.79257153])
SLOTS = np.array([512.0, 512.0, 256.0, 512.0, 4096.0, 512.0, 512.0, 300.0, 64.0, 512.0, 512.0])


def _brackets(seconds):
    """The scan's bracket of every point, and one that holds only some roots (each end at another point's)."""
    scanned = L._scan(RATES, seconds, SLOTS, RATES.shape)
    lo, _, hi, _ = scanned
    lo2, hi2 = lo[::-1].copy(), np.minimum(hi[::-1] * 1.5, SLOTS)
    with np.errstate(invalid="ignore"):
        wrong = (lo2, RATES * seconds(lo2) - lo2, hi2, RATES * seconds(hi2) - hi2)
    return [scanned, wrong]


@pytest.mark.parametrize("seconds", [_kinked, _curved, _flat, _jump, _drop, _holes])
def test_the_array_steps_are_the_numpy_loops_to_the_bit(seconds):
    for lo, h_lo, hi, h_hi in _brackets(seconds):
        asked, kept = [], []

        def recorded(x, into):
            into.append(np.array(x, copy=True))
            return seconds(x)
        with np.errstate(invalid="ignore"):
            got = L._array_steps(RATES, lambda x: recorded(x, asked), lo, h_lo, hi, h_hi)
            want = _reference(RATES, lambda x: recorded(x, kept), lo, h_lo, hi, h_hi)
        assert len(asked) == len(kept)
        assert all(a.tobytes() == k.tobytes() for a, k in zip(asked, kept))
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


def test_littles_law_on_arrays_takes_these_steps_and_never_writes_an_x_it_asked():
    asked = []

    def seconds(x):
        asked.append((x, np.array(x, copy=True)))
        return _kinked(x)
    got = L.littles_law_concurrency(RATES, seconds, SLOTS)
    assert all(x.tobytes() == copy.tobytes() for x, copy in asked)  # a caller may keep any x it was given
    lo, h_lo, hi, h_hi = L._scan(RATES, _kinked, SLOTS, RATES.shape)
    assert got.tobytes() == _reference(RATES, _kinked, lo, h_lo, hi, h_hi).tobytes()


def test_an_iteration_time_with_axes_of_its_own_is_stepped_as_the_loop_broadcast_it():
    def wide(x):  # two iteration times for every concurrency, along a new first axis
        x = np.asarray(x, dtype=float)
        return np.stack([_curved(x), _kinked(x)]) if x.shape == RATES.shape else _curved(x)
    lo, h_lo, hi, h_hi = L._scan(RATES, _curved, SLOTS, RATES.shape)
    assert L._array_steps(RATES, wide, lo, h_lo, hi, h_hi) is None
    got = L.littles_law_concurrency(RATES, wide, SLOTS, scan_seconds=_curved)
    assert got.shape == (2,) + RATES.shape
    assert got.tobytes() == _reference(RATES, wide, lo, h_lo, hi, h_hi).tobytes()
