"""Several job classes sharing one FCFS multi-server system (e.g. training reads, inference, checkpoints).

Approximation: under FCFS every class sees the same wait. The system is
treated as one M/G/c queue whose service time is the rate-weighted mixture of
the classes' service times — mean S̄ = Σ λᵢSᵢ/λ and second moment
E[S²] = Σ (λᵢ/λ)·Sᵢ²(1 + c_{s,i}²) — with the wait from
:func:`aisize.queueing.analytic.ggc` (Allen–Cunneen on the mixture's c_s).
Each class's response is that shared wait plus its own service time. For one
server this is exact for the means (Pollaczek–Khinchine with the mixture's
second moment, Kleinrock Vol. 1 eq. 5.65; Harchol-Balter 2013, ch. 23); for
c > 1 it is the Allen–Cunneen approximation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize import checks
from aisize.queueing.analytic import MAX_SERVERS, QueueResult, _response_quantile, _wait_quantile, ggc


@dataclass(frozen=True)
class JobClass:
    """One class of jobs: arrival rate, mean service time and its coefficient of variation."""

    name: str
    arrival_rate_per_s: float | np.ndarray  # λᵢ [1/s]
    service_seconds: float | np.ndarray  # Sᵢ [s]
    service_cv: float | np.ndarray = 1.0  # c_{s,i} [1]


@dataclass(frozen=True)
class MultiClassResult:
    """Aggregate figures and one QueueResult per class (same order as the classes given)."""

    aggregate: QueueResult
    names: tuple[str, ...]
    per_class: tuple[QueueResult, ...]

    def by_name(self, name: str) -> QueueResult:
        """The result of the class called ``name``."""
        checks.choice("name", name, self.names)
        return self.per_class[self.names.index(name)]


def _out(x, scalar):
    return np.asarray(x).item() if scalar else np.asarray(x)


def class_names(classes, kind) -> tuple:
    """The names of a non-empty sequence of ``kind`` records (job or priority classes), checked unique."""
    if not classes or not all(isinstance(k, kind) for k in classes):
        raise ValueError(f"classes={classes!r} is not allowed: must be a non-empty sequence of {kind.__name__}")
    names = tuple(k.name for k in classes)
    if len(set(names)) != len(names):
        raise ValueError(f"classes={names!r} is not allowed: class names must be unique")
    return names


def multiclass(classes, servers=1) -> MultiClassResult:
    """Per-class and aggregate response times of job classes sharing c FCFS servers.

    Parameters
    ----------
    classes : sequence of JobClass
        At least one class; names unique; rates [1/s] > 0, service times [s] > 0, cv [1] ≥ 0.
    servers : int or array
        Shared servers c [1].

    References
    ----------
    .. [1] Kleinrock, Queueing Systems Vol. 1, 1975, eq. 5.65 (P-K with E[S²]).
    .. [2] M. Harchol-Balter, Performance Modeling and Design of Computer Systems,
       Cambridge University Press 2013, ch. 23 (M/G/1 with a mixture of job sizes).
    .. [3] Allen, Probability, Statistics and Queueing Theory, 1990, section 6.4.
    """
    classes = tuple(classes)
    names = class_names(classes, JobClass)
    lam = [checks.positive(f"{k.name}.arrival_rate_per_s", k.arrival_rate_per_s) for k in classes]
    s = [checks.positive(f"{k.name}.service_seconds", k.service_seconds) for k in classes]
    cv = [checks.non_negative(f"{k.name}.service_cv", k.service_cv, high=1e3) for k in classes]
    c = checks.integer("servers", servers, low=1, high=MAX_SERVERS)
    scalar = all(np.ndim(x) == 0 for x in (*lam, *s, *cv, c))
    lam_total = sum(lam)
    mean = sum(li * si for li, si in zip(lam, s)) / lam_total
    second = sum(li * si**2 * (1.0 + ci**2) for li, si, ci in zip(lam, s, cv)) / lam_total
    cv_mix = np.sqrt(np.maximum(second / mean**2 - 1.0, 0.0))
    agg = ggc(lam_total, mean, c, service_cv=cv_mix)
    stable = np.asarray(agg.stable)
    wq = np.asarray(agg.wait_mean_seconds)
    pw = np.asarray(agg.prob_wait)
    wq_ok = np.where(stable, wq, 0.0)  # compute on finite values, overwrite with inf below
    pct = np.asarray((0.50, 0.95, 0.99)).reshape((-1,) + (1,) * stable.ndim)
    per = []
    for li, si, ci in zip(lam, s, cv):
        si_b = np.broadcast_to(si, stable.shape)
        rq = _response_quantile(pct, pw, wq_ok, si_b, np.broadcast_to(ci, stable.shape))
        wqq = _wait_quantile(pct, pw, wq_ok)
        fin = {
            "utilisation": li * si / c, "stable": stable, "prob_wait": pw,
            "wait_mean_seconds": wq, "response_mean_seconds": wq + si_b,
            "queue_length_mean": li * wq, "in_system_mean": li * (wq + si_b),
        }
        for i, tag in enumerate(("p50", "p95", "p99")):
            fin[f"wait_{tag}_seconds"] = np.where(stable, wqq[i], np.inf)
            fin[f"response_{tag}_seconds"] = np.where(stable, rq[i], np.inf)
        per.append(QueueResult(**{k: _out(v, scalar) for k, v in fin.items()}))
    return MultiClassResult(agg, names, tuple(per))
