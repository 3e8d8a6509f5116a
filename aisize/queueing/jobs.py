"""A stream of training or fine-tuning jobs on a shared partition of GPUs: waits and GPUs needed.

Jobs arrive at rate λ (Poisson), each needs g GPUs for its whole run of mean
length S (coefficient of variation c_s), and start first-come first-served on a
partition of G GPUs. A job needing several GPUs at once makes this a
*multi-server-per-job* queue. When every job of the stream needs the same g,
it reduces exactly to an ordinary c-server queue: at most c = ⌊G/g⌋ jobs run
at once (the G mod g GPUs left over can never start a job), each running job
holds one "slot" of g GPUs, and a waiting job starts when any slot frees. So
the stream is M/G/c with c slots, and the mean wait is the Allen–Cunneen
approximation of :func:`aisize.queueing.ggc` (exact for exponential job
lengths, M/M/c; within 10 % of simulation on the grid in
``tests/test_queueing_jobs.py``).

Where it stops holding:

* **Mixed job sizes in one partition** (8-GPU and 32-GPU jobs sharing G): a
  large job at the head of the queue blocks smaller ones behind it while GPUs
  sit idle, and free GPUs fragment. No slot count describes that: pooling the
  GPUs as ⌊G/ḡ⌋ slots of the mean size ḡ under-predicts the wait about
  threefold (64 GPUs, half 8-GPU and half 32-GPU jobs, 40-60 % busy;
  ``tests/test_queueing_jobs.py``). :func:`simulate_multi_gpu` simulates it,
  and the planner gives each stream its own partition (one size per partition).
* **Variable job lengths on many slots at light load**: Allen–Cunneen keeps
  only two moments. Within 10 % of simulation for exponential lengths at any
  load and slot count tested, for any c_s on one slot (Pollaczek–Khinchine is
  exact there), and for c_s ≤ 1.5 at 85 % busy; it over-predicts (a
  conservative error) by 17-80 % for lognormal c_s = 1.5 on 4-16 slots at
  50-70 % busy, and under-predicts by 13-28 % for fixed lengths on 16 slots at
  50-70 % busy, where the waits are minutes or seconds.
* **Elastic jobs** (a job that would run on fewer GPUs for longer) and
  backfilling schedulers wait less than FCFS: the figures are then upper bounds.

References
----------
.. [1] A. O. Allen, Probability, Statistics and Queueing Theory, 2nd ed.,
   Academic Press 1990, section 6.4 (Allen–Cunneen approximation for G/G/c).
.. [2] M. Harchol-Balter, "The multiserver job queueing model", Queueing
   Systems 100, 2022, 201–203 (jobs needing several servers at once; no
   closed form in general; FCFS head-of-line blocking).
.. [3] W. Whitt, "Approximations for the GI/G/m queue", Production and
   Operations Management 2(2), 1993 (accuracy of two-moment approximations).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import simpy

from aisize import checks
from aisize.queueing.analytic import MAX_SERVERS, ggc
from aisize.queueing.simulate import SimulationResult, simulate

STATISTICS = ("mean", "p95")
DISTRIBUTIONS = ("exponential", "deterministic", "lognormal")
_SEARCH_BLOCK = 256  # slot counts tested per vectorized call when searching


@dataclass(frozen=True)
class JobQueue:
    """A job stream on a partition of GPUs (floats, or arrays of the input shape)."""

    gpus: int | np.ndarray  # GPUs in the partition G [1]
    slots: int | np.ndarray  # jobs that can run at once, c = ⌊G/g⌋ [1]
    offered_gpus: float | np.ndarray  # GPUs busy on average, λ·S·g [1]
    utilisation: float | np.ndarray  # offered_gpus / G [1]
    slot_utilisation: float | np.ndarray  # λ·S/c [1]: ≥ 1 is unstable
    stable: bool | np.ndarray
    prob_wait: float | np.ndarray  # P(a job waits) [1]
    wait_mean_seconds: float | np.ndarray  # inf when unstable
    wait_p95_seconds: float | np.ndarray


def _checked(jobs_per_s, gpus_per_job, job_seconds, job_cv, arrival_cv):
    return (checks.positive("jobs_per_s", jobs_per_s), checks.integer("gpus_per_job", gpus_per_job, high=10**6),
            checks.positive("job_seconds", job_seconds), checks.non_negative("job_cv", job_cv, high=100.0),
            checks.non_negative("arrival_cv", arrival_cv, high=100.0))


def job_queue(jobs_per_s, gpus_per_job, job_seconds, gpus, *, job_cv=1.0, arrival_cv=1.0) -> JobQueue:
    """Waits of a job stream on G GPUs: M/G/c with c = ⌊G/g⌋ slots (Allen–Cunneen).

    Parameters
    ----------
    jobs_per_s : mean job arrival rate λ [1/s], > 0
    gpus_per_job : GPUs every job holds while it runs, g [1]
    job_seconds : mean job length S [s], > 0
    gpus : GPUs in the partition G [1], ≥ g (a partition smaller than one job runs nothing)
    job_cv : coefficient of variation of the job length c_s [1] (1: exponential, 0: fixed)
    arrival_cv : coefficient of variation of the gaps between arrivals c_a [1] (1: Poisson)

    Inputs broadcast (sweep ``gpus`` for a wait-vs-GPUs curve). Unstable
    partitions (λ·S ≥ c) report ``stable=False`` and infinite waits.

    References
    ----------
    .. [1] Allen 1990, section 6.4; module docstring for the slot reduction.
    """
    lam, g, s, cs, ca = _checked(jobs_per_s, gpus_per_job, job_seconds, job_cv, arrival_cv)
    big = checks.integer("gpus", gpus, high=10**9)
    if np.any(np.asarray(big) < np.asarray(g)):
        raise ValueError(f"gpus={gpus!r} is not allowed: a partition needs at least gpus_per_job={gpus_per_job!r} "
                         "GPUs to run one job")
    slots = np.asarray(big) // np.asarray(g)
    if np.any(slots > MAX_SERVERS):
        raise ValueError(f"gpus={gpus!r} is not allowed: more than {MAX_SERVERS:,} jobs at once")
    q = ggc(lam, s, slots if np.ndim(slots) else int(slots), service_cv=cs, arrival_cv=ca)
    offered = np.asarray(lam) * np.asarray(s) * np.asarray(g)
    scalar = all(np.ndim(x) == 0 for x in (lam, g, s, cs, ca, big))
    out = (big, slots, offered, offered / np.asarray(big, dtype=float), q.utilisation, q.stable, q.prob_wait,
           q.wait_mean_seconds, q.wait_p95_seconds)
    if scalar:
        out = (int(big), int(slots), *(float(np.asarray(x)) for x in out[2:5]), bool(out[5]),
               *(float(np.asarray(x)) for x in out[6:]))
    return JobQueue(*out)


def _slot_floor(a: float) -> int:
    """Fewest slots that keep a load of ``a`` erlangs stable (λ·S < c)."""
    return int(math.floor(a)) + 1


def slots_for_target(jobs_per_s, job_seconds, *, target_wait_seconds=None, statistic="mean",
                     target_utilisation=None, job_cv=1.0, arrival_cv=1.0, max_slots: int = 100_000) -> int:
    """Fewest slots c meeting a wait target (mean or p95) or keeping λ·S/c ≤ a target utilisation.

    Give exactly one of ``target_wait_seconds`` and ``target_utilisation``. Waits
    fall as c grows, so the first c that meets the target is the answer; the
    search tests blocks of c in one vectorized :func:`aisize.queueing.ggc` call.
    Raises ValueError when no c up to ``max_slots`` meets the target.
    """
    lam = checks.scalar("jobs_per_s", checks.positive("jobs_per_s", jobs_per_s))
    s = checks.scalar("job_seconds", checks.positive("job_seconds", job_seconds))
    cs = checks.scalar("job_cv", checks.non_negative("job_cv", job_cv, high=100.0))
    ca = checks.scalar("arrival_cv", checks.non_negative("arrival_cv", arrival_cv, high=100.0))
    cmax = checks.integer("max_slots", max_slots, high=MAX_SERVERS)
    if (target_wait_seconds is None) == (target_utilisation is None):
        raise ValueError("give exactly one of target_wait_seconds and target_utilisation")
    a = lam * s
    if target_utilisation is not None:
        u = checks.scalar("target_utilisation", checks.fraction("target_utilisation", target_utilisation))
        c = max(_slot_floor(a) if u >= 1.0 else int(math.ceil(a / u - 1e-12)), 1)
        c = c if a / c <= u and a < c else c + 1
        if c > cmax:
            raise ValueError(f"target_utilisation={u!r} needs {c:,} slots, more than max_slots={cmax:,}")
        return c
    target = checks.scalar("target_wait_seconds", checks.positive("target_wait_seconds", target_wait_seconds))
    checks.choice("statistic", statistic, STATISTICS)
    lo = _slot_floor(a)
    while lo <= cmax:
        c = np.arange(lo, min(lo + _SEARCH_BLOCK, cmax + 1))
        q = ggc(lam, s, c, service_cv=cs, arrival_cv=ca)
        wait = q.wait_mean_seconds if statistic == "mean" else q.wait_p95_seconds
        ok = np.asarray(wait) <= target
        if ok.any():
            return int(c[int(np.argmax(ok))])
        lo = int(c[-1]) + 1
    raise ValueError(f"target_wait_seconds={target!r} is not met by any partition up to {cmax:,} slots")


def wait_curve(jobs_per_s, gpus_per_job, job_seconds, gpus, *, job_cv=1.0, arrival_cv=1.0) -> pd.DataFrame:
    """Mean and p95 wait [h] and utilisation at each partition size in ``gpus`` (a wait-vs-GPUs curve).

    Partition sizes below one job are dropped; unstable sizes keep ``stable=False`` and inf waits.
    """
    sizes = np.unique(np.atleast_1d(checks.integer("gpus", gpus, high=10**9)))
    sizes = sizes[sizes >= int(gpus_per_job)]
    if sizes.size == 0:
        raise ValueError(f"gpus={gpus!r} is not allowed: no size holds one job of {gpus_per_job} GPUs")
    q = job_queue(jobs_per_s, gpus_per_job, job_seconds, sizes, job_cv=job_cv, arrival_cv=arrival_cv)
    return pd.DataFrame({"gpus": sizes, "slots": np.asarray(q.slots), "utilisation": np.asarray(q.utilisation),
                         "stable": np.asarray(q.stable), "wait_mean_hours": np.asarray(q.wait_mean_seconds) / 3600.0,
                         "wait_p95_hours": np.asarray(q.wait_p95_seconds) / 3600.0})


def _service(distribution: str, job_cv: float) -> tuple[str, float]:
    checks.choice("distribution", distribution, DISTRIBUTIONS)
    if distribution == "lognormal":
        return "lognormal", checks.scalar("job_cv", checks.positive("job_cv", job_cv, high=100.0))
    return distribution, (1.0 if distribution == "exponential" else 0.0)


def simulate_job_stream(jobs_per_s, gpus_per_job, job_seconds, gpus, *, distribution="exponential", job_cv=1.0,
                        jobs=100_000, seed=0) -> SimulationResult:
    """Simulate one equal-size job stream on G GPUs (simpy): FCFS on ⌊G/g⌋ slots.

    ``distribution`` is "exponential", "deterministic" or "lognormal" (with
    ``job_cv``). Equal sizes make the slot queue exact, so this is
    :func:`aisize.queueing.simulate` with c = ⌊G/g⌋ servers; mixed sizes need
    :func:`simulate_multi_gpu`.
    """
    g = checks.scalar("gpus_per_job", checks.integer("gpus_per_job", gpus_per_job, high=10**6))
    big = checks.scalar("gpus", checks.integer("gpus", gpus, high=10**9))
    if big < g:
        raise ValueError(f"gpus={gpus!r} is not allowed: fewer than gpus_per_job={gpus_per_job!r}")
    service, cv = _service(distribution, job_cv)
    return simulate(jobs_per_s, job_seconds, int(big // g), service=service, service_cv=cv, customers=jobs,
                    seed=seed)


@dataclass(frozen=True)
class MultiGpuSimulation:
    """Measured waits of a mixed-size job stream under FCFS with head-of-line blocking."""

    wait_mean_seconds: float
    wait_mean_ci95_seconds: float  # batch means, 20 batches
    wait_p95_seconds: float
    utilisation: float  # GPU-seconds used / (G x window)
    jobs: int


def simulate_multi_gpu(jobs_per_s, sizes, shares, job_seconds, gpus, *, distribution="exponential", job_cv=1.0,
                       jobs=50_000, seed=0) -> MultiGpuSimulation:
    """Simulate jobs of several GPU counts sharing G GPUs, first come first served (simpy).

    A job of ``sizes[i]`` GPUs (with probability ``shares[i]``) starts only when it is at the head of
    the queue and that many GPUs are free: the head blocks everyone behind it (no backfilling).
    This is the multi-server-per-job queue no closed form covers [1]; it shows where pooling the
    GPUs as one M/G/c under-predicts the wait.

    References
    ----------
    .. [1] Harchol-Balter, Queueing Systems 100, 2022 (the multiserver job model).
    .. [2] SimPy 4 documentation, https://simpy.readthedocs.io (Container).
    """
    lam = checks.scalar("jobs_per_s", checks.positive("jobs_per_s", jobs_per_s))
    s = checks.scalar("job_seconds", checks.positive("job_seconds", job_seconds))
    size = np.atleast_1d(checks.integer("sizes", sizes, high=10**6))
    share = np.atleast_1d(checks.fraction("shares", shares))
    big = checks.scalar("gpus", checks.integer("gpus", gpus, high=10**7))
    n = checks.scalar("jobs", checks.integer("jobs", jobs, low=1000, high=10**7))
    if size.shape != share.shape or abs(share.sum() - 1.0) > 1e-9:
        raise ValueError(f"shares={shares!r} is not allowed: one share per size, summing to 1")
    if size.max() > big:
        raise ValueError(f"sizes={sizes!r} is not allowed: a job larger than gpus={gpus!r} never starts")
    service, cv = _service(distribution, job_cv)
    rng = np.random.default_rng(checks.integer("seed", seed, low=0, high=2**63 - 1))
    warm = int(n) // 10
    total = warm + int(n)
    arrivals = np.cumsum(rng.exponential(1.0 / lam, total))
    need = rng.choice(size, total, p=share)
    if service == "exponential":
        run = rng.exponential(s, total)
    elif service == "deterministic":
        run = np.full(total, s)
    else:
        sigma2 = math.log1p(cv * cv)
        run = rng.lognormal(math.log(s) - sigma2 / 2.0, math.sqrt(sigma2), total)
    start = np.empty(total)
    env = simpy.Environment()
    free = simpy.Container(env, capacity=int(big), init=int(big))

    def job(i):
        yield env.timeout(run[i])
        yield free.put(int(need[i]))

    def dispatcher():
        for i in range(total):  # FCFS: job i starts only after every earlier job has started
            if env.now < arrivals[i]:
                yield env.timeout(arrivals[i] - env.now)
            yield free.get(int(need[i]))
            start[i] = env.now
            env.process(job(i))

    env.process(dispatcher())
    env.run()
    wait = (start - arrivals)[warm:]
    batches = wait[: (wait.size // 20) * 20].reshape(20, -1).mean(axis=1)
    t0, t1 = arrivals[warm], arrivals[-1]
    end = start + run
    used = (np.clip(np.minimum(end, t1) - np.maximum(start, t0), 0.0, None) * need).sum()
    return MultiGpuSimulation(float(wait.mean()), float(2.093 * batches.std(ddof=1) / math.sqrt(20)),
                              float(np.quantile(wait, 0.95)), float(used / (big * (t1 - t0))), int(wait.size))


__all__ = ["JobQueue", "MultiGpuSimulation", "job_queue", "simulate_job_stream", "simulate_multi_gpu",
           "slots_for_target", "wait_curve", "STATISTICS", "DISTRIBUTIONS"]
