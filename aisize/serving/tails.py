"""TTFT and TPOT tails of a replica when prompts differ: by length (a distribution) or by what is cached.

A request's TTFT, below the queueing knee, is the rest of the iteration running when it
arrives, R, plus the iteration that prefills it [1, 2]. Both vary:

- the running iteration carries J ~ Pois(m) prompts (those that arrived during the one before;
  ``m = -ln(1 - p)`` for a share p of iterations with prefill work), one of them of length x and
  the rest at the mean: t_j = s(x + (J - 1)·x̄, J), t0 for J = 0; an arrival lands in one in
  proportion to its length (length-biased sampling [3]), and the rest of it is uniform on (0, t):
  ``P(R > r) = Σ_j v_j·max(0, 1 - r/t_j)`` with ``v_j ∝ share_j·t_j``;
- the arrivals during that iteration, Poisson with mean λ·t_j, are admitted with it into the next
  one, which carries their prompts beside its own: ``s(I + K·x̄, 1 + K)`` for K co-arrivals;
- its own prompt is one of the classes (a hit computes only its new tokens and first reloads its
  cached ones from a tier) at each of the prompt lengths.

So ``P(TTFT > x) = Σ_j v_j Σ_K Pois(K; λ t_j) Σ_c w_c P(R_j > x - s_cK)``, whose root at 1 - q is
the q-quantile. What the queueing model of :mod:`.latency` adds beyond the same two terms at mean
lengths (its residual ``E[T²]/2E[T]`` of a two-point iteration, its own prefill iteration) — the
time outside the GPU, the admission wait, the backlog of prompts for the token budget — is kept
as a constant added to every request.

A request's TPOT is the mean of its n = (O - 1)/τ decode iterations. Iterations carry K ~ Pois(m)
prompts (m = λ·T̄) of varying length, so one iteration's time has a variance σ² over this mixture;
by the central limit theorem ``P(TPOT > x) = E_O[P(Z > (x - T̄)·sqrt(n(O))/σ)]``: short outputs set
the tail [4].

References
----------
.. [1] Agrawal et al. 2024 (Sarathi-Serve), OSDI'24, sec. 3 (prefills stall the decodes batched
       with them; iteration-level scheduling).
.. [2] Yu et al. 2022 (Orca), OSDI'22, sec. 4 (requests join the batch at iteration boundaries).
.. [3] Feller 1971, vol. 2, sec. XI.4 (residual life of a renewal interval: length-biased, uniform).
.. [4] Feller 1971, vol. 2, sec. VIII.4 (central limit theorem); Abramowitz & Stegun 1964, 7.1.26.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from aisize.queueing.analytic import tail_probability

# The statistics a latency target may bound, and the suffix each one's figure carries in a name
# (ttft_s, ttft_p95_s, ttft_p99_seconds): read by every surface that picks a figure by statistic.
STATISTIC_SUFFIX = {"mean": "", "p95": "_p95", "p99": "_p99"}

# the quantiles an estimate reports beside the mean: p95, and p99 (service-level targets, audited benchmarks)
QUANTILES = (0.95, 0.99)
Z95 = 1.6448536269514722  # standard normal 95th percentile
Z99 = 2.3263478740408408  # standard normal 99th percentile
# -ln(0.05) = 2.996, rounded to 3 where the balancing wait was fitted: kept so that its p95 does not move
_EXPONENTIAL_P95 = 3.0
_BISECTIONS = 60
MAX_COARRIVALS = 6  # co-arrivals counted one by one; the rest of the Poisson mass is lumped here


def normal_tail(z):
    """P(Z > z) of a standard normal, vectorized: Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7) [4]."""
    z = np.asarray(z, dtype=float)
    x = np.abs(z) / np.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    half_erfc = 0.5 * poly * np.exp(-x * x)
    return np.where(z >= 0, half_erfc, 1.0 - half_erfc)


def normal_quantile(q) -> float:
    """The standard normal's q-quantile z: Z95 and Z99 to the last bit (NormalDist's differ in it, and the p95 figures
    were fitted with Z95), else :class:`statistics.NormalDist`."""
    return {0.95: Z95, 0.99: Z99}.get(float(q)) or NormalDist().inv_cdf(float(q))


def exponential_quantile_factor(q) -> float:
    """An exponential's q-quantile over its mean, -ln(1 - q): 3 at p95 (as fitted), 4.605 at p99."""
    return _EXPONENTIAL_P95 if float(q) == 0.95 else -math.log(tail_probability(q))


def residual_quantile(q, prefill_share, t0, t1):
    """The q-quantile of the rest of the iteration running at an arrival [s], exactly for two kinds of iteration:
    a share p carrying prefills (t1), the rest decode-only (t0). The arrival lands in one in proportion to its
    length, v1 = p·t1 / T̄ with T̄ = (1 - p)·t0 + p·t1, and waits out a uniform part of it [3], so
    ``P(R > r) = 1 - r / T̄`` for r <= t0 and ``v1·(1 - r / t1)`` beyond: the quantile is q·T̄ while that is
    within t0, else t1·(1 - (1 - q) / v1). It rises continuously with p from q·t0 to q·t1 (a switch between
    the two at p = 1 - q put a step of q·(t1 - t0) into every TTFT p95 curve)."""
    p = np.clip(np.asarray(prefill_share, dtype=float), 0.0, 1.0)
    t0, t1 = np.asarray(t0, dtype=float), np.asarray(t1, dtype=float)
    mean = (1.0 - p) * t0 + p * t1
    with np.errstate(invalid="ignore", divide="ignore"):
        long = t1 * (1.0 - tail_probability(q) * mean / np.maximum(p * t1, 1e-300))
    return np.where(q * mean <= t0, q * mean, np.maximum(long, q * mean))


def poisson(mean, kmax=MAX_COARRIVALS):
    """P(K = 0..kmax) of a Poisson (the tail lumped at kmax), for each mean (rows)."""
    mean = np.atleast_1d(np.asarray(mean, dtype=float))
    k = np.arange(kmax + 1)
    logs = k * np.log(np.maximum(mean[:, None], 1e-300)) - mean[:, None] - np.cumsum(np.log(np.maximum(k, 1)))
    p = np.exp(logs)
    p[:, -1] += np.maximum(1.0 - p.sum(axis=1), 0.0)
    return p


_TREE_LEVELS = 5  # bisection steps decided per (vectorized) call of the tail: 12 calls instead of 60


def _quantile(exceed, lo, hi, q):
    """The bisection root of ``exceed(x) = 1 - q`` on (lo, hi), ``_BISECTIONS`` halvings; a tuple ``q`` gives a
    tuple of roots, one per quantile, each the one it has alone.

    ``exceed`` takes a 1-D array of x, elementwise (each x's value is the one it has alone). Each call evaluates
    every midpoint the next ``_TREE_LEVELS`` halvings could visit (a binary tree, node i's children 2i+1 and 2i+2)
    for every quantile, then walks each tree: the same midpoints, the same decisions and so the same root as one
    halving per call, in a fifth of the calls (a tenth for two quantiles)."""
    qs = q if isinstance(q, tuple) else (q,)
    ends = [(lo, hi)] * len(qs)
    for start in range(0, _BISECTIONS, _TREE_LEVELS):
        levels = min(_TREE_LEVELS, _BISECTIONS - start)
        trees = []
        for a0, b0 in ends:
            bounds, mids = [(a0, b0)], []
            for i in range(2 ** levels - 1):  # heap order: a node's bounds are known before its children's
                a, b = bounds[i]
                mid = 0.5 * (a + b)
                mids.append(mid)
                bounds += [(a, mid), (mid, b)]
            trees.append(mids)
        above_all = np.asarray(exceed(np.asarray([m for mids in trees for m in mids])))
        for j, (mids, qj) in enumerate(zip(trees, qs)):
            above = above_all[j * len(mids):(j + 1) * len(mids)] > 1.0 - qj
            (lo_j, hi_j), i = ends[j], 0
            for _ in range(levels):
                lo_j, hi_j = (mids[i], hi_j) if above[i] else (lo_j, mids[i])
                i = 2 * i + (2 if above[i] else 1)
            ends[j] = (lo_j, hi_j)
    return tuple(b for _, b in ends) if isinstance(q, tuple) else ends[0][1]


def ttft_tail(*, requests_per_s, t0, t1, prefill_share, seconds, others, own, mean_ttft, q=0.95):
    """(mean, q-quantile, mean of each ``own`` row) of TTFT from the mixture of the module docstring [s]; ``q`` a
    tuple of quantiles gives a tuple of their values in its place (the mixture is built once).

    Parameters
    ----------
    requests_per_s : λ at this replica [1/s]
    t0, t1 : a decode-only iteration and the mean one carrying prefills, as the queueing model has them [s]
    prefill_share : p, the share of iterations that carry prefill work
    seconds : ``seconds(tokens, prompts, attention_tokens, spans=False)`` -> the iterations that carry those
        prefills beside the decoding batch, or (one of them, how many) with ``spans=True`` (vectorized) [s]
    others : (new tokens, attention tokens, weights) of the prompts other requests bring (1-D each)
    own : (new tokens, attention tokens, fixed extra seconds, weights) of this request's classes (1-D each)
    mean_ttft : the queueing model's mean TTFT at the mean lengths (module docstring) [s]
    """
    lam, p = float(requests_per_s), float(np.clip(prefill_share, 0.0, 1.0))
    xn, xa, xw = _coarse(*(np.asarray(a, dtype=float) for a in others))
    on, oa, oe, ow = (np.asarray(a, dtype=float) for a in own)
    mean_other = float((xn * xw).sum())
    t, mass = _iterations(seconds, xn, xa, xw, -np.log(max(1.0 - p, 1e-12)))  # types the arrival may land in
    v = mass * t / (mass * t).sum()
    pk = poisson(lam * t)  # co-arrivals joining this request's iteration, per type
    k = np.arange(pk.shape[1])
    # own iteration, per class and co-arrivals: none, or K of them, the first at each prompt point, the rest at
    # the mean length
    co = np.concatenate([[0.0], (xn[None, :] + (k[1:, None] - 1.0) * mean_other).ravel()])
    kk = np.concatenate([[0.0], np.repeat(k[1:], xn.size).astype(float)])
    s = np.asarray(seconds(on[:, None] + co[None, :], 1.0 + kk[None, :] + 0.0 * co, oa[:, None]), dtype=float) \
        + oe[:, None]
    pkx = np.concatenate([pk[:, :1], (pk[:, 1:, None] * xw[None, None, :]).reshape(pk.shape[0], -1)], axis=1)
    rows = (v * t).sum() / 2.0 + ((v[:, None] * pkx).sum(axis=0)[None, :] * s).sum(axis=1)  # each own row's mean
    # the queueing model's own residual and prefill iteration at mean lengths: what it adds beyond them stays
    mean_t = (1.0 - p) * t0 + p * t1
    residual = ((1.0 - p) * t0**2 + p * t1**2) / (2.0 * mean_t)
    mine = 1.0 + 2.0 * lam * residual
    on_mean, oa_mean = float((on * ow).sum()), float((oa * ow).sum())
    core = residual + float(seconds(mine * on_mean, mine, oa_mean)) + float((oe * ow).sum())
    shift = max(float(mean_ttft) - core, 0.0)  # what the queueing model adds is a wait, never a credit
    weight = v[:, None, None] * pkx[:, None, :] * ow[None, :, None]  # type x class x co-arrivals
    keep = weight > 1e-12 * weight.sum()  # the mixture's negligible cells cost time and move no quantile
    start = shift + np.broadcast_to(s[None, :, :], weight.shape)[keep]
    quantile = _uniform_mixture_quantile(weight[keep], start, np.broadcast_to(t[:, None, None], weight.shape)[keep],
                                         q if isinstance(q, tuple) else (q,))
    quantile = quantile if isinstance(q, tuple) else quantile[0]
    return float((ow * rows).sum()) + shift, quantile, rows + shift


_OTHER_CUTS = (0.5, 0.85, 0.97)  # other requests' prompts in four groups by cumulative share: body, shoulder, tail


def _coarse(xn, xa, xw):
    """Other requests' prompts as four groups (conditional means by weight): they shape the iterations a
    request waits out and shares, where the spread between groups matters and the spread within hardly."""
    if xn.size <= len(_OTHER_CUTS) + 1:
        return xn, xa, xw
    order = np.argsort(xn)
    group = np.searchsorted(np.asarray(_OTHER_CUTS), np.cumsum(xw[order]) - 0.5 * xw[order])
    w = np.bincount(group, xw[order])
    keep = w > 0
    n = np.bincount(group, xw[order] * xn[order])[keep] / w[keep]
    a = np.bincount(group, xw[order] * xa[order])[keep] / w[keep]
    return n, a, w[keep]


def _cumsum0(x):
    """``np.cumsum(x)`` after a leading 0.0: the same running sums, to the bit."""
    out = np.empty(x.size + 1)
    out[0] = 0.0
    np.cumsum(x, out=out[1:])
    return out


def _merged_breakpoints(a_sorted, b_sorted):
    """(``xs = np.unique(np.concatenate([a, b]))``, and at each x the counts of a and of b below it, which
    ``np.searchsorted(a_sorted, xs)`` and ``np.searchsorted(b_sorted, xs)`` give) of two sorted 1-D arrays, by a
    merge (a stable sort of two sorted runs is one linear merge) where np.unique sorts afresh: the same values and
    counts (NaNs sort last and are kept once, as np.unique keeps them)."""
    m = np.concatenate([a_sorted, b_sorted])
    order = np.argsort(m, kind="stable")
    merged = m[order]
    first = np.empty(m.size, dtype=bool)  # the first of each value: every element before it is below it
    first[:1] = True
    np.not_equal(merged[1:], merged[:-1], out=first[1:])
    if m.size and merged[-1] != merged[-1]:
        first[np.searchsorted(merged, np.nan, side="left") + 1:] = False
    from_a = np.empty(m.size + 1, dtype=np.intp)  # a's among the first n merged
    from_a[0] = 0
    np.cumsum(order < a_sorted.size, out=from_a[1:])
    at = np.flatnonzero(first)
    below_a = from_a[at]
    return merged[at], below_a, at - below_a


def _uniform_mixture_quantile(w, a, t, qs):
    """The q-quantiles (a tuple, one per q of ``qs``) of ``a_i + U(0, t_i)`` drawn with probabilities ``w_i``,
    exactly: its tail ``P(X > x) = Σ w_i min(1, max(0, 1 - (x - a_i)/t_i))`` is piecewise linear between the a_i
    and a_i + t_i."""
    w = np.asarray(w, dtype=float) / np.sum(w)
    a, t = np.asarray(a, dtype=float), np.maximum(np.asarray(t, dtype=float), 1e-15)
    e = a + t
    oa, oe = np.argsort(a), np.argsort(e)
    a_s, e_s = a[oa], e[oe]
    # each running sum after a leading 0.0: entry n is the sum over the n smallest, 0.0 where none (np.where's)
    intercept, slope = w * (1.0 + a / t), w / t  # each component's tail w(1 + a/t) - x w/t while it runs
    wa, wb, wd = _cumsum0(w[oa]), _cumsum0(intercept[oa]), _cumsum0(slope[oa])
    eb, ed = _cumsum0(intercept[oe]), _cumsum0(slope[oe])
    xs, na, ne = _merged_breakpoints(a_s, e_s)  # at each breakpoint x: na components started (a_i < x), ne done
    f = (1.0 - wa[na]) + (wb[na] - eb[ne]) - xs * (wd[na] - ed[ne])

    def at(q):
        level = 1.0 - q
        k = int(np.searchsorted(-f, -level, side="left"))  # first breakpoint at or below the level (f falls)
        if k <= 0:
            return float(xs[0])
        if k >= xs.size:
            return float(xs[-1])
        x0, x1, f0, f1 = xs[k - 1], xs[k], f[k - 1], f[k]
        return float(x0 + (f0 - level) / (f0 - f1) * (x1 - x0)) if f0 > f1 else float(x1)
    return tuple(at(q) for q in qs)


def uniform_mixture_quantiles(w, a, t, qs):
    """:func:`_uniform_mixture_quantile` of each row (the components along the last axis), vectorized: the tail
    is 1 up to the first start and falls at a slope that changes by w_i / t_i where a component starts and ends,
    so a cumulative sum over each row's sorted breakpoints gives it at every one, and the level's crossing is
    interpolated, exactly (it is linear between breakpoints); a tuple of 1-D arrays, one per q of ``qs``."""
    w = np.asarray(w, dtype=float)
    w = w / w.sum(axis=-1, keepdims=True)
    a, t = np.asarray(a, dtype=float), np.maximum(np.asarray(t, dtype=float), 1e-15)
    events = np.concatenate([a, a + t], axis=-1)
    order = np.argsort(events, axis=-1)
    rows = np.arange(events.shape[0])
    sorted_at = (rows[:, None], order)  # np.take_along_axis(x, order, -1) of a 2-D x, without its index checks
    xs = events[sorted_at]
    slope = np.cumsum(np.concatenate([-w / t, w / t], axis=-1)[sorted_at], axis=-1)
    gaps = xs[:, 1:] - xs[:, :-1]  # np.diff's
    f = np.minimum(1.0 + np.concatenate([np.zeros_like(xs[:, :1]), np.cumsum(slope[:, :-1] * gaps, axis=-1)], axis=-1),
                   1.0)
    out = []
    for q in qs:
        level = 1.0 - q
        k = np.minimum(np.argmax(f <= level, axis=1), xs.shape[1] - 1)  # the first breakpoint at or below it
        j = np.maximum(k - 1, 0)
        x0, x1, f0, f1 = xs[rows, j], xs[rows, k], f[rows, j], f[rows, k]
        with np.errstate(invalid="ignore", divide="ignore"):
            inside = np.where(f0 > f1, x0 + (f0 - level) / (f0 - f1) * (x1 - x0), x1)
        out.append(np.where(k > 0, inside, xs[:, 0]))
    return tuple(out)


def _iterations(seconds, xn, xa, xw, prompts_mean):
    """(time, probability) of each kind of iteration: J ~ Pois(m) prompts, one at each point of the prompt
    distribution and the rest at its mean (flattened); a prefill longer than the budget spans several
    iterations, each as likely to be running [s, 1]."""
    pj = poisson(prompts_mean)[0]
    j = np.arange(pj.size)
    tokens = np.where(j[None, :] > 0, xn[:, None] + (j[None, :] - 1) * float((xn * xw).sum()), 0.0)
    t, n = seconds(tokens, 0.0 + j[None, :] + 0.0 * xn[:, None], xa[:, None] + 0.0 * j[None, :], spans=True)
    mass = xw[:, None] * pj[None, :] * np.asarray(n, dtype=float)
    return np.asarray(t, dtype=float).ravel(), (mass / mass.sum()).ravel()


def iteration_sigma(*, prefill_share, seconds, others):
    """Standard deviation of one iteration's time over the prompts it carries (:func:`_iterations`) [s]."""
    xn, xa, xw = (np.asarray(a, dtype=float) for a in others)
    t, w = _iterations(seconds, xn, xa, xw, -np.log(max(1.0 - float(prefill_share), 1e-12)))
    mean = float((w * t).sum())
    return float(np.sqrt(max(float((w * (t - mean) ** 2).sum()), 0.0)))


def tpot_quantile(mean_seconds, sigma_seconds, steps, weights, q=0.95):
    """The q-quantile of a request's TPOT over the output lengths (module docstring) [s]; a tuple ``q`` gives a
    tuple, one per quantile (one bisection of them all, each root the one it has alone).

    Parameters
    ----------
    mean_seconds : the mean iteration over the tokens a step emits, T̄ [s]
    sigma_seconds : standard deviation of one iteration, over the tokens a step emits [s]
    steps : a request's decode iterations, (O - 1)/τ, at each point of the output distribution (1-D)
    weights : the points' probabilities
    """
    n = np.maximum(np.asarray(steps, dtype=float), 1.0)
    w = np.asarray(weights, dtype=float)
    if sigma_seconds <= 0:
        return (float(mean_seconds),) * len(q) if isinstance(q, tuple) else float(mean_seconds)
    root_n = np.sqrt(n)
    # each row x: the same elementwise terms and row sum as the scalar x's, so the same root to the last bit
    return _quantile(lambda x: (w * normal_tail((x[:, None] - mean_seconds) * root_n / sigma_seconds)).sum(axis=1),
                     float(mean_seconds), float(mean_seconds) + 8.0 * sigma_seconds, q)
