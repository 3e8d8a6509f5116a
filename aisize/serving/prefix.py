"""Prefix reuse: shared system prompts, multi-turn sessions and RAG chunks, and the hit rate an LRU cache gives them.

A request's prompt is made of parts another request may already have computed [1, 2]:

- a shared prefix of S tokens (system prompt, tool definitions) that every request starts with;
- in a session of N turns, the history: turn t's prompt is ``S + (t - 1)(U + O) + U`` (every
  turn appends the user's U new tokens, tool results included, and the model's O output tokens),
  so with a mean prompt I the new tokens per turn are ``U = (2(I - S) - (N - 1)·O) / (N + 1)``;
- RAG chunks: R of the U new tokens are retrieved chunks of c tokens each, drawn from a corpus of
  K chunks with Zipf popularity (exponent α). Their KV is reused wherever they sit in the prompt by
  blending (LMCache's CacheBlend), which recomputes a share of each reused chunk's tokens [3].

A cache holds these objects between uses: the shared prefix, each session's history from the
end of one turn until the next arrives after a think time Z (exponential, mean z), and the
chunks. Engines evict least-recently used blocks (vLLM's free-block queue [4], SGLang's radix
tree, LMCache's and HiCache's host and storage tiers [5, 6]). For an LRU cache of C bytes Che's
approximation [7, 8] gives a characteristic time T: an object not touched for T is gone. T is the
root of ``occupancy(T) = C`` with, for requests at rate λ and sessions at λ/N (Little's law on
each object: bytes x the time it stays [9]),

    occupancy(T) = kv(S)(1 - e^(-λT))                                    the shared prefix
                 + λ/N [Σ_{t<N} b_t·E[min(Z, T)] + b_N·T]                 session histories
                 + kv(c)·Σ_i (1 - e^(-λ R p_i T))                          chunks

where ``b_t = kv(S + t(U + O)) - kv(S)`` is a session's own history after turn t and
``E[min(Z, T)] = z(1 - e^(-T/z))``. The hit probabilities follow: a history survives its think
time with ``P(Z < T) = 1 - e^(-T/z)``, chunk i is found with ``1 - e^(-λ R p_i T)``, the shared
prefix with ``1 - e^(-λT)``. Inverting the first gives the capacity for a target hit rate in
closed form: ``T = z ln(1 / (1 - h))``, ``C = occupancy(T)``. The sessions a cache keeps are
Little's law on sessions: ``λ/N x (time a session is held)``.

Objects are whole (a history is found whole or not at all, as the tail-first eviction of vLLM's
free queue tends to keep prefixes whole); the KV of the requests running is not in these
figures (it is the batch's, see :mod:`.memory`).

References
----------
.. [1] Gao et al. 2024 (CachedAttention / AttentionStore), USENIX ATC'24, sec. 2-3 (multi-turn
       conversations re-send their history; 73 % of ShareGPT conversations are multi-turn).
.. [2] Qin et al. 2025 (Mooncake), FAST'25, sec. 2 and 4 (KVCache-centric serving; prefix reuse
       across requests in Kimi's traces).
.. [3] Yao et al. 2025 (CacheBlend), EuroSys'25; LMCache ``lmcache/v1/config.py``
       (``blend_recompute_ratio`` default 0.15).
.. [4] vLLM V1 design doc "Automatic Prefix Caching" (free block queue: LRU eviction, a freed
       request's blocks appended tail first).
.. [5] LMCache docs (local CPU backend ``max_local_cpu_size``, local disk, remote backends; LRU).
.. [6] SGLang docs "HiCache" (GPU, host and storage tiers; ``--hicache-ratio``, write-through).
.. [7] Che, Tung, Wang 2002, "Hierarchical Web caching systems: modeling, design and experimental
       results", IEEE JSAC 20(7).
.. [8] Fricker, Robert, Roberts 2012, "A versatile and accurate approximation for LRU cache
       performance", ITC 24 (Che's approximation beyond independent requests, renewal traffic).
.. [9] Little 1961, Oper. Res. 9(3).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from aisize import checks

MAX_TURNS = 10_000
MAX_THINK_SECONDS = 30 * 86400.0  # a month between turns
MAX_CHUNKS = 10**7
_BISECTIONS = 80  # on log T between 1 µs and 10^12 s: far below 0.1 % relative error
_CHUNK_GROUPS = 256  # chunks of neighbouring popularity ranks summed as one group beyond this many chunks
_T_RANGE = (1e-6, 1e12)
# no two ends of the log range 41.4 wide are a float apart before 52 halvings (|log T| <= 27.6): the search
# looks for that from here on (looking earlier would find nothing and cost a comparison a step)
_APART_FROM = 50


@dataclass(frozen=True)
class Reuse:
    """How a service's prompts repeat [tokens, count, s]. All zero/one: no reuse (today's behaviour).

    ``shared_tokens``: system prompt and tools every request starts with; ``turns``: requests per
    session; ``think_time_s``: mean time from a response to the next turn (exponential; tool calls in
    an agent loop); ``rag_chunks`` of ``rag_chunk_tokens`` each per request, from ``rag_corpus_chunks``
    with Zipf exponent ``rag_zipf`` (0: uniform popularity).
    """

    shared_tokens: int = 0
    turns: int = 1
    think_time_s: float = 0.0
    rag_chunks: int = 0
    rag_chunk_tokens: int = 0
    rag_corpus_chunks: int = 0
    rag_zipf: float = 1.0

    def __post_init__(self):
        checks.integer("shared_tokens", self.shared_tokens, low=0, high=10**8)
        checks.integer("turns", self.turns, low=1, high=MAX_TURNS)
        checks.non_negative("think_time_s", self.think_time_s, high=MAX_THINK_SECONDS)
        checks.integer("rag_chunks", self.rag_chunks, low=0, high=10_000)
        checks.integer("rag_chunk_tokens", self.rag_chunk_tokens, low=0, high=10**7)
        checks.integer("rag_corpus_chunks", self.rag_corpus_chunks, low=0, high=MAX_CHUNKS)
        checks.non_negative("rag_zipf", self.rag_zipf, high=5.0)
        if self.rag_chunks and not (self.rag_chunk_tokens and self.rag_corpus_chunks):
            raise ValueError(f"rag_chunks={self.rag_chunks} needs rag_chunk_tokens and rag_corpus_chunks >= 1 "
                             f"(got {self.rag_chunk_tokens} and {self.rag_corpus_chunks})")
        if self.rag_chunks > self.rag_corpus_chunks > 0:
            raise ValueError(f"rag_chunks={self.rag_chunks} is not allowed: a request retrieves distinct chunks, "
                             f"at most rag_corpus_chunks={self.rag_corpus_chunks}")

    @property
    def reuses(self) -> bool:
        return bool(self.shared_tokens or self.turns > 1 or self.rag_chunks)


@dataclass(frozen=True)
class SessionTokens:
    """A :class:`Reuse` at mean prompt I and output O, per request [tokens]."""

    shared_tokens: float  # S
    new_tokens_per_turn: float  # U (chunks included)
    output_tokens: float  # O
    turns: int  # N
    chunk_tokens: float  # R·c of the U
    input_tokens: float  # I, the mean prompt

    def history_tokens(self, turn):
        """A session's own history when turn t (1..N) arrives: ``(t - 1)(U + O)`` [tokens]."""
        return (np.asarray(turn, dtype=float) - 1.0) * (self.new_tokens_per_turn + self.output_tokens)

    @property
    def mean_history_tokens(self) -> float:
        """History per request, over the turns (first turns have none) [tokens]."""
        return float(self.history_tokens(0.5 * (self.turns + 1)))

    @property
    def session_tokens(self) -> float:
        """A whole session after its last turn, the shared prefix included [tokens]."""
        return self.shared_tokens + self.turns * (self.new_tokens_per_turn + self.output_tokens)


def session_tokens(reuse: Reuse, input_tokens, output_tokens) -> SessionTokens:
    """Split the mean prompt into shared prefix, history and new tokens (module docstring)."""
    i, o, n, s = float(input_tokens), float(output_tokens), reuse.turns, float(reuse.shared_tokens)
    u = (2.0 * (i - s) - (n - 1) * o) / (n + 1)
    chunks = float(reuse.rag_chunks * reuse.rag_chunk_tokens)
    if u < max(1.0, chunks):
        raise ValueError(
            f"input_tokens={input_tokens!r} is too short for prefix turns={n}, shared_tokens={reuse.shared_tokens} "
            f"and output_tokens={output_tokens!r}: the shared prefix and the history of {n} turns already average "
            f"{s + (n - 1) * o / 2:,.0f} tokens, leaving {u:,.0f} new tokens per turn (need at least "
            f"{max(1.0, chunks):,.0f}{', the RAG chunks' if chunks else ''}); raise input_tokens or lower turns")
    return SessionTokens(s, u, o, n, chunks, i)


def prefill_work(input_tokens, cached_tokens):
    """(tokens to compute, prompt length whose causal attention costs the same) for a prompt of I tokens
    whose first H are cached [tokens].

    The M = I - H new tokens still attend to the whole context: their causal attention covers
    ``M·(I - (M - 1)/2)`` (query, key) pairs, the same as a fresh prompt of p tokens with
    ``p(p + 1)/2`` pairs (exact for full-attention layers). At least one token is computed, as
    engines recompute the last one of a fully cached prompt to sample from it [4].
    """
    i = np.asarray(input_tokens, dtype=float)
    cached = np.asarray(cached_tokens, dtype=float)
    new = np.where(cached > 0, np.clip(i - cached, 1.0, np.maximum(i, 1.0)), i)
    pairs = new * (i - 0.5 * (new - 1.0))
    return new, np.where(cached > 0, 0.5 * (np.sqrt(1.0 + 8.0 * pairs) - 1.0), i)


def zipf_popularity(chunks: int, exponent: float):
    """Request probabilities of a corpus's chunks, ∝ rank^(-α) [1]."""
    p = np.arange(1, chunks + 1, dtype=float) ** -float(exponent)
    return p / p.sum()


@dataclass(frozen=True)
class CacheLoad:
    """The objects a reuse pattern asks an LRU cache to keep, at a request rate [1/s, B, s]."""

    requests_per_s: float
    turns: int
    think_time_s: float
    shared_bytes: float
    history_bytes: np.ndarray  # b_t: a session's own history after turn t = 1..N
    chunk_bytes: float  # one chunk
    chunk_requests_per_s: np.ndarray = field(repr=False)  # λ R p_i per chunk, or per group of chunks
    chunk_counts: np.ndarray = field(default=None, repr=False)  # chunks in each group (None: one each)

    @property
    def _counts(self):
        return np.ones_like(self.chunk_requests_per_s) if self.chunk_counts is None else self.chunk_counts

    def _think_held(self, t):
        """E[min(Z, T)]: how long a history waits in the cache for its next turn [s]."""
        return self.think_time_s * -np.expm1(-t / self.think_time_s) if self.think_time_s > 0 else 0.0 * t

    def occupancy_bytes(self, characteristic_s):
        """Bytes an LRU cache of characteristic time T holds (module docstring) (vectorized over T)."""
        return self._occupancy()(characteristic_s)

    def _occupancy(self):
        """:meth:`occupancy_bytes` as a function of T, what does not depend on T read once (the same bits: the
        same expressions in the same order), for a search that asks it at many T."""
        lam, turns, shared, chunk, rates = (self.requests_per_s, self.turns, self.shared_bytes, self.chunk_bytes,
                                            self.chunk_requests_per_s)
        past, last = self.history_bytes[:-1].sum(), self.history_bytes[-1]
        counts = self._counts if rates.size else None

        def occupancy(characteristic_s):
            t = np.asarray(characteristic_s, dtype=float)
            out = shared * -np.expm1(-lam * t) + lam / turns * (past * self._think_held(t) + last * t)
            if counts is not None:
                out = out + chunk * (counts * -np.expm1(-np.multiply.outer(t, rates))).sum(axis=-1)
            return out
        return occupancy

    def history_hit(self, characteristic_s):
        """P(a session's history is still cached when its next turn arrives) = P(Z < T)."""
        t = np.asarray(characteristic_s, dtype=float)
        return -np.expm1(-t / self.think_time_s) if self.think_time_s > 0 else np.where(t > 0, 1.0, 0.0)

    def chunk_hit(self, characteristic_s):
        """Share of chunk retrievals found cached: ``Σ p_i (1 - e^(-λ R p_i T))`` (0 without chunks)."""
        t = np.asarray(characteristic_s, dtype=float)
        rates, counts = self.chunk_requests_per_s, self._counts
        if not rates.size:
            return 0.0 * t
        return (counts * rates / (counts * rates).sum() * -np.expm1(-np.multiply.outer(t, rates))).sum(axis=-1)

    def shared_hit(self, characteristic_s):
        return -np.expm1(-self.requests_per_s * np.asarray(characteristic_s, dtype=float))

    def characteristic_seconds(self, capacity_bytes):
        """Che's T for an LRU cache of ``capacity_bytes`` (vectorized; 0 for an empty cache) [s]."""
        c = np.asarray(capacity_bytes, dtype=float)
        lo, hi = np.full(c.shape, np.log(_T_RANGE[0])), np.full(c.shape, np.log(_T_RANGE[1]))
        occupancy = self._occupancy()
        for k in range(_BISECTIONS):
            mid = 0.5 * (lo + hi)
            over = occupancy(np.exp(mid)) > c
            low, high = np.where(over, lo, mid), np.where(over, mid, hi)
            if k >= _APART_FROM and (low == lo).all() and (high == hi).all():
                break  # ends a float apart: every step left would be this one (the bits of all _BISECTIONS)
            lo, hi = low, high
        return np.where(c > 0, np.exp(0.5 * (lo + hi)), 0.0)

    def seconds_for_history_hit(self, hit_rate):
        """T at which histories are found with probability ``hit_rate``: ``z ln(1/(1 - h))`` [s]."""
        h = checks.fraction("target_hit_rate", hit_rate)
        if np.any(np.asarray(h) >= 1.0):
            raise ValueError(f"target_hit_rate={hit_rate!r} is not allowed: must be below 1 (think times have no "
                             f"upper bound, so no finite cache finds every history)")
        return self.think_time_s * np.log(1.0 / (1.0 - np.asarray(h, dtype=float)))

    def seconds_for_chunk_hit(self, hit_rate):
        """T at which chunk retrievals hit with probability ``hit_rate`` (bisection; chunk hits rise with T) [s]."""
        h = np.asarray(checks.fraction("target_hit_rate", hit_rate), dtype=float)
        if not self.chunk_requests_per_s.size:
            raise ValueError("target_hit_rate applies to sessions or RAG chunks: this reuse has neither")
        lo, hi = np.full(h.shape, np.log(_T_RANGE[0])), np.full(h.shape, np.log(_T_RANGE[1]))
        for _ in range(_BISECTIONS):
            mid = 0.5 * (lo + hi)
            low = self.chunk_hit(np.exp(mid)) < h
            lo, hi = np.where(low, mid, lo), np.where(low, hi, mid)
        return np.exp(0.5 * (lo + hi))

    def resident_sessions(self, characteristic_s, response_seconds):
        """Sessions whose history a cache of characteristic time T keeps, or that are running: λ/N x
        (N responses + (N - 1) think times cut at T + T after the last turn) (Little) [count]."""
        t = np.asarray(characteristic_s, dtype=float)
        held = self.turns * response_seconds + (self.turns - 1) * self._think_held(t) + t
        return self.requests_per_s / self.turns * held


def cache_load(reuse: Reuse, tokens: SessionTokens, requests_per_s, kv_bytes) -> CacheLoad:
    """The :class:`CacheLoad` of ``reuse`` at ``requests_per_s``; ``kv_bytes(tokens)`` gives a context's KV [B]."""
    lam = checks.scalar("requests_per_s", checks.positive("requests_per_s", requests_per_s, high=1e9))
    s = tokens.shared_tokens
    turns = np.arange(1, tokens.turns + 1, dtype=float)
    history = np.asarray(kv_bytes(s + turns * (tokens.new_tokens_per_turn + tokens.output_tokens)), dtype=float) \
        - float(kv_bytes(s))
    rates, counts = np.zeros(0), None
    if reuse.rag_chunks:
        rates = lam * reuse.rag_chunks * zipf_popularity(reuse.rag_corpus_chunks, reuse.rag_zipf)
        if rates.size > _CHUNK_GROUPS:  # neighbouring ranks have nearly the same rate: sum them as groups
            edges = np.unique(np.geomspace(1, rates.size + 1, _CHUNK_GROUPS + 1).astype(int)) - 1
            counts = np.diff(edges).astype(float)
            rates = np.add.reduceat(rates, edges[:-1]) / counts
    return CacheLoad(lam, tokens.turns, float(reuse.think_time_s), float(kv_bytes(s)), history,
                     float(kv_bytes(reuse.rag_chunk_tokens)), rates, counts)
