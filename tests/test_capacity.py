"""Tests for aisize.storage.capacity (against Apache Hadoop's HDFS erasure-coding figures) and
aisize.storage.sizing (storage building blocks)."""

import numpy as np
import pytest

from aisize.catalog.records import StorageSystem
from aisize.storage import capacity as cap
from aisize.storage import sizing
from aisize.units import PB


def test_hdfs_replication_and_erasure_coding_overheads():
    # Apache Hadoop 3 "HDFS Erasure Coding": 3x replication = 200 % overhead, RS(6,3) = 50 %
    assert 1 / cap.protection_efficiency(replicas=3) - 1 == pytest.approx(2.0)
    assert 1 / cap.protection_efficiency(data_fragments=6, parity_fragments=3) - 1 == pytest.approx(0.5)
    assert cap.protection_efficiency() == 1.0


def test_capacity_line_items_and_raw():
    # ImageNet-1k (138 GB) + one record-format copy + 5 Llama 3 70B checkpoints (69.88e9 x 14 B)
    ckpt = 69.88e9 * 14
    plan = cap.capacity_plan(138e9, preprocessed_copies=1, checkpoint_bytes=ckpt, checkpoints_retained=5,
                        scratch_bytes=1e12, protection=cap.protection_efficiency(data_fragments=8, parity_fragments=2),
                        max_fill=0.8)
    assert plan.items() == {"dataset_bytes": 138e9, "preprocessed_bytes": 138e9,
                            "checkpoint_bytes": pytest.approx(5 * ckpt), "scratch_bytes": 1e12}
    assert plan.usable_bytes == pytest.approx(276e9 + 5 * ckpt + 1e12)
    assert plan.raw_bytes == pytest.approx(plan.usable_bytes / 0.8 / 0.8)


def test_capacity_vectorized():
    plan = cap.capacity_plan(np.array([1.0, 2.0]) * PB, protection=1 / 3)
    np.testing.assert_allclose(plan.raw_bytes, [3 * PB, 6 * PB])


@pytest.mark.parametrize("call, name", [
    (lambda: cap.protection_efficiency(replicas=0), "replicas"),
    (lambda: cap.protection_efficiency(replicas=3, data_fragments=6, parity_fragments=3), "replicas"),
    (lambda: cap.protection_efficiency(data_fragments=6), "parity_fragments"),
    (lambda: cap.capacity_plan(-1.0), "dataset_bytes"),
    (lambda: cap.capacity_plan(1e12, protection=0.0), "protection"),
    (lambda: cap.capacity_plan(1e12, max_fill=1.5), "max_fill"),
    (lambda: cap.capacity_plan(1e12, checkpoint_bytes=-5.0), "checkpoint_bytes"),
])
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# Building-block sizing (aisize.storage.sizing): the seeds' "1 M concurrent reads per second at
# 15 GB/s per 4U" chassis against DGX SuperPOD H100 single-SU guidance (RA-11333-001 table 6).
CHASSIS = dict(unit_read_bytes_per_s=15e9, unit_iops=1e6, unit_capacity_bytes=1e15)


def test_units_for_superpod_best_read_bind_on_bandwidth():
    u = sizing.storage_units(read_bytes_per_s=125e9, iops=0.5e6, **CHASSIS)  # "best": 125 GB/s per SU
    assert (u.by_read, u.by_iops, u.units, u.binding) == (9, 1, 9, "read")


def test_units_bind_on_iops_and_capacity():
    # the seeds' shared flash system: 2.5 M 4 KiB random-read IOPS -> 3 chassis
    assert sizing.storage_units(read_bytes_per_s=30e9, iops=2.5e6, **CHASSIS).binding == "iops"
    cap_bound = sizing.storage_units(read_bytes_per_s=15e9, capacity_bytes=4.2e15, **CHASSIS)
    assert (cap_bound.units, cap_bound.binding) == (5, "capacity")
    assert sizing.storage_units(**CHASSIS).units == 1 and sizing.storage_units(**CHASSIS).binding == "none"


def test_units_vectorized_and_from_record():
    u = sizing.storage_units(read_bytes_per_s=np.array([125e9, 1e9]), iops=np.array([2e6, 5e6]), **CHASSIS)
    np.testing.assert_array_equal(u.units, [9, 5])
    assert list(u.binding) == ["read", "iops"]
    rec = StorageSystem("chassis-4u-15gbs", "4U chassis", "building-block", "unit", 15e9, None, 1e6, None,
                        4096, None, None, 4, "seed document", None)
    assert sizing.storage_units_for(rec, read_bytes_per_s=125e9).units == 9
    with pytest.raises(ValueError, match="unit_write_bytes_per_s"):
        sizing.storage_units_for(rec, write_bytes_per_s=1e9)  # no write figure for this unit


@pytest.mark.parametrize("call, name", [
    (lambda: sizing.storage_units(read_bytes_per_s=-1.0, unit_read_bytes_per_s=1e9), "read_bytes_per_s"),
    (lambda: sizing.storage_units(read_bytes_per_s=1e9, unit_read_bytes_per_s=0.0), "unit_read_bytes_per_s"),
    (lambda: sizing.storage_units(iops=1e6), "unit_iops"),
])
def test_sizing_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()
