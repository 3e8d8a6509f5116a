"""Training throughput: samples (or tokens) per second per GPU, and what the figure rests on.

The storage side asks this module how fast a job consumes data
(:func:`samples_per_s`): transformers at the tokens/s :func:`aisize.training.estimate`
predicts; other models (CNNs, U-Nets) from the best evidence available
(:func:`resolve_samples_per_s`: a measurement, a calibrated estimate, or FLOPs at an
assumed MFU).
"""

from __future__ import annotations

from dataclasses import dataclass

from aisize import catalog, checks
from aisize.compute import DEFAULT_MFU  # the one assumed MFU (aisize.compute)
from aisize.catalog.records import Accelerator, OtherModel

# Training FLOPs per sample = forward x 3 (backward = 2 x forward; Kaplan et al. 2020, arXiv 2001.08361, 2.1)
TRAINING_FLOPS_PER_FORWARD_FLOP = 3.0
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8")


def _percent(share) -> str:
    """An MFU in a basis sentence, one decimal ("40.0 %"): the text is data of the result, not presentation."""
    return f"{100.0 * float(share):.1f} %"


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
                     f"{PRECISION_LABELS[p]} ({_percent(mfu(best))}; {best.framework}, {best.gpus} GPUs)")
            return ResolvedThroughput(float(rate), float(rate * min(mfus) / mfu(best)),
                                      float(rate * max(mfus) / mfu(best)), mfu(best), "calibrated", basis, best.source)
    rate = float(samples_per_s_for_model(model, accelerator, precision=precision, efficiency=eff))
    basis = (f"FLOPs at the assumed MFU {_percent(eff)}: no measurement of {model.name} or another {model.family} "
             f"model on {accelerator.name} {PRECISION_LABELS[precision]}")
    return ResolvedThroughput(rate, rate, rate, float(eff), "policy-mfu", basis, None)




def samples_per_s(model, accelerator, *, gpus=1, precision="bf16", efficiency=DEFAULT_MFU, **layout) -> float:
    """Samples per second one GPU of a training job consumes [1/s] (tokens/s for a transformer).

    Parameters
    ----------
    model : catalog id (transformer or other model) or record
    accelerator : catalog id or Accelerator record
    gpus : GPUs of the job [count]
    precision : training precision
    efficiency : MFU for an other model without measurements (rule c of :func:`resolve_samples_per_s`)
    layout : for a transformer, the keywords of :func:`aisize.training.estimate` (micro_batch,
        global_batch, seq_len, tensor_parallel, ...)

    References
    ----------
    .. [1] :func:`aisize.training.estimate`; :func:`resolve_samples_per_s`.
    """
    from aisize.training.estimate import estimate
    from aisize.training.setup import accelerator_record

    acc = accelerator_record(accelerator)
    if isinstance(model, str) and model in catalog.other_models or isinstance(model, OtherModel):
        other = catalog.other_models[model] if isinstance(model, str) else model
        return resolve_samples_per_s(other, acc, precision=precision, gpus=gpus,
                                     efficiency=efficiency).samples_per_s_per_gpu
    return estimate(model, acc, gpus=gpus, precision=precision, **layout).tokens_per_s_per_gpu
