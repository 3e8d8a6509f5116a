"""Storage read demand of training, and data stalls when supply falls short.

Per GPU, demand = samples/s x bytes per sample. MLPerf Storage emulates an
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
from aisize.catalog.records import Accelerator, OtherModel

# MLPerf Storage minimum accelerator utilisation to pass, per workload [1] (table 1)
MLPERF_STORAGE_AU_THRESHOLDS = {"unet3d": 0.90, "resnet50": 0.90, "cosmoflow": 0.70}
DEFAULT_TARGET_UTILISATION = 0.90  # MLPerf Storage's threshold for U-Net3D and ResNet-50 [1]
# Training FLOPs per sample = forward x 3 (backward = 2 x forward; Kaplan et al. 2020, arXiv 2001.08361, 2.1)
TRAINING_FLOPS_PER_FORWARD_FLOP = 3.0
DEFAULT_MFU = 0.4  # assumption: model FLOPs utilisation when none is measured
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8")


def samples_per_s_from_batch(batch, compute_seconds):
    """Samples per second of one accelerator from batch and compute time per batch [1/s].

    References
    ----------
    .. [1] mlcommons/storage DLIO workload configs (batch_size, computation_time).
    """
    b = checks.positive("batch", batch)
    t = checks.positive("compute_seconds", compute_seconds)
    return b / t


def samples_per_s_from_flops(training_flops_per_sample, peak_flops_per_s, *, efficiency=DEFAULT_MFU):
    """Samples per second of one GPU from training FLOPs per sample at an efficiency [1/s].

    Parameters
    ----------
    training_flops_per_sample : forward + backward FLOPs for one sample [FLOP]
    peak_flops_per_s : the GPU's dense peak at the training precision [FLOP/s]
    efficiency : achieved share of peak (MFU), (0, 1]

    References
    ----------
    .. [1] Kaplan et al. 2020, arXiv 2001.08361, section 2.1 (C = 6N per token:
       forward 2N, backward 4N, i.e. 3 x forward).
    """
    f = checks.positive("training_flops_per_sample", training_flops_per_sample)
    peak = checks.positive("peak_flops_per_s", peak_flops_per_s)
    eff = checks.fraction("efficiency", efficiency)
    return peak * eff / f


def samples_per_s_for_model(model: OtherModel, accelerator: Accelerator, *, precision="bf16",
                            efficiency=DEFAULT_MFU):
    """:func:`samples_per_s_from_flops` for a catalog model on a catalog accelerator [1/s]."""
    checks.choice("precision", precision, PRECISIONS)
    peak = getattr(accelerator, f"{precision}_flops_per_s")
    if peak is None:
        raise ValueError(f"precision={precision!r} is not allowed: {accelerator.id} publishes no peak for it")
    return samples_per_s_from_flops(TRAINING_FLOPS_PER_FORWARD_FLOP * model.forward_per_sample_flops,
                                    peak, efficiency=efficiency)


# Which measurement stands for a job when several frameworks measured the same
# model, GPU and precision: PyTorch first (what most customers run); the others
# give the spread. Among equals, the measurement on the most GPUs (its per-GPU
# figure includes the scaling loss a multi-GPU job sees).
FRAMEWORK_PREFERENCE = ("PyTorch", "TensorFlow", "MXNet")
PRECISION_LABELS = {"fp32": "FP32", "tf32": "TF32", "fp16": "AMP (fp16)", "bf16": "bf16", "fp8": "fp8"}


@dataclass(frozen=True)
class ResolvedThroughput:
    """Training samples/s per GPU of a model on an accelerator, and what the figure rests on."""

    samples_per_s_per_gpu: float  # the figure the plan uses [1/s]
    low_samples_per_s_per_gpu: float  # slowest of the measured spread [1/s]
    high_samples_per_s_per_gpu: float  # fastest of the measured spread [1/s]
    efficiency: float  # share of peak the figure implies (MFU) [ratio]
    rule: str  # measured | calibrated | policy-mfu
    basis: str  # plain-language statement of the rule and the figure
    source: str | None  # the measurement's source (measured, calibrated)


def _rank(row, gpus: int) -> tuple:
    fw = next((i for i, name in enumerate(FRAMEWORK_PREFERENCE) if row.framework.startswith(name)),
              len(FRAMEWORK_PREFERENCE))
    return (fw, -row.gpus) if gpus > 1 else (fw, row.gpus)


def _pool(rows: list, gpus: int) -> list:
    """Rows a job on ``gpus`` GPUs compares with: multi-GPU ones when it has several GPUs."""
    multi = [r for r in rows if r.gpus > 1]
    return sorted(multi if gpus > 1 and multi else rows, key=lambda r: _rank(r, gpus))


def _candidate_precisions(accelerator: Accelerator, precision: str) -> tuple[str, ...]:
    """``precision``, then the other 16-bit format where the GPU's two peaks are equal (A100, H100)."""
    other = {"bf16": "fp16", "fp16": "bf16"}.get(precision)
    if other and getattr(accelerator, f"{precision}_flops_per_s") == getattr(accelerator, f"{other}_flops_per_s"):
        return precision, other
    return (precision,)


def resolve_samples_per_s(model: OtherModel, accelerator: Accelerator, *, precision="bf16", gpus=1,
                          efficiency=DEFAULT_MFU, measurements=None, models=None) -> ResolvedThroughput:
    """Samples/s per GPU from the best evidence: a measurement, a calibrated estimate, or the policy MFU.

    Rules, first that applies:

    a. measured: a row of ``measurements`` for this model, accelerator and precision
       (bf16 and fp16 stand for each other where the GPU's peaks are equal): the
       preferred framework's (:data:`FRAMEWORK_PREFERENCE`) figure on the most GPUs
       when ``gpus`` > 1, else on the fewest. low/high: the spread of those rows
       (multi-GPU rows only for a multi-GPU job).
    b. calibrated: a measurement of another model of the same family on the same
       accelerator and precision: its implied efficiency (rate x 3 x forward FLOPs
       / peak) applied to this model's FLOPs (:func:`samples_per_s_from_flops`).
    c. policy-mfu: :func:`samples_per_s_for_model` at ``efficiency``; low = high.

    Parameters
    ----------
    model : catalog ``OtherModel``; accelerator : catalog ``Accelerator``
    precision : fp32 | tf32 | fp16 | bf16 | fp8 (the training precision the GPU runs)
    gpus : GPUs of the job [count] (picks multi- or single-GPU measurements)
    efficiency : MFU of rule c, (0, 1]
    measurements : ``Throughput`` records (default ``catalog.throughput``)
    models : id -> ``OtherModel`` for calibration (default ``catalog.other_models``)

    References
    ----------
    .. [1] NVIDIA/DeepLearningExamples ResNet-50 v1.5 and BERT READMEs, via data/throughput.csv
       (each row's ``source``).
    .. [2] Kaplan et al. 2020, arXiv 2001.08361, section 2.1 (training = 3 x forward FLOPs).
    """
    from aisize import catalog

    checks.choice("precision", precision, PRECISIONS)
    n = checks.integer("gpus", gpus, high=10**8)
    eff = checks.fraction("efficiency", efficiency)
    rows = list(catalog.throughput if measurements is None else measurements)
    models = catalog.other_models if models is None else models
    peak = getattr(accelerator, f"{precision}_flops_per_s")
    if peak is None:
        raise ValueError(f"precision={precision!r} is not allowed: {accelerator.id} publishes no peak for it")
    per_sample = TRAINING_FLOPS_PER_FORWARD_FLOP * model.forward_per_sample_flops
    for p in _candidate_precisions(accelerator, precision):
        here = [r for r in rows if r.accelerator == accelerator.id and r.precision == p]
        own = _pool([r for r in here if r.model == model.id], n)
        if own:
            best, rates = own[0], [r.samples_per_gpu_per_s for r in own]
            via = "" if p == precision else f", the {PRECISION_LABELS[p]} figure for {precision} (same peak)"
            basis = (f"measured: {model.name} on {best.gpus}x {accelerator.name} {PRECISION_LABELS[p]}, "
                     f"{best.framework}: {best.samples_per_gpu_per_s:,.0f} samples/s per GPU{via}")
            return ResolvedThroughput(best.samples_per_gpu_per_s, min(rates), max(rates),
                                      best.samples_per_gpu_per_s * per_sample / peak, "measured", basis, best.source)
        ref = _pool([r for r in here if r.model != model.id and r.model in models
                     and models[r.model].family == model.family], n)
        if ref:
            def mfu(r):
                return r.samples_per_gpu_per_s * TRAINING_FLOPS_PER_FORWARD_FLOP \
                    * models[r.model].forward_per_sample_flops / peak
            best, mfus = ref[0], [mfu(r) for r in ref]
            rate = samples_per_s_from_flops(per_sample, peak, efficiency=mfu(best))
            basis = (f"FLOPs at {models[best.model].name}'s measured efficiency on {accelerator.name} "
                     f"{PRECISION_LABELS[p]} ({mfu(best):.1%}; {best.framework}, {best.gpus} GPUs)")
            return ResolvedThroughput(float(rate), float(rate * min(mfus) / mfu(best)),
                                      float(rate * max(mfus) / mfu(best)), mfu(best), "calibrated", basis, best.source)
    rate = float(samples_per_s_for_model(model, accelerator, precision=precision, efficiency=eff))
    basis = (f"FLOPs at the assumed MFU {eff:.0%}: no measurement of {model.name} or another {model.family} "
             f"model on {accelerator.name} {PRECISION_LABELS[precision]}")
    return ResolvedThroughput(rate, rate, rate, float(eff), "policy-mfu", basis, None)


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
        (:func:`samples_per_s_from_batch`, :func:`samples_per_s_from_flops`, or measured)
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
