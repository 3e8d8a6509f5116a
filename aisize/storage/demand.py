"""Storage read demand of training, and data stalls when supply falls short.

Per GPU, demand = samples/s x bytes per sample; the samples/s of a training job
come from :mod:`aisize.training` (:func:`training_read_demand`). MLPerf Storage emulates an
accelerator as sleep(compute time per batch) and derives the ideal demand
batch x record bytes / compute time; a storage system passes when accelerator
utilisation (AU) stays >= 90 % (U-Net3D, ResNet-50) or >= 70 % (CosmoFlow).
With a prefetching loader reads overlap compute, so supplying ``u x ideal``
keeps utilisation at ``u``: the demand at a target utilisation is u x ideal.

Data stall (share of step time the GPU waits), supply s and ideal demand d:

* prefetching loader (reads overlap compute): step = max(compute, read), stall
  = max(0, 1 - s/d);
* serial loader (read, then compute): step = compute + read, stall = d / (d + s),
  never zero.

References
----------
.. [1] mlcommons/storage, Submission_guidelines.md v2.0 (2025), table 1 (AU
   thresholds) and configs/dlio/workload/*_{a100,h100}.yaml (batch, record size,
   computation_time). Its "MB/s" are MiB/s.
.. [2] Mohan et al., "Analyzing and Mitigating Data Stalls in DNN Training",
   VLDB 14(5), 2021 (data stalls; prefetching overlaps fetch with compute).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize import checks

# MLPerf Storage minimum accelerator utilisation to pass, per workload [1] (table 1)
MLPERF_STORAGE_AU_THRESHOLDS = {"unet3d": 0.90, "resnet50": 0.90, "cosmoflow": 0.70}
DEFAULT_TARGET_UTILISATION = 0.90  # MLPerf Storage's threshold for U-Net3D and ResNet-50 [1]


def samples_per_s_from_batch(batch, compute_seconds):
    """Samples per second of one accelerator from batch and compute time per batch [1/s].

    References
    ----------
    .. [1] mlcommons/storage DLIO workload configs (batch_size, computation_time).
    """
    b = checks.positive("batch", batch)
    t = checks.positive("compute_seconds", compute_seconds)
    return b / t


@dataclass(frozen=True)
class ReadDemand:
    """Read bandwidth training needs to keep its GPUs at a target utilisation."""

    samples_per_s_per_gpu: float  # at 100 % utilisation [1/s]
    ideal_per_gpu_bytes_per_s: float  # at 100 % utilisation [B/s]
    per_gpu_bytes_per_s: float  # at the target utilisation [B/s]
    cluster_bytes_per_s: float  # all GPUs, at the target utilisation [B/s]
    target_utilisation: float


def read_demand(samples_per_s_per_gpu, sample_bytes, *, gpus=1,
                target_utilisation=DEFAULT_TARGET_UTILISATION) -> ReadDemand:
    """Read demand per GPU and per cluster.

    Parameters
    ----------
    samples_per_s_per_gpu : samples one GPU consumes at full speed [1/s]
        (:func:`samples_per_s_from_batch`, :func:`aisize.training.samples_per_s`, or measured)
    sample_bytes : bytes read per sample [B]
    gpus : GPUs reading [count]
    target_utilisation : GPU utilisation to sustain, (0, 1] (MLPerf Storage: 0.9)

    References
    ----------
    .. [1] mlcommons/storage Submission_guidelines.md v2.0, section 2.1 (AU definition).
    """
    rate = checks.positive("samples_per_s_per_gpu", samples_per_s_per_gpu)
    size = checks.positive("sample_bytes", sample_bytes)
    n = checks.integer("gpus", gpus, high=10**8)
    u = checks.fraction("target_utilisation", target_utilisation)
    ideal = rate * size
    return ReadDemand(rate, ideal, u * ideal, n * u * ideal, u)


def training_read_demand(model, accelerator, sample_bytes, *, gpus=1,
                         target_utilisation=DEFAULT_TARGET_UTILISATION, **training) -> ReadDemand:
    """Read demand of a training job at the samples/s :mod:`aisize.training` predicts for it.

    Parameters
    ----------
    model, accelerator : catalog ids or records (transformer: samples are tokens)
    sample_bytes : bytes read per sample (per token for a transformer) [B]
    gpus : GPUs of the job [count]
    target_utilisation : GPU utilisation to sustain, (0, 1]
    training : keywords of :func:`aisize.training.samples_per_s` (precision, the layout of a
        transformer: micro_batch, global_batch, seq_len, ...)

    References
    ----------
    .. [1] :func:`aisize.training.samples_per_s`; mlcommons/storage Submission_guidelines.md v2.0.
    """
    from aisize.training import samples_per_s

    rate = samples_per_s(model, accelerator, gpus=gpus, **training)
    return read_demand(rate, sample_bytes, gpus=gpus, target_utilisation=target_utilisation)


def mlperf_read_demand(batch, record_bytes, computation_seconds, *, accelerators=1,
                       target_utilisation=1.0) -> ReadDemand:
    """MLPerf Storage's demand from a DLIO workload config (batch, record size, compute time).

    With ``target_utilisation=1`` the per-GPU figure is the ideal demand the
    reference table lists; pass 0.9 (or 0.7 for CosmoFlow) for the demand at the
    passing threshold.

    References
    ----------
    .. [1] mlcommons/storage configs/dlio/workload/unet3d_h100.yaml etc.
    """
    return read_demand(samples_per_s_from_batch(batch, computation_seconds), record_bytes,
                       gpus=accelerators, target_utilisation=target_utilisation)


@dataclass(frozen=True)
class DataStall:
    """GPU time lost waiting for input."""

    stall_fraction: float  # share of step (or epoch) time spent waiting [-]
    utilisation: float  # 1 - stall_fraction [-]
    epoch_seconds: float  # epoch time including stalls [s]
    wait_seconds: float  # of which waiting [s]


LOADERS = ("prefetch", "serial")


def data_stall(supplied_bytes_per_s, demanded_bytes_per_s, *, compute_epoch_seconds=0.0,
               loader="prefetch") -> DataStall:
    """Share of step time spent waiting for data, and the epoch-time impact.

    Parameters
    ----------
    supplied_bytes_per_s : read bandwidth the storage path delivers [B/s], > 0
    demanded_bytes_per_s : ideal demand at 100 % utilisation [B/s], > 0
    compute_epoch_seconds : epoch time without stalls [s]
    loader : "prefetch" (reads overlap compute: stall = max(0, 1 - s/d)) or
        "serial" (read then compute: stall = d / (d + s))

    Returns
    -------
    :class:`DataStall`; epoch_seconds = compute / (1 - stall). A 90 % stall (the
    seeds' worst case) makes an epoch 10x its compute time.

    References
    ----------
    .. [1] Mohan et al., VLDB 2021, section 2 (data stall = time the GPU waits for input).
    """
    s = checks.positive("supplied_bytes_per_s", supplied_bytes_per_s)
    d = checks.positive("demanded_bytes_per_s", demanded_bytes_per_s)
    compute = checks.non_negative("compute_epoch_seconds", compute_epoch_seconds)
    checks.choice("loader", loader, LOADERS)
    stall = np.maximum(0.0, 1.0 - s / d) if loader == "prefetch" else d / (d + s)
    util = 1.0 - stall
    epoch = compute / util
    return DataStall(stall, util, epoch, epoch - compute)


def supply_for_utilisation(demanded_bytes_per_s, target_utilisation=DEFAULT_TARGET_UTILISATION, *,
                           loader="prefetch"):
    """Read bandwidth that holds utilisation at the target, inverting :func:`data_stall` [B/s].

    prefetch: u x d; serial: d x u / (1 - u) (infinite for u = 1).

    References
    ----------
    .. [1] mlcommons/storage Submission_guidelines.md v2.0 (AU threshold).
    """
    d = checks.positive("demanded_bytes_per_s", demanded_bytes_per_s)
    u = checks.fraction("target_utilisation", target_utilisation)
    checks.choice("loader", loader, LOADERS)
    if loader == "prefetch":
        return u * d
    with np.errstate(divide="ignore"):
        return np.where(u < 1.0, d * u / np.where(u < 1.0, 1.0 - u, 1.0), np.inf) * 1.0
