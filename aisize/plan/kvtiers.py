"""An inference service's KV-cache tiers in the plan: host DRAM and local NVMe per server, a shared-storage share.

Glue only: the physics is :mod:`aisize.serving.prefix` (what a cache of a size finds),
:mod:`aisize.serving.tiers` (inclusive tiers, reload against recompute) and
:func:`aisize.serving.estimate` with ``prefix=`` and ``kv_tiers=``. Here the scenario's
``kv_tiers`` become tiers of one replica, from the hardware catalog:

- the capacity the slowest tier needs for the target hit rate (``capacity_for_hit_rate``); host DRAM
  "auto" takes it within the RAM the server has left after its other line items
  (:func:`aisize.host.host_memory`), or the GB per server given; NVMe and shared storage take it;
- the read path into the replica's GPUs: each GPU's host link (PCIe of its generation, or its share of
  NVLink-C2C on Grace superchips, ``data/links.csv``); NVMe: the drives that hold the capacity
  (``data/storage.csv``), at most the host links; shared storage: the server's storage NICs, at most
  the host links, after the unloaded latency of the storage the plan buys. The system is chosen after the
  services, from their demand, so the services are sized with a guidance level reloading at the slowest
  purchasable candidate's latency (``bought_latency_seconds``); once the storage is bought,
  :func:`on_bought_storage` re-evaluates the tiers on it (``aisize.plan.cluster``, no cycle);
- what the fleet asks of each: capacity, reads, write-through writes (the shared storage's go to the IO
  blender as one more workload, in chunks of LMCache's 256 tokens).
"""

from __future__ import annotations

import math
import dataclasses
from dataclasses import dataclass, field

from aisize import catalog, serving
from aisize.host import host_for_server
from aisize.plan import context as C
from aisize.serving.costs import model_costs
from aisize.serving.lengths import Lengths
from aisize.serving.prefix import cache_load, session_tokens
from aisize.serving.reuse import BLEND_RECOMPUTE_SHARE
from aisize.serving.tiers import KVTier, capacity_for_hit_rate, computed_tokens
from aisize.storage.sizing import bought_latency_seconds

KV_CHUNK_TOKENS = 256  # LMCache's default chunk_size (lmcache/v1/config.py): one object, one IO to a storage tier
_HOST_LINKS = (("gh200", "nvlink-c2c"), ("gb200", "nvlink-c2c-half"), ("gb300", "nvlink-c2c-half"))


@dataclass(frozen=True)
class KVTierRow:
    """One tier of a service [B, B/s, s]; fleet figures unless said."""

    name: str
    path: str  # the link that brings the KV back into the GPUs
    read_bytes_per_s_per_replica: float  # that path's rate into one replica (0 for HBM: nothing moves)
    capacity_per_server_bytes: float
    capacity_bytes: float
    read_bytes_per_s: float
    write_bytes_per_s: float
    served: float  # share of histories (turns 2..N; single-turn RAG: of chunk retrievals) served from it
    reload_s: float  # bringing a mean history back
    recompute_s: float  # recomputing it instead
    used: bool  # reloading beats recomputing


@dataclass(frozen=True)
class KVTierNote:
    """A remark on a service's KV tiers: a stable ``code`` and the figures it states (``facts``; names carry units).
    Its sentence is :func:`aisize.present.kvtiers.kv_note_text`'s.

    Codes: ``dram_left_out`` (dram_per_server_bytes, session_bytes), ``nvme_adds_no_hits``,
    ``dram_inside_hbm``, ``short_of_target`` (hit_share, target_share, cause: dram_capped | reload_slower |
    tiers_too_small), ``re_evaluated`` (system, latency_seconds, sized_latency_seconds)."""

    code: str
    facts: dict = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class KVTierPlan:
    """The KV-cache tiers of one inference service [share, B, B/s, s]."""

    target_hit_rate: float
    needed_bytes_per_replica: float  # what the slowest tier must hold for the target
    hit_rate: float  # of histories (sessions) or chunk retrievals (single-turn RAG), at the planned capacities
    target_met: bool
    prefill_saved_share: float
    resident_sessions: float  # the fleet's sessions running or kept in its largest tier (Little)
    tiers: tuple  # KVTierRow, HBM first
    host_dram_per_server_bytes: float
    host_dram_left_per_server_bytes: float  # what the server's RAM leaves after its other line items
    nvme_per_server_bytes: float
    nvme_drives_per_server: int
    nvme_installed_per_server_bytes: float
    storage_capacity_bytes: float
    storage_read_bytes_per_s: float
    storage_write_bytes_per_s: float
    storage_io_bytes: float  # one chunk's KV
    ttft_hit_s: float | None  # None where no request has a history to find (single turns)
    ttft_miss_s: float
    notes: tuple = ()  # KVTierNote
    storage_latency_seconds: float = 0.0  # unloaded latency the shared-storage tier reloads after (0: no such tier)
    # (arch, shape, estimate keywords) the tiers were planned with, for on_bought_storage; not data
    inputs: tuple = dataclasses.field(default=(), repr=False, compare=False, metadata={"export": False})


def host_link(accelerator):
    """(name, bytes/s per direction) of one GPU's link to its host's memory (catalog links)."""
    link = next((catalog.links[l] for p, l in _HOST_LINKS if accelerator.id.startswith(p)), None)
    link = link or catalog.links[f"pcie-gen{accelerator.pcie_gen}-x16"]
    return link.name, link.bandwidth_per_direction_bytes_per_s


def length_distribution(w):
    """The scenario's lognormal lengths, or None when both are fixed."""
    if not (w.prompt_cv or w.output_cv):
        return None
    return Lengths.lognormal(w.prompt_tokens, w.output_tokens, w.prompt_cv, w.output_cv)


def serving_extras(w) -> dict:
    """Keyword arguments of :func:`aisize.serving.estimate` a scenario's service adds to the plain ones."""
    out = {"length_distribution": length_distribution(w)}
    if w.speculative_method is not None:
        out.update(speculative_method=w.speculative_method, speculative_tokens=w.speculative_tokens or 1)
    return out


def planned_cached_tokens(w) -> float:
    """Prompt tokens a request of the service is planned to find cached, for sizing its fleet: the shared prefix,
    and histories and chunks at the tiers' target hit rate (none without kv_tiers: HBM alone is not sized) [tokens]."""
    if w.prefix is None:
        return 0.0
    tokens = session_tokens(w.prefix.reuse(), w.prompt_tokens, w.output_tokens)
    target = w.kv_tiers.target_hit_rate if w.kv_tiers else 0.0
    return w.prompt_tokens - computed_tokens(tokens, target, target, 1.0, BLEND_RECOMPUTE_SHARE)


def plan_kv_tiers(w, ctx: C.HardwareContext, policies, arch, shape, replicas: int, estimate_kw: dict):
    """(the service's :class:`KVTierPlan`, its replica's estimate with reuse and tiers) at its share of the rate."""
    reuse, server = w.prefix.reuse(), ctx.server
    costs = model_costs(arch, w.weight_precision, w.kv_precision)
    tokens = session_tokens(reuse, w.prompt_tokens, w.output_tokens)
    rate = w.requests_per_s / replicas
    load = cache_load(reuse, tokens, rate, costs.kv_bytes)
    spec = w.kv_tiers
    target = spec.target_hit_rate if spec else 0.0
    need = float(capacity_for_hit_rate(load, target)) if spec and (reuse.turns > 1 or reuse.rag_chunks) else 0.0
    share = shape.gpus / server.gpus  # of a server's RAM, drives and NICs one replica has
    session = float(costs.kv_bytes(tokens.session_tokens))
    link_name, per_gpu = host_link(ctx.accelerator)
    host_bw = per_gpu * shape.gpus
    base = float(host_for_server(server, ctx.accelerator, ratio=policies.host_ram_ratio).memory.total_bytes)
    left = max(server.host_memory_bytes - base, 0.0)
    tiers, paths, notes = [], {"hbm": "HBM (in place)"}, []
    latency = 0.0
    dram = nvme_server = 0.0
    drives = 0
    if spec and spec.host_dram:
        dram = min(need / share, left) if spec.host_dram_gb_per_server == "auto" else spec.host_dram_gb_per_server * 1e9
        if dram * share >= session:
            tiers.append(KVTier("dram", dram * share, host_bw))
            paths["dram"] = f"{shape.gpus} x {link_name}"
        else:
            notes.append(KVTierNote("dram_left_out", {"dram_per_server_bytes": dram, "session_bytes": session}))
            dram = 0.0
    if spec and spec.local_nvme and dram and dram * share >= need:
        notes.append(KVTierNote("nvme_adds_no_hits"))
    if spec and spec.local_nvme:
        drive = catalog.storage[spec.nvme_drive]
        nvme_server = need / share
        drives = max(math.ceil(nvme_server / drive.capacity_bytes), 1)
        drives_rate = drives * drive.read_bandwidth_bytes_per_s * share
        tiers.append(KVTier("nvme", max(need, session), min(drives_rate, host_bw)))
        paths["nvme"] = f"{drives} x {drive.name} per server, then the host links"
    if spec and spec.shared_storage:
        nic = catalog.links[server.storage_nic_link or server.compute_nic_link]
        nics = max(server.storage_nics, 1) * nic.bandwidth_per_direction_bytes_per_s
        # the storage bought is chosen after the services, from their demand (aisize.plan.storage): a named
        # guidance level reloads at the slowest purchasable candidate's latency, so the sizing is never optimistic;
        # on_bought_storage re-evaluates the tier on the system bought
        latency = bought_latency_seconds(ctx.storage, catalog.storage, C.STORAGE_LATENCY_SECONDS)
        tiers.append(KVTier("storage", max(need, session), min(nics * share, host_bw), latency))
        paths["storage"] = _storage_path(server, ctx.storage) if ctx.storage.kind != "guidance" else \
            f"{max(server.storage_nics, 1)} x {nic.name} per server (the shared storage bought for the demand)"
    est = serving.estimate(arch, ctx.accelerator, **estimate_kw, requests_per_s=rate, prefix=reuse,
                           kv_tiers=tiers or None)
    kv = _plan(w, est, tiers, paths, replicas, share, need, dram, left, nvme_server, drives, server, costs, target,
               notes)
    if kv is not None:
        kv = dataclasses.replace(kv, storage_latency_seconds=latency, inputs=(arch, shape, estimate_kw))
    return kv, est


def on_bought_storage(i, w, ctx: C.HardwareContext, policies, record):
    """The service ``i`` (an InferencePlan of workload ``w`` on ``ctx``) with its KV tiers on the storage bought.

    The services are sized before the storage (their tiers' demand sizes it), a guidance level at the slowest
    purchasable latency; this second pass re-evaluates only the tiers' figures (reload, use, hits, TTFT with and
    without a hit) on ``record``, the system bought, at the planned replicas. The replica count, the service's
    latencies and the storage's sizing keep the first pass's figures (no cycle: the sizing's reload latency is never
    below the bought system's, so it is the conservative one). At the same latency only the tier's path changes,
    to name the system; ``i`` itself without a shared-storage tier."""
    k = getattr(i, "kv_tiers", None)
    if k is None or not k.inputs or not any(r.name == "storage" for r in k.tiers):
        return i
    latency = record.latency_seconds or C.STORAGE_LATENCY_SECONDS
    if latency == k.storage_latency_seconds:  # same reload: name the system bought, the figures stand
        rows = tuple(dataclasses.replace(r, path=_storage_path(ctx.server, record)) if r.name == "storage" else r
                     for r in k.tiers)
        return dataclasses.replace(i, kv_tiers=dataclasses.replace(k, tiers=rows))
    arch, shape, kw = k.inputs
    kv, _ = plan_kv_tiers(w, dataclasses.replace(ctx, storage=record), policies, arch, shape, i.replicas, kw)
    if kv is None:
        return i
    note = KVTierNote("re_evaluated", {"system": record.name, "latency_seconds": latency,
                                       "sized_latency_seconds": k.storage_latency_seconds})
    return dataclasses.replace(i, kv_tiers=dataclasses.replace(kv, notes=kv.notes + (note,)))


def _storage_path(server, storage) -> str:
    """The read path of the shared-storage tier: the server's storage NICs to ``storage``."""
    nic = catalog.links[server.storage_nic_link or server.compute_nic_link]
    return f"{max(server.storage_nics, 1)} x {nic.name} per server ({storage.name})"


def _plan(w, est, tiers, paths, replicas, share, need, dram, left, nvme_server, drives, server, costs, target,
          notes) -> KVTierPlan | None:
    k = est.kv_reuse
    if k is None:  # the replica does not fit or is overloaded: no reuse figures
        return None
    caps = {"hbm": k.hbm_cache_bytes, **{t.name: t.capacity_bytes for t in tiers}}
    rows = tuple(KVTierRow(u.name, paths[u.name], next((t.read_bytes_per_s for t in tiers if t.name == u.name), 0.0),
                           caps[u.name] / share, caps[u.name] * replicas, u.read_bytes_per_s * replicas,
                           u.write_bytes_per_s * replicas,
                           u.history_served if w.prefix.turns > 1 else u.chunk_served, u.history_reload_s,
                           u.history_recompute_s, u.used) for u in k.tiers.tiers)
    hit = k.tiers.history_hit if w.prefix.turns > 1 else k.tiers.chunk_hit
    storage = next((r for r in rows if r.name == "storage"), None)
    largest = max(k.tiers.tiers, key=lambda u: u.characteristic_s)
    if dram and caps.get("dram", 0.0) <= caps["hbm"]:
        notes.append(KVTierNote("dram_inside_hbm"))
    if target and hit < 0.99 * target:
        cause = ("dram_capped" if dram and dram < need / share else
                 "reload_slower" if any(not r.used for r in rows) else "tiers_too_small")
        notes.append(KVTierNote("short_of_target", {"hit_share": hit, "target_share": target, "cause": cause}))
    return KVTierPlan(
        target, need, hit, (not target) or hit >= 0.99 * target, k.prefill_saved_share,
        largest.resident_sessions * replicas, rows, dram, left, nvme_server, drives, server.local_nvme_bytes or 0.0,
        storage.capacity_bytes if storage else 0.0, storage.read_bytes_per_s if storage else 0.0,
        storage.write_bytes_per_s if storage else 0.0,
        KV_CHUNK_TOKENS * float(costs.kv_bytes_per_token_full + costs.kv_bytes_per_token_window),
        k.ttft_hit_s, k.ttft_miss_s, tuple(notes))
