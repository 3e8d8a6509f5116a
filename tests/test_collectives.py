"""Tests for aisize.network.collectives against the published ring factors and
nccl-tests' bus-bandwidth definition (NVIDIA nccl-tests doc/PERFORMANCE.md)."""

import numpy as np
import pytest

from aisize.network import collectives as c

GB = 1e9


@pytest.mark.parametrize("n, allreduce, others", [(2, 1.0, 0.5), (8, 1.75, 0.875), (64, 2 * 63 / 64, 63 / 64)])
def test_ring_traffic_factors(n, allreduce, others):
    # Patarasuk & Yuan 2009 / PERFORMANCE.md: all-reduce 2(n-1)/n, others (n-1)/n
    assert c.traffic_factor("all-reduce", n) == pytest.approx(allreduce)
    for op in ("all-gather", "reduce-scatter", "all-to-all"):
        assert c.traffic_factor(op, n) == pytest.approx(others)
    assert c.traffic_factor("broadcast", n) == 1.0


def test_traffic_factor_vectorized():
    np.testing.assert_allclose(c.traffic_factor("all-reduce", np.array([1, 2, 4])), [0.0, 1.0, 1.5])


@pytest.mark.parametrize("op", c.OPS)
def test_single_gpu_moves_nothing(op):
    assert c.collective_seconds(op, 10 * GB, 1, 100 * GB, latency_seconds=5e-6) == 0.0


@pytest.mark.parametrize("op", ["all-reduce", "all-gather", "reduce-scatter", "all-to-all"])
def test_bus_bandwidth_equals_link_rate_at_full_efficiency(op):
    # PERFORMANCE.md: busbw is defined so that it is comparable to the hardware link rate
    size, n, link = 4 * GB, 8, 100 * GB
    t = c.collective_seconds(op, size, n, link, efficiency=1.0)
    assert c.bus_bandwidth(op, size / t, n) == pytest.approx(link)


def test_ring_allreduce_worked_example():
    # 1 GB over 8 GPUs at 100 GB/s, 80 % efficient, 5 us per step: 1.75 GB / 80 GB/s + 14 x 5 us
    t = c.collective_seconds("all-reduce", 1 * GB, 8, 100 * GB, latency_seconds=5e-6, efficiency=0.8)
    assert t == pytest.approx(1.75 / 80 + 14 * 5e-6)


def test_tree_steps_are_logarithmic():
    assert c.steps("all-reduce", 1024, "tree") == 20
    assert c.steps("all-reduce", 1024, "ring") == 2046
    assert c.steps("all-gather", 8, "tree") == 3


@pytest.mark.parametrize("op", c.OPS)
def test_two_tier_with_one_domain_is_one_tier(op):
    one = c.collective_seconds(op, 8 * GB, 8, 450 * GB, latency_seconds=1e-6)
    two = c.two_tier_collective_seconds(op, 8 * GB, 8, 1, 450 * GB, 50 * GB,
                                        inner_latency_seconds=1e-6, outer_latency_seconds=5e-6)
    assert two == pytest.approx(one)


@pytest.mark.parametrize("op", ["all-reduce", "all-gather", "reduce-scatter", "all-to-all"])
def test_two_tier_with_one_gpu_per_domain_is_the_outer_ring(op):
    one = c.collective_seconds(op, 8 * GB, 16, 50 * GB, latency_seconds=5e-6)
    two = c.two_tier_collective_seconds(op, 8 * GB, 1, 16, 450 * GB, 50 * GB, outer_latency_seconds=5e-6)
    assert two == pytest.approx(one)


def test_hierarchy_beats_flat_ring_over_the_slow_link():
    flat = c.collective_seconds("all-reduce", 10 * GB, 64, 50 * GB)
    tiered = c.two_tier_collective_seconds("all-reduce", 10 * GB, 8, 8, 450 * GB, 50 * GB)
    assert tiered < flat


@pytest.mark.parametrize("call, name", [
    (lambda: c.traffic_factor("all-reduce", 0), "n"),
    (lambda: c.traffic_factor("gather", 4), "op"),
    (lambda: c.collective_seconds("all-reduce", -1, 4, 1e9), "payload_bytes"),
    (lambda: c.collective_seconds("all-reduce", 1e9, 4, 0.0), "bandwidth_bytes_per_s"),
    (lambda: c.collective_seconds("all-reduce", 1e9, 4, 1e9, efficiency=1.2), "efficiency"),
    (lambda: c.collective_seconds("all-reduce", 1e9, 4, 1e9, algorithm="mesh"), "algorithm"),
    (lambda: c.collective_seconds("all-reduce", 1e9, 4, 1e9, latency_seconds=-1e-6), "latency_seconds"),
    (lambda: c.collective_seconds("all-reduce", 1e9, 2.5, 1e9), "n"),
    (lambda: c.two_tier_collective_seconds("all-reduce", 1e9, 0, 2, 1e9, 1e9), "n_inner"),
    (lambda: c.two_tier_collective_seconds("all-to-all", 1e9, 8, 2, 1e9, 0.0), "outer_bytes_per_s"),
    (lambda: c.two_tier_collective_seconds("all-gather", 1e9, 8, 2, 1e9, 1e9, efficiency=0.0), "efficiency"),
    (lambda: c.bus_bandwidth("all-reduce", -5.0, 4), "algorithm_bytes_per_s"),
])
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()
