"""Tests for aisize.storage.checkpoint against MLPerf Storage v2.0 checkpoint sizes, the
Llama 3 paper's interruption rate and effective training time, and DGX SuperPOD guidance."""

import numpy as np
import pytest

from aisize.storage import checkpoint as ck
from aisize.units import DAY, GB, GiB, HOUR, MINUTE


@pytest.mark.parametrize("model, params, published_gib", [
    # mlcommons/storage Submission_guidelines.md v2.0 table 2: 105 GB / 912 GB / 5.29 TB, binary units
    # (Rules.md 4.3.4); params from the llama3_*.yaml configs (storage_points.csv)
    ("llama-3-8b", 8.03e9, 105.0),
    ("llama-3-70b", 69.88e9, 912.0),
    ("llama-3-405b", 405.85e9, 5_290.0),
])
def test_mlperf_storage_llama3_checkpoint_sizes(model, params, published_gib):
    size = ck.checkpoint_size(params)
    assert size.total_bytes / GiB == pytest.approx(published_gib, rel=0.005)


def test_llama3_70b_with_model_card_params_within_one_percent():
    # the model card's 70.55e9 params give 919.9 GiB, +0.9 % of MLPerf's 912 (its config has 69.88e9)
    assert ck.checkpoint_size(70.55e9).total_bytes / GiB == pytest.approx(912.0, rel=0.01)


def test_shards_and_weights_only():
    size = ck.checkpoint_size(8.03e9, ranks=8)
    assert size.shard_bytes * 8 == pytest.approx(size.total_bytes)
    assert ck.checkpoint_size(8.03e9, bytes_per_param=ck.WEIGHTS_ONLY_BYTES_PER_PARAM).total_bytes == 16.06e9


def test_n_to_n_vs_n_to_1():
    # Llama 3 70B (912 GiB) from 64 ranks with 50 GB/s NICs to a 100 GB/s file system
    size = 912 * GiB
    nn = ck.checkpoint_write(size, 50 * GB, 100 * GB, writers=64)
    n1 = ck.checkpoint_write(size, 50 * GB, 100 * GB, writers=64, pattern="N:1")
    assert nn.seconds == pytest.approx(size / 100e9) and nn.storage_bound
    assert n1.seconds == pytest.approx(size / 50e9) and not n1.storage_bound


def test_young_daly_interval_and_cluster_mtbf():
    # sqrt(2 x 24 h x 5 min) = 2 h
    assert ck.young_daly_interval(24 * HOUR, 5 * MINUTE) == pytest.approx(2 * HOUR)
    assert ck.cluster_mtbf(5 * 365 * DAY, 1000) == pytest.approx(5 * 365 * DAY / 1000)


def test_llama3_goodput_above_ninety_percent():
    # Llama 3 (arXiv 2407.21783) 3.3.4: 466 interruptions in 54 days, > 90 % effective training time.
    # Checkpoint: 405B full state (5,292 GiB) at the 2 TB/s sustained storage of section 3.3.1;
    # restart assumed 10 minutes (detection, rescheduling, restore).
    mtbf = 54 * DAY / 466
    write = ck.checkpoint_size(405.85e9).total_bytes / 2e12
    assert write == pytest.approx(2.84, rel=0.01)
    tau = ck.young_daly_interval(mtbf, write)
    g = ck.goodput(mtbf, tau, write, 10 * MINUTE)
    assert 0.9 < g < 0.95
    # a 30-minute restart would not meet it: goodput is sensitive to restart time
    assert ck.goodput(mtbf, tau, write, 30 * MINUTE) < 0.9


def test_goodput_first_order_formula():
    # Daly 2006 first order: lost = w/tau + (tau/2 + R)/M
    assert ck.goodput(10_000.0, 1_000.0, 10.0, 100.0) == pytest.approx(1 - (0.01 + 600 / 10_000))
    assert ck.goodput(100.0, 1_000.0, 10.0, 100.0) == 0.0  # clipped, never negative
    np.testing.assert_allclose(ck.goodput(1e4, np.array([500.0, 1000.0]), 10.0, 0.0),
                               [1 - 0.02 - 0.025, 1 - 0.01 - 0.05])


def test_checkpoint_bandwidth_lands_in_superpod_band():
    # Llama 3 70B on 64 H100 (8 DGX, MLPerf Storage's closed config), a checkpoint every 30 min
    # with at most 2 % of time blocked: needs 27 GB/s, 3.4 GB/s per node, between DGX SuperPOD
    # H100 "good" (2 GB/s) and "best" (20 GB/s) per-node write guidance (RA-11333-001 table 6)
    bw = ck.write_bandwidth_for_stall(912 * GiB, 30 * MINUTE, 0.02)
    per_node = bw / 8
    assert 2e9 <= per_node <= 20e9
    assert per_node == pytest.approx(912 * GiB / 36 / 8)


def test_restore_and_rto():
    size = 5_291.7 * GiB
    assert ck.restore_seconds(size, 2e12, restart_seconds=300) == pytest.approx(size / 2e12 + 300)
    bw = ck.read_bandwidth_for_rto(size, 600, restart_seconds=300)
    assert ck.restore_seconds(size, bw, restart_seconds=300) == pytest.approx(600)


def test_checkpoint_plan():
    plan = ck.checkpoint_plan(912 * GiB, 20e9, 40e9, 24 * HOUR, restart_seconds=300)
    assert plan.write_seconds == pytest.approx(912 * GiB / 20e9)
    assert plan.interval_seconds == pytest.approx(np.sqrt(2 * 24 * HOUR * plan.write_seconds))
    assert plan.goodput == pytest.approx(ck.goodput(24 * HOUR, plan.interval_seconds, plan.write_seconds,
                                                    plan.restore_seconds))


@pytest.mark.parametrize("call, name", [
    (lambda: ck.checkpoint_size(-1.0), "params"),
    (lambda: ck.checkpoint_size(1e9, ranks=0), "ranks"),
    (lambda: ck.checkpoint_write(1e12, 0.0, 1e9), "writer_bytes_per_s"),
    (lambda: ck.checkpoint_write(1e12, 1e9, 1e9, pattern="1:N"), "pattern"),
    (lambda: ck.write_bandwidth_for_stall(1e12, 3600, 0.0), "max_stall_fraction"),
    (lambda: ck.young_daly_interval(0.0, 10.0), "mtbf_seconds"),
    (lambda: ck.read_bandwidth_for_rto(1e12, 60, restart_seconds=120), "rto_seconds"),
    (lambda: ck.goodput(1e4, 0.0, 10.0, 10.0), "interval_seconds"),
    (lambda: ck.goodput(1e4, 100.0, -1.0, 10.0), "write_seconds"),
])
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()
