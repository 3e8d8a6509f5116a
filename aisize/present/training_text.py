"""A training job's time basis in words: what its throughput rests on and how its time range was obtained,
the one wording every surface (app cards and notes, the report, the findings, JSON and CSV) shows, from the
plan's typed :class:`aisize.plan.training.ThroughputBasis` and :class:`aisize.plan.training.DaysRangeBasis`.
MFUs are shown as percentages (:func:`aisize.format.pct`)."""

from __future__ import annotations

from aisize.format import pct
from aisize.validation.ranges import STEP_TIME_SPREAD


def throughput_basis_text(basis) -> str:
    """What a job's rate rests on: the scenario's rate, the resolved throughput's own words (measured,
    calibrated), the step-time model at the chosen layout, or the policy's assumed MFU (and why the model
    predicts nothing)."""
    if basis.rule == "scenario":
        if basis.samples_per_s_per_gpu is None:
            raise ValueError("throughput basis rule 'scenario' carries no rate (samples_per_s_per_gpu is None)")
        return f"given by the scenario: {basis.samples_per_s_per_gpu:,.0f} samples/s per GPU"
    if basis.rule == "step-time":
        return f"the step-time model at the chosen layout (MFU {pct(basis.mfu)})"
    if basis.rule == "policy-mfu" and basis.given is None:
        return (f"FLOPs at the assumed MFU {pct(basis.mfu)} (policies.mfu: the step-time model does not predict "
                f"{'QLoRA (its 4-bit base dequantization)' if basis.qlora else 'this job'})")
    if basis.given is None:
        raise ValueError(f"throughput basis rule {basis.rule!r} carries no words (given is None); allowed without "
                         "them: scenario, step-time, policy-mfu")
    return basis.given


def days_range_text(basis) -> str:
    """How a job's time range (days_low to days_high) was obtained, from its :class:`DaysRangeBasis`."""
    k = basis.kind
    if k == "unfinished":
        return "no range: the job does not finish"
    if k == "step-time":
        return STEP_TIME_SPREAD.basis
    if k == "mfu":
        r = basis.mfu_range
        return (f"MFU {pct(r.low)} to {pct(r.high)} in {len(r.cases)} published runs: {r.rule}; against this "
                f"plan's {pct(r.expected)}")
    if k == "measured-spread":
        return (f"the spread of measured throughputs ({basis.low_samples_per_s_per_gpu:,.0f}-"
                f"{basis.high_samples_per_s_per_gpu:,.0f} samples/s per GPU across frameworks), not MFU-based")
    if k == "given":
        return "no range: throughput given by the scenario"
    if k == "no-spread":
        return "no range: no measurement to spread the assumed MFU (published MFU ranges are of LLM runs)"
    raise ValueError(f"days range kind {k!r} is not one of unfinished, step-time, mfu, measured-spread, given, "
                     "no-spread")


__all__ = ["days_range_text", "throughput_basis_text"]
