"""Discrete-event simulation (simpy) of a c-server FCFS queue, for cases the formulas do not cover.

Service times exponential, deterministic, lognormal (mean, cv) or Pareto
(mean, shape); Poisson or batch arrivals (k jobs at once, e.g. checkpoint
bursts); an optional limit on jobs in the system (arrivals beyond it are
rejected and counted). All random numbers are drawn up front from one seeded
numpy Generator, so a seed gives the same result every time.

Statistics: the first ``warmup_customers`` arrivals are discarded; the rest
are split, in arrival order, into 20 batches, and each statistic's 95 %
confidence half-width is t₀.₉₇₅,₁₉ · sd(batch values)/√20 (batch means).
Time averages (jobs in system, queue, busy servers) and throughput are
measured over the window from the first measured arrival to the last arrival,
from the event times themselves, so Little's law L = X·W can be checked
against them. simpy runs about 200,000 customers per second on one core.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import simpy

from aisize import checks
from aisize.queueing.analytic import MAX_SERVERS, QueueResult

_BATCHES = 20
_T_975_19 = 2.093  # Student t, 97.5 % quantile, 19 degrees of freedom (standard t tables)
SERVICES = ("exponential", "deterministic", "lognormal", "pareto")
ARRIVALS = ("poisson", "batch")


@dataclass(frozen=True)
class SimulationResult(QueueResult):
    """QueueResult measured by simulation, with 95 % half-widths and measured rates.

    ``utilisation`` is the measured busy fraction per server; ``in_system_mean``
    and ``queue_length_mean`` are time averages over the measurement window.
    """

    throughput_per_s: float  # completions per second in the window [1/s]
    customers: int  # measured (accepted, post-warm-up) customers [1]
    rejected: int  # arrivals turned away by max_in_system, post-warm-up [1]
    rejection_fraction: float  # rejected / measured arrivals [1]
    wait_mean_ci95_seconds: float  # 95 % half-widths (batch means) [s]
    response_mean_ci95_seconds: float
    wait_p95_ci95_seconds: float
    response_p95_ci95_seconds: float
    response_p99_ci95_seconds: float


def _service_samples(rng, kind, mean, cv, shape_alpha, n):
    if kind == "exponential":
        return rng.exponential(mean, n)
    if kind == "deterministic":
        return np.full(n, mean)
    if kind == "lognormal":
        sigma2 = math.log1p(cv * cv)
        return rng.lognormal(math.log(mean) - sigma2 / 2.0, math.sqrt(sigma2), n)
    x_m = mean * (shape_alpha - 1.0) / shape_alpha  # classic Pareto with this mean
    return x_m * (1.0 + rng.pareto(shape_alpha, n))


def _overlap(start, end, t0, t1):
    return np.clip(np.minimum(end, t1) - np.maximum(start, t0), 0.0, None).sum()


def _half_width(values: np.ndarray) -> float:
    return float(_T_975_19 * values.std(ddof=1) / math.sqrt(values.size))


def simulate(arrival_rate_per_s, service_seconds, servers=1, *, service="exponential", service_cv=1.0,
             pareto_shape=2.5, arrival="poisson", batch_size=1, max_in_system=None,
             customers=100_000, warmup_customers=None, seed=0) -> SimulationResult:
    """Simulate a c-server FCFS queue and measure waits, responses, throughput and occupancy.

    Parameters
    ----------
    arrival_rate_per_s : float
        Mean arrival rate of jobs λ [1/s], > 0 (with batches: batch rate λ/k).
    service_seconds : float
        Mean service time S [s], > 0.
    servers : int
        Servers c [1].
    service : str
        "exponential", "deterministic", "lognormal" (uses service_cv) or "pareto" (uses pareto_shape).
    service_cv : float
        Coefficient of variation for lognormal service [1], > 0.
    pareto_shape : float
        Pareto tail index α [1], > 1 (α ≤ 2: infinite variance).
    arrival : str
        "poisson" or "batch" (Poisson epochs bringing batch_size jobs each).
    batch_size : int
        Jobs per batch k [1].
    max_in_system : int or None
        Limit on jobs waiting or in service; arrivals beyond it are rejected.
    customers : int
        Arrivals measured after warm-up [1], 1,000 to 10⁷.
    warmup_customers : int or None
        Arrivals discarded first [1]; default customers // 10.
    seed : int
        Seed of the numpy Generator.

    References
    ----------
    .. [1] SimPy 4 documentation, https://simpy.readthedocs.io (Environment, Store).
    .. [2] A. M. Law, Simulation Modeling and Analysis, 5th ed., McGraw-Hill 2015,
       section 9.5.3 (batch means confidence intervals).
    """
    lam = checks.positive("arrival_rate_per_s", arrival_rate_per_s)
    mean = checks.positive("service_seconds", service_seconds)
    c = checks.integer("servers", servers, low=1, high=MAX_SERVERS)
    checks.choice("service", service, SERVICES)
    checks.choice("arrival", arrival, ARRIVALS)
    cv = (checks.positive if service == "lognormal" else checks.non_negative)("service_cv", service_cv, high=100.0)
    alpha = checks.number("pareto_shape", pareto_shape, low=1.0, high=100.0, low_inclusive=False)
    k = checks.integer("batch_size", batch_size, low=1, high=10**6) if arrival == "batch" else 1
    limit = math.inf if max_in_system is None else checks.integer("max_in_system", max_in_system)
    n_meas = checks.integer("customers", customers, low=1000, high=10**7)
    n_warm = n_meas // 10 if warmup_customers is None else checks.integer(
        "warmup_customers", warmup_customers, low=0, high=10**7)
    seed = checks.integer("seed", seed, low=0, high=2**63 - 1)
    for name, v in (("arrival_rate_per_s", lam), ("service_seconds", mean)):
        if np.ndim(v):
            raise ValueError(f"{name}={v!r} is not allowed: simulate() takes one configuration (a scalar)")

    rng = np.random.default_rng(seed)
    n = n_warm + n_meas
    epochs = -(-n // k)
    gaps = rng.exponential(k / lam, epochs)
    svc = _service_samples(rng, service, mean, cv, alpha, n)
    arr = np.cumsum(gaps)[np.arange(n) // k]
    start = np.full(n, np.nan)
    dep = np.full(n, np.nan)
    accepted = np.ones(n, dtype=bool)

    env = simpy.Environment()
    queue = simpy.Store(env)
    state = {"in_system": 0}

    def source():
        for e in range(epochs):
            yield env.timeout(gaps[e])
            for j in range(e * k, min((e + 1) * k, n)):
                if state["in_system"] >= limit:
                    accepted[j] = False
                    continue
                state["in_system"] += 1
                queue.put(j)

    def server():
        while True:
            j = yield queue.get()
            start[j] = env.now
            yield env.timeout(svc[j])
            dep[j] = env.now
            state["in_system"] -= 1

    env.process(source())
    for _ in range(c):
        env.process(server())
    env.run()  # ends when the last job has left (servers then wait on an empty store)

    t0, t1 = arr[n_warm], arr[-1]
    window = t1 - t0
    acc = accepted.copy()
    meas = acc.copy()
    meas[:n_warm] = False
    wait = (start - arr)[meas]
    resp = (dep - arr)[meas]
    a_acc, s_acc, d_acc = arr[acc], start[acc], dep[acc]
    rejected = int((~accepted[n_warm:]).sum())

    m = wait.size // _BATCHES
    if m < 2:
        raise ValueError(f"customers={n_meas!r} is not allowed: too few accepted customers to form batches")
    wb = wait[: m * _BATCHES].reshape(_BATCHES, m)
    rb = resp[: m * _BATCHES].reshape(_BATCHES, m)
    wq = np.quantile(wait, (0.50, 0.95, 0.99))
    rq = np.quantile(resp, (0.50, 0.95, 0.99))
    offered = lam * mean / c
    return SimulationResult(
        utilisation=float(_overlap(s_acc, d_acc, t0, t1) / (c * window)),
        stable=bool(offered < 1.0 or math.isfinite(limit)),
        wait_mean_seconds=float(wait.mean()),
        response_mean_seconds=float(resp.mean()),
        wait_p50_seconds=float(wq[0]), wait_p95_seconds=float(wq[1]), wait_p99_seconds=float(wq[2]),
        response_p50_seconds=float(rq[0]), response_p95_seconds=float(rq[1]),
        response_p99_seconds=float(rq[2]),
        queue_length_mean=float(_overlap(a_acc, s_acc, t0, t1) / window),
        in_system_mean=float(_overlap(a_acc, d_acc, t0, t1) / window),
        prob_wait=float(np.mean(wait > 1e-9 * mean)),
        throughput_per_s=float(np.count_nonzero((d_acc >= t0) & (d_acc <= t1)) / window),
        customers=int(wait.size),
        rejected=rejected,
        rejection_fraction=rejected / n_meas,
        wait_mean_ci95_seconds=_half_width(wb.mean(axis=1)),
        response_mean_ci95_seconds=_half_width(rb.mean(axis=1)),
        wait_p95_ci95_seconds=_half_width(np.quantile(wb, 0.95, axis=1)),
        response_p95_ci95_seconds=_half_width(np.quantile(rb, 0.95, axis=1)),
        response_p99_ci95_seconds=_half_width(np.quantile(rb, 0.99, axis=1)),
    )
