"""The report's "KV-cache tiers" section: reused prompts, where their KV waits between uses, what it costs.

Every figure comes from the plan (:class:`aisize.plan.kvtiers.KVTierPlan` of each service with
``prefix``); nothing is recomputed here.
"""

from __future__ import annotations


from aisize.present.kvtiers import kv_notes_text
from aisize.report.context import ReportContext
from aisize.report.markup import DASH, Html, block, count, duration, gb, gib, note, pct, rate, table, yes_no

TIER_NAMES = {"hbm": "HBM (free KV pool)", "dram": "Host DRAM", "nvme": "Local NVMe", "storage": "Shared storage"}


def _time(seconds) -> str:
    """A duration, or a dash where the class is empty (single-turn services have no history to find)."""
    return DASH if seconds is None else duration(seconds)


def applies(ctx: ReportContext) -> bool:
    return any(i.kv_tiers is not None for i in ctx.plan.inference)


def kv_tiers(ctx: ReportContext) -> Html:
    """Per service: hits and prefill saved, TTFT by hit and miss, each tier's capacity, path and IO."""
    services = [i for i in ctx.plan.inference if i.kv_tiers is not None]
    summary = [[i.name, pct(k.target_hit_rate) if k.target_hit_rate else DASH, pct(k.hit_rate, 1),
                yes_no(k.target_met, "met", "missed"), pct(k.prefill_saved_share), count(k.resident_sessions),
                _time(k.ttft_hit_s), _time(k.ttft_miss_s)] for i in services for k in (i.kv_tiers,)]
    summary_t = table(["Service", "Target hit rate", "Hit rate", "Target", "Prefill saved", "Sessions kept",
                       "TTFT mean, hit", "TTFT mean, miss"], summary, caption="Prompt reuse", css="numeric")
    size = (lambda r: gib if r.name in ("hbm", "dram") else gb)  # memory in GiB, drives and storage in GB
    rows = [[i.name, TIER_NAMES[r.name], size(r)(r.capacity_per_server_bytes), size(r)(r.capacity_bytes), pct(r.served),
             rate(r.read_bytes_per_s), rate(r.write_bytes_per_s)] for i in services for r in i.kv_tiers.tiers]
    tiers_t = table(["Service", "Tier", "Capacity / server", "Capacity (fleet)", "Hits served", "Reads (fleet)",
                     "Writes (fleet)"], rows, caption="KV-cache tiers", css="numeric")
    paths = [[i.name, TIER_NAMES[r.name], r.path,
              rate(r.read_bytes_per_s_per_replica) if r.read_bytes_per_s_per_replica else DASH,
              duration(r.reload_s) if r.name != "hbm" and r.recompute_s else DASH,
              duration(r.recompute_s) if r.recompute_s else DASH, yes_no(r.used, "reload", "recompute")]
             for i in services for r in i.kv_tiers.tiers]
    paths_t = table(["Service", "Tier", "Path", "Path rate / replica", "Reload", "Recompute", "Worth it"], paths,
                    caption="Reload or recompute a history", css="numeric wrap3")
    host = [[i.name, gib(k.host_dram_per_server_bytes), gib(k.host_dram_left_per_server_bytes),
             gib(i.host_memory_needed_bytes), gib(i.server_host_memory_bytes), yes_no(i.host_memory_fits),
             gb(k.nvme_per_server_bytes) if k.nvme_drives_per_server else DASH,
             count(k.nvme_drives_per_server) if k.nvme_drives_per_server else DASH,
             gb(k.nvme_installed_per_server_bytes) if k.nvme_drives_per_server else DASH,
             gb(k.storage_capacity_bytes) if k.storage_capacity_bytes else DASH,
             rate(k.storage_read_bytes_per_s + k.storage_write_bytes_per_s) if k.storage_capacity_bytes else DASH]
            for i in services for k in (i.kv_tiers,)]
    host_t = table(["Service", "KV in host DRAM / server", "DRAM left / server", "Host RAM need / server",
                    "Host RAM / server", "Fits", "KV on NVMe / server", "Drives / server", "NVMe installed",
                    "KV on shared storage", "Storage IO"], host, caption="What the tiers ask of servers and storage",
                   css="numeric")
    notes = [f"{i.name}: {n}" for i in services for n in kv_notes_text(i.kv_tiers)]
    return Html("".join(str(x) for x in [
        block(summary_t, note(
            "A session's history (and a shared system prompt, and popular RAG chunks) is kept between its turns "
            "by least-recently-used tiers; the hit rate is the share of histories (single-turn RAG: of chunk "
            "retrievals) still cached when they are needed, from Che's approximation at each tier's capacity. "
            "Found tokens skip prefill but are still read as KV every decode step. Sessions kept: Little's law, "
            "session rate × the time a session's history is held. TTFT mean, hit: of requests whose history was "
            "found (reloaded first when it sits below HBM); miss: of first turns and histories that were evicted.")),
        block(tiers_t, note(
            "Tiers are inclusive (each writes through what the GPUs compute, as LMCache, vLLM's CPU offload, "
            "SGLang HiCache and Dynamo KVBM do) and a hit is served by the fastest tier that holds it. A reload "
            "costs bytes ÷ the path's rate (PCIe or NVLink-C2C from host DRAM; the drives, then PCIe, from NVMe; "
            "the storage NICs and the storage's latency from shared storage) and is worth it only when faster "
            "than recomputing the history. HBM is what the engine's KV pool leaves free beside the running "
            "batch.")),
        block(paths_t),
        block(host_t, note(
            "The host-DRAM tier is a line item of host RAM per server; NVMe drives are counted for the capacity "
            "the target needs; the shared-storage tier joins the IO blender as one more workload (chunks of 256 "
            "tokens, LMCache's default) and its capacity is kept on the storage."
            + (" " + " ".join(notes) if notes else ""))),
    ]))
