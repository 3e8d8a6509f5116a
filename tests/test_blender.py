"""Tests for aisize.storage.blender: bursty checkpoints, the seeds' example pipelines
(WEKA, "The Challenge of IO for Generative AI", part 4, 2023) and the aggregate."""

import pytest

from aisize.storage import blender as bl
from aisize.units import GB, KiB, MiB


def test_checkpoint_burst_average_and_peak():
    # C = 912 GiB written in 60 s every 30 min: average C/T, peak C/w
    c = 912 * 2**30
    w = bl.checkpoint_bursts("ckpt", c, 60.0, 1800.0)
    assert w.write_bytes_per_s == pytest.approx(c / 1800)
    assert w.write_peak_bytes_per_s == pytest.approx(c / 60)
    assert w.read_bytes_per_s == 0.0


def test_seed_read_write_ratios():
    seeds = bl.seed_workloads(2 * GB)
    b = {name: bl.blend([w]) for name, w in seeds.items()}
    assert b["nlp-audio-text"].read_share == pytest.approx(0.47)  # WEKA part 4: 47/53
    assert b["ml-development"].read_share == pytest.approx(0.48)  # 48/52
    nlp = seeds["nlp-audio-text"]
    assert nlp.read_io_bytes > nlp.write_io_bytes and nlp.write_io_bytes < 100e3  # large reads, sub-100k writes


def test_vision_training_narrow_reads_and_metadata_heavy_writes():
    v = bl.blend([bl.seed_workloads()["vision-training"]])
    assert len(v.io_sizes[v.io_sizes.direction == "read"]) == 1  # one narrow read size
    assert v.metadata_ops_per_s > v.write_iops > v.read_iops


def test_blend_aggregates_and_dominance():
    train = bl.training_reads("train", 25 * GB)
    prep = bl.data_preparation("prep", 2 * GB, 2 * GB, metadata_ops_per_s=50_000)
    infer = bl.inference_model_loading("serve", 141e9, 10, 60.0, 3600.0)
    ckpt = bl.checkpoint_bursts("ckpt", 1e12, 50.0, 1800.0)
    b = bl.blend([train, prep, infer, ckpt])
    assert b.read_bytes_per_s == pytest.approx(25e9 + 2e9 + 1.41e12 / 3600)
    assert b.write_bytes_per_s == pytest.approx(2e9 + 1e12 / 1800)
    assert b.write_peak_bytes_per_s == pytest.approx(2e9 + 20e9)
    assert b.read_peak_bytes_per_s == pytest.approx(25e9 + 2e9 + 1.41e12 / 60)
    assert b.read_iops == pytest.approx(25e9 / MiB + 2e9 / (64 * KiB) + 1.41e12 / 3600 / MiB)
    assert b.dominant_bandwidth == "train"
    assert b.dominant_peak == "train"  # 25 GB/s beats the 23.5 GB/s model-loading burst
    assert b.dominant_iops == "prep"
    assert b.io_sizes.ops_share.sum() == pytest.approx(1.0)
    assert b.io_sizes.bytes_share.sum() == pytest.approx(1.0)
    assert list(b.table.name) == ["train", "prep", "serve", "ckpt"]


@pytest.mark.parametrize("call, name", [
    (lambda: bl.blend([]), "workloads"),
    (lambda: bl.workload("x", "training", read_bytes_per_s=5.0, read_peak_bytes_per_s=1.0), "read_peak_bytes_per_s"),
    (lambda: bl.workload("x", "backup"), "kind"),
    (lambda: bl.mixed("x", 1e9, 1.5), "read_share"),
    (lambda: bl.checkpoint_bursts("x", 1e12, 100.0, 50.0), "interval_seconds"),
    (lambda: bl.training_reads("x", -1.0), "read_bytes_per_s"),
    (lambda: bl.inference_model_loading("x", 1e9, 0, 10.0, 100.0), "replicas"),
])
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()
