"""Analytic queues: M/M/1, M/M/c, M/G/1, M/D/1 and G/G/c (Allen–Cunneen).

All five are one model, :func:`ggc`: the M/M/c waiting time (Erlang C) scaled
by the Allen–Cunneen factor (c_a² + c_s²)/2. That factor is 1 for M/M/c (exact)
and, with c = 1 and Poisson arrivals, turns the formula into Pollaczek–Khinchine
(exact mean for M/G/1 and M/D/1). Percentiles come from
the distribution described at :func:`response_tail` (exact for M/M/c,
approximate otherwise).

Inputs broadcast against each other; outputs are floats for scalar inputs and
arrays of the broadcast shape otherwise. Utilisation ρ = λ·S/c ≥ 1 gives
``stable=False`` with infinite times and lengths, never NaN or negative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from aisize import checks

# c above this is a typo, not a system (the recursion costs O(c)).
MAX_SERVERS = 10**6

# Percentiles reported in QueueResult.
PERCENTILES = (0.50, 0.95, 0.99)
_MAX_ROOT_STEPS = 60  # Illinois steps; it usually stops after 6-12
_CV_DETERMINISTIC = 1e-6  # service cv below this is treated as deterministic (avoids 1/cv overflow)


def _service_phases(s, cs):
    """Two-moment fit of the service time: S = d + Y, Y a mixture of exponentials.

    c_s ≤ 1: d = S(1 − c_s), Y exponential with mean S·c_s (c_s = 0: Y = 0,
    deterministic; c_s = 1: exponential, exact). c_s > 1: d = 0, Y a
    two-phase hyperexponential with balanced means. Returns
    (d, w1, r1, w2, r2): phase weights and rates; the weight left over,
    1 − w1 − w2, is an atom of Y at zero.
    """
    low = cs <= 1.0
    cs2 = cs * cs
    p1 = 0.5 * (1.0 + np.sqrt(np.maximum(cs2 - 1.0, 0.0) / (cs2 + 1.0)))
    d = np.where(low, s * (1.0 - np.where(cs > _CV_DETERMINISTIC, np.minimum(cs, 1.0), 0.0)), 0.0)
    has_exp = cs > _CV_DETERMINISTIC
    w1 = np.where(low, np.where(has_exp, 1.0, 0.0), p1)
    r1 = np.where(low, 1.0 / (s * np.where(has_exp, cs, 1.0)), 2.0 * p1 / s)
    w2 = np.where(low, 0.0, 1.0 - p1)
    r2 = np.where(low, r1, 2.0 * (1.0 - p1) / s)
    return d, w1, r1, w2, r2


def _wait_rate(p_wait, wait_mean):
    """Rate θ of the exponential conditional wait, θ = P(wait)/W_q (0 wait → no wait)."""
    waits = (p_wait > 0) & (wait_mean > 0)
    pw = np.where(waits, p_wait, 0.0)
    return pw, np.where(waits, pw / np.where(waits, wait_mean, 1.0), 1.0)


def _sum_exp_tail(lo, hi, x):
    """P(Exp(lo) + Exp(hi) > x), stable for lo ≈ hi (hypoexponential tail)."""
    m, big = np.minimum(lo, hi), np.maximum(lo, hi)
    delta = big - m
    pos = delta > 0
    frac = np.where(pos, -np.expm1(-delta * x) / np.where(pos, delta, 1.0), x)
    return np.exp(-m * x) * (1.0 + m * frac)


def _tail_x(x, pw, theta, w1, r1, w2, r2):
    """P(W_q + Y > x) for x ≥ 0, Y the exponential part of the service fit."""
    w0 = 1.0 - w1 - w2
    no_wait = w1 * np.exp(-r1 * x) + w2 * np.exp(-r2 * x)  # Y's atom at 0 is not > x
    waited = w0 * np.exp(-theta * x) + w1 * _sum_exp_tail(theta, r1, x) + w2 * _sum_exp_tail(theta, r2, x)
    return (1.0 - pw) * no_wait + pw * waited


def response_tail(t, p_wait, wait_mean, service_seconds, service_cv):
    """P(W_q + S > t) [1] for the queue's response-time distribution.

    The wait is 0 with probability 1 − P(wait), else exponential with mean
    W_q/P(wait) — exact for M/M/c (P(W_q > t) = C·e^{−(cμ−λ)t}), the
    standard exponential (heavy-traffic) approximation otherwise. The service
    time is the two-moment fit of :func:`_service_phases`. W_q + S is then a
    mixture of exponential and hypoexponential terms whose tail is explicit;
    for M/M/1 it reduces to exponential with rate μ − λ.

    References
    ----------
    .. [1] Gross et al., Fundamentals of Queueing Theory, 4th ed., 2008, eq. 2.40.
    .. [2] J. F. C. Kingman, "The single server queue in heavy traffic",
       Proc. Cambridge Phil. Soc. 57, 1961 (exponential wait in heavy traffic).
    .. [3] W. Whitt, "Approximating a point process by a renewal process",
       Oper. Res. 30, 1982 (balanced-means H2 fit).
    """
    t = checks.non_negative("t", t)
    return _response_tail(t, *_checked_wait(p_wait, wait_mean), *_checked_service(service_seconds, service_cv))


def _checked_wait(p_wait, wait_mean):
    return checks.fraction("p_wait", p_wait, allow_zero=True), checks.non_negative("wait_mean", wait_mean)


def _checked_service(service_seconds, service_cv):
    return (checks.positive("service_seconds", service_seconds),
            checks.non_negative("service_cv", service_cv, high=1e3))


def _response_tail(t, p_wait, wait_mean, service_seconds, service_cv):
    """:func:`response_tail` on checked inputs (the queue models call this directly)."""
    d, w1, r1, w2, r2 = _service_phases(service_seconds, service_cv)
    pw, theta = _wait_rate(p_wait, wait_mean)
    tail = _tail_x(np.maximum(t - d, 0.0), pw, theta, w1, r1, w2, r2)
    return np.where(t < d, 1.0, tail)


def wait_quantile(p, p_wait, wait_mean):
    """p-quantile of W_q [s]: ln(P(wait)/(1 − p))/θ when P(wait) > 1 − p, else 0."""
    p = checks.number("p", p, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    return _wait_quantile(p, *_checked_wait(p_wait, wait_mean))


def _wait_quantile(p, p_wait, wait_mean):
    """:func:`wait_quantile` on checked inputs."""
    pw, theta = _wait_rate(p_wait, wait_mean)
    waits = pw > 1.0 - p
    return np.where(waits, np.log(np.where(waits, pw, 1.0) / (1.0 - p)) / theta, 0.0)


def response_quantile(p, p_wait, wait_mean, service_seconds, service_cv):
    """p-quantile of W_q + S [s], solving :func:`response_tail` = 1 − p numerically.

    Vectorized Illinois (modified regula falsi) on the log of the tail, which
    is nearly linear in t, so it converges in a handful of steps. The bracket
    [d, d + (2·ln(1/(1 − p)) + 3)/r_min] holds the quantile because W_q + Y is
    stochastically smaller than a sum of two exponentials at the smallest
    rate r_min, whose tail (1 + r·x)e^{−r·x} is below 1 − p there.
    """
    p = checks.number("p", p, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    return _response_quantile(p, *_checked_wait(p_wait, wait_mean),
                              *_checked_service(service_seconds, service_cv))


def _response_quantile(p, p_wait, wait_mean, service_seconds, service_cv):
    """:func:`response_quantile` on checked inputs."""
    d, w1, r1, w2, r2 = _service_phases(service_seconds, service_cv)
    pw, theta = _wait_rate(p_wait, wait_mean)
    rates = [np.where(w > 0, r, np.inf) for w, r in ((w1, r1), (w2, r2))]
    # A wait rarer than (1 − p)/2 stays out of the bracket: the service alone passes its bound with
    # probability ≤ (1 − p)/2, so W_q + Y does with ≤ 1 − p. Keeps hi finite when θ underflows.
    rare = pw <= 0.5 * (1.0 - p)
    r_min = np.minimum(np.minimum(*rates), np.where((pw > 0) & ~rare, theta, np.inf))
    r_min = np.where(np.isfinite(r_min), r_min, 1.0 / service_seconds)
    share = np.where(rare & (pw > 0), 0.5 * (1.0 - p), 1.0 - p)
    log_target = np.log(1.0 - p)

    def g(x):
        return np.log(np.maximum(_tail_x(x, pw, theta, w1, r1, w2, r2), 1e-300)) - log_target

    shape = np.broadcast(p, d, pw).shape
    lo = np.zeros(shape)
    hi = np.broadcast_to((2.0 * np.log(1.0 / share) + 3.0) / r_min, shape).copy()
    g_lo, g_hi = np.broadcast_to(g(lo), shape).copy(), np.broadcast_to(g(hi), shape).copy()
    at_zero = g_lo <= 0  # an atom at x = 0 already covers p (e.g. deterministic, rarely waits)
    g_lo = np.where(at_zero, 1.0, g_lo)
    side = np.zeros(shape)  # +1: lo moved last, −1: hi moved last
    x = hi
    for _ in range(_MAX_ROOT_STEPS):
        x = hi - g_hi * (hi - lo) / (g_hi - g_lo)
        gx = g(x)
        up = gx > 0
        lo, hi = np.where(up, x, lo), np.where(up, hi, x)
        g_hi = np.where(up & (side > 0), 0.5 * g_hi, np.where(up, g_hi, gx))
        g_lo = np.where(~up & (side < 0), 0.5 * g_lo, np.where(up, gx, g_lo))
        side = np.where(up, 1.0, -1.0)
        if np.all(np.abs(gx) < 1e-12) or np.all(hi - lo <= 1e-14 * hi):
            break
    return d + np.where(at_zero, 0.0, x)


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


def _erlang_b_recursion(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    b = np.ones(np.broadcast(c, a).shape)
    for k in range(1, int(np.max(c)) + 1):
        # each element stops at its own c; B stays in (0, 1], so nothing overflows
        b = np.where(k <= c, a * b / (k + a * b), b)
    return b


_LOG_FACTORIALS = np.zeros(1)  # ln k! for k = 0, 1, ...; grown on demand


def _log_factorials(n: int) -> np.ndarray:
    global _LOG_FACTORIALS
    if _LOG_FACTORIALS.size <= n:
        _LOG_FACTORIALS = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1.0, 2 * n + 2)))))
    return _LOG_FACTORIALS


def _poisson_window(c: np.ndarray, a: np.ndarray):
    """First and last k whose term a^k/k! matters: ±(10√k* + 10) around the peak k* = min(a, c)
    (terms beyond lie over e^-50 below the largest, so the sum is exact to double precision)."""
    peak = np.minimum(np.floor(a), c)
    half = np.ceil(10.0 * np.sqrt(peak) + 10.0)
    return np.maximum(peak - half, 0).astype(np.int64), np.minimum(peak + half, c).astype(np.int64)


def _erlang_b_logsum(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    """B = (a^c/c!) / sum_k a^k/k!, evaluated as a log-sum-exp over the terms that matter.

    Where c lies beyond a + 10√a + 30 the Poisson(a) mass above c is below 1e-20, so the sum over
    k <= c is the whole series, e^a: only the other elements (loads near or over c) sum their terms."""
    c, a = np.broadcast_arrays(np.asarray(c, dtype=np.int64), np.asarray(a, dtype=float))
    shape, c, a = c.shape, c.ravel(), a.ravel()
    log_fact = _log_factorials(int(c.max()))
    log_a = np.log(a)
    log_sum = a.copy()
    near = np.flatnonzero(c <= a + 10.0 * np.sqrt(a) + 30.0)
    if near.size:
        cn, log_an = c[near], log_a[near, None]
        lo, hi = _poisson_window(cn, a[near])
        k = lo[:, None] + np.arange(int((hi - lo).max()) + 1)
        terms = np.where(k <= hi[:, None], k * log_an - log_fact[np.minimum(k, cn[:, None])], -np.inf)
        top = terms.max(axis=1)
        log_sum[near] = top + np.log(np.exp(terms - top[:, None]).sum(axis=1))
    return np.exp(c * log_a - log_fact[c] - log_sum).reshape(shape)


def _erlang_b_array(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Erlang B for arrays by whichever evaluation is cheaper: the recursion costs one numpy
    step per server (slow for thousands of servers), the log-sum one row of about 20√a terms
    per element (slow for long arrays). Both agree to 1e-11 (tests/test_queueing_analytic.py)."""
    n = np.broadcast(c, a).size
    cmax = float(np.max(c))
    width = 20.0 * np.sqrt(min(float(np.max(a)), cmax)) + 21.0
    if n * width * 8e-9 < cmax * (3e-6 + n * 1.5e-9):
        return _erlang_b_logsum(c, a)
    return _erlang_b_recursion(c, a)


def erlang_b(servers, offered_erlangs):
    """Blocking probability of an M/M/c/c loss system (Erlang B).

    Parameters
    ----------
    servers : int or array
        Number of servers c [1], 1 ≤ c ≤ 10⁶.
    offered_erlangs : float or array
        Offered traffic a = λ·S [erlang], > 0.

    Uses the recursion B₀ = 1, B_k = a·B_{k−1}/(k + a·B_{k−1}), which never
    forms a^c or c! and so works for c in the thousands; O(c) steps. Short arrays
    with many servers use the same formula B = (a^c/c!)/Σ a^k/k! as a log-sum-exp
    over the ~20√a terms that matter, which takes O(√a) work per element.

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


def _allen_cunneen_wait(lam, s, c, cs, ca):
    """(stable, P(wait), mean wait [s]) of :func:`ggc` for checked, broadcast float arrays;
    unstable elements get finite placeholders that callers overwrite."""
    a = lam * s
    stable = a < c
    a_ok = np.where(stable, a, 0.5 * c)  # a harmless load where unstable
    if a.size == 1:  # plain-float recursion: ~10x faster than numpy on one element
        b = np.full(a.shape, erlang_b_scalar(int(c.flat[0]), float(a_ok.flat[0])))
    else:
        b = _erlang_b_array(c, a_ok)
    p_wait = erlang_c_from_b(b, a_ok / c)
    return stable, p_wait, p_wait * s / (c - a_ok) * (ca**2 + cs**2) / 2.0


@lru_cache(maxsize=32)
def _tails(quantiles: tuple) -> tuple:
    """:func:`tail_probability` of each quantile, checked (a solve asks the same few quantiles every time)."""
    return tuple(tail_probability(checks.scalar("quantiles", checks.number(
        "quantiles", q, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False))) for q in quantiles)


def tail_probability(q) -> float:
    """1 − q for a quantile q, rounded to 12 decimals: 0.95 gives 0.05 exactly (1 − 0.95 is 0.05 + 4e-17 in
    binary), so a tail at "p95" is the same number however it is asked for."""
    return round(1.0 - float(q), 12)


def mgc_wait(arrival_rate_per_s, service_seconds, servers=1, *, service_cv=1.0, arrival_cv=1.0,
             quantiles=(0.95,)):
    """Mean and quantile waits of a G/G/c queue, cheaply: Allen–Cunneen's mean, an exponential tail.

    What :func:`ggc` gives for ``wait_mean_seconds``, with each q-quantile from the M/M/c tail
    P(W > t) = C·e^(−t/θ) scaled to that mean (θ = W_q / C): t_q = θ·ln(C/(1 − q)) where C > 1 − q,
    else 0, so that vectorized callers that need only these figures skip :func:`ggc`'s numerical
    percentiles. ``quantiles`` (each in (0, 1)) defaults to the p95 alone.

    Returns
    -------
    (stable, prob_wait, wait_mean_seconds, wait_q_seconds for each q of ``quantiles``), arrays of the
    inputs' shape (by default the 4-tuple ending with the p95); unstable elements (ρ >= 1) have inf waits.

    References
    ----------
    .. [1] Allen 1990, section 6.4 (Allen–Cunneen); Kleinrock 1975, eq. 3.42 (M/M/c wait tail).
    """
    lam = checks.positive("arrival_rate_per_s", arrival_rate_per_s)
    s = checks.positive("service_seconds", service_seconds)
    c = checks.integer("servers", servers, low=1, high=MAX_SERVERS)
    cs = checks.non_negative("service_cv", service_cv, high=1e3)
    ca = checks.non_negative("arrival_cv", arrival_cv, high=1e3)
    try:
        tails = _tails(tuple(quantiles))
    except TypeError:  # an unhashable quantile (a 0-d array): checked as it comes
        tails = _tails.__wrapped__(tuple(quantiles))
    lam, s, c, cs, ca = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (lam, s, c, cs, ca)))
    stable, p_wait, mean = _allen_cunneen_wait(lam, s, c, cs, ca)
    inf = np.full(stable.shape, math.inf)
    waits = []
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = np.where(p_wait > 0, mean / p_wait, 0.0)
        for tail in tails:
            waits.append(np.where(stable, np.where(p_wait > tail, theta * np.log(p_wait / tail), 0.0), inf))
    return (stable, np.where(stable, p_wait, 1.0), np.where(stable, mean, inf), *waits)


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
    P(wait) is taken as C; percentiles as in :func:`response_tail`.

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
    rho = lam * s / c
    stable, p_wait, wait_mean = _allen_cunneen_wait(lam, s, c, cs, ca)
    out = {"utilisation": rho, "stable": stable, "prob_wait": np.where(stable, p_wait, 1.0)}
    inf = np.full(rho.shape, math.inf)
    out["wait_mean_seconds"] = np.where(stable, wait_mean, inf)
    out["response_mean_seconds"] = np.where(stable, wait_mean + s, inf)
    out["queue_length_mean"] = np.where(stable, lam * wait_mean, inf)
    out["in_system_mean"] = np.where(stable, lam * (wait_mean + s), inf)
    p = np.asarray(PERCENTILES).reshape((-1,) + (1,) * rho.ndim)
    wq = _wait_quantile(p, p_wait, wait_mean)
    rq = _response_quantile(p, p_wait, wait_mean, s, cs)
    for i, name in enumerate(("p50", "p95", "p99")):
        out[f"wait_{name}_seconds"] = np.where(stable, wq[i], inf)
        out[f"response_{name}_seconds"] = np.where(stable, rq[i], inf)
    return QueueResult(**{k: _shape_out(np.asarray(v), scalar) for k, v in out.items()})


def mmc(arrival_rate_per_s, service_seconds, servers) -> QueueResult:
    """M/M/c queue (exact): Poisson arrivals, exponential service, c servers.

    Parameters as :func:`ggc`. Response percentiles use the exact
    distribution of W_q + S (see :func:`response_tail`).

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
