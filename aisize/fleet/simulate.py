"""A day of a service simulated request by request (simpy): random arrivals, the autoscaler, load delays.

What :func:`aisize.fleet.autoscale.day_replicas` computes from the profile, measured instead:

- requests arrive as a Poisson process whose rate follows the profile (thinning [2]);
- each replica has ``slots`` = capacity x service time places (Little's law at its capacity); a
  request holds one for its service time (exponential or fixed) and waits first-come first-served
  when none is free;
- every period the autoscaler (the same policy object) reads the arrivals it *counted* over its
  metric window, and starts or removes replicas; a started replica serves after the scale-up
  time; a removed one stops taking requests at once and frees its GPUs when its requests finish.

Replica-hours integrate the replicas holding GPUs (loading, serving and draining) over [0, 24 h).
The simulation also measures what the fluid model cannot: the waits requests see while new
replicas load.

References
----------
.. [1] SimPy 4 documentation, https://simpy.readthedocs.io (Environment, Event, Process).
.. [2] P. A. W. Lewis, G. S. Shedler, "Simulation of nonhomogeneous Poisson processes by
   thinning", Naval Research Logistics Quarterly 26(3), 1979.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import simpy

from aisize import checks
from aisize.fleet.autoscale import WARMUP_SECONDS, Autoscaler, Controller
from aisize.fleet.profile import LoadProfile
from aisize.units import DAY, HOUR

MAX_REQUESTS = 5_000_000  # a day larger than this is a benchmark, not a check


@dataclass(frozen=True)
class SimulatedDay:
    """A simulated day's replicas and waits."""

    replica_hours: float
    gpu_hours: float
    peak_replicas: int  # the most replicas holding GPUs at a period boundary
    mean_replicas: float
    hourly_peak_replicas: np.ndarray  # 24 values: the most at a period boundary in each hour
    hourly_mean_replicas: np.ndarray  # 24 values: the mean over the period boundaries of each hour
    scale_ups: int
    requests: int  # arrivals in the day
    wait_mean_seconds: float  # of requests arriving in the day
    wait_p99_seconds: float
    late_share: float  # share of requests that waited longer than ``late_after_seconds``


def simulate_day(profile: LoadProfile, policy: Autoscaler, *, gpus_per_replica: int, capacity_per_replica_per_s,
                 service_seconds, service: str = "exponential", late_after_seconds: float = 1.0,
                 seed: int = 0) -> SimulatedDay:
    """Simulate one day (after a two-hour warm-up) of ``profile`` served by replicas under ``policy``.

    Parameters
    ----------
    profile, policy : the load and the autoscaler
    gpus_per_replica : GPUs one replica holds
    capacity_per_replica_per_s : requests/s at which one replica saturates
    service_seconds : time one request holds a replica's slot [s]
    service : "exponential" or "deterministic" service times
    late_after_seconds : a wait longer than this counts as late [s]
    seed : seed of the numpy Generator
    """
    g = checks.integer("gpus_per_replica", gpus_per_replica, high=100_000)
    cap = checks.scalar("capacity_per_replica_per_s", checks.positive("capacity_per_replica_per_s",
                                                                      capacity_per_replica_per_s))
    s = checks.scalar("service_seconds", checks.positive("service_seconds", service_seconds, high=DAY))
    checks.choice("service", service, ("exponential", "deterministic"))
    late = checks.non_negative("late_after_seconds", late_after_seconds)
    rng = np.random.default_rng(checks.integer("seed", seed, low=0, high=2**63 - 1))
    slots = max(int(round(cap * s)), 1)
    start, peak = -WARMUP_SECONDS, profile.peak_per_s
    expected = peak * (DAY + WARMUP_SECONDS)
    if expected > MAX_REQUESTS:
        raise ValueError(f"profile: about {expected:,.0f} candidate arrivals is too many to simulate "
                         f"(at most {MAX_REQUESTS:,}): scale the rate down")
    times = start + np.cumsum(rng.exponential(1.0 / peak, int(expected * 1.2 + 100)))
    times = times[times < DAY]
    times = times[rng.uniform(0.0, peak, times.size) < profile.rate_at(times)]
    svc = rng.exponential(s, times.size) if service == "exponential" else np.full(times.size, s)

    env = simpy.Environment(initial_time=start)
    st = {"ready": 0, "free": 0, "alive": 0, "retire": 0, "area": 0.0, "last": 0.0, "starts": 0}
    loading = deque()  # [ready_time, cancelled] of loading replicas, oldest first
    queue = deque()  # waiting requests: (index, event)
    waits = np.full(times.size, np.nan)
    ctl = Controller(policy)

    def held() -> float:  # replicas holding GPUs: serving or draining (by slots alive), and loading
        return st["alive"] / slots + sum(1 for r in loading if not r[1])

    def account():
        now = env.now
        if now > 0:
            st["area"] += held() * (now - max(st["last"], 0.0))
        st["last"] = now

    def add_slots(n):
        st["alive"] += n
        while n and queue:
            j, ev = queue.popleft()
            n -= 1
            ev.succeed()
        st["free"] += n

    def request(j):
        if st["free"] and not queue:
            st["free"] -= 1
        else:
            ev = env.event()
            queue.append((j, ev))
            yield ev
        waits[j] = env.now - times[j]
        yield env.timeout(svc[j])
        if st["retire"]:
            account()
            st["retire"] -= 1
            st["alive"] -= 1
        elif queue:
            queue.popleft()[1].succeed()
        else:
            st["free"] += 1

    def arrivals():
        for j, t in enumerate(times):
            yield env.timeout(t - env.now)
            env.process(request(j))

    def load(entry):
        yield env.timeout(policy.scale_up_seconds)
        if not entry[1]:
            account()
            loading.remove(entry)
            st["ready"] += 1
            add_slots(slots)

    def remove_ready():
        st["ready"] -= 1
        drop = min(st["free"], slots)
        st["free"] -= drop
        st["alive"] -= drop
        st["retire"] += slots - drop

    def controller():
        samples = []
        while True:
            now = env.now
            lo, hi = np.searchsorted(times, [now - policy.metric_window_seconds, now], side="right")
            rate = (hi - lo) / policy.metric_window_seconds
            current = st["ready"] + sum(1 for r in loading if not r[1])
            want = ctl.decide(now, rate, current)
            account()
            if want > current:
                for _ in range(want - current):
                    entry = [now + policy.scale_up_seconds, False]
                    loading.append(entry)
                    env.process(load(entry))
                if now >= 0:
                    st["starts"] += want - current
            for _ in range(current - want):
                active = [r for r in loading if not r[1]]
                if active:
                    active[-1][1] = True
                    loading.remove(active[-1])
                else:
                    remove_ready()
            if now >= 0:
                samples.append(held())
            if now + policy.sync_seconds >= DAY:
                ctl_samples.extend(samples)
                return
            yield env.timeout(policy.sync_seconds)

    first = policy.recommend(float(profile.mean_over(start - HOUR, start)), 0)
    st["ready"] = first
    add_slots(first * slots)
    ctl_samples: list = []
    env.process(arrivals())
    env.process(controller())
    env.run(until=DAY)
    account()
    day = times >= 0
    w = waits[day]
    w = w[np.isfinite(w)]
    per_hour = np.asarray(ctl_samples).reshape(24, -1)
    hours = st["area"] / HOUR
    return SimulatedDay(hours, hours * g, int(np.ceil(max(ctl_samples) - 1e-9)), hours / 24.0, per_hour.max(axis=1),
                        per_hour.mean(axis=1),
                        int(st["starts"]), int(day.sum()), float(w.mean()) if w.size else 0.0,
                        float(np.quantile(w, 0.99)) if w.size else 0.0,
                        float(np.mean(w > late)) if w.size else 0.0)
