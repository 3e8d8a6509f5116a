"""Rows added for 2026 (issue 15): datasheet spot checks and that older ids still resolve."""

import pytest

from aisize import catalog, models


def test_new_accelerators_carry_dense_peaks_per_precision():
    # verda.com per-GPU dense table: GB300 FP4 15, FP8 5, BF16 2.5 PFLOPS; B300 FP4 14, FP8 4.5.
    gb300, b300 = catalog.accelerators["gb300"], catalog.accelerators["b300"]
    assert (gb300.fp4_flops_per_s, gb300.fp8_flops_per_s, gb300.bf16_flops_per_s) == pytest.approx(
        (15e15, 5e15, 2.5e15))
    assert (b300.fp4_flops_per_s, b300.fp8_flops_per_s) == pytest.approx((14e15, 4.5e15))
    # AMD ROCm docs (MI300/MI350 workload optimization): MI355X dense FP8 5,033.2 and MXFP4 10,066.3 TFLOP/s
    # (256 CUs x 8,192 / 16,384 FLOPS per clock x 2.4 GHz), Infinity Fabric 7 x 153.6 GB/s
    mi = catalog.accelerators["mi355x"]
    assert (mi.fp8_flops_per_s, mi.fp4_flops_per_s) == pytest.approx((5033.2e12, 10066.3e12))
    assert mi.scaleup_bidirectional_bytes_per_s == pytest.approx(1075.2e9)
    assert catalog.accelerators["h20"].bf16_flops_per_s == pytest.approx(148e12)
    assert catalog.accelerators["xeon-6980p"].memory_bandwidth_bytes_per_s == pytest.approx(844.8e9)


def test_every_server_names_a_known_accelerator_and_each_new_gpu_has_a_server():
    for gpu in ("b300", "gb300", "mi355x", "h20", "rtx-pro-6000-server", "h100-nvl", "xeon-6980p", "epyc-9965"):
        assert catalog.servers.filter(accelerator=gpu), gpu
    assert catalog.servers["gb300-nvl72"].gpus == 72 and catalog.servers["dgx-b300"].power_watts == 14.5e3


@pytest.mark.parametrize("id, total, active", [
    ("llama-3.1-8b", 8.03e9, None), ("llama-3.3-70b", 70.55e9, None), ("llama-4-maverick", 400.7e9, 17.2e9),
    ("qwen2.5-72b", 72.7e9, None), ("qwen3-30b-a3b", 30.5e9, 3.35e9), ("gpt-oss-120b", 116.83e9, 5.71e9),
    ("deepseek-r1", 671e9, 37.6e9), ("gemma-3-27b", 27.0e9, None), ("mistral-large-2", 122.6e9, None),
    ("kimi-k2", 1026.4e9, 32.9e9),
])
def test_new_models_resolve_with_their_counts(id, total, active):
    count = models.params(id)
    assert count.total == pytest.approx(total, rel=0.002)
    if active:
        assert count.active == pytest.approx(active, rel=0.005)


def test_older_ids_still_resolve():
    for id in ("llama-3-8b", "llama-3-70b", "llama-3.1-405b", "mixtral-8x7b", "deepseek-v3", "dgx-h100", "h100-sxm"):
        assert id in catalog.transformers or id in catalog.servers or id in catalog.accelerators


# MLPerf Storage v1.0 (github.com/mlcommons/storage_results_v1.0 @ 64c2ce4): each row's
# train_throughput_mean_MB_per_second (DLIO's "MB" is MiB) and the system's raw_capacity_GiB.
MLPERF_STORAGE_V1 = {"ddn-ai400x2t": (99_017.79, 343_040), "weka-wekapod-8": (34_569.2, 235_520),
                     "hammerspace-aws-22": (28_825.6, 141_733), "hpe-clusterstor-e1000": (40_977.3, 366_010),
                     "huawei-oceanstor-a800": (695_480.3, 457_764)}


@pytest.mark.parametrize("id", MLPERF_STORAGE_V1)
def test_mlperf_storage_rows_are_the_reported_read_rates(id):
    mib_per_s, raw_gib = MLPERF_STORAGE_V1[id]
    row = catalog.storage[id]
    assert row.read_bandwidth_bytes_per_s == pytest.approx(mib_per_s * 2**20, rel=1e-3)
    assert row.capacity_bytes == pytest.approx(raw_gib * 2**30, rel=1e-3)
    assert row.write_bandwidth_bytes_per_s is None and row.read_iops_per_s is None  # the benchmark only reads
    assert "64c2ce48578aabb20cff572c0495564d289e4955" in row.source and "MiB" in row.note
