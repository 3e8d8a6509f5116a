"""Training: time to train (with its range from published MFUs), layout and memory, checkpoints.

Every figure is the plan's: the time range is ``TrainingPlan.days_low`` / ``days_high`` (and the
published MFUs behind it, ``days_range_mfu``), GPUs against target time is
:func:`aisize.plan.gpus_vs_days`, the candidate layouts and their step time by part are
:func:`aisize.plan.layout_candidates` (the search the plan itself ran).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aisize import charts
from aisize import format as F
from aisize.plan import gpus_vs_days, layout_candidates
from aisize.present.training_text import days_range_text
from aisize.report.context import ReportContext
from aisize.report.markup import (DASH, Html, block, count, days, duration, figure, gb, gib, h3, mwh, note,
                                  pct, rate, sig, table, yes_no)

SWEEP_FACTORS = (1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8)  # target times around the planned one, for the chart


@dataclass(frozen=True)
class TimeRange:
    """A job's time to train [days]: low / expected (the plan's) / high, and what the spread rests on."""

    low_days: float
    expected_days: float
    high_days: float
    basis: str
    mfu: object | None  # the plan's days_range_mfu: published MFUs behind an MFU-based range (transformers)


def time_range_days(t) -> TimeRange | None:
    """The plan's time-to-train range of a job (its ``days_*`` fields), or None where it has no spread.

    Transformers timed by the step-time model: its own error on published runs; at an assumed MFU: the
    lowest and highest MFU published runs of a similar scale reached; measured throughputs: their spread.
    """
    if not (math.isfinite(t.training_days) and t.days_low < t.days_high):
        return None
    return TimeRange(t.days_low, t.training_days, t.days_high, days_range_text(t.days_range_basis), t.days_range_mfu)


CANDIDATES = 5  # layouts shown per job in the step-time chart


def _layout(t) -> str:
    # the plan's one wording of a layout (aisize.format.layout, as the CLI, CSV and app write it), then the schedule
    lay = t.layout
    return (F.layout(lay) + (f", {lay.schedule} schedule" if lay.pipeline_parallel > 1 else "")
            + ("" if lay.searched else " (given)"))


def time_table(ctx: ReportContext) -> Html:
    rows = [[t.name, count(t.gpus), count(t.servers), pct(t.mfu_assumed),
             "step-time model" if t.throughput_rule == "step-time" else "assumed MFU (policy)"
             if t.throughput_rule == "policy-mfu" else t.throughput_rule, pct(t.goodput, 1),
             days(t.training_days), f"{t.target_days:g}" if t.target_days is not None else DASH,
             sig(t.gpu_hours), mwh(t.energy_joules)] for t in ctx.plan.training]
    return table(["Workload", "GPUs", "Servers", "MFU", "Timed by", "Goodput", "Time [days]", "Target [days]",
                  "GPU-hours", "GPU energy"], rows, caption="Time to train", css="numeric")


def step_table(ctx: ReportContext) -> Html:
    """The predicted step time of each transformer job by part [s]."""
    names = {"compute_seconds": "Compute", "tp_comm_seconds": "TP", "cp_comm_seconds": "CP",
             "pp_comm_seconds": "PP sends", "dp_comm_exposed_seconds": "DP/FSDP", "ep_comm_seconds": "EP",
             "host_sync_seconds": "Host sync", "offload_exposed_seconds": "Offload",
             "pp_bubble_seconds": "Bubble", "straggler_seconds": "Stragglers"}
    jobs = [t for t in ctx.plan.training if t.step_parts_seconds]
    optional = ("host_sync_seconds", "offload_exposed_seconds")  # MoE and offload only: shown when any job has them
    names = {k: v for k, v in names.items() if k not in optional or any(t.step_parts_seconds[k] for t in jobs)}
    rows = [[t.name, _layout(t)] + [sig(t.step_parts_seconds[k], 3) for k in names] for t in jobs]
    if not rows:
        return Html("")
    return table(["Workload", "Layout"] + [f"{v} [s]" for v in names.values()], rows,
                 caption="Predicted step time by part (exposed communication)", css="numeric wrap2")


def range_table(ctx: ReportContext) -> Html:
    rows = []
    for t in ctx.plan.training:
        r = time_range_days(t)
        low, high = (days(r.low_days), days(r.high_days)) if r is not None else (DASH, DASH)
        rows.append([t.name, count(t.gpus), low, days(t.training_days), high, days_range_text(t.days_range_basis)])
    return table(["Workload", "GPUs", "Low [days]", "Expected [days]", "High [days]", "What the range rests on"],
                 rows, caption="Time-to-train range", css="numeric range")


def memory_table(ctx: ReportContext) -> Html:
    rows = [[t.name, _layout(t), count(t.layout.global_batch), gib(t.memory_bytes["total_bytes"]),
             gib(t.gpu_memory_usable_bytes), yes_no(t.memory_fits), gib(t.host_memory_needed_bytes),
             gib(t.server_host_memory_bytes), yes_no(t.host_memory_fits)] for t in ctx.plan.training]
    return table(["Workload", "Parallel layout", "Global batch", "GPU memory need", "Usable per GPU",
                  "Fits", "Host RAM need", "Host RAM", "Fits"], rows,
                 caption="Layout and memory (memory per GPU; host RAM per server)", css="numeric wrap2")


def checkpoint_table(ctx: ReportContext) -> Html:
    rows = []
    for t in ctx.plan.training:
        c = t.checkpoint
        if c is None:
            rows.append([t.name, "no checkpoints", DASH, DASH, DASH, DASH, DASH, pct(t.goodput, 1)])
            continue
        rows.append([t.name, gb(c.checkpoint_bytes), rate(c.write_bytes_per_s), duration(c.write_seconds),
                     duration(c.interval_seconds), duration(c.mtbf_seconds), duration(c.restore_seconds),
                     pct(t.goodput, 1)])
    return table(["Workload", "Checkpoint", "Write rate", "Write time", "Interval", "Cluster MTBF",
                  "Restore", "Goodput"], rows, caption="Checkpoints and goodput", css="numeric")


def interval_note(ctx: ReportContext) -> str:
    """How the checkpoint interval was chosen, naming each job whose interval is half its running time because
    the Young/Daly optimum is longer than the job ("" without checkpoints)."""
    jobs = [t for t in ctx.plan.training if t.checkpoint is not None]
    if not jobs:
        return ""
    given = ctx.scenario.policies.checkpoint_interval_minutes
    if given != "auto":
        return f"Interval: the scenario's, {duration(given * 60.0)} (policies.checkpoint_interval_minutes)."
    capped = [f"{t.name}: {duration(c.interval_seconds)}, half its running time (the optimum, "
              f"{duration(c.young_daly_seconds)}, is longer than "
              f"{'the job' if c.young_daly_seconds >= 2 * c.interval_seconds else 'half the job'})"
              for t in jobs if (c := t.checkpoint).interval_seconds < c.young_daly_seconds]
    return ("Interval: the Young/Daly optimum √(2 × cluster MTBF × write time) (Young 1974; Daly 2006), at most "
            "half the job's running time, so that every job writes a checkpoint by mid-run"
            + (f". {'; '.join(capped)}." if capped else "."))


def gpus_vs_days_frame(ctx: ReportContext, t):
    """GPUs this job needs at target times around its own (:func:`aisize.plan.gpus_vs_days`).

    Points the planner refuses (a given layout or batch that does not divide that GPU count, beyond
    the engines' GPU limit) are left out.
    """
    centre = t.target_days if t.target_days is not None else t.training_days
    frame = gpus_vs_days(ctx.scenario, t.name, [centre * f for f in SWEEP_FACTORS])
    return frame.loc[frame["plannable"], ["target_days", "gpus"]].reset_index(drop=True)


def _charts(ctx: ReportContext, t) -> Html:
    parts = [figure(charts.memory_breakdown(t.memory_bytes, t.gpu_memory_bytes, t.gpu_memory_usable_bytes,
                                            title=f"{t.name}: memory per GPU"),
                    f"{t.name}: memory per GPU by line item against the GPU's memory and the usable "
                    "share after headroom.")]
    candidates = layout_candidates(ctx.scenario, t.name, CANDIDATES) if t.model_kind == "transformer" else None
    if candidates is not None and len(candidates):
        parts.append(figure(charts.step_breakdown(candidates, title=f"{t.name}: step time by part"),
                            f"{t.name}: the step time of the {len(candidates)} fastest layouts that fit, by part "
                            "(compute, exposed TP/CP/PP/DP/EP communication, pipeline bubble, stragglers); "
                            "the top bar is the plan's layout when it was searched."))
    if math.isfinite(t.training_days) and t.training_days > 0:
        frame = gpus_vs_days_frame(ctx, t)
        if len(frame) >= 2:
            parts.append(figure(charts.gpus_vs_days(frame, t.training_days, t.gpus,
                                                    title=f"{t.name}: GPUs needed vs target time"),
                                f"{t.name}: GPUs needed (whole servers) for target times around the "
                                f"plan's; the red point is the plan ({days(t.training_days)} days on "
                                f"{F.plural(t.gpus, 'GPU')})."))
    return Html("".join(block(p) for p in parts))


def training(ctx: ReportContext) -> Html:
    """Time to train and its range, layout and memory, checkpoints, and per-job charts."""
    p = ctx.plan
    intro = note("Time is the tokens to train ÷ the step-time model's tokens/s at the chosen layout (or model "
                 "FLOPs ÷ (GPUs × peak × the assumed MFU) where it predicts nothing), stretched by goodput (time "
                 "lost to checkpoints, failures and restarts). The range below is the step-time model's own "
                 "error on published runs (80 % of them within it), or the lowest and highest MFU published "
                 "runs of a similar scale reached where the time rests on an assumed MFU (for models trained "
                 "at a measured sample rate, the spread of the measurements).")
    out = [block(time_table(ctx), intro), block(range_table(ctx)), block(memory_table(ctx)),
           block(step_table(ctx), note("Predicted by aisize.training's step-time model for the plan's layout: "
                                       "GEMMs on their roofline, FlashAttention, memory-bound work and the "
                                       "exposed part of each parallelism's traffic, with efficiencies fitted "
                                       "on torchtitan's and NVIDIA's Megatron-Core published runs (see the "
                                       "accuracy appendix).")),
           block(checkpoint_table(ctx), note(why) if (why := interval_note(ctx)) else "")]
    for t in p.training:
        out.append(h3(f"{t.name}"))
        out.append(_charts(ctx, t))
    return Html("".join(out))
