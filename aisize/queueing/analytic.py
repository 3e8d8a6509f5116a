"""Analytic queues: M/M/1, M/M/c, M/G/1, M/D/1 and G/G/c (Allen–Cunneen).

All five are one model, :func:`ggc`: the M/M/c waiting time (Erlang C) scaled
by the Allen–Cunneen factor (c_a² + c_s²)/2. That factor is 1 for M/M/c (exact)
and, with c = 1 and Poisson arrivals, turns the formula into Pollaczek–Khinchine
(exact mean for M/G/1 and M/D/1). Percentiles come from
:mod:`aisize.queueing.distribution` (exact for M/M/c, approximate otherwise).

Inputs broadcast against each other; outputs are floats for scalar inputs and
arrays of the broadcast shape otherwise. Utilisation ρ = λ·S/c ≥ 1 gives
``stable=False`` with infinite times and lengths, never NaN or negative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aisize import checks
from aisize.queueing.distribution import PERCENTILES, response_quantile, wait_quantile

# c above this is a typo, not a system (the recursion costs O(c)).
MAX_SERVERS = 10**6


@dataclass(frozen=True)
class QueueResult:
    """Steady-state figures of a queue (floats, or arrays of the input shape)."""

    utilisation: float | np.ndarray  # offered load per server, ρ = λ·S/c [1]
    stable: bool | np.ndarray  # ρ < 1; when False every time and length is inf
    wait_mean_seconds: float | np.ndarray  # time queued before service, W_q [s]
    response_mean_seconds: float | np.ndarray  # W_q + S [s]
    wait_p50_seconds: float | np.ndarray
    wait_p95_seconds: float | np.ndarray
    wait_p99_seconds: float | np.ndarray
    response_p50_seconds: float | np.ndarray
    response_p95_seconds: float | np.ndarray
    response_p99_seconds: float | np.ndarray
    queue_length_mean: float | np.ndarray  # jobs waiting, L_q = λ·W_q [1]
    in_system_mean: float | np.ndarray  # jobs waiting or in service, L = λ·W [1]
    prob_wait: float | np.ndarray  # P(W_q > 0) [1]


def _shape_out(x: np.ndarray, scalar: bool):
    return x.item() if scalar else x


def erlang_b_scalar(servers: int, offered_erlangs: float) -> float:
    """Erlang B by the stable recursion in plain floats (fast path for scalars)."""
    b = 1.0
    for k in range(1, servers + 1):
        b = offered_erlangs * b / (k + offered_erlangs * b)
    return b


def _erlang_b_array(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    b = np.ones(np.broadcast(c, a).shape)
    for k in range(1, int(np.max(c)) + 1):
        # each element stops at its own c; B stays in (0, 1], so nothing overflows
        b = np.where(k <= c, a * b / (k + a * b), b)
    return b


def erlang_b(servers, offered_erlangs):
    """Blocking probability of an M/M/c/c loss system (Erlang B).

    Parameters
    ----------
    servers : int or array
        Number of servers c [1], 1 ≤ c ≤ 10⁶.
    offered_erlangs : float or array
        Offered traffic a = λ·S [erlang], > 0.

    Uses the recursion B₀ = 1, B_k = a·B_{k−1}/(k + a·B_{k−1}), which never
    forms a^c or c! and so works for c in the thousands; O(c) steps.

    References
    ----------
    .. [1] D. Gross, J. Shortle, J. Thompson, C. Harris, Fundamentals of
       Queueing Theory, 4th ed., Wiley 2008, section 2.6 (Erlang B recursion).
    """
    c = checks.integer("servers", servers, low=1, high=MAX_SERVERS)
    a = checks.positive("offered_erlangs", offered_erlangs)
    if np.ndim(c) == 0 and np.ndim(a) == 0:
        return erlang_b_scalar(c, a)
    return _erlang_b_array(np.asarray(c), np.asarray(a))


def erlang_c_from_b(b, rho):
    """Erlang C from Erlang B: C = B / (1 − ρ(1 − B)), for ρ < 1."""
    return b / (1.0 - rho * (1.0 - b))


def erlang_c(servers, offered_erlangs):
    """Probability that an arrival waits in an M/M/c queue (Erlang C).

    Parameters
    ----------
    servers : int or array
        Number of servers c [1].
    offered_erlangs : float or array
        Offered traffic a = λ·S [erlang]; must be < c (ρ = a/c < 1).

    Returns C = B/(1 − ρ(1 − B)) with B from :func:`erlang_b`.

    References
    ----------
    .. [1] Gross et al., Fundamentals of Queueing Theory, 4th ed., 2008,
       eq. 2.31 and section 2.6 (relation between Erlang B and C).
    """
    b = erlang_b(servers, offered_erlangs)
    rho = np.asarray(offered_erlangs, dtype=float) / np.asarray(servers, dtype=float)
    if np.any(rho >= 1):
        checks._fail("offered_erlangs", float(np.asarray(offered_erlangs).flat[0]),
                     "less than servers (utilisation < 1) for Erlang C")
    c_ = erlang_c_from_b(b, rho)
    return float(c_) if np.ndim(c_) == 0 else c_


def ggc(arrival_rate_per_s, service_seconds, servers=1, *, service_cv=1.0, arrival_cv=1.0) -> QueueResult:
    """G/G/c queue by the Allen–Cunneen approximation (exact for M/M/c).

    Parameters
    ----------
    arrival_rate_per_s : float or array
        Mean arrival rate λ [1/s], > 0.
    service_seconds : float or array
        Mean service time S = 1/μ [s], > 0.
    servers : int or array
        Parallel servers c [1], 1 ≤ c ≤ 10⁶.
    service_cv : float or array
        Coefficient of variation of the service time c_s [1], ≥ 0 (1: exponential, 0: deterministic).
    arrival_cv : float or array
        Coefficient of variation of the inter-arrival time c_a [1], ≥ 0 (1: Poisson).

    W_q = C(c, a)/(c·μ − λ) · (c_a² + c_s²)/2, with C the Erlang C probability;
    P(wait) is taken as C; percentiles as in :mod:`aisize.queueing.distribution`.

    References
    ----------
    .. [1] A. O. Allen, Probability, Statistics and Queueing Theory, 2nd ed.,
       Academic Press 1990, section 6.4 (Allen–Cunneen approximation).
    .. [2] L. Kleinrock, Queueing Systems Vol. 1, Wiley 1975, eq. 3.42 (M/M/c)
       and eq. 5.65 (Pollaczek–Khinchine mean value formula).
    """
    lam = checks.positive("arrival_rate_per_s", arrival_rate_per_s)
    s = checks.positive("service_seconds", service_seconds)
    c = checks.integer("servers", servers, low=1, high=MAX_SERVERS)
    cs = checks.non_negative("service_cv", service_cv, high=1e3)
    ca = checks.non_negative("arrival_cv", arrival_cv, high=1e3)
    scalar = all(np.ndim(x) == 0 for x in (lam, s, c, cs, ca))
    lam, s, c, cs, ca = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (lam, s, c, cs, ca)))
    a = lam * s
    rho = a / c
    stable = rho < 1.0
    # compute on a harmless load where unstable, then overwrite with inf
    a_ok = np.where(stable, a, 0.5 * c)
    rho_ok = a_ok / c
    if scalar:
        b = np.asarray(erlang_b_scalar(int(c), float(a_ok)))
    else:
        b = _erlang_b_array(c, a_ok)
    p_wait = erlang_c_from_b(b, rho_ok)
    wait_mean = p_wait * s / (c - a_ok) * (ca**2 + cs**2) / 2.0
    out = {"utilisation": rho, "stable": stable, "prob_wait": np.where(stable, p_wait, 1.0)}
    inf = np.full(rho.shape, math.inf)
    out["wait_mean_seconds"] = np.where(stable, wait_mean, inf)
    out["response_mean_seconds"] = np.where(stable, wait_mean + s, inf)
    out["queue_length_mean"] = np.where(stable, lam * wait_mean, inf)
    out["in_system_mean"] = np.where(stable, lam * (wait_mean + s), inf)
    p = np.asarray(PERCENTILES).reshape((-1,) + (1,) * rho.ndim)
    wq = wait_quantile(p, p_wait, wait_mean)
    rq = response_quantile(p, p_wait, wait_mean, s, cs)
    for i, name in enumerate(("p50", "p95", "p99")):
        out[f"wait_{name}_seconds"] = np.where(stable, wq[i], inf)
        out[f"response_{name}_seconds"] = np.where(stable, rq[i], inf)
    return QueueResult(**{k: _shape_out(np.asarray(v), scalar) for k, v in out.items()})


def mmc(arrival_rate_per_s, service_seconds, servers) -> QueueResult:
    """M/M/c queue (exact): Poisson arrivals, exponential service, c servers.

    Parameters as :func:`ggc`. Response percentiles use the exact
    distribution of W_q + S (see :mod:`aisize.queueing.distribution`).

    References
    ----------
    .. [1] Kleinrock, Queueing Systems Vol. 1, 1975, section 3.5, eq. 3.39–3.42.
    .. [2] Gross et al., Fundamentals of Queueing Theory, 4th ed., 2008, eq. 2.40
       (P(W_q > t) = C·e^{−(cμ−λ)t}).
    """
    return ggc(arrival_rate_per_s, service_seconds, servers)


def mm1(arrival_rate_per_s, service_seconds) -> QueueResult:
    """M/M/1 queue (exact): W = 1/(μ − λ), response time exponential with rate μ − λ.

    References
    ----------
    .. [1] Kleinrock, Queueing Systems Vol. 1, 1975, section 3.2, eq. 3.26.
    """
    return ggc(arrival_rate_per_s, service_seconds, 1)


def mg1(arrival_rate_per_s, service_seconds, service_cv) -> QueueResult:
    """M/G/1 queue: Pollaczek–Khinchine W_q = ρ(1 + c_s²)/(2(1 − ρ))·S (exact mean).

    Percentiles are approximate (exponential wait tail, two-moment service fit).

    References
    ----------
    .. [1] Kleinrock, Queueing Systems Vol. 1, 1975, eq. 5.65.
    """
    return ggc(arrival_rate_per_s, service_seconds, 1, service_cv=service_cv)


def md1(arrival_rate_per_s, service_seconds) -> QueueResult:
    """M/D/1 queue (deterministic service): waits half as long as M/M/1 (exact mean).

    References
    ----------
    .. [1] Kleinrock, Queueing Systems Vol. 1, 1975, eq. 5.65 with c_s = 0.
    """
    return ggc(arrival_rate_per_s, service_seconds, 1, service_cv=0.0)
