"""Queueing (latency against load for inference and storage, with the knee) and the IO blender."""

from __future__ import annotations

import math

import pandas as pd

from aisize import charts
from aisize.plan import latency_curve, storage_latency_curve
from aisize.report.context import ReportContext
from aisize.report.markup import Html, block, duration, facts, figure, note, pct, per_s, rate, sig, table

CURVE_POINTS = 60


def storage_curve(ctx: ReportContext) -> tuple[pd.DataFrame, int, float]:
    """(latency vs outstanding IOs, the curve's bend [IOs], the blend's outstanding IOs) of the shared storage.

    All three are the plan's: :func:`aisize.plan.storage_latency_curve` on ``StoragePlan.station``,
    ``StoragePlan.knee_concurrency`` and ``StoragePlan.outstanding_ios``.
    """
    s = ctx.plan.storage
    return storage_latency_curve(s, points=CURVE_POINTS), s.knee_concurrency, s.outstanding_ios


def queueing(ctx: ReportContext) -> Html:
    """Latency against load: each inference service (open system) and the shared storage (closed)."""
    p, s = ctx.plan, ctx.plan.storage
    out = [note(f"A queue's latency stays near its unloaded value until the load nears its capacity, then "
                f"rises sharply. The knee marks the load at which mean latency reaches "
                f"{p.assumptions['plan.knee_factor']:g}× unloaded; plan to run below it.")]
    if p.inference:
        rows = [[i.name, f"{i.requests_per_s:g}/s", per_s(i.knee_requests_per_s),
                 pct(i.requests_per_s / i.knee_requests_per_s) if i.knee_requests_per_s else "—",
                 pct(i.utilisation), duration(i.latency_p95_seconds)] for i in p.inference]
        out.append(block(table(["Service", "Planned load", "Knee", "Load / knee", "Utilisation",
                                "p95 latency"], rows, caption="Inference queues", css="numeric")))
        for i in p.inference:
            chart = charts.latency_vs_load(latency_curve(i, CURVE_POINTS), i.knee_requests_per_s,
                                           i.requests_per_s, i.latency_target_seconds,
                                           title=f"{i.name}: request latency vs load")
            out.append(block(figure(chart, f"{i.name}: mean and p95 request latency against the request "
                                           "rate, with the knee, the planned load and the latency target.")))
    curve, knee, at = storage_curve(ctx)
    ops = s.read_iops + s.write_iops
    rows = [["IO operations (blend average)", per_s(ops)], ["Supplied IO operations", per_s(s.supply_iops)],
            ["Utilisation", pct(s.io_utilisation, 1)],
            [f"Knee (mean latency {p.assumptions['plan.knee_factor']:g}× unloaded)", per_s(s.knee_iops)],
            ["Outstanding IOs (Little's law)", sig(at)],
            ["Outstanding IOs where the curve bends (saturation × unloaded latency)", f"{knee:,}"],
            ["Mean latency", duration(s.latency_mean_seconds)], ["p95 latency", duration(s.latency_p95_seconds)]]
    if s.units_at_knee is not None:
        rows.append([f"{s.scope.capitalize()}s that keep the blend below the knee", f"{s.units_at_knee:g}"])
    out.append(block(table(["Shared storage", ""], rows, caption="Storage queue", css="numeric narrow")))
    chart = charts.latency_vs_concurrency(curve, knee, at if math.isfinite(at) else None, latency_unit="ms",
                                          outstanding="IOs", title="Shared storage: latency vs outstanding IOs")
    out.append(block(figure(chart, "Mean IO latency of the shared storage against the IOs kept outstanding "
                                   "(closed system). The knee line marks where the curve bends: its flat "
                                   "(unloaded latency) and rising (saturation) asymptotes meet, at 1.6× the "
                                   "unloaded latency; the blend's operating point is marked.")))
    return Html("".join(out))


_KIND = {"training": "training reads", "checkpoint": "checkpoint writes", "inference": "model loading",
         "data-prep": "data preparation"}


def blender(ctx: ReportContext) -> Html:
    """Every workload's IO on the shared storage, averages and bursts, and the blend they make."""
    s = ctx.plan.storage
    if not (s.read_peak_bytes_per_s or s.write_peak_bytes_per_s or s.metadata_ops_per_s):  # no empty chart or 0 row
        return note("No workload reads or writes the shared storage: it holds the model repository and datasets "
                    "only.")
    rows = [[w["name"], _KIND.get(w["kind"], w["kind"]), rate(w["read_bytes_per_s"]),
             rate(w["write_bytes_per_s"]), rate(w["read_peak_bytes_per_s"]), rate(w["write_peak_bytes_per_s"]),
             per_s(w["read_iops"] + w["write_iops"]), f"{sig(w['read_io_bytes'] / 1024)} KiB",
             pct(w["read_share"])] for w in s.workloads]
    rows.append([Html("<strong>Blend</strong>"), "", rate(s.read_bytes_per_s), rate(s.write_bytes_per_s),
                 rate(s.read_peak_bytes_per_s), rate(s.write_peak_bytes_per_s),
                 per_s(s.read_iops + s.write_iops), "", pct(s.read_share)])
    blend = table(["Workload", "IO", "Read", "Write", "Read peak", "Write peak", "IO/s", "Read IO size",
                   "Read share"], rows, caption="IO of each workload (averages and bursts)", css="numeric")
    cards = facts([("Read share of bytes", pct(s.read_share)), ("Metadata operations", per_s(s.metadata_ops_per_s)),
                   ("Largest average", s.dominant_workload), ("Largest burst", s.dominant_peak_workload)])
    return Html(cards + block(blend, note("Averages add; peaks are the rates while a burst runs (checkpoint "
                                          "writes, model loads) and are summed as if they coincided."))
                + block(figure(charts.io_blend(list(s.workloads)),
                               "Average read and write rate each workload puts on the shared storage.")))
