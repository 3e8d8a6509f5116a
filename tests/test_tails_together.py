"""The TTFT mixture's quantiles with its breakpoints merged, not sorted again, its rows indexed directly, and
the TPOT tail's p95 and p99 bisected together (issue 51 item 2: a move's tails): the same figures, to the bit, as
the forms they replace (copied here), on mixtures with ties, zero widths and NaNs, and on quantiles asked alone."""

from __future__ import annotations

import numpy as np
import pytest

from aisize.serving import tails as T


def _mixture_as_it_was(w, a, t, qs):
    """_uniform_mixture_quantile before this change: np.unique of the breakpoints, np.where on the running sums."""
    w = np.asarray(w, dtype=float) / np.sum(w)
    a, t = np.asarray(a, dtype=float), np.maximum(np.asarray(t, dtype=float), 1e-15)
    e = a + t
    oa, oe = np.argsort(a), np.argsort(e)
    a_s, e_s = a[oa], e[oe]
    wa, wb, wd = np.cumsum(w[oa]), np.cumsum((w * (1.0 + a / t))[oa]), np.cumsum((w / t)[oa])
    eb, ed = np.cumsum((w * (1.0 + a / t))[oe]), np.cumsum((w / t)[oe])

    def tail(x):
        na = np.searchsorted(a_s, x, side="left")
        ne = np.searchsorted(e_s, x, side="left")
        started = np.where(na > 0, wa[np.maximum(na - 1, 0)], 0.0)
        b = np.where(na > 0, wb[np.maximum(na - 1, 0)], 0.0) - np.where(ne > 0, eb[np.maximum(ne - 1, 0)], 0.0)
        d = np.where(na > 0, wd[np.maximum(na - 1, 0)], 0.0) - np.where(ne > 0, ed[np.maximum(ne - 1, 0)], 0.0)
        return (1.0 - started) + b - x * d

    xs = np.unique(np.concatenate([a, e]))
    f = tail(xs)

    def at(q):
        level = 1.0 - q
        k = int(np.searchsorted(-f, -level, side="left"))
        if k <= 0:
            return float(xs[0])
        if k >= xs.size:
            return float(xs[-1])
        x0, x1, f0, f1 = xs[k - 1], xs[k], f[k - 1], f[k]
        return float(x0 + (f0 - level) / (f0 - f1) * (x1 - x0)) if f0 > f1 else float(x1)
    return tuple(at(q) for q in qs)


def _bits(x) -> bytes:
    return np.asarray(x, dtype=float).tobytes()


def _mixtures(count: int):
    rng = np.random.default_rng(5)
    for k in range(count):
        n = int(rng.integers(1, 80))
        a = np.round(rng.uniform(0.0, 3.0, n), int(rng.integers(0, 3)))  # rounded: many equal starts
        t = rng.choice([0.0, 0.5, 1.0, 2.0], n) if k % 3 == 0 else rng.uniform(0.0, 2.0, n)  # zero widths, ends tied
        if k % 11 == 0:
            t[int(rng.integers(n))] = np.nan
        yield rng.uniform(0.0, 1.0, n), a, t, (float(rng.uniform(0.01, 0.999)), 0.95, 0.99)


def test_the_mixture_quantiles_are_those_of_np_unique_to_the_bit():
    for w, a, t, qs in _mixtures(1500):
        assert _bits(T._uniform_mixture_quantile(w, a, t, qs)) == _bits(_mixture_as_it_was(w, a, t, qs))


@pytest.mark.parametrize("values", [[], [1.0], [2.0, 1.0, 2.0, 2.0], [3.0, np.nan, 1.0, np.nan, 1.0],
                                    [np.nan, np.nan], [0.5, -1.0, 0.5, 7.0, -1.0],
                                    [1.0, 2.0, np.nan, 0.5, np.nan, 2.0]])
def test_the_merged_breakpoints_are_np_unique(values):
    x = np.asarray(values, dtype=float)
    half = x.size // 2
    a, b = np.sort(x[:half]), np.sort(x[half:])
    xs, below_a, below_b = T._merged_breakpoints(a, b)
    assert _bits(xs) == _bits(np.unique(x))
    assert np.array_equal(below_a, np.searchsorted(a, xs)) and np.array_equal(below_b, np.searchsorted(b, xs))


def test_the_tpot_quantiles_together_are_each_alone():
    rng = np.random.default_rng(9)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        steps, weights = rng.uniform(0.0, 400.0, n), rng.uniform(0.0, 1.0, n)
        mean, sigma = float(rng.uniform(0.005, 0.05)), float(rng.uniform(0.0, 0.02))
        qs = (0.95, 0.99, float(rng.uniform(0.5, 0.999)))
        together = T.tpot_quantile(mean, sigma, steps, weights / weights.sum(), qs)
        assert isinstance(together, tuple) and len(together) == 3
        alone = [T.tpot_quantile(mean, sigma, steps, weights / weights.sum(), q) for q in qs]
        assert _bits(together) == _bits(alone)
    assert T.tpot_quantile(0.01, 0.0, [10.0], [1.0], (0.95, 0.99)) == (0.01, 0.01)


def _rows_as_they_were(w, a, t, qs):
    """uniform_mixture_quantiles before this change: np.take_along_axis and np.diff."""
    w = np.asarray(w, dtype=float)
    w = w / w.sum(axis=-1, keepdims=True)
    a, t = np.asarray(a, dtype=float), np.maximum(np.asarray(t, dtype=float), 1e-15)
    events = np.concatenate([a, a + t], axis=-1)
    order = np.argsort(events, axis=-1)
    xs = np.take_along_axis(events, order, -1)
    slope = np.cumsum(np.take_along_axis(np.concatenate([-w / t, w / t], axis=-1), order, -1), axis=-1)
    f = np.minimum(1.0 + np.concatenate([np.zeros_like(xs[:, :1]), np.cumsum(slope[:, :-1] * np.diff(xs, axis=-1),
                                                                             axis=-1)], axis=-1), 1.0)
    rows, out = np.arange(xs.shape[0]), []
    for q in qs:
        level = 1.0 - q
        k = np.minimum(np.argmax(f <= level, axis=1), xs.shape[1] - 1)
        j = np.maximum(k - 1, 0)
        x0, x1, f0, f1 = xs[rows, j], xs[rows, k], f[rows, j], f[rows, k]
        with np.errstate(invalid="ignore", divide="ignore"):
            inside = np.where(f0 > f1, x0 + (f0 - level) / (f0 - f1) * (x1 - x0), x1)
        out.append(np.where(k > 0, inside, xs[:, 0]))
    return tuple(out)


def test_the_mixture_rows_are_those_of_take_along_axis_to_the_bit():
    rng = np.random.default_rng(11)
    for _ in range(300):
        rows, n = int(rng.integers(1, 60)), int(rng.integers(1, 50))
        w, a = rng.uniform(0.0, 1.0, (rows, n)), np.round(rng.uniform(0.0, 2.0, (rows, n)), 2)
        t = rng.choice([0.0, 0.1, 0.5], (rows, n))
        qs = (0.95, 0.99)
        assert _bits(T.uniform_mixture_quantiles(w, a, t, qs)) == _bits(_rows_as_they_were(w, a, t, qs))


@pytest.mark.parametrize("values", [[1.0, 2.0], [np.inf, 1.0], [np.nan, -np.inf, 3.0], [-0.0, 5.0]])
def test_finite_is_nan_to_num(values):
    from aisize.serving.latency import _finite

    x = np.asarray(values, dtype=float)
    assert _bits(_finite(x)) == _bits(np.nan_to_num(x, posinf=0.0))
