"""The TPOT tail's bisection decided several halvings per vectorized call (issue 51 item 2) gives the root
the one-halving-per-call bisection gave, to the last bit, and the textbook quantile of a normal.

No timings are asserted here: ``benchmarks/bench_sliders.py`` measures them.
"""

from __future__ import annotations

import numpy as np
import pytest

from aisize.serving import tails as T


def _one_at_a_time(mean, sigma, steps, weights, q):
    """tpot_quantile as it was: one scalar tail evaluation per halving."""
    n = np.maximum(np.asarray(steps, dtype=float), 1.0)
    w = np.asarray(weights, dtype=float)
    if sigma <= 0:
        return float(mean)
    lo, hi = float(mean), float(mean) + 8.0 * sigma
    for _ in range(T._BISECTIONS):
        mid = 0.5 * (lo + hi)
        exceed = float((w * T.normal_tail((mid - mean) * np.sqrt(n) / sigma)).sum())
        lo, hi = (mid, hi) if exceed > 1.0 - q else (lo, mid)
    return hi


@pytest.mark.parametrize("seed", range(4))
def test_same_root_to_the_last_bit(seed):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        m = int(rng.integers(1, 60))
        steps = rng.uniform(0.0, 4000.0, m) if rng.random() < 0.7 else rng.integers(0, 40, m).astype(float)
        w = rng.dirichlet(np.ones(m))
        mean = float(rng.uniform(1e-4, 0.2))
        sigma = mean * float(rng.choice([0.0, 1e-3, 0.05, 0.5, 2.0, 10.0]))
        q = float(rng.choice([0.5, 0.9, 0.95, 0.99, 0.999]))
        assert T.tpot_quantile(mean, sigma, steps, w, q) == _one_at_a_time(mean, sigma, steps, w, q)


@pytest.mark.parametrize(("q", "z"), [(0.95, 1.6448536269514722), (0.99, 2.3263478740408408)])
def test_one_output_length_is_the_normal_quantile(q, z):
    """One output length of n steps: TPOT ~ N(mean, sigma²/n), so its q-quantile is mean + z_q·sigma/sqrt(n)
    (z_0.95 = 1.6449, z_0.99 = 2.3263; Abramowitz & Stegun 26.2.23's table), within A&S 7.1.26's 1.5e-7 in
    the tail probability."""
    mean, sigma, n = 0.020, 0.004, 100.0
    got = T.tpot_quantile(mean, sigma, np.array([n]), np.array([1.0]), q)
    density = np.exp(-z * z / 2.0) / np.sqrt(2.0 * np.pi)  # the tail's slope per unit z
    assert got == pytest.approx(mean + z * sigma / np.sqrt(n), abs=2e-7 / density * sigma / np.sqrt(n))
