"""Sizing: the fewest servers (replicas, storage units) meeting a response-time target.

One pass of the Erlang B recursion B_k = a·B_{k−1}/(k + a·B_{k−1}) walks c
upward for every configuration at once; each block of c values is tested in a
single vectorized call, so the cost is O(c) however many configurations are
sized, and c = 10,000 takes milliseconds. Response time falls monotonically
with c, so the first c that meets the target is the answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aisize import checks
from aisize.queueing.analytic import (MAX_SERVERS, _response_quantile, _response_tail, erlang_c_from_b,
                                      ggc)


@dataclass(frozen=True)
class SizingResult:
    """Smallest c meeting the target (floats/ints, or arrays of the input shape)."""

    servers: int | np.ndarray  # c [1]; 0 where infeasible
    feasible: bool | np.ndarray  # False: target ≤ the unloaded latency, or c > max_servers
    utilisation: float | np.ndarray  # λ·S/c at that c [1] (inf where infeasible)
    response_seconds: float | np.ndarray  # the targeted statistic at that c [s] (inf where infeasible)


def _b_rows(a: np.ndarray, b: np.ndarray, k0: int, rows: int, scalar: bool):
    """Erlang B for k = k0 .. k0+rows−1 given B_{k0−1} = b; returns (rows, n) array."""
    if scalar:
        x, av, out = float(b[0]), float(a[0]), []
        for k in range(k0, k0 + rows):
            x = av * x / (k + av * x)
            out.append(x)
        return np.asarray(out)[:, None]
    out = np.empty((rows, a.size))
    for i in range(rows):
        b = a * b / (k0 + i + a * b)
        out[i] = b
    return out


def servers_for_target(arrival_rate_per_s, service_seconds, target_seconds, percentile=0.95, *,
                       service_cv=1.0, arrival_cv=1.0, max_servers: int = 100_000) -> SizingResult:
    """Smallest number of servers c whose response-time percentile (or mean) meets a target.

    Parameters
    ----------
    arrival_rate_per_s : float or array
        Arrival rate λ [1/s], > 0.
    service_seconds : float or array
        Mean service time S [s], > 0.
    target_seconds : float or array
        Response-time target [s], > 0.
    percentile : float or None
        Percentile in (0, 1) of the response time to hold under the target
        (0.95: p95); None holds the mean.
    service_cv, arrival_cv : float or array
        Coefficients of variation [1] (1, 1: M/M/c, exact; else Allen–Cunneen).
    max_servers : int
        Largest c searched [1], ≤ 10⁶.

    A target at or below the unloaded latency (the service time's own
    percentile) cannot be met by any c: ``feasible=False``, ``servers=0``.

    References
    ----------
    .. [1] Gross et al., Fundamentals of Queueing Theory, 4th ed., 2008, sections
       2.3 and 2.6 (M/M/c, Erlang B recursion).
    .. [2] Allen, Probability, Statistics and Queueing Theory, 1990, section 6.4.
    """
    lam = checks.positive("arrival_rate_per_s", arrival_rate_per_s)
    s = checks.positive("service_seconds", service_seconds)
    target = checks.positive("target_seconds", target_seconds)
    if percentile is not None:
        percentile = checks.number("percentile", percentile, low=0.0, high=1.0,
                                   low_inclusive=False, high_inclusive=False)
    cs = checks.non_negative("service_cv", service_cv, high=1e3)
    ca = checks.non_negative("arrival_cv", arrival_cv, high=1e3)
    cmax = checks.integer("max_servers", max_servers, low=1, high=MAX_SERVERS)
    shape = np.broadcast(lam, s, target, cs, ca, percentile if percentile is not None else 0.5).shape
    lam, s, target, cs, ca = (np.broadcast_to(np.asarray(x, float), shape).ravel() for x in (lam, s, target, cs, ca))
    p = None if percentile is None else np.broadcast_to(np.asarray(percentile, float), shape).ravel()
    a = lam * s
    unloaded = s if p is None else _response_quantile(p, 0.0, 0.0, s, cs)
    feasible = target > unloaded * (1.0 + 1e-12)
    found = np.zeros(a.size, dtype=np.int64)
    todo = feasible.copy()
    scalar = a.size == 1
    rows = max(16, min(1024, 2**20 // a.size))
    b, k0 = np.ones(a.size), 1
    while todo.any() and k0 <= cmax:
        n = min(rows, cmax - k0 + 1)
        brows = _b_rows(a, b, k0, n, scalar)
        b = brows[-1].copy()
        k = np.arange(k0, k0 + n, dtype=float)[:, None]
        stable = k > a
        rho = np.where(stable, a / k, 0.5)
        pw = erlang_c_from_b(brows, rho)
        wq = pw * s / np.where(stable, k - a, 1.0) * (ca**2 + cs**2) / 2.0
        if p is None:
            ok = wq + s <= target
        else:
            ok = _response_tail(target, pw, wq, s, cs) <= 1.0 - p
        ok &= stable & todo
        hit = ok.any(axis=0)
        found = np.where(hit, k0 + np.argmax(ok, axis=0), found)
        todo &= ~hit
        k0 += n
    feasible &= found > 0
    c = np.where(feasible, found, 1)
    q = ggc(lam, s, c, service_cv=cs, arrival_cv=ca)
    if p is None:
        resp = q.response_mean_seconds
    else:
        wq_ok = np.where(feasible, q.wait_mean_seconds, 0.0)  # c = 1 stands in where infeasible
        resp = _response_quantile(p, np.where(feasible, q.prob_wait, 0.0), wq_ok, s, cs)
    out = (np.where(feasible, found, 0), feasible, np.where(feasible, a / c, math.inf),
           np.where(feasible, resp, math.inf))
    if len(shape) == 0:
        return SizingResult(int(out[0][0]), bool(out[1][0]), float(out[2][0]), float(out[3][0]))
    return SizingResult(*(x.reshape(shape) for x in out))
