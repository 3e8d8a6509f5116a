"""The storage plan's elasticity reads the station's mean response at the raised load without the percentiles
latency_vs_load also computes (issue 51 item 2: about 0.7 ms of a service move's storage plan): the same figure,
to the bit, stable or not, for a fitted storage station and a plain one."""

from __future__ import annotations

import math

import numpy as np

from aisize.plan.storage import _elasticity, _mean_response
from aisize.queueing import Station, latency_vs_load, storage_station


def _full(station, ops: float) -> float:
    return float(latency_vs_load(station, ops).response_mean_seconds)


def test_the_mean_response_is_latency_vs_loads_to_the_bit():
    rng = np.random.default_rng(3)
    unstable = 0
    for _ in range(3000):
        station = storage_station(float(rng.uniform(1e3, 1e7)), float(rng.uniform(5e-5, 4e-3)))
        ops = float(station.capacity_per_s * rng.uniform(0.001, 1.2))
        full, got = _full(station, ops), _mean_response(station, ops)
        assert np.float64(full).tobytes() == np.float64(got).tobytes()
        unstable += math.isinf(full)
    assert 0 < unstable < 3000  # both sides of saturation were asked
    plain = Station(4, 0.01, 0.5)
    assert _mean_response(plain, 300.0) == _full(plain, 300.0)


def test_the_elasticity_reads_it():
    station, ops = storage_station(2e5, 1e-3), 1.2e5
    base = _full(station, ops)
    assert _elasticity(station, ops, base) > 0
    assert _elasticity(station, ops, base) == (_full(station, ops * 1.1) / base - 1.0) / 0.1
