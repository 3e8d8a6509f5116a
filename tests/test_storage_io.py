"""Tests for aisize.storage.io: small files vs shards, IO sizes, compression."""

import numpy as np
import pytest

from aisize.storage import io
from aisize.units import MiB

IMAGENET_TRAIN_IMAGES = 1_281_167
IMAGENET_TRAIN_BYTES = 138e9
IMAGENET_SHARDS = 1024  # tensorflow/models build_imagenet_data.py: --train_shards=1024
RESNET50_H100_SAMPLES_PER_S = 400 / 0.224  # MLPerf Storage resnet50_h100.yaml


def test_imagenet_tfrecord_shards_are_in_the_recommended_range():
    # TensorFlow's 1,024 ImageNet shards are ~135 MB, inside the 100-200 MB guidance
    shard = IMAGENET_TRAIN_BYTES / IMAGENET_SHARDS
    assert 100e6 <= shard <= 200e6
    assert io.TFRECORD_SHARD_BYTES == pytest.approx(shard, rel=0.15)


def test_small_files_cost_a_metadata_pair_and_an_io_per_sample():
    rate, size = RESNET50_H100_SAMPLES_PER_S, IMAGENET_TRAIN_BYTES / IMAGENET_TRAIN_IMAGES
    p = io.io_profile_for_format("files", rate, size)
    assert p.files_per_s == pytest.approx(rate)
    assert p.read_iops == pytest.approx(rate)  # each ~108 KB JPEG is one IO below 1 MiB
    assert p.metadata_ops_per_s == pytest.approx(2 * rate)
    assert p.mean_io_bytes == pytest.approx(size)


def test_shards_cut_metadata_by_samples_per_shard():
    rate, size = RESNET50_H100_SAMPLES_PER_S, IMAGENET_TRAIN_BYTES / IMAGENET_TRAIN_IMAGES
    files = io.io_profile(rate, size)
    shards = io.io_profile(rate, size, samples_per_file=IMAGENET_TRAIN_IMAGES / IMAGENET_SHARDS)
    assert files.metadata_ops_per_s / shards.metadata_ops_per_s == pytest.approx(1_251, rel=1e-3)
    # same bytes, read in 1 MiB IOs: ~9.7x fewer read operations
    assert shards.read_bytes_per_s == pytest.approx(files.read_bytes_per_s)
    assert shards.mean_io_bytes == pytest.approx(MiB, rel=0.01)
    assert files.read_iops / shards.read_iops == pytest.approx(MiB / size, rel=0.01)


@pytest.mark.parametrize("fmt, shard", [("tfrecord", 150e6), ("webdataset", 1e9), ("parquet", 1e9)])
def test_format_defaults(fmt, shard):
    p = io.io_profile_for_format(fmt, 1000.0, 1e5)
    assert p.files_per_s == pytest.approx(1000.0 / np.floor(shard / 1e5))


def test_io_profile_vectorized_and_large_samples():
    # U-Net3D samples (146.6 MB) read in 4 MiB IOs: 35 IOs per sample
    p = io.io_profile(np.array([1.0, 2.0]), 146_600_628, io_bytes=4 * MiB)
    np.testing.assert_allclose(p.read_iops, [35.0, 70.0])


def test_compression_tradeoff():
    c = io.compression_tradeoff(10_000, 600e3, 4.0, 2e-3)
    assert c.stored_bytes_per_s == pytest.approx(1.5e9)
    assert c.saved_bytes_per_s == pytest.approx(4.5e9)
    assert c.decode_cores == pytest.approx(20.0)
    assert c.bytes_saved_per_core == pytest.approx(225e6)
    assert np.isinf(io.compression_tradeoff(1.0, 1e6, 2.0, 0.0).bytes_saved_per_core)


@pytest.mark.parametrize("call, name", [
    (lambda: io.io_profile(10.0, 0.0), "sample_bytes"),
    (lambda: io.io_profile(-1.0, 1e5), "samples_per_s"),
    (lambda: io.io_profile(10.0, 1e5, io_bytes=0), "io_bytes"),
    (lambda: io.io_profile_for_format("hdf5", 10.0, 1e5), "file_format"),
    (lambda: io.io_profile_for_format("tfrecord", 10.0, 1e5, shard_bytes=-1), "shard_bytes"),
    (lambda: io.compression_tradeoff(10.0, 1e5, 0.5, 1e-3), "compression_ratio"),
])
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()
