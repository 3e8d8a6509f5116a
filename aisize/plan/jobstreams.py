"""A job stream's plan: GPUs for its wait or utilisation target, and the waits it gets.

Glue only: the queue is :func:`aisize.queueing.job_queue` (M/G/c on ⌊G/g⌋ job
slots, Allen–Cunneen) and the sizing :func:`aisize.queueing.slots_for_target`;
see :mod:`aisize.queueing.jobs` for the slot reduction and where it stops holding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from aisize.queueing import job_queue, slots_for_target, wait_curve
from aisize.units import HOUR

METHOD = "M/G/c on job slots of gpus_per_job GPUs (Allen–Cunneen; aisize.queueing.jobs)"
CURVE_SPAN = 3.0  # the wait curve runs from the fewest stable slots to this many times the planned slots


@dataclass(frozen=True)
class StreamTarget:
    """What a stream's partition was sized for: ``kind`` "rest" (the GPUs ``pool`` has left), "gpus" (``gpus``
    given), "utilisation" (job slots busy at most ``utilisation``) or "wait" (its ``wait_statistic`` wait at most
    ``wait_hours``)."""

    kind: str
    pool: str = ""
    gpus: int | None = None
    utilisation: float | None = None
    wait_statistic: str = ""
    wait_hours: float | None = None


@dataclass(frozen=True)
class JobStreamPlan:
    """A stream of jobs on its own partition of GPUs (times in seconds)."""

    name: str
    team: str
    jobs_per_day: float
    gpus_per_job: int
    job_seconds: float  # mean job length
    hours_distribution: str
    job_cv: float
    target: StreamTarget  # what the partition was sized for (worded by aisize.present.jobstreams)
    target_met: bool
    slots: int  # jobs that run at once
    gpus: int  # slots x gpus_per_job
    offered_gpus: float  # GPUs busy on average, λ·S·g
    utilisation: float  # offered_gpus / gpus
    stable: bool
    prob_wait: float
    wait_mean_seconds: float  # inf when unstable
    wait_p95_seconds: float
    method: str


def target_slots(w) -> int | None:
    """Slots a stream's target asks for; None for ``gpus: rest`` (sized by what the pool has left)."""
    if w.gpus == "rest":
        return None
    if w.gpus is not None:
        if w.gpus < w.gpus_per_job:
            raise ValueError(f"gpus={w.gpus} is not allowed for workload {w.name!r}: fewer than one job's "
                             f"gpus_per_job={w.gpus_per_job}")
        return w.gpus // w.gpus_per_job
    s = w.hours_per_job * HOUR
    if w.target_utilisation is not None:
        return slots_for_target(w.jobs_per_s, s, target_utilisation=w.target_utilisation, job_cv=w.job_cv)
    return slots_for_target(w.jobs_per_s, s, target_wait_seconds=w.target_wait_hours * HOUR,
                            statistic=w.wait_statistic, job_cv=w.job_cv)


def _target(w, pool: str) -> StreamTarget:
    if w.gpus == "rest":
        return StreamTarget("rest", pool=pool)
    if w.gpus is not None:
        return StreamTarget("gpus", gpus=int(w.gpus))
    if w.target_utilisation is not None:
        return StreamTarget("utilisation", utilisation=float(w.target_utilisation))
    return StreamTarget("wait", wait_statistic=w.wait_statistic, wait_hours=float(w.target_wait_hours))


def plan_job_stream(w, slots: int, pool: str) -> JobStreamPlan:
    """The stream ``w`` on ``slots`` job slots (at least one)."""
    s = w.hours_per_job * HOUR
    q = job_queue(w.jobs_per_s, w.gpus_per_job, s, slots * w.gpus_per_job, job_cv=w.job_cv)
    if w.target_wait_hours is not None:
        wait = q.wait_mean_seconds if w.wait_statistic == "mean" else q.wait_p95_seconds
        met = bool(q.stable and wait <= w.target_wait_hours * HOUR * (1 + 1e-9))
    elif w.target_utilisation is not None:
        met = bool(q.stable and q.slot_utilisation <= w.target_utilisation + 1e-12)
    else:
        met = bool(q.stable)
    return JobStreamPlan(w.name, w.team, w.jobs_per_s * 86400.0, w.gpus_per_job, s, w.hours_distribution,
                         w.job_cv, _target(w, pool), met, int(q.slots), int(q.gpus), float(q.offered_gpus),
                         float(q.utilisation), bool(q.stable), float(q.prob_wait), float(q.wait_mean_seconds),
                         float(q.wait_p95_seconds), METHOD)


def job_wait_curve(stream: JobStreamPlan, points: int = 40) -> pd.DataFrame:
    """Mean and p95 wait [h] and utilisation against the partition's GPUs, around the planned size.

    From the fewest slots that keep the queue stable to ``CURVE_SPAN`` x the planned slots; the
    planned size is marked in the ``planned`` column.
    """
    lo = max(1, int(np.floor(stream.offered_gpus / stream.gpus_per_job)) + 1)
    hi = max(lo + 1, int(np.ceil(CURVE_SPAN * stream.slots)), stream.slots)
    slots = np.unique(np.linspace(lo, hi, min(points, hi - lo + 1)).round().astype(int))
    slots = np.unique(np.append(slots, stream.slots))
    frame = wait_curve(stream.jobs_per_day / 86400.0, stream.gpus_per_job, stream.job_seconds,
                       slots * stream.gpus_per_job, job_cv=stream.job_cv)
    frame["planned"] = frame["gpus"] == stream.gpus
    return frame
