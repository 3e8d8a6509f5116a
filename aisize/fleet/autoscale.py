"""Replicas through the day: a Kubernetes-style autoscaler following a load profile, with scale-up time.

The autoscaler (the HorizontalPodAutoscaler's algorithm [1] on a request-rate metric, as
KServe/Knative and llm-d scale model servers) runs every ``sync_seconds``:

1. it reads the arrival rate averaged over the last ``metric_window_seconds``;
2. the replicas that rate needs are ceil(rate / r), r the rate one replica is given at its
   target (a utilisation target times its capacity, or the highest rate at which it meets the
   latency SLOs); within ``tolerance`` of the current count nothing changes;
3. clamped to [min, max]; scaling down takes the highest recommendation of the last
   ``scale_down_window_seconds`` (the stabilisation window); scaling up adds at most
   max(4, the current count) replicas per period (the HPA's default scale-up policy);
4. a new replica holds its GPUs from the decision but serves only ``scale_up_seconds`` later
   (its weights read from storage or a host cache, then the engine's start); a removed replica
   frees its GPUs at once (loading ones are cancelled first).

The meter counts random arrivals: a window at rate λ holds a Poisson number of them, and the
stabilisation window keeps the highest of about m = 1 + (scale-down window / metric window)
independent readings, so a noisy meter holds more replicas than the mean rate needs. The
model reads the meter at the median of that highest reading, the 0.5^(1/m) quantile of the
Poisson count (exact below 200 expected arrivals, the normal approximation above).

The day is run from two hours before midnight (the fleet starts at what that hour needs) and
measured over [0, 24 h). GPU-hours count every replica that holds GPUs, loading ones included.

References
----------
.. [1] Kubernetes documentation, "Horizontal Pod Autoscaling" (algorithm details: desiredReplicas
   = ceil(currentReplicas x currentMetricValue / desiredMetricValue); tolerance 0.1;
   --horizontal-pod-autoscaler-sync-period 15 s; scaleDown stabilizationWindowSeconds 300;
   default scaleUp policies: 100 % or 4 pods per 15 s, whichever is more), kubernetes.io, v1.30.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from aisize import checks
from aisize.fleet.profile import LoadProfile
from aisize.units import DAY, HOUR

HPA_SYNC_SECONDS = 15.0  # [1]: --horizontal-pod-autoscaler-sync-period
HPA_TOLERANCE = 0.1  # [1]: no change while the metric is within 10 % of its target
HPA_SCALE_DOWN_WINDOW_SECONDS = 300.0  # [1]: default scaleDown stabilizationWindowSeconds
HPA_SCALE_UP_PODS = 4  # [1]: default scaleUp policy, 4 pods or 100 % per period, whichever is more
METRIC_WINDOW_SECONDS = 60.0  # a rate over the last minute (Prometheus rate[1m]): assumption
WARMUP_SECONDS = 2 * HOUR
POISSON_EXACT_BELOW = 200.0  # expected arrivals in a metric window: exact Poisson quantile below, normal above


@dataclass(frozen=True)
class Autoscaler:
    """A checked autoscaling policy (see the module docstring) [1/s, count, s]."""

    requests_per_s_per_replica: float  # r: the rate one replica is given at its target
    min_replicas: int
    max_replicas: int
    scale_up_seconds: float  # decision to serving: weights load + engine start
    sync_seconds: float = HPA_SYNC_SECONDS
    tolerance: float = HPA_TOLERANCE
    scale_down_window_seconds: float = HPA_SCALE_DOWN_WINDOW_SECONDS
    metric_window_seconds: float = METRIC_WINDOW_SECONDS

    def __post_init__(self):
        checks.positive("requests_per_s_per_replica", self.requests_per_s_per_replica, high=1e9)
        checks.integer("min_replicas", self.min_replicas, low=0, high=10**6)
        checks.integer("max_replicas", self.max_replicas, low=1, high=10**6)
        if self.max_replicas < self.min_replicas:
            raise ValueError(f"max_replicas={self.max_replicas} is not allowed: must be at least "
                             f"min_replicas={self.min_replicas}")
        checks.non_negative("scale_up_seconds", self.scale_up_seconds, high=DAY)
        checks.number("sync_seconds", self.sync_seconds, low=1.0, high=HOUR)
        checks.number("tolerance", self.tolerance, low=0.0, high=0.9)
        checks.number("scale_down_window_seconds", self.scale_down_window_seconds, low=0.0, high=DAY)
        checks.number("metric_window_seconds", self.metric_window_seconds, low=1.0, high=DAY)

    def recommend(self, rate_per_s: float, current: int) -> int:
        """Replicas for a measured rate, before stabilisation (HPA steps 2-3)."""
        if current > 0:
            ratio = rate_per_s / (current * self.requests_per_s_per_replica)
            if abs(ratio - 1.0) <= self.tolerance:
                return current
        want = math.ceil(rate_per_s / self.requests_per_s_per_replica - 1e-9)
        return int(min(max(want, self.min_replicas), self.max_replicas))


class Controller:
    """The autoscaler's state between periods: the recommendations of its stabilisation window."""

    def __init__(self, policy: Autoscaler):
        self.policy = policy
        self.history = deque()  # (time, recommendation)

    def decide(self, now: float, rate_per_s: float, current: int) -> int:
        """Replicas to hold after this period (HPA steps 2-3 with stabilisation and the scale-up limit)."""
        p = self.policy
        rec = p.recommend(rate_per_s, current)
        self.history.append((now, rec))
        while self.history and self.history[0][0] < now - p.scale_down_window_seconds:
            self.history.popleft()
        if rec < current:  # scale down to the highest recommendation of the window, never below rec
            return max(rec, min(current, max(r for _, r in self.history)))
        return min(rec, current + max(HPA_SCALE_UP_PODS, current))


@dataclass(frozen=True)
class Day:
    """A service's replicas through the day, per autoscaler period, and the day's totals."""

    seconds: np.ndarray  # start of each period [s] from midnight
    rate_per_s: np.ndarray  # offered load in the period
    provisioned: np.ndarray  # replicas holding GPUs (ready + loading)
    ready: np.ndarray  # replicas serving
    gpus_per_replica: int
    requests_per_s_per_replica: float
    capacity_per_replica_per_s: float  # the rate at which one replica saturates
    scale_ups: int  # replica starts in the day
    largest_burst: int  # the most replicas that started in one period (a read burst of their weights)
    scale_up_seconds: float

    @property
    def replica_hours(self) -> float:
        return float(self.provisioned.sum() * self._step / HOUR)

    @property
    def gpu_hours(self) -> float:
        return self.replica_hours * self.gpus_per_replica

    @property
    def peak_replicas(self) -> int:
        return int(self.provisioned.max())

    @property
    def least_replicas(self) -> int:
        return int(self.provisioned.min())

    @property
    def mean_replicas(self) -> float:
        return float(self.provisioned.mean())

    @property
    def overloaded_hours(self) -> float:
        """Hours in which the load exceeded what the ready replicas can serve (waits grow)."""
        over = self.rate_per_s > self.ready * self.capacity_per_replica_per_s
        return float(over.sum() * self._step / HOUR)

    @property
    def above_target_hours(self) -> float:
        """Hours in which the ready replicas ran above their target (SLO or utilisation)."""
        over = self.rate_per_s > self.ready * self.requests_per_s_per_replica * (1.0 + 1e-9)
        return float(over.sum() * self._step / HOUR)

    @property
    def _step(self) -> float:
        return float(self.seconds[1] - self.seconds[0]) if self.seconds.size > 1 else DAY

    def hourly(self, what: str = "provisioned", how: str = "max") -> np.ndarray:
        """24 values: the most (``max``) or the mean (``mean``) of ``what`` in each hour of the day."""
        arr = getattr(self, what).reshape(24, -1)
        return arr.max(axis=1) if how == "max" else arr.mean(axis=1)


def meter_reading(rate_per_s, window_seconds: float, readings: float):
    """The rate a meter reports when the autoscaler keeps the highest of ``readings`` independent ones:
    the 0.5^(1/readings) quantile of Poisson(rate x window), / window [1/s] (vectorized)."""
    # a step profile meters few distinct rates: compute each once
    mean, back = np.unique(np.asarray(rate_per_s, dtype=float) * window_seconds, return_inverse=True)
    q = 0.5 ** (1.0 / readings)
    out = np.empty_like(mean)
    small = mean <= POISSON_EXACT_BELOW
    if small.any():
        k = np.arange(0, int(POISSON_EXACT_BELOW * 2 + 60))
        lam = np.maximum(mean[small], 1e-300)[:, None]
        logpmf = k * np.log(lam) - lam - np.array([math.lgamma(x + 1.0) for x in k])
        cdf = np.cumsum(np.exp(logpmf), axis=1)
        out[small] = np.argmax(cdf >= q - 1e-12, axis=1)
    if (~small).any():
        z = _normal_quantile(q)
        m = mean[~small]
        out[~small] = np.ceil(m + z * np.sqrt(m) - 0.5)
    return out[back].reshape(np.shape(rate_per_s)) / window_seconds


def _normal_quantile(p: float) -> float:
    """Standard normal quantile by bisection on erf (p in (0, 1))."""
    lo, hi = -10.0, 10.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if 0.5 * (1.0 + math.erf(mid / math.sqrt(2.0))) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def day_replicas(profile: LoadProfile, policy: Autoscaler, *, gpus_per_replica: int,
                 capacity_per_replica_per_s: float) -> Day:
    """Replicas the autoscaler holds through the day for ``profile`` (see the module docstring).

    Parameters
    ----------
    profile : the offered load through the day
    policy : the autoscaler
    gpus_per_replica : GPUs one replica holds
    capacity_per_replica_per_s : the rate at which one replica saturates (for ``overloaded_hours``)
    """
    g = checks.integer("gpus_per_replica", gpus_per_replica, high=100_000)
    cap = checks.scalar("capacity_per_replica_per_s", checks.positive("capacity_per_replica_per_s",
                                                                      capacity_per_replica_per_s))
    step = policy.sync_seconds
    if (DAY / step) != round(DAY / step):
        raise ValueError(f"sync_seconds={step:g} is not allowed: must divide a day (86,400 s) evenly")
    n = int(round(DAY / step))
    times = np.arange(-WARMUP_SECONDS, DAY, step)
    w = policy.metric_window_seconds
    metered = meter_reading(profile.mean_over(times - w, times), w, 1.0 + policy.scale_down_window_seconds / w)
    offered = profile.mean_over(times, times + step)
    ctl = Controller(policy)
    held = policy.recommend(float(profile.mean_over(times[0] - HOUR, times[0])), 0)
    loading = deque()  # ready times of replicas still loading
    ready = held
    prov_out, ready_out, starts = [], [], []
    for t, rate in zip(times, metered):
        while loading and loading[0] <= t:
            loading.popleft()
            ready += 1
        want = ctl.decide(float(t), float(rate), ready + len(loading))
        started = 0
        if want > ready + len(loading):
            started = want - ready - len(loading)
            loading.extend([t + policy.scale_up_seconds] * started)
        while ready + len(loading) > want:  # cancel loading replicas first (the newest), then ready ones
            if loading:
                loading.pop()
            else:
                ready -= 1
        if policy.scale_up_seconds == 0.0:
            while loading:
                loading.popleft()
                ready += 1
        if t >= 0:
            prov_out.append(ready + len(loading))
            ready_out.append(ready)
            starts.append(started)
    # a replica that becomes ready inside a period serves part of it: count it from the next period
    return Day(times[-n:], offered[-n:], np.asarray(prov_out, dtype=float), np.asarray(ready_out, dtype=float), int(g),
               policy.requests_per_s_per_replica, float(cap), int(sum(starts)), int(max(starts, default=0)),
               policy.scale_up_seconds)
