"""When workloads run: phases one after another, daily hour windows, and what runs at the same time.

A scenario's ``phases`` run in the order listed; a workload runs ``always``
(every phase, a service) or in one phase, and all day or within a daily
``hours`` window. Time is cut into *slots*: each phase crossed with the pieces
of the day between every window's start and end. Two workloads may share a
server only if no slot has both active (:func:`active_slots`). A phase lasts
its ``days``, else its longest training job; the last phase may be left
open-ended ("ongoing", a service that keeps running).

A slot's name ("06-18 h", "fine-tune, 06-18 h") and a timeline row's ``hours`` cell ("6-18 h") are labels (the
names of the day's pieces a table and the placement show), not sentences, so they are built here
(tests/test_plan_no_words.py allows exactly these).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aisize.units import DAY

ONGOING_DISPLAY_DAYS = 30.0  # how long an open-ended last phase is drawn on the timeline


@dataclass(frozen=True)
class Slots:
    """The time slots of a scenario and which workloads are active in each."""

    phases: tuple[str, ...]  # phase names in order ("always" alone when none are declared)
    segments: tuple[tuple[float, float], ...]  # pieces of the day [start, end) in hours
    active: dict  # workload name -> frozenset of slot indices (phase_index * len(segments) + segment)

    def count(self) -> int:
        return len(self.phases) * len(self.segments)

    def labels(self) -> tuple[str, ...]:
        """A name per slot: the phase, and the hours of the day when the day is split."""
        def hours(seg):
            return f"{seg[0] % 24:02g}-{seg[1] % 24:02g} h"
        phase = (lambda p: "all the time" if p == "always" else p)
        return tuple(phase(p) if len(self.segments) == 1 else
                     (hours(seg) if p == "always" else f"{p}, {hours(seg)}")
                     for p in self.phases for seg in self.segments)


def _boundaries(windows) -> list[float]:
    points = sorted({h % 24.0 for w in windows for h in w})
    return points or [0.0]


def _segments(windows) -> tuple[tuple[float, float], ...]:
    points = _boundaries(windows)
    if len(points) == 1:
        return ((points[0], points[0] + 24.0),)
    return tuple((a, b) for a, b in zip(points, points[1:] + [points[0] + 24.0]))


def _in_window(segment: tuple[float, float], hours) -> bool:
    if hours is None:
        return True
    start, end = hours[0] % 24.0, hours[1] % 24.0
    mid = ((segment[0] + segment[1]) / 2.0) % 24.0  # segments never straddle a window edge
    return start <= mid < end if start < end else (mid >= start or mid < end)


def _profile_hours(w) -> list[float]:
    """Hours of the day at which a service's load profile changes from one hour to the next (its replicas
    may change there, so the day is cut at them)."""
    spec = getattr(getattr(w, "fleet", None), "load_profile", None)
    if spec is None:
        return []
    starts, values = spec.start_hours(), spec.values()
    hourly = [max([v for h, v in zip(starts, values) if hour <= h < hour + 1]
                  + [v for h, v in zip(starts, values) if h <= hour][-1:]) for hour in range(24)]
    return [float(h) for h in range(24) if hourly[h] != hourly[h - 1]]


def window_share(hours) -> float:
    """Share of the day a window covers (1 for all day)."""
    if hours is None:
        return 1.0
    return ((hours[1] - hours[0]) % 24.0) / 24.0


def active_slots(scenario) -> Slots:
    """Slot indices each GPU workload of ``scenario`` is active in."""
    phases = tuple(p.name for p in scenario.phases) or ("always",)
    timed = [w for w in scenario.workloads if hasattr(w, "when")]
    segments = _segments([w.when.hours for w in timed if w.when.hours is not None]
                         + [(h, h) for w in timed for h in _profile_hours(w)])
    active = {}
    for w in timed:
        slots = set()
        for p, phase in enumerate(phases):
            if w.when.phase not in ("always", phase):
                continue
            slots.update(p * len(segments) + j for j, seg in enumerate(segments) if _in_window(seg, w.when.hours))
        active[w.name] = frozenset(slots)
    return Slots(phases, segments, active)


@dataclass(frozen=True)
class Timeline:
    """Phases with their start and length, and one row per GPU workload [days].

    Without declared phases everything runs at once, all the time (jobs repeat): one ongoing
    "always" phase. With phases, an open-ended last phase runs for the rest of the cluster's
    life; otherwise the phases repeat as a cycle (:func:`long_run_utilisation`).
    """

    phases: tuple  # dicts: name, start_day, days, ongoing, basis, busy_gpus (average while it runs)
    rows: tuple  # dicts: workload, kind, team, phase, pool, start_day, end_day, hours, gpus, busy_gpu_hours
    horizon_days: float  # end of the last phase (an ongoing phase drawn ONGOING_DISPLAY_DAYS long)
    busy_gpu_hours: float  # GPU-hours the workloads use over the horizon drawn
    installed_gpus: int
    gpu_utilisation: float  # busy / installed GPU-hours over the horizon drawn


def long_run_utilisation(timeline: Timeline, life_hours: float) -> float:
    """Share of the installed GPU-hours busy over ``life_hours``.

    Finite phases count once and an ongoing last phase fills the rest of the life at its
    average busy GPUs; phases without an ongoing end repeat, so the horizon's share holds.
    """
    if not timeline.installed_gpus:
        return 0.0
    last = timeline.phases[-1]
    if not last["ongoing"]:
        return timeline.gpu_utilisation
    finite = [p for p in timeline.phases if not p["ongoing"]]
    finite_hours = sum(p["days"] for p in finite) * 24.0
    busy = sum(p["busy_gpus"] * p["days"] * 24.0 for p in finite)
    span = max(life_hours, finite_hours)
    busy += last["busy_gpus"] * (span - finite_hours)
    return busy / (timeline.installed_gpus * span) if span else 0.0


def _phase_days(scenario, training_days: dict) -> list[tuple[float, bool, str]]:
    """(days, ongoing, basis) per declared phase; raises naming ``phases.N.days`` when unknowable."""
    out = []
    n = len(scenario.phases)
    for i, p in enumerate(scenario.phases):
        if p.days is not None:
            out.append((float(p.days), False, "given"))
            continue
        finite = [training_days[w.name] for w in scenario.workloads
                  if w.name in training_days and w.when.phase == p.name and math.isfinite(training_days[w.name])]
        if finite:
            out.append((max(finite), False, "its longest training job"))
        elif not any(getattr(w, "when", None) is not None and w.when.phase == p.name for w in scenario.workloads):
            out.append((0.0, False, "no workload runs in it"))
        elif i == n - 1:
            out.append((ONGOING_DISPLAY_DAYS, True, "open-ended (the last phase runs on)"))
        else:
            raise ValueError(f"phases.{i}.days: phase {p.name!r} has no training job to time it; give its days")
    return out


def _overlap(a0, a1, b0, b1) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def build_timeline(scenario, placed: dict, installed_gpus: int) -> Timeline:
    """The timeline of a planned scenario.

    ``placed`` maps each GPU workload's name to (kind, team, pool, gpus, days or None, busy GPUs):
    A declared phase no workload runs in lasts 0 days. ``days`` is a training job's length (None for services and job streams), ``busy GPUs`` the
    GPUs it keeps busy on average while it runs (a job stream: its offered load).
    """
    training_days = {n: v[4] for n, v in placed.items() if v[4] is not None}
    steady = not scenario.phases  # no phases: everything runs at once, all the time
    phases, start = [], 0.0
    for p, (days, ongoing, basis) in zip(scenario.phases, _phase_days(scenario, training_days)):
        phases.append({"name": p.name, "start_day": start, "days": days, "ongoing": ongoing, "basis": basis})
        start += days
    if steady:
        finite = [d for d in training_days.values() if math.isfinite(d)]
        phases.append({"name": "always", "start_day": 0.0, "days": max(finite + [1.0]), "ongoing": True,
                       "basis": "no phases declared: everything runs at once, jobs repeat"})
    horizon = sum(p["days"] for p in phases)
    by_name = {p["name"]: p for p in phases}
    rows, rates = [], [0.0] * len(phases)
    for w in scenario.workloads:
        if w.name not in placed:
            continue
        kind, team, pool, gpus, days, busy_gpus = placed[w.name]
        always = w.when.phase == "always"
        first = 0.0 if always else by_name[w.when.phase]["start_day"]
        length = horizon if always else by_name[w.when.phase]["days"]
        if days is not None and math.isfinite(days):
            length = days if always else min(days, length)
        share = window_share(w.when.hours)
        for k, ph in enumerate(phases):  # average GPUs busy in each phase
            if steady:
                rates[k] += busy_gpus * share
            elif (always or ph["name"] == w.when.phase) and ph["days"] > 0:
                run = _overlap(first, first + length, ph["start_day"], ph["start_day"] + ph["days"])
                rates[k] += busy_gpus * share * run / ph["days"]
        rows.append({"workload": w.name, "kind": kind, "team": team, "phase": w.when.phase, "pool": pool,
                     "start_day": first, "end_day": first + length,
                     "hours": "all day" if w.when.hours is None else f"{w.when.hours[0]:g}-{w.when.hours[1]:g} h",
                     "gpus": gpus, "busy_gpu_hours": busy_gpus * length * share * DAY / 3600.0})
    for ph, rate in zip(phases, rates):
        ph["busy_gpus"] = rate
    busy = sum(ph["busy_gpus"] * ph["days"] * 24.0 for ph in phases)
    installed = installed_gpus * horizon * 24.0
    return Timeline(tuple(phases), tuple(rows), horizon, busy, int(installed_gpus),
                    busy / installed if installed else 0.0)
