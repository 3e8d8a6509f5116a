"""KV-cache tiers: HBM, host DRAM, local NVMe, shared storage. What each holds, serves and costs.

Engines keep finished requests' KV for reuse in tiers of growing size and falling speed:
the free part of the GPU's KV pool (vLLM, SGLang), host DRAM (vLLM's CPU offloading, LMCache's
local CPU backend, SGLang HiCache's host pool, Dynamo KVBM's G2), local NVMe (LMCache local disk,
KVBM G3) and shared storage (LMCache remote backends, HiCache's 3FS/Mooncake store, KVBM G4,
Mooncake's pool) [1-5]. They write through: what the GPU computes is copied down, so every tier
sees every insertion and use and holds the most recent objects its capacity allows. LRU caches
fed the same stream are inclusive (a smaller one holds a subset of a larger one: the LRU stack
property [6]), so each tier's contents follow from its own characteristic time
(:mod:`.prefix`), and a hit is served by the fastest tier that holds it.

Bringing KV back costs ``bytes / bandwidth + latency``, through the slowest link on the way:
PCIe or NVLink-C2C from host DRAM, the drives then the host link from NVMe, the storage network
then the host link from shared storage. A reload is worth it only when faster than recomputing
the same tokens [1, 2]; a tier that is not is skipped (its hits are recomputed). Sizing runs the
other way: the capacity the last tier needs for a target hit rate is ``occupancy(T)`` at the T that
gives it, and the bandwidth that brings a history back within a TTFT budget is its bytes over
the budget.

IO a tier sees, per replica: reads = requests/s x the bytes each reloads from it; writes
(write-through, the tiers below HBM) = requests/s x the KV of the tokens each computes (new
prompt tokens and outputs), which LMCache and HiCache store once per chunk or page [3, 4].

References
----------
.. [1] Gao et al. 2024 (CachedAttention / AttentionStore), USENIX ATC'24, sec. 3-4 (HBM, host
       DRAM and SSD tiers; layer-wise pre-loading; asynchronous saving).
.. [2] Qin et al. 2025 (Mooncake), FAST'25, sec. 4-5 (a KV pool in the cluster's DRAM and SSD
       over RDMA; reuse when the transfer beats recomputation).
.. [3] LMCache docs (CPU, local disk and remote backends; ``chunk_size`` 256 tokens).
.. [4] SGLang docs "HiCache Best Practices" (``--hicache-ratio``, ``--hicache-write-policy
       write_through``, storage backends); vLLM ``--kv-offloading-size``/``--kv-offloading-backend``.
.. [5] NVIDIA Dynamo docs "KVBM" (tiers G1 GPU, G2 host, G3 disk, G4 remote; ``DYN_KVBM_*``).
.. [6] Mattson, Gecsei, Slutz, Traiger 1970, "Evaluation techniques for storage hierarchies",
       IBM Systems Journal 9(2) (the LRU stack / inclusion property).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize import checks
from aisize.serving.prefix import CacheLoad, SessionTokens

TIERS = ("hbm", "dram", "nvme", "storage")  # fastest first
MAX_BYTES = 1e18


@dataclass(frozen=True)
class KVTier:
    """One KV-cache tier as one replica sees it [B, B/s, s]."""

    name: str  # one of TIERS
    capacity_bytes: float  # KV it holds for this replica (the model's whole KV, at the KV precision)
    read_bytes_per_s: float  # into this replica's GPUs, through the slowest link on the way
    latency_s: float = 0.0  # fixed time per reload (a storage round trip)

    def __post_init__(self):
        checks.choice("kv_tiers name", self.name, TIERS)
        checks.non_negative(f"kv_tiers[{self.name}].capacity_bytes", self.capacity_bytes, high=MAX_BYTES)
        checks.positive(f"kv_tiers[{self.name}].read_bytes_per_s", self.read_bytes_per_s, high=np.inf)
        checks.non_negative(f"kv_tiers[{self.name}].latency_s", self.latency_s, high=60.0)

    def reload_seconds(self, kv_bytes):
        """Time to bring ``kv_bytes`` back into the GPUs [s] (0 from HBM, where they already are)."""
        b = np.asarray(kv_bytes, dtype=float)
        if self.name == "hbm":
            return 0.0 * b
        return np.where(b > 0, b / self.read_bytes_per_s + self.latency_s, 0.0)


def check_tiers(tiers, session_bytes: float):
    """The tiers given (below HBM), checked: known names, each once, each holding one whole session."""
    out = tuple(tiers or ())
    seen = set()
    for t in out:
        if not isinstance(t, KVTier):
            raise ValueError(f"kv_tiers: {t!r} is not allowed: give KVTier records (dram, nvme, storage)")
        if t.name == "hbm":
            raise ValueError("kv_tiers: hbm is not allowed: the HBM tier is the free part of the engine's KV pool")
        if t.name in seen:
            raise ValueError(f"kv_tiers: {t.name} is given twice")
        seen.add(t.name)
        if t.capacity_bytes < session_bytes:
            raise ValueError(f"kv_tiers[{t.name}].capacity_bytes={t.capacity_bytes:,.0f} is not allowed: smaller "
                             f"than one session's KV ({session_bytes:,.0f} B); give at least that, or leave the "
                             f"tier out")
    return out


@dataclass(frozen=True)
class TierUse:
    """What one tier holds and serves for a replica, per request unless said [B, s, 1/s]."""

    name: str
    capacity_bytes: float
    characteristic_s: float  # Che's T: an object unused this long has been evicted
    used: bool  # reloading from it beats recomputing (always true for HBM)
    history_served: float  # share of histories (turns 2..N) served from this tier
    chunk_served: float  # share of chunk retrievals served from this tier
    shared_served: float  # share of requests whose shared prefix comes from this tier
    reload_bytes: float  # mean bytes a request reloads from this tier
    history_reload_s: float  # reloading a mean history from this tier
    history_recompute_s: float  # recomputing it instead
    read_bytes_per_s: float  # IO demand on the tier (this replica)
    write_bytes_per_s: float
    resident_sessions: float  # sessions whose history it keeps, or running (Little)


@dataclass(frozen=True)
class ReuseTiers:
    """The hits, the work a replica still does, and each tier's part [share, tokens, B, s]."""

    tokens: SessionTokens
    tiers: tuple  # TierUse, fastest first
    history_hit: float  # share of histories (turns 2..N) found in some used tier
    chunk_hit: float  # share of chunk retrievals found
    shared_hit: float
    new_tokens: float  # mean prompt tokens a request computes
    cached_tokens: float  # mean prompt tokens it finds (I - new)
    hit_new_tokens: float  # a request whose history was found: tokens it computes
    miss_new_tokens: float  # one whose history was not (first turns included)
    hit_input_tokens: float  # mean prompt of each class
    miss_input_tokens: float
    hit_share: float  # share of requests whose history is found
    reload_s_by_tier: dict  # a hit class's reload time, by serving tier
    miss_reload_s: float  # the miss class's reload of shared prefix and chunks


def computed_tokens(tokens: SessionTokens, history_hit, chunk_hit, shared_hit, blend_recompute_share,
                    history_tokens=None) -> float:
    """Mean prompt tokens a request computes when histories, chunks and the shared prefix are found at these
    rates (a history miss recomputes it; a found chunk recomputes the blended share) [tokens].

    ``history_tokens`` is the mean history of turns 2..N (default: from ``tokens``).
    """
    n = tokens.turns
    if history_tokens is None:
        history_tokens = float(tokens.history_tokens(np.arange(2, n + 1, dtype=float)).mean()) if n > 1 else 0.0
    chunks = tokens.chunk_tokens * (1.0 - chunk_hit * (1.0 - blend_recompute_share))
    fresh = tokens.new_tokens_per_turn - tokens.chunk_tokens + chunks + tokens.shared_tokens * (1.0 - shared_hit)
    return fresh + (n - 1) / n * (1.0 - history_hit) * history_tokens


def _served(hits, used):
    """Share served by each tier: found in it and in no faster used tier (inclusive LRU tiers)."""
    out, best = [], 0.0
    for h, u in zip(hits, used):
        top = max(best, float(h)) if u else best
        out.append(top - best)
        best = top
    return out, best


def reuse_tiers(load: CacheLoad, tokens: SessionTokens, tiers, *, kv_bytes, kv_bytes_per_token,
                recompute_seconds, blend_recompute_share, response_seconds=0.0) -> ReuseTiers:
    """Hit rates, tokens computed and reloaded, and IO of each tier for a replica (module docstring).

    Parameters
    ----------
    load : :class:`~aisize.serving.prefix.CacheLoad` at the replica's request rate
    tokens : :class:`~aisize.serving.prefix.SessionTokens`
    tiers : :class:`KVTier` records, HBM first (its capacity: the pool's free part, whole-model bytes)
    kv_bytes : context -> KV bytes of the whole model [B]
    kv_bytes_per_token : KV per computed token, for the write-through traffic [B]
    recompute_seconds : tokens -> time to recompute a history of that many tokens on this replica [s]
    blend_recompute_share : share of a reused chunk's tokens recomputed by blending (CacheBlend)
    response_seconds : a turn's mean time in the replica, for the sessions it keeps [s]
    """
    n, s, u, o = tokens.turns, tokens.shared_tokens, tokens.new_tokens_per_turn, tokens.output_tokens
    later = (n - 1) / n  # share of requests with a history to look for
    t_hist = np.arange(2, n + 1, dtype=float)
    hist_tokens = float(tokens.history_tokens(t_hist).mean()) if n > 1 else 0.0
    hist_bytes = float((kv_bytes(s + tokens.history_tokens(t_hist)) - kv_bytes(s)).mean()) if n > 1 else 0.0
    chunk_bytes = load.chunk_bytes
    order = sorted(tiers, key=lambda t: -t.read_bytes_per_s if t.name != "hbm" else -np.inf)
    ts = [float(load.characteristic_seconds(t.capacity_bytes)) for t in order]
    recompute = float(recompute_seconds(hist_tokens)) if n > 1 else 0.0
    reload = [float(t.reload_seconds(hist_bytes)) for t in order]
    used = [t.name == "hbm" or n == 1 or r < recompute for t, r in zip(order, reload)]
    hist_served, h_hist = _served([float(load.history_hit(x)) for x in ts], used)
    chunk_served, h_chunk = _served([float(load.chunk_hit(x)) for x in ts], used)
    shared_served, h_shared = _served([float(load.shared_hit(x)) for x in ts], used)
    fresh = computed_tokens(tokens, 1.0, h_chunk, h_shared, blend_recompute_share, hist_tokens)  # every request
    new = computed_tokens(tokens, h_hist, h_chunk, h_shared, blend_recompute_share, hist_tokens)
    i = tokens.input_tokens
    rag = load.chunk_requests_per_s.sum() / load.requests_per_s if load.chunk_requests_per_s.size else 0.0
    per_request_common = [rag * cs * chunk_bytes + sh * float(kv_bytes(s))
                          for cs, sh in zip(chunk_served, shared_served)]
    common_reload = sum(float(t.reload_seconds(b)) for t, b in zip(order, per_request_common))
    uses, reload_by_tier = [], {}
    writes = load.requests_per_s * kv_bytes_per_token * (new + o)
    for k, t in enumerate(order):
        reload_bytes = per_request_common[k] + later * hist_served[k] * hist_bytes
        reload_by_tier[t.name] = reload[k] + common_reload
        uses.append(TierUse(t.name, float(t.capacity_bytes), ts[k], used[k], hist_served[k], chunk_served[k],
                            shared_served[k], reload_bytes, reload[k], recompute,
                            load.requests_per_s * reload_bytes if t.name != "hbm" else 0.0,
                            writes if t.name != "hbm" else 0.0,
                            float(load.resident_sessions(ts[k], response_seconds)) if n > 1 else 0.0))
    hit_share = later * h_hist
    miss_share = 1.0 - hit_share
    miss_new = fresh + later * (1.0 - h_hist) * hist_tokens / miss_share if miss_share > 0 else fresh
    miss_input = (i - hit_share * (s + u + hist_tokens)) / miss_share if miss_share > 0 else i
    return ReuseTiers(tokens, tuple(uses), h_hist, h_chunk, h_shared, new, i - new, fresh,
                      miss_new, s + u + hist_tokens, miss_input, hit_share, reload_by_tier, common_reload)


def capacity_for_hit_rate(load: CacheLoad, target_hit_rate):
    """Bytes an LRU tier needs so that a target share of histories (sessions), else of chunk retrievals
    (single-turn RAG), is found: ``occupancy(T)`` at the T that gives it [B] (vectorized)."""
    t = load.seconds_for_history_hit(target_hit_rate) if load.turns > 1 else load.seconds_for_chunk_hit(target_hit_rate)
    return load.occupancy_bytes(t)


def bandwidth_for_budget(kv_bytes, budget_seconds, latency_s=0.0):
    """Read bandwidth that brings ``kv_bytes`` back within ``budget_seconds`` (after a fixed latency) [B/s]."""
    b = checks.positive("budget_seconds", budget_seconds, high=1e6)
    room = np.asarray(b, dtype=float) - latency_s
    if np.any(room <= 0):
        raise ValueError(f"budget_seconds={budget_seconds!r} is not allowed: must exceed the tier's latency of "
                         f"{latency_s:g} s")
    return np.asarray(kv_bytes, dtype=float) / room
