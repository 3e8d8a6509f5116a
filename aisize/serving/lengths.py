"""Request lengths from a distribution: lognormal by mean and CV, an empirical table, or fixed.

Real traffic is not one prompt length and one output length. Chat and agent traces are
right-skewed (a few long prompts, most short) and reasoning models' outputs have long tails
(a hard question thinks for tens of thousands of tokens) [1, 2]. Means alone get the mean
throughput right (Little's law is linear in the lengths) but not what depends on the spread:

- the KV cache in use: a request holds its cache for as long as it decodes, so the requests
  in flight are sampled in proportion to their output length (length-biased sampling [3]). A
  running sequence's mean context is ``E[I] + E[O²] / (2 E[O])``, not ``E[I] + E[O] / 2``;
  an engine that reserves a whole request holds ``E[I] + E[O²] / E[O]`` tokens each;
- TTFT's tail: a request's own prefill grows with its prompt, so the p95 TTFT is set by the
  long prompts (the wait before the prefill, W, is the load's; the prefill, t(I), the
  prompt's own): ``P(W + t(I) > x) = E_I[P(W > x - t(I))]`` with W a shifted exponential
  fitted to its mean and p95 (the M/M/c-like tail of the admission wait [4]);
- TPOT's tail: a request's TPOT is the mean of its (O - 1)/τ decode iterations, each longer
  when it carries a prefill (share p); by the central limit theorem its spread shrinks as
  ``1/sqrt(n)``, so short outputs set the tail, and a longer prompt makes a heavier prefill
  iteration: ``P(TPOT > x) = E_O[1 - Φ((x - T̄)·sqrt(n(O)) / σ)]`` with
  ``σ² = p(1 - p)(E[t1] - t0)² + p·Var[t1(I)]``.

A lognormal with mean m and coefficient of variation c has ``σ² = ln(1 + c²)`` and
``μ = ln m - σ²/2``; its q-quantile is ``exp(μ + σ·Φ⁻¹(q))`` and ``E[X²] = m²(1 + c²)`` [5].

References
----------
.. [1] Patel et al. 2024 (Splitwise), ISCA'24, sec. 3 (Azure LLM inference traces: coding and
       conversation prompt and output lengths, heavy right tails).
.. [2] Wang et al. 2025 (BurstGPT), KDD'25, arXiv:2401.17644, sec. 4 (request and response
       lengths fit Zipf / lognormal-like distributions).
.. [3] Feller 1971, "An Introduction to Probability Theory and its Applications" vol. 2,
       sec. I.4 and VI.7 (the inspection paradox: a renewal interval covering a random
       instant has mean E[X²]/E[X]).
.. [4] Kleinrock 1975, "Queueing Systems" vol. 1, eq. 3.42 (the M/M/c wait tail C·e^(-θt)).
.. [5] Johnson, Kotz, Balakrishnan 1994, "Continuous Univariate Distributions" vol. 1, ch. 14
       (lognormal moments and quantiles).
.. [6] Abramowitz & Stegun 1964, "Handbook of Mathematical Functions", formula 7.1.26.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from aisize import checks

KINDS = ("fixed", "lognormal", "empirical")
MAX_TOKENS = 10**8  # as aisize.serving.estimate: a longer request is a typo
MAX_CV = 10.0
_POINTS = 256  # equal-probability points a distribution is evaluated on (quantile midpoints)
_BISECTIONS = 60
_Z = NormalDist()


@dataclass(frozen=True)
class LengthDistribution:
    """Lengths of prompts or outputs [tokens]. Build with :func:`fixed`, :func:`lognormal` or :func:`empirical`."""

    kind: str
    mean_tokens: float
    cv: float  # coefficient of variation (standard deviation / mean)
    tokens: tuple = ()  # empirical: the table's lengths
    weights: tuple = ()  # empirical: their probabilities (sum 1)

    @property
    def second_moment(self) -> float:
        """E[X²] [tokens²]."""
        return self.mean_tokens**2 * (1.0 + self.cv**2)

    def quantile(self, q):
        """The q-quantile [tokens] (vectorized over q in (0, 1))."""
        q = np.asarray(q, dtype=float)
        if self.kind == "fixed":
            return np.full(q.shape, self.mean_tokens) if q.ndim else self.mean_tokens
        if self.kind == "lognormal":
            s2 = np.log1p(self.cv**2)
            z = np.vectorize(_Z.inv_cdf, otypes=[float])(q)
            return np.exp(np.log(self.mean_tokens) - 0.5 * s2 + np.sqrt(s2) * z)
        cum = np.cumsum(self.weights)
        idx = np.minimum(np.searchsorted(cum, q * cum[-1], side="left"), len(self.tokens) - 1)
        return np.asarray(self.tokens, dtype=float)[idx]

    def points(self, n: int = _POINTS):
        """(lengths, probabilities) that stand for the distribution in sums over it: the table itself, or
        the midpoints of n equal-probability bins rescaled to the exact mean [tokens, 1]."""
        if self.kind == "empirical":
            return np.asarray(self.tokens, dtype=float), np.asarray(self.weights, dtype=float)
        if self.kind == "fixed":
            return np.array([self.mean_tokens]), np.array([1.0])
        x = self.quantile((np.arange(n) + 0.5) / n)
        return x * self.mean_tokens / x.mean(), np.full(n, 1.0 / n)

    def sample(self, rng, n: int):
        """n lengths drawn at random, whole tokens, at least 1 [tokens]."""
        if self.kind == "fixed":
            return np.full(n, int(round(self.mean_tokens)))
        if self.kind == "lognormal":
            s2 = np.log1p(self.cv**2)
            x = rng.lognormal(np.log(self.mean_tokens) - 0.5 * s2, np.sqrt(s2), n)
        else:
            x = rng.choice(np.asarray(self.tokens, dtype=float), size=n, p=np.asarray(self.weights))
        return np.maximum(np.rint(x), 1).astype(int)


def fixed(tokens) -> LengthDistribution:
    """Every request the same length [tokens]."""
    t = checks.scalar("tokens", checks.positive("tokens", tokens, high=MAX_TOKENS))
    return LengthDistribution("fixed", t, 0.0)


def lognormal(mean_tokens, cv) -> LengthDistribution:
    """A lognormal by its mean [tokens] and coefficient of variation (0 < cv <= 10) [5]."""
    m = checks.scalar("mean_tokens", checks.number("mean_tokens", mean_tokens, low=1.0, high=MAX_TOKENS))
    c = checks.scalar("cv", checks.positive("cv", cv, high=MAX_CV))
    return LengthDistribution("lognormal", m, c)


def empirical(tokens, weights=None) -> LengthDistribution:
    """A table of lengths [tokens] and their weights (any positive numbers; normalised here; None: equal)."""
    t = np.atleast_1d(checks.integer("tokens", tokens, low=1, high=MAX_TOKENS)).astype(float)
    w = np.ones_like(t) if weights is None else np.atleast_1d(checks.non_negative("weights", weights, high=1e30))
    if w.shape != t.shape:
        raise ValueError(f"weights has {w.size} entries and tokens {t.size}: give one weight per length")
    if not w.sum() > 0:
        raise ValueError(f"weights={weights!r} is not allowed: at least one weight must be positive")
    w = w / w.sum()
    order = np.argsort(t)
    t, w = t[order], w[order]
    mean = float((t * w).sum())
    cv = float(np.sqrt(max((t * t * w).sum() - mean**2, 0.0)) / mean)
    return LengthDistribution("empirical", mean, cv, tuple(t.tolist()), tuple(w.tolist()))


@dataclass(frozen=True)
class Lengths:
    """The prompt and output length distributions of a service."""

    input: LengthDistribution
    output: LengthDistribution

    def __post_init__(self):
        for name in ("input", "output"):
            if not isinstance(getattr(self, name), LengthDistribution):
                raise ValueError(f"{name}={getattr(self, name)!r} is not allowed: give a LengthDistribution "
                                 f"(aisize.serving.lengths.lognormal, empirical or fixed)")

    @classmethod
    def lognormal(cls, input_tokens, output_tokens, input_cv, output_cv) -> "Lengths":
        """Lognormal prompts and outputs by their means and CVs (a CV of 0 keeps that length fixed)."""
        def one(mean, cv, name):
            return fixed(mean) if checks.scalar(f"{name}_cv", checks.non_negative(f"{name}_cv", cv)) == 0 \
                else lognormal(mean, cv)
        return cls(one(input_tokens, input_cv, "input"), one(output_tokens, output_cv, "output"))


def check_means(lengths: Lengths, input_tokens, output_tokens) -> None:
    """The distributions' means are the request's mean lengths (within half a token), else a ValueError."""
    for name, dist, mean in (("input", lengths.input, input_tokens), ("output", lengths.output, output_tokens)):
        if abs(dist.mean_tokens - mean) > 0.5:
            raise ValueError(f"length_distribution.{name} has a mean of {dist.mean_tokens:,.1f} tokens but "
                             f"{name}_tokens={mean!r}: give {name}_tokens as the distribution's mean")


def decode_context_tokens(lengths: Lengths):
    """Mean context of the sequences decoding at any instant [tokens]: ``E[I] + E[O²] / (2 E[O])`` [3]."""
    o = lengths.output
    return lengths.input.mean_tokens + o.second_moment / (2.0 * o.mean_tokens)


def reserved_tokens(lengths: Lengths):
    """Mean KV tokens a request in flight holds when the engine reserves prompt + output at admission:
    ``E[I] + E[O²] / E[O]`` (length-biased, [3]) [tokens]."""
    o = lengths.output
    return lengths.input.mean_tokens + o.second_moment / o.mean_tokens


def normal_tail(z):
    """P(Z > z) of a standard normal, vectorized: Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7) [6]."""
    z = np.asarray(z, dtype=float)
    x = np.abs(z) / np.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    half_erfc = 0.5 * poly * np.exp(-x * x)
    return np.where(z >= 0, half_erfc, 1.0 - half_erfc)


def _shifted_exponential(mean_seconds, p95_seconds):
    """(shift, scale) of ``W = shift + Exp(scale)`` with W's mean and p95; an atom at the mean when they agree."""
    excess = np.maximum(np.asarray(p95_seconds, dtype=float) - mean_seconds, 0.0)
    scale = excess / (np.log(20.0) - 1.0)  # p95 of shift + Exp(θ) is shift + θ ln 20, its mean shift + θ
    scale = np.minimum(scale, mean_seconds)  # a wait is never negative: shift >= 0
    return mean_seconds - scale, scale


def ttft_quantile(wait_mean_seconds, wait_p95_seconds, prefill_seconds, weights, q=0.95):
    """The q-quantile of TTFT = W + t(I) over the prompt lengths (module docstring) [s].

    Parameters
    ----------
    wait_mean_seconds, wait_p95_seconds : the time before a request's own prefill: mean and p95 [s]
    prefill_seconds : t(I) at each point of the prompt distribution [s] (1-D)
    weights : the points' probabilities
    """
    shift, scale = _shifted_exponential(float(wait_mean_seconds), float(wait_p95_seconds))
    t = np.asarray(prefill_seconds, dtype=float)
    w = np.asarray(weights, dtype=float)

    def exceed(x):
        y = x - shift - t
        tail = np.where(y <= 0, 1.0, np.exp(-np.maximum(y, 0.0) / scale)) if scale > 0 else (y < 0) * 1.0
        return float((w * tail).sum())

    lo, hi = shift + t.min(), shift + t.max() + scale * np.log(1.0 / (1.0 - q)) + 1e-12
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if exceed(mid) > 1.0 - q else (lo, mid)
    return hi


def tpot_quantile(mean_seconds, sigma_seconds, steps, weights, q=0.95):
    """The q-quantile of a request's TPOT over the output lengths (module docstring) [s].

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
        return float(mean_seconds)
    lo, hi = float(mean_seconds), float(mean_seconds) + 8.0 * sigma_seconds
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        tail = float((w * normal_tail((mid - mean_seconds) * np.sqrt(n) / sigma_seconds)).sum())
        lo, hi = (mid, hi) if tail > 1.0 - q else (lo, mid)
    return hi
