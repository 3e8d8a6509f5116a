"""Request lengths from a distribution: lognormal by mean and CV, an empirical table, or fixed.

Real traffic is not one prompt length and one output length. Chat and agent traces are
right-skewed (a few long prompts, most short) and reasoning models' outputs have long tails
(a hard question thinks for tens of thousands of tokens) [1, 2]. Means alone get the mean
throughput right (Little's law is linear in the lengths) but not what depends on the spread:

- the KV cache in use: a request holds its cache for as long as it decodes, so the requests
  in flight are sampled in proportion to their output length (length-biased sampling [3]). A
  running sequence's mean context is ``E[I] + E[O²] / (2 E[O])``, not ``E[I] + E[O] / 2``;
  an engine that reserves a whole request holds ``E[I] + E[O²] / E[O]`` tokens each;
- the tails: a long prompt takes a long prefill (its own, and the one running when a short prompt
  arrives), so TTFT's p95 is set by the long prompts; a request's TPOT averages its (O - 1)/τ
  iterations, so short outputs set TPOT's p95 (:mod:`.tails` computes both over these points).

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
.. [5] Johnson, Kotz, Balakrishnan 1994, "Continuous Univariate Distributions" vol. 1, ch. 14
       (lognormal moments and quantiles).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from aisize import checks

KINDS = ("fixed", "lognormal", "empirical")
MAX_TOKENS = 10**8  # as aisize.serving.estimate: a longer request is a typo
MAX_CV = 10.0
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

    def points(self):
        """(lengths, probabilities) that stand for the distribution in sums over it: the table itself, or
        the conditional means of 16 bins, six over the body and ten halving toward the tail, so that the
        mean is exact and the CV within a few % up to CV 2 [tokens, 1] [5]."""
        if self.kind == "empirical":
            return np.asarray(self.tokens, dtype=float), np.asarray(self.weights, dtype=float)
        if self.kind == "fixed":
            return np.array([self.mean_tokens]), np.array([1.0])
        edges = np.concatenate([np.linspace(0.0, 0.75, 7), 1.0 - 0.25 * 0.5 ** np.arange(1, 10), [1.0]])
        s = np.sqrt(np.log1p(self.cv**2))
        z = np.array([_Z.inv_cdf(e) for e in edges[1:-1]])
        below = np.concatenate([[0.0], [_Z.cdf(v - s) for v in z], [1.0]])  # E[X; X < x_q] / mean
        w = np.diff(edges)
        return self.mean_tokens * np.diff(below) / w, w

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
