"""Che's characteristic time of an LRU cache, found faster and the same to the bit (issue 51: a slider move on
agentic-coding solves it ~60 times per count, 80 bisections each): the search stops once its ends are a float apart
(every later step repeats the last), and the occupancy reads what does not depend on T once."""

from __future__ import annotations

import numpy as np
import pytest

from aisize.serving import prefix as X
from aisize.serving.prefix import CacheLoad


def _occupancy_as_it_was(load: CacheLoad, t):
    t = np.asarray(t, dtype=float)
    sessions = load.requests_per_s / load.turns * (
        load.history_bytes[:-1].sum() * load._think_held(t) + load.history_bytes[-1] * t)
    out = load.shared_bytes * -np.expm1(-load.requests_per_s * t) + sessions
    if load.chunk_requests_per_s.size:
        out = out + load.chunk_bytes * (load._counts * -np.expm1(-np.multiply.outer(t, load.chunk_requests_per_s))
                                        ).sum(axis=-1)
    return out


def _characteristic_as_it_was(load: CacheLoad, capacity_bytes):
    """All 80 bisections, the occupancy evaluated whole each time."""
    c = np.asarray(capacity_bytes, dtype=float)
    lo, hi = np.full(c.shape, np.log(X._T_RANGE[0])), np.full(c.shape, np.log(X._T_RANGE[1]))
    for _ in range(X._BISECTIONS):
        mid = 0.5 * (lo + hi)
        over = _occupancy_as_it_was(load, np.exp(mid)) > c
        lo, hi = np.where(over, lo, mid), np.where(over, mid, hi)
    return np.where(c > 0, np.exp(0.5 * (lo + hi)), 0.0)


def _load(rng) -> CacheLoad:
    turns = int(rng.integers(1, 40))
    chunks = int(rng.choice([0, 1, 7, 200]))
    return CacheLoad(float(10 ** rng.uniform(-3, 3)), turns, float(rng.choice([0.0, 10 ** rng.uniform(0, 4)])),
                     float(rng.choice([0.0, 10 ** rng.uniform(6, 10)])), np.cumsum(rng.uniform(1e6, 1e9, turns)),
                     float(10 ** rng.uniform(5, 8)), rng.uniform(1e-4, 10.0, chunks),
                     None if chunks == 0 or rng.random() < 0.5 else rng.integers(1, 50, chunks).astype(float))


@pytest.mark.parametrize("seed", range(40))
def test_the_characteristic_time_is_the_80_bisections_to_the_bit(seed):
    rng = np.random.default_rng(seed)
    load = _load(rng)
    scalar = float(10 ** rng.uniform(5, 14))
    many = np.concatenate([[0.0, 1.0, 1e30], 10 ** rng.uniform(3, 15, 20)])
    for capacity in (scalar, many):
        got, want = load.characteristic_seconds(capacity), _characteristic_as_it_was(load, capacity)
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
    t = 10 ** rng.uniform(-6, 8, 30)
    assert load.occupancy_bytes(t).tobytes() == _occupancy_as_it_was(load, t).tobytes()


def test_the_search_stops_early():
    calls = []
    load = _load(np.random.default_rng(1))
    real = load._occupancy()
    load = CacheLoad(**{f: getattr(load, f) for f in load.__dataclass_fields__})
    object.__setattr__(load, "_occupancy", lambda: lambda t: calls.append(1) or real(t))
    load.characteristic_seconds(1e10)
    assert 40 < len(calls) < X._BISECTIONS
