"""A discrete-event simulation (simpy) of reused prompts in per-tier LRU caches: sessions, chunks, tiers.

It checks the closed forms of :mod:`.prefix` and :mod:`.tiers` (Che's approximation, the inclusive
tiers) and, run inside the scheduler of :mod:`.simulate`, those of :mod:`.reuse` (prefill saved,
TTFT by class). The world is the one the closed forms describe, object by object:

- sessions arrive as a Poisson stream at λ/N; each runs N turns; turn t's prompt is
  ``S + (t - 1)(U + O) + U`` and after its response the user thinks for an exponential time
  (mean z) before the next turn;
- every tier (HBM first, then the ones given) is an LRU cache of whole objects, fed the same
  stream (write-through): at a turn's start its history is looked up fastest tier first and
  taken out of every tier (it is in use); at its end the grown history is put into every tier,
  each evicting least-recently used objects until it fits; the shared prefix and each retrieved
  chunk (R per request, drawn independently by Zipf popularity) are looked up and touched or
  put at the turn's start;
- in the scheduler, the HBM tier holds what the running requests leave of the KV pool (it
  shrinks as they are admitted), the request starts after the tier it was served from has
  reloaded its bytes, and its found tokens are not prefilled.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import simpy

from aisize import checks
from aisize.serving.prefix import SessionTokens, zipf_popularity


class _LRU:
    """One tier: whole objects by key, least recently used first [B]."""

    def __init__(self, name, capacity_bytes):
        self.name, self.capacity, self.used, self.items = name, float(capacity_bytes), 0.0, OrderedDict()

    def has(self, key):
        return key in self.items

    def touch(self, key):
        self.items.move_to_end(key)

    def take(self, key):
        self.used -= self.items.pop(key, 0.0)

    def put(self, key, size):
        self.take(key)
        if size > self.capacity:
            return
        self.items[key] = float(size)
        self.used += size
        self.trim()

    def resize(self, capacity_bytes):
        self.capacity = float(capacity_bytes)
        self.trim()

    def trim(self):
        while self.used > self.capacity + 1e-6 and self.items:
            self.used -= self.items.popitem(last=False)[1]


@dataclass(frozen=True)
class CacheSimulation:
    """Measured over the turns that started after the warm-up [share, count]."""

    history_served: dict  # share of histories (turns 2..N) served from each tier
    history_hit: float  # share found in some tier
    chunk_served: dict  # share of chunk retrievals served from each tier
    chunk_hit: float
    shared_hit: float
    prefill_saved_share: float  # prompt tokens found (less the chunks' recomputed share) / prompt tokens
    lookups: int  # histories looked up after the warm-up


class SessionWorld:
    """Sessions, chunks and LRU tiers (module docstring); drives a cache alone or a scheduler's requests."""

    def __init__(self, reuse, tokens: SessionTokens, kv_bytes, tiers, rng):
        self.reuse, self.tokens, self.rng, self.kv_bytes = reuse, tokens, rng, kv_bytes
        self.tiers = [_LRU(name, cap) for name, cap in tiers]
        self.counting = False  # statistics start after the warm-up
        self.popularity = (zipf_popularity(reuse.rag_corpus_chunks, reuse.rag_zipf) if reuse.rag_chunks else None)
        self.shared_bytes = float(kv_bytes(tokens.shared_tokens))
        self.chunk_bytes = float(kv_bytes(reuse.rag_chunk_tokens)) if reuse.rag_chunks else 0.0
        self.counts = {"hist": 0, "shared": 0, "chunk": 0, "shared_hit": 0, "prompt": 0.0, "found": 0.0,
                       **{f"hist_{t.name}": 0 for t in self.tiers}, **{f"chunk_{t.name}": 0 for t in self.tiers}}

    def _use(self, key, size):
        """An object every request may share: touched where it is, put where it is not."""
        for tier in self.tiers:
            if tier.has(key):
                tier.touch(key)
            else:
                tier.put(key, size)

    def _find(self, key):
        for t in self.tiers:
            if t.has(key):
                return t
        return None

    def start_turn(self, session, turn):
        """Look up a turn's history, shared prefix and chunks: (tokens found, {tier: bytes to reload}, tag)."""
        counted = self.counting
        found, reload = 0.0, {}
        tag = "miss"
        if self.tokens.shared_tokens:
            t = self._find("shared")
            if counted:
                self.counts["shared"] += 1
                self.counts["shared_hit"] += t is not None
            if t is not None:
                found += self.tokens.shared_tokens
                reload[t.name] = reload.get(t.name, 0.0) + self.shared_bytes
            self._use("shared", self.shared_bytes)
        if turn > 1:
            key = ("h", session)
            t = self._find(key)
            if counted:
                self.counts["hist"] += 1
                if t is not None:
                    self.counts[f"hist_{t.name}"] += 1
            if t is not None:
                h = float(self.tokens.history_tokens(turn))
                found += h
                s = self.tokens.shared_tokens
                reload[t.name] = reload.get(t.name, 0.0) + float(self.kv_bytes(s + h) - self.kv_bytes(s))
                tag = t.name
            for tier in self.tiers:
                tier.take(key)
        if self.popularity is not None:
            for c in self.rng.choice(self.popularity.size, size=self.reuse.rag_chunks, p=self.popularity):
                key = ("c", int(c))
                t = self._find(key)
                if counted:
                    self.counts["chunk"] += 1
                    if t is not None:
                        self.counts[f"chunk_{t.name}"] += 1
                if t is not None:
                    found += self.reuse.rag_chunk_tokens * (1.0 - self.blend_share)
                    reload[t.name] = reload.get(t.name, 0.0) + self.chunk_bytes
                self._use(key, self.chunk_bytes)
        if counted:
            self.counts["prompt"] += float(self.tokens.shared_tokens + self.tokens.history_tokens(turn)
                                           + self.tokens.new_tokens_per_turn)
            self.counts["found"] += found
        return found, reload, tag

    blend_share = 0.0  # share of a found chunk's tokens recomputed (set by the caller)

    def end_turn(self, session, turn):
        """Put the grown history of a finished turn into every tier."""
        s = self.tokens.shared_tokens
        size = float(self.kv_bytes(s + turn * (self.tokens.new_tokens_per_turn + self.tokens.output_tokens))
                     - self.kv_bytes(s))
        for tier in self.tiers:
            tier.put(("h", session), size)

    def think(self):
        z = self.reuse.think_time_s
        return self.rng.exponential(z) if z > 0 else 0.0

    def result(self) -> CacheSimulation:
        c = self.counts
        hist = {t.name: c[f"hist_{t.name}"] / max(c["hist"], 1) for t in self.tiers}
        chunk = {t.name: c[f"chunk_{t.name}"] / max(c["chunk"], 1) for t in self.tiers}
        return CacheSimulation(hist, sum(hist.values()), chunk, sum(chunk.values()),
                               c["shared_hit"] / max(c["shared"], 1), c["found"] / max(c["prompt"], 1.0), c["hist"])


def simulate_cache(reuse, tokens: SessionTokens, *, requests_per_s, kv_bytes, tiers, sessions=2000,
                   response_seconds=0.0, warmup_share=0.3, seed=1) -> CacheSimulation:
    """Sessions through LRU tiers alone, each turn taking ``response_seconds`` [share].

    Parameters
    ----------
    reuse, tokens : :class:`~aisize.serving.prefix.Reuse` and its :class:`~aisize.serving.prefix.SessionTokens`
    requests_per_s : λ (sessions arrive at λ/N) [1/s]
    kv_bytes : context -> KV bytes [B]
    tiers : (name, capacity_bytes) pairs, fastest first
    sessions : sessions simulated; turns that start in the first ``warmup_share`` of their arrival span
        are left out of the statistics
    """
    n = int(checks.integer("sessions", sessions, low=10, high=10**6))
    lam = checks.scalar("requests_per_s", checks.positive("requests_per_s", requests_per_s, high=1e9))
    rng = np.random.default_rng(seed)
    world = SessionWorld(reuse, tokens, kv_bytes, tiers, rng)
    env = simpy.Environment()

    def warmup():
        yield env.timeout(warmup_share * n * tokens.turns / lam)
        world.counting = True

    def session(k):
        for turn in range(1, tokens.turns + 1):
            world.start_turn(k, turn)
            if response_seconds > 0:
                yield env.timeout(response_seconds)
            world.end_turn(k, turn)
            if turn < tokens.turns:
                yield env.timeout(world.think())

    def arrivals():
        for k in range(n):
            yield env.timeout(rng.exponential(tokens.turns / lam))
            env.process(session(k))

    env.process(arrivals())
    env.process(warmup())
    env.run()
    return world.result()


class SessionSource:
    """A request source for :func:`aisize.serving.simulate.simulate`: sessions whose turns find their
    history in LRU tiers, reload it at each tier's rate, and prefill the rest [1/s, B/s, s].

    Sessions keep arriving until the scheduler has finished ``requests`` requests, so the load stays
    steady to the end (only the few requests in flight at the stop are cut, a request being much
    shorter than a session); hit statistics start after ``warmup_share`` of the expected span.
    """

    def __init__(self, reuse, tokens: SessionTokens, *, requests_per_s, kv_bytes, kv_bytes_per_token,
                 hbm_pool_tokens, tiers=(), requests=1500, blend_share=0.0, warmup_share=0.3, seed=1):
        self.rng = np.random.default_rng(seed)
        self.tokens, self.lam = tokens, float(requests_per_s)
        self.warmup_s = warmup_share * requests / self.lam
        self.per_token, self.pool = float(kv_bytes_per_token), float(hbm_pool_tokens)
        self.bandwidth = {"hbm": np.inf, **{t.name: t.read_bytes_per_s for t in tiers}}
        self.latency = {"hbm": 0.0, **{t.name: t.latency_s for t in tiers}}
        layers = [("hbm", self.pool * self.per_token)] + [(t.name, t.capacity_bytes) for t in tiers]
        self.world = SessionWorld(reuse, tokens, kv_bytes, layers, self.rng)
        self.world.blend_share = blend_share
        self.requests = int(requests)

    def on_kv(self, used_tokens):
        """The HBM tier holds what the running requests leave of the pool."""
        self.world.tiers[0].resize(max(self.pool - used_tokens, 0.0) * self.per_token)

    def __call__(self, env, submit):
        tokens = self.tokens

        def session(k):
            for turn in range(1, tokens.turns + 1):
                start = env.now
                found, reload, tag = self.world.start_turn(k, turn)
                wait = sum(b / self.bandwidth[name] + self.latency[name] for name, b in reload.items() if b > 0)
                if wait > 0:
                    yield env.timeout(wait)
                prompt = int(round(float(tokens.shared_tokens + tokens.history_tokens(turn)
                                         + tokens.new_tokens_per_turn)))
                r = submit(prompt, int(round(tokens.output_tokens)), cached=int(found), tag=tag, arrival=start)
                yield r.finished
                self.world.end_turn(k, turn)
                if turn < tokens.turns:
                    yield env.timeout(self.world.think())

        def arrivals():
            env.process(warmup())
            k = 0
            while True:
                yield env.timeout(self.rng.exponential(tokens.turns / self.lam))
                env.process(session(k))
                k += 1

        def warmup():
            yield env.timeout(self.warmup_s)
            self.world.counting = True

        return arrivals()


def simulate_reuse_estimate(est, reuse, *, kv_tiers=(), requests=1500, seed=1, warmup_share=0.3,
                            calibration=None):
    """Run the scheduler of :func:`~aisize.serving.simulate.simulate` on the replica of a
    :class:`~aisize.serving.ServingEstimate` with sessions and tiers as its ``kv_reuse`` describes.

    Returns (:class:`~aisize.serving.simulate.SimulationResult` with ``ttft_by_tag`` by serving tier and
    ``"miss"``, :class:`CacheSimulation`).
    """
    from aisize.serving.estimate import replica_of
    from aisize.serving.prefix import session_tokens
    from aisize.serving.reuse import BLEND_RECOMPUTE_SHARE
    from aisize.serving.simulate import simulate_replica

    r = replica_of(est, calibration)
    tokens = session_tokens(reuse, est.input_tokens, est.output_tokens)
    source = SessionSource(reuse, tokens, requests_per_s=est.requests_per_s, kv_bytes=r.costs.kv_bytes,
                           kv_bytes_per_token=r.kv_bytes_per_token, hbm_pool_tokens=r.pool_tokens, tiers=kv_tiers,
                           requests=requests, blend_share=BLEND_RECOMPUTE_SHARE, warmup_share=warmup_share,
                           seed=seed)
    # TTFTs without the request's fixed time outside the GPU: aisize.validation.simulation.scheduler_rows compares
    # them with the estimate's less that time
    sim = simulate_replica(r, warmup_share=warmup_share, seed=seed, request_seconds=0.0, source=source,
                           on_kv=source.on_kv)
    return sim, source.world.result()
