"""IOPS and metadata operations of a read stream; file formats; compression vs CPU.

Reading a dataset as one file per sample costs metadata operations (open,
close) for every sample, and at least one read IO per sample; serialized
shards (TFRecord, WebDataset tar, Parquet) open one file per thousands of
samples and read it in large sequential IOs, so IOPS and metadata load fall by
orders of magnitude for the same bytes.

References
----------
.. [1] TensorFlow, "TFRecord and tf.train.Example" / Cloud TPU performance guide:
   shard into files of 100-200 MB (``TFRECORD_SHARD_BYTES``); ImageNet's
   ``build_imagenet_data.py`` writes 1,024 training shards.
.. [2] WebDataset docs / Hugging Face Hub "WebDataset": tar shards of about 1 GB.
.. [3] Apache Parquet documentation, "Configurations": row groups of 512 MB - 1 GB.
.. [4] WEKA, "The Challenge of IO for Generative AI", part 3 (2023): lots of small
   files make metadata the bottleneck of pre-processing and training.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize import checks
from aisize.units import MB, GB, MiB

# Assumption: open + close per file; a stat per file adds one (pass 3).
METADATA_OPS_PER_FILE = 2
DEFAULT_IO_BYTES = 1 * MiB  # a typical large sequential read size (the seeds' "1 MB reads")

# Recommended shard sizes [B], from each format's documentation (middle of the range)
TFRECORD_SHARD_BYTES = 150 * MB  # 100-200 MB [1]
WEBDATASET_SHARD_BYTES = 1 * GB  # ~1 GB [2]
PARQUET_ROW_GROUP_BYTES = 1 * GB  # 512 MB - 1 GB [3]

FORMATS = {
    "files": None,  # one sample per file
    "tfrecord": TFRECORD_SHARD_BYTES,
    "webdataset": WEBDATASET_SHARD_BYTES,
    "parquet": PARQUET_ROW_GROUP_BYTES,
}


@dataclass(frozen=True)
class IOProfile:
    """The IO a read stream makes on the storage system."""

    read_bytes_per_s: float  # [B/s]
    read_iops: float  # read operations per second [1/s]
    metadata_ops_per_s: float  # opens, closes, stats per second [1/s]
    files_per_s: float  # files opened per second [1/s]
    mean_io_bytes: float  # bytes per read operation [B]


def io_profile(samples_per_s, sample_bytes, *, samples_per_file=1, io_bytes=DEFAULT_IO_BYTES,
               metadata_ops_per_file=METADATA_OPS_PER_FILE) -> IOProfile:
    """IOPS, metadata rate and IO size of reading ``samples_per_s`` samples.

    Each file is read in ceil(file bytes / io_bytes) operations, so a small file
    costs one IO of its own size however large ``io_bytes`` is.

    Parameters
    ----------
    samples_per_s : samples read per second (one GPU, a server or a cluster) [1/s]
    sample_bytes : stored bytes per sample [B]
    samples_per_file : samples packed in one file or shard [count] (1: small files)
    io_bytes : read size the loader issues [B]
    metadata_ops_per_file : metadata operations per file opened [count]

    References
    ----------
    .. [1] WEKA 2023, part 3 (metadata cost of lots of small files).
    .. [2] mlcommons/storage DLIO configs (record_length, samples per file, transfer size).
    """
    rate = checks.non_negative("samples_per_s", samples_per_s)
    size = checks.positive("sample_bytes", sample_bytes)
    per_file = checks.positive("samples_per_file", samples_per_file, high=1e12)
    io = checks.positive("io_bytes", io_bytes)
    meta = checks.non_negative("metadata_ops_per_file", metadata_ops_per_file, high=1e3)
    file_bytes = per_file * size
    files = rate / per_file
    iops = files * np.ceil(file_bytes / io)
    bandwidth = rate * size
    mean_io = np.where(iops > 0, bandwidth / np.where(iops > 0, iops, 1.0), np.minimum(io, file_bytes))
    return IOProfile(bandwidth, iops, files * meta, files, mean_io * 1.0)


def io_profile_for_format(file_format, samples_per_s, sample_bytes, *, io_bytes=DEFAULT_IO_BYTES,
                          shard_bytes=None, metadata_ops_per_file=METADATA_OPS_PER_FILE) -> IOProfile:
    """:func:`io_profile` for a named layout: "files", "tfrecord", "webdataset", "parquet".

    Parameters
    ----------
    file_format : a key of :data:`FORMATS`
    shard_bytes : shard (or row-group) size [B]; defaults to the format's recommendation

    References
    ----------
    .. [1] TensorFlow TFRecord guide; WebDataset docs; Apache Parquet docs (see module).
    """
    checks.choice("file_format", file_format, FORMATS)
    size = checks.positive("sample_bytes", sample_bytes)
    shard = FORMATS[file_format] if shard_bytes is None else checks.positive("shard_bytes", shard_bytes)
    if file_format == "files":
        per_file = 1.0
    else:
        per_file = np.maximum(1.0, np.floor(shard / size))
    return io_profile(samples_per_s, size, samples_per_file=per_file, io_bytes=io_bytes,
                      metadata_ops_per_file=metadata_ops_per_file)


@dataclass(frozen=True)
class Compression:
    """Storage bandwidth saved by compression, and the CPU it costs to decode."""

    stored_bytes_per_s: float  # read from storage [B/s]
    saved_bytes_per_s: float  # versus storing uncompressed [B/s]
    decode_cores: float  # cores busy decoding [count]
    bytes_saved_per_core: float  # saved bandwidth per decode core [B/s]


def compression_tradeoff(samples_per_s, uncompressed_sample_bytes, compression_ratio,
                         decode_core_seconds_per_sample) -> Compression:
    """Compare reading compressed samples (less bandwidth) with decoding them (more CPU).

    Parameters
    ----------
    samples_per_s : samples consumed per second [1/s]
    uncompressed_sample_bytes : bytes of one decoded sample [B]
    compression_ratio : uncompressed / compressed bytes [-], >= 1
    decode_core_seconds_per_sample : CPU time to decompress one sample [s]

    References
    ----------
    .. [1] Mohan et al., VLDB 2021, section 3.3 (pre-processing CPU cost per sample).
    """
    rate = checks.non_negative("samples_per_s", samples_per_s)
    raw = checks.positive("uncompressed_sample_bytes", uncompressed_sample_bytes)
    ratio = checks.number("compression_ratio", compression_ratio, low=1.0, high=1e6)
    cost = checks.non_negative("decode_core_seconds_per_sample", decode_core_seconds_per_sample)
    stored = rate * raw / ratio
    saved = rate * raw - stored
    cores = rate * cost
    per_core = np.where(cores > 0, saved / np.where(cores > 0, cores, 1.0), np.inf) * 1.0
    return Compression(stored, saved, cores, per_core)
