"""Priority classes sharing c servers: mean waits under non-preemptive and preemptive-resume priority.

Classes are listed highest priority first. ρ_i = λ_i·S_i/c is a class's load, σ_k = ρ_1 + … + ρ_k
the load of class k and every class above it.

- **Non-preemptive** (a job in service finishes; the next job is the highest class waiting).
  One server, any service distribution (Cobham 1954):  W_k = W_0 / ((1 − σ_{k−1})(1 − σ_k)), with
  W_0 = Σ_i λ_i·E[S_i²]/2 the mean residual work in service. For c servers this module writes
  W_k = W_FCFS·(1 − σ) / ((1 − σ_{k−1})(1 − σ_k)), W_FCFS the mean wait of the same traffic
  first-come first-served (:func:`aisize.queueing.ggc`, Allen–Cunneen on the class mixture): exact
  for one server (P-K gives W_FCFS·(1 − σ) = W_0) and for M/M/c with equal service rates
  (Kella & Yechiali 1985), the Bondi–Buzen scaling otherwise.
- **Preemptive resume** (a higher class arrival takes a server from the lowest class in
  service, which resumes later). One server (Kleinrock Vol. 2, eq. 3.65):
  T_k = S_k/(1 − σ_{k−1}) + R_k/((1 − σ_{k−1})(1 − σ_k)), R_k = Σ_{i≤k} λ_i·E[S_i²]/2; lower
  classes never delay higher ones. c servers: classes 1..k together are unaffected by the rest,
  so their rate-weighted wait Q_k = Σ_{i≤k} λ_i·W_i is that of classes 1..k alone; it is taken as
  Λ_k·W_FCFS(1..k on c servers) times the ratio Q_k / (Λ_k·W_FCFS) of the same classes on one
  c-times faster server (exact by the formula above), and W_k = (Q_k − Q_{k−1})/λ_k. Exact for
  one server and for M/M/c with equal service rates (the ratio is 1: the count of classes 1..k
  is then an M/M/c queue whatever the order), an approximation otherwise.

**Unstable classes.** Class k is unstable when σ_k ≥ 1: its queue grows without bound (wait
``inf``, ``stable`` False), while the classes above it may still be stable. Under non-preemptive
priority a saturated system still delays the stable classes by the job in service: the servers
are then always busy, class i (stable) a share ρ_i of the time and the first unstable class the
rest, and W_0 becomes Σ_i f_i·E[S_i²]/(2·E[S_i])/c over those time shares f_i — the same
residual a Poisson arrival sees (PASTA), and the limit of the formula above as σ → 1.

References
----------
.. [1] A. Cobham, "Priority assignment in waiting line problems", Operations Research 2(1), 1954.
.. [2] L. Kleinrock, Queueing Systems Vol. 2: Computer Applications, Wiley 1976, sec. 3.7
   (eqs. 3.31 non-preemptive, 3.65 preemptive resume).
.. [3] M. Harchol-Balter, Performance Modeling and Design of Computer Systems, Cambridge 2013,
   ch. 31-32 (M/G/1 priority; the M/M/k argument for classes 1..k).
.. [4] O. Kella, U. Yechiali, "Waiting times in the non-preemptive priority M/M/c queue",
   Stochastic Models 1(2), 1985.
.. [5] A. B. Bondi, J. P. Buzen, "The response times of priority classes under preemptive
   resume in M/G/m queues", ACM SIGMETRICS 1984.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize import checks
from aisize.queueing.analytic import MAX_SERVERS, ggc
from aisize.queueing.multiclass import class_names


@dataclass(frozen=True)
class PriorityClass:
    """One class: its rate, mean service time and the coefficient of variation of service."""

    name: str
    arrival_rate_per_s: float  # λ [1/s]
    service_seconds: float  # S [s]
    service_cv: float = 1.0  # c_s [1] (1: exponential, 0: deterministic)


@dataclass(frozen=True)
class PriorityResult:
    """Mean wait and response of each class, highest priority first [s]; ``inf`` where unstable."""

    names: tuple[str, ...]
    preemptive: bool
    servers: int
    utilisation: tuple[float, ...]  # ρ_k of each class alone
    cumulative_utilisation: tuple[float, ...]  # σ_k: class k and every class above it
    class_stable: tuple[bool, ...]  # per class: False where its queue grows without bound
    wait_mean_seconds: tuple[float, ...]  # queueing (and, preemptive, time preempted) beyond S_k
    response_mean_seconds: tuple[float, ...]  # wait + service

    def by_name(self, name: str) -> dict:
        """The figures of the class called ``name``."""
        checks.choice("name", name, self.names)
        i = self.names.index(name)
        return {"utilisation": self.utilisation[i], "stable": self.class_stable[i],
                "wait_mean_seconds": self.wait_mean_seconds[i], "response_mean_seconds": self.response_mean_seconds[i]}

    @property
    def unstable_classes(self) -> tuple[str, ...]:
        return tuple(n for n, ok in zip(self.names, self.class_stable) if not ok)

    @property
    def stable(self) -> bool:
        """Every class is stable (else some waits are unbounded: see ``class_stable``)."""
        return all(self.class_stable)


def _checked(classes):
    classes = tuple(classes)
    names = class_names(classes, PriorityClass)
    lam = np.array([checks.scalar(f"{k.name}.arrival_rate_per_s", checks.positive(
        f"{k.name}.arrival_rate_per_s", k.arrival_rate_per_s)) for k in classes])
    s = np.array([checks.scalar(f"{k.name}.service_seconds", checks.positive(
        f"{k.name}.service_seconds", k.service_seconds)) for k in classes])
    cv = np.array([checks.scalar(f"{k.name}.service_cv", checks.non_negative(
        f"{k.name}.service_cv", k.service_cv, high=100.0)) for k in classes])
    return names, lam, s, cv


def _fcfs_response(lam, s, cv, c) -> float:
    """Mean response of the mixture of classes (FCFS, M/G/c by Allen–Cunneen) [s]; inf when unstable."""
    total = lam.sum()
    mean = float((lam * s).sum() / total)
    second = float((lam * s**2 * (1.0 + cv**2)).sum() / total)
    cv_mix = np.sqrt(max(second / mean**2 - 1.0, 0.0))
    q = ggc(float(total), mean, c, service_cv=float(cv_mix))
    return float(q.response_mean_seconds) if bool(q.stable) else np.inf


def _non_preemptive(lam, s, cv, c, rho, sigma):
    k_unstable = int(np.argmax(sigma >= 1.0)) if np.any(sigma >= 1.0) else None
    if k_unstable is None:
        total = lam.sum()
        mean = float((lam * s).sum() / total)
        second = float((lam * s**2 * (1.0 + cv**2)).sum() / total)
        cv_mix = np.sqrt(max(second / mean**2 - 1.0, 0.0))
        q = ggc(float(total), mean, c, service_cv=float(cv_mix))
        base = float(q.wait_mean_seconds) * (1.0 - sigma[-1])
    else:  # saturated: busy all the time, stable classes their share, the first unstable one the rest
        share = np.where(np.arange(rho.size) < k_unstable, rho, 0.0)
        share[k_unstable] = 1.0 - (sigma[k_unstable - 1] if k_unstable else 0.0)
        base = float((share * s * (1.0 + cv**2) / 2.0).sum()) / c
    before = np.concatenate(([0.0], sigma[:-1]))
    ok = sigma < 1.0
    wait = np.where(ok, base / np.maximum((1.0 - before) * (1.0 - sigma), 1e-300), np.inf)
    return wait


def _mg1_preemptive_wait(lam, s, cv, sigma):
    """Waits beyond service of preemptive-resume M/G/1 (Kleinrock eq. 3.65) [s]; inf where σ_k ≥ 1."""
    before = np.concatenate(([0.0], sigma[:-1]))
    r = np.cumsum(lam * s**2 * (1.0 + cv**2) / 2.0)
    resp = s / np.maximum(1.0 - before, 1e-300) + r / np.maximum((1.0 - before) * (1.0 - sigma), 1e-300)
    return np.where(sigma < 1.0, resp - s, np.inf)


def _preemptive(lam, s, cv, c, sigma):
    if c == 1:
        return _mg1_preemptive_wait(lam, s, cv, sigma)
    # classes 1..k are untouched by the rest: their rate-weighted wait is that of FCFS on c servers,
    # times the ratio priority/FCFS of the same traffic on one c-times faster server (1 for equal
    # exponential classes, where the count is an M/M/c queue whatever the order)
    fast = _mg1_preemptive_wait(lam, s / c, cv, sigma)
    wait = np.full(lam.size, np.inf)
    prev = 0.0  # Σ_{i<k} λ_i W_i
    for k in range(lam.size):
        if not sigma[k] < 1.0:
            break
        part = slice(0, k + 1)
        total = lam[part].sum()
        mean_s = float((lam[part] * s[part]).sum() / total)
        fcfs_c = _fcfs_response(lam[part], s[part], cv[part], c) - mean_s
        fcfs_fast = _fcfs_response(lam[part], s[part] / c, cv[part], 1) - mean_s / c
        ratio = float((lam[part] * fast[part]).sum()) / (total * fcfs_fast) if fcfs_fast > 0 else 1.0
        agg = total * fcfs_c * ratio
        wait[k] = max((agg - prev) / lam[k], 0.0)
        prev = agg
    return wait


def priority_queue(classes, servers=1, *, preemptive=False) -> PriorityResult:
    """Mean waits of priority classes (highest first) sharing ``servers`` servers.

    Parameters
    ----------
    classes : sequence of :class:`PriorityClass`, highest priority first; names unique,
        rates [1/s] > 0, service times [s] > 0, cv ≥ 0
    servers : servers c [1]
    preemptive : False: non-preemptive priority; True: preemptive resume

    Returns
    -------
    :class:`PriorityResult`; a class with σ_k ≥ 1 is unstable (``inf`` wait), the classes above
    it keep finite waits.
    """
    names, lam, s, cv = _checked(classes)
    c = int(checks.scalar("servers", checks.integer("servers", servers, low=1, high=MAX_SERVERS)))
    pre = checks.flag("preemptive", preemptive)
    rho = lam * s / c
    sigma = np.cumsum(rho)
    wait = _preemptive(lam, s, cv, c, sigma) if pre else _non_preemptive(lam, s, cv, c, rho, sigma)
    resp = wait + s
    ok = np.isfinite(wait)
    return PriorityResult(names, pre, c, tuple(float(x) for x in rho), tuple(float(x) for x in sigma),
                          tuple(bool(x) for x in ok), tuple(float(x) for x in wait), tuple(float(x) for x in resp))
