"""Unit conversions against published figures (aisize/units.py)."""

import pytest

from aisize import units


def test_h100_visible_memory_mib_to_gb():
    # nvidia-smi on an H100 SXM 80GB shows 81,559 MiB = 85.52 GB (10^9 B).
    assert units.to_base(81_559, "MiB") / units.GB == pytest.approx(85.52, abs=0.005)


def test_ndr_port_gbit_to_bytes_per_s():
    # InfiniBand NDR 4x: 400 Gb/s per direction = 50 GB/s (ConnectX-7 brief).
    assert units.gbit_per_s_to_bytes_per_s(400) == pytest.approx(50e9)
    assert units.to_base(400, "Gbit/s") == pytest.approx(50e9)
    assert units.bytes_per_s_to_gbit_per_s(50e9) == pytest.approx(400)


def test_nvlink4_bidirectional_to_per_direction():
    # H100 datasheet: NVLink 900 GB/s is both directions together -> 450 GB/s each way.
    assert units.bidirectional_to_per_direction(units.to_base(900, "GB/s")) == pytest.approx(450e9)


def test_mlperf_storage_mib_per_s_to_gb_per_s():
    # MLPerf Storage unet3d H100: 3,029.9 "MB/s" are MiB/s = 3.177 GB/s (reference/storage_points.csv).
    assert units.to_base(3_029.9, "MiB/s") / units.GB == pytest.approx(3.177, abs=0.0005)


def test_binary_vs_decimal_capacity():
    # The H100's 80 GB of HBM3 are 80 GiB = 85.9 GB.
    assert units.to_base(80, "GiB") == 80 * 2**30
    assert units.to_base(80, "GiB") / units.GB == pytest.approx(85.899, abs=0.001)


def test_tflops_and_counts():
    assert units.to_base(989.4, "TFLOP/s") == pytest.approx(989.4e12)
    assert units.to_base(6.738, "billion") == pytest.approx(6.738e9)
    assert units.to_base(2.5, "M/s") == pytest.approx(2.5e6)
    assert units.to_base(1, "us") == pytest.approx(1e-6)


def test_unknown_unit_raises_naming_unit():
    with pytest.raises(ValueError, match="unit"):
        units.to_base(1.0, "furlong/s")
