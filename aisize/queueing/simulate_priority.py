"""Discrete-event simulation (simpy) of priority classes sharing c servers, to check :mod:`.priority`.

Poisson arrivals per class; service times exponential (cv 1), deterministic (cv 0) or lognormal
with the class's mean and cv. Non-preemptive priority uses simpy's ``PriorityResource`` (the
highest class waiting gets the next free server); preemptive resume its ``PreemptiveResource``:
an arrival of a higher class interrupts the lowest class in service, which queues again with
its remaining work. All random numbers are drawn up front from one seeded numpy Generator.

Statistics: per class, the mean wait (response − service) of the customers that arrived after
the warm-up and before the last tenth of the horizon; a class whose backlog grows (unstable) is
reported with ``class_stable`` False: more than 5 % of those arrivals are still unfinished at the end.

References
----------
.. [1] SimPy 4 documentation, https://simpy.readthedocs.io (PriorityResource, PreemptiveResource,
   Interrupt).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import simpy

from aisize import checks
from aisize.queueing.analytic import MAX_SERVERS
from aisize.queueing.priority import PriorityClass, _checked

UNFINISHED_SHARE = 0.05  # a class with more than this share of its measured arrivals unfinished grows without bound
MEASURED_END = 0.9  # arrivals in the last tenth of the horizon are not measured


@dataclass(frozen=True)
class PrioritySimulation:
    """Measured mean waits per class (highest first) [s]."""

    names: tuple[str, ...]
    preemptive: bool
    servers: int
    customers: tuple[int, ...]  # measured (finished) customers per class
    class_stable: tuple[bool, ...]  # per class: False where its backlog grew
    wait_mean_seconds: tuple[float, ...]  # nan where nothing finished
    response_mean_seconds: tuple[float, ...]


def _samples(rng, mean, cv, n):
    if cv == 0.0:
        return np.full(n, mean)
    if cv == 1.0:
        return rng.exponential(mean, n)
    sigma2 = math.log1p(cv * cv)
    return rng.lognormal(math.log(mean) - sigma2 / 2.0, math.sqrt(sigma2), n)


def simulate_priority(classes, servers=1, *, preemptive=False, customers=40_000, warmup_share=0.1,
                      seed=0) -> PrioritySimulation:
    """Simulate priority classes (highest first) on ``servers`` servers and measure mean waits.

    Parameters
    ----------
    classes : sequence of :class:`~aisize.queueing.priority.PriorityClass`
    servers : servers c [1]
    preemptive : False: non-preemptive; True: preemptive resume
    customers : arrivals of all classes together [1], 1,000 to 10⁷ (each class gets its share of the rate)
    warmup_share : share of the horizon discarded first, in [0, 0.5)
    seed : seed of the numpy Generator
    """
    names, lam, s, cv = _checked(classes)
    c = int(checks.scalar("servers", checks.integer("servers", servers, low=1, high=MAX_SERVERS)))
    pre = checks.flag("preemptive", preemptive)
    n = checks.integer("customers", customers, low=1000, high=10**7)
    warm = checks.number("warmup_share", warmup_share, low=0.0, high=0.5, high_inclusive=False)
    seed = checks.integer("seed", seed, low=0, high=2**63 - 1)
    rng = np.random.default_rng(seed)
    horizon = n / lam.sum()
    arrivals, services = [], []
    for k in range(lam.size):
        count = rng.poisson(lam[k] * horizon)
        arrivals.append(np.sort(rng.uniform(0.0, horizon, count)))
        services.append(_samples(rng, s[k], cv[k], count))
    done = [np.full(a.size, np.nan) for a in arrivals]

    env = simpy.Environment()
    res = simpy.PreemptiveResource(env, capacity=c) if pre else simpy.PriorityResource(env, capacity=c)

    def job(k, j):
        left = services[k][j]
        # class first, then arrival time: a preempted job resumes ahead of its class's later arrivals
        key = k + arrivals[k][j] / (2.0 * horizon)
        while left > 1e-12:
            with res.request(priority=key, **({"preempt": True} if pre else {})) as req:
                yield req
                start = env.now
                try:
                    yield env.timeout(left)
                    left = 0.0
                except simpy.Interrupt:
                    left -= env.now - start
        done[k][j] = env.now

    def source(k):
        last = 0.0
        for j, t in enumerate(arrivals[k]):
            yield env.timeout(t - last)
            last = t
            env.process(job(k, j))

    for k in range(lam.size):
        env.process(source(k))
    env.run(until=horizon)

    # measured: arrivals after the warm-up and before the last tenth (a stable class's late
    # arrivals finish before the end; an unstable class's backlog does not)
    t0, t1, measured, stable, wait, resp = warm * horizon, MEASURED_END * horizon, [], [], [], []
    for k in range(lam.size):
        sel = (arrivals[k] >= t0) & (arrivals[k] < t1)
        fin = sel & np.isfinite(done[k])
        r = done[k][fin] - arrivals[k][fin]
        measured.append(int(fin.sum()))
        stable.append(bool((sel & ~np.isfinite(done[k])).sum() <= UNFINISHED_SHARE * max(sel.sum(), 1)))
        resp.append(float(r.mean()) if r.size else math.nan)
        wait.append(float((r - services[k][fin]).mean()) if r.size else math.nan)
    return PrioritySimulation(names, pre, c, tuple(measured), tuple(stable), tuple(wait), tuple(resp))


__all__ = ["PrioritySimulation", "simulate_priority", "PriorityClass"]
