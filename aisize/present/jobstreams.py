"""A job stream's target and its table in words: what each partition was sized for (:class:`aisize.plan.jobstreams.
StreamTarget`), read by the CLI, the app's Cluster tab, the report, the findings and the exports."""

from __future__ import annotations

import pandas as pd


def stream_target_text(t) -> str:
    """What a stream's partition was sized for, in words ("utilisation at most 80%", "p95 wait at most 4 h")."""
    if t.kind == "rest":
        return f"the GPUs pool {t.pool!r} has left"
    if t.kind == "gpus":
        return f"{t.gpus} GPUs given"
    if t.kind == "utilisation":
        return f"utilisation at most {t.utilisation:.0%}"
    if t.kind == "wait":
        return f"{t.wait_statistic} wait at most {t.wait_hours:g} h"
    raise ValueError(f"stream target kind {t.kind!r} is not one of rest, gpus, utilisation, wait")


def job_streams_table(plan) -> pd.DataFrame:
    """One row per job stream: rate, job size and length, target, GPUs, utilisation and waits [h]."""
    return pd.DataFrame([{"workload": s.name, "jobs_per_day": s.jobs_per_day, "gpus_per_job": s.gpus_per_job,
                          "hours_per_job": s.job_seconds / 3600.0, "distribution": s.hours_distribution,
                          "target": stream_target_text(s.target), "target_met": s.target_met, "gpus": s.gpus,
                          "slots": s.slots, "utilisation": s.utilisation, "stable": s.stable,
                          "wait_mean_h": s.wait_mean_seconds / 3600.0, "wait_p95_h": s.wait_p95_seconds / 3600.0}
                         for s in plan.job_streams],
                        columns=["workload", "jobs_per_day", "gpus_per_job", "hours_per_job", "distribution",
                                 "target", "target_met", "gpus", "slots", "utilisation", "stable", "wait_mean_h",
                                 "wait_p95_h"])
