"""The Inference tab's prompt reuse and KV-cache tiers: controls for a service's ``prefix`` and ``kv_tiers``,
and cards of the plan's :class:`aisize.plan.kvtiers.KVTierPlan`.

The cards show the figures the report's "KV-cache tiers" section shows (hit rate by tier, prefill saved,
TTFT on a hit and a miss, the host DRAM, NVMe and shared storage the tiers take); nothing is recomputed here.
"""

from __future__ import annotations

import html

import ipywidgets as widgets

from aisize import format as F
from aisize.app import controls as K
from aisize.app.ahead import next_value
from aisize.present.kvtiers import kv_notes_text

TIER_NAMES = {"hbm": "HBM", "dram": "host DRAM", "nvme": "local NVMe", "storage": "shared storage"}
PREFIX_FIELDS = ("shared_tokens", "turns", "think_time_s", "rag_chunks", "rag_chunk_tokens", "rag_corpus_chunks")


class ReuseControls:
    """The controls of one service's ``prefix`` and ``kv_tiers``. ``service()`` is the selected service's dict
    (None while the section syncs its controls); ``change(updates)`` applies several updates at once (a path
    under the service -> its value); ``ahead(updates)`` plans them ahead (a slider's next key step)."""

    def __init__(self, service, change, ahead=lambda updates: None):
        self._service, self._change, self._ahead = service, change, ahead
        self._kept: dict = {}  # (service name, field) -> the prefix or kv_tiers last switched off
        self.on = K.checkbox("Prompt reuse", False, "Requests repeat a shared prefix, a session's history or "
                                                    "retrieved chunks, which a prefix cache can keep")
        self.shared = K.int_slider("Shared prefix [tokens]", 0, 0, 131_072, 256,
                                   "System prompt and tools every request starts with")
        self.turns = K.log_slider("Turns per session", 1, 1, 1000, "Requests per session; each re-sends the "
                                  "history (1: no sessions)", steps_per_decade=12, fmt=".0f")
        self.think = K.log_slider("Think time [s]", 60, 1, 604_800, "Mean time from an answer to the session's "
                                  "next turn (tools, the user)", steps_per_decade=12, fmt=".0f")
        self.chunks = K.int_slider("RAG chunks / request", 0, 0, 100, 1, "Retrieved chunks each prompt carries "
                                   "(0: none)")
        self.chunk_tokens = K.log_slider("Chunk [tokens]", 512, 16, 16_384, "Tokens of one retrieved chunk",
                                         steps_per_decade=12, fmt=".0f")
        self.corpus = K.log_slider("Corpus [chunks]", 10_000, 10, 10_000_000, "Chunks the retriever draws from "
                                   "(Zipf popularity)", steps_per_decade=12, fmt=".0f")
        self.tiers_on = K.checkbox("KV tiers below HBM", False, "Keep reused KV in host DRAM, local NVMe or shared "
                                                                "storage when HBM is full (LMCache, HiCache, KVBM)")
        self.target = K.float_slider("Target hit rate", 0.9, 0.05, 0.99, 0.01, "Share of reusable prompts the "
                                     "tiers are sized to find", fmt=".2f")
        self.dram = K.checkbox("Host DRAM tier", True, "KV in the servers' RAM, read back over PCIe or NVLink-C2C")
        self.dram_size = K.dropdown("Host DRAM size", [("auto (RAM left)", "auto"), ("GB per server", "gb")],
                                    "auto", "auto: what the target needs, within the RAM the server has left")
        self.dram_gb = K.log_slider("Host DRAM [GB/server]", 256, 8, 16_384, "Host RAM per server given to KV",
                                    steps_per_decade=12, fmt=".0f")
        self.nvme = K.checkbox("Local NVMe tier", False, "KV on the servers' own drives, sized for the target")
        self.storage = K.checkbox("Shared storage tier", False, "KV on the scenario's storage, through the "
                                                               "storage network")
        self.reuse_box = widgets.VBox([self.shared, self.turns, self.think, self.chunks, self.chunk_tokens,
                                       self.corpus, self.tiers_on])
        self.tiers_box = widgets.VBox([self.target, self.dram, self.dram_size, self.dram_gb, self.nvme,
                                       self.storage])
        self.view = widgets.VBox([K.heading("Prompt reuse"), self.on, self.reuse_box, self.tiers_box])
        self.on.observe(self._on_reuse, names="value")
        self.tiers_on.observe(self._on_tiers, names="value")
        self.chunks.observe(self._on_chunks, names="value")
        self.turns.observe(self._on_turns, names="value")
        self.dram_size.observe(self._on_dram_size, names="value")
        for box, key in ((self.dram, "host_dram"), (self.nvme, "local_nvme"), (self.storage, "shared_storage")):
            box.observe(lambda change, key=key: self._on_tier(key, change["new"]), names="value")

    def bind(self, bind, path) -> None:
        """Bind the single-field controls with the section's ``bind``; ``path(*keys)`` is None when absent."""
        bind(self.shared, path("prefix", "shared_tokens"), int)
        bind(self.think, path("prefix", "think_time_s"), float)
        bind(self.chunk_tokens, path("prefix", "rag_chunk_tokens"), lambda v: int(round(v)))
        bind(self.corpus, path("prefix", "rag_corpus_chunks"), lambda v: int(round(v)))
        bind(self.target, path("kv_tiers", "target_hit_rate"), float)
        bind(self.dram_gb, lambda: path("kv_tiers", "host_dram_gb_per_server")()
             if self.dram_size.value == "gb" else None, float)

    # several fields at once

    def _on_reuse(self, change) -> None:
        w = self._service()
        if w is None:
            return
        if change["new"]:
            self._change({("prefix",): self._kept.get((w["name"], "prefix"), {}),
                          ("kv_tiers",): self._kept.get((w["name"], "kv_tiers"))})
        else:
            self._kept[(w["name"], "prefix")], self._kept[(w["name"], "kv_tiers")] = w["prefix"], w["kv_tiers"]
            self._change({("kv_tiers",): None, ("prefix",): None})

    def _on_tiers(self, change) -> None:
        w = self._service()
        if w is None:
            return
        if change["new"]:
            self._change({("kv_tiers",): self._kept.get((w["name"], "kv_tiers")) or {}})
        else:
            self._kept[(w["name"], "kv_tiers")] = w["kv_tiers"]
            self._change({("kv_tiers",): None})

    def _on_chunks(self, change) -> None:
        w = self._service()
        if w is None or w["prefix"] is None:
            return
        self._change(self._chunks(change["new"], w))
        self._next_step(self.chunks, change, self._chunks)

    def _chunks(self, value, w) -> dict:
        updates = {("prefix", "rag_chunks"): int(value)}
        if value and not (w["prefix"]["rag_chunk_tokens"] and w["prefix"]["rag_corpus_chunks"]):
            # chunks need a size and a corpus: the sliders' values
            updates[("prefix", "rag_chunk_tokens")] = int(round(self.chunk_tokens.value))
            updates[("prefix", "rag_corpus_chunks")] = int(round(self.corpus.value))
        return updates

    def _on_turns(self, change) -> None:
        w = self._service()
        if w is None or w["prefix"] is None:
            return
        self._change(self._turns(change["new"], w))
        self._next_step(self.turns, change, self._turns)

    def _turns(self, value, w) -> dict:
        updates = {("prefix", "turns"): int(round(value))}
        if updates[("prefix", "turns")] > 1 and not w["prefix"]["think_time_s"]:  # sessions wait between turns
            updates[("prefix", "think_time_s")] = float(self.think.value)
        return updates

    def _next_step(self, slider, change, updates_of) -> None:
        """Plan ahead ``slider``'s next key step the same way (``updates_of(value, service)``: its edit), from the
        service as the move left it."""
        w = self._service()
        if change["new"] == change["old"] or w is None or w["prefix"] is None:
            return
        step = next_value(slider, 1 if change["new"] > change["old"] else -1)
        if step is not None:
            self._ahead(updates_of(step, w))

    def _on_tier(self, key: str, on: bool) -> None:
        # through change(): a refused switch (no tier left) is put back, not left showing what is not planned
        w = self._service()
        if w is not None and w["kv_tiers"] is not None:
            self._change({("kv_tiers", key): bool(on)})

    def _on_dram_size(self, change) -> None:
        w = self._service()
        if w is None or w["kv_tiers"] is None:
            return
        self._change({("kv_tiers", "host_dram_gb_per_server"):
                      "auto" if change["new"] == "auto" else float(self.dram_gb.value)})

    def sync(self, w: dict) -> None:
        """Set the controls from the service ``w`` and show those that apply."""
        prefix, tiers = w["prefix"], w["kv_tiers"]
        K.assign(self.on, "value", prefix is not None)
        K.assign(self.tiers_on, "value", tiers is not None)
        if prefix is not None:
            for knob, key in zip((self.shared, self.turns, self.think, self.chunks, self.chunk_tokens, self.corpus),
                                 PREFIX_FIELDS):
                hidden = (key == "think_time_s" and prefix["turns"] == 1) or (
                    key in ("rag_chunk_tokens", "rag_corpus_chunks") and not prefix["rag_chunks"])
                if prefix[key] or not hidden:  # a hidden control's 0 (not used) keeps the slider's value
                    K.assign(knob, "value", prefix[key])
        if tiers is not None:
            K.assign(self.target, "value", tiers["target_hit_rate"])
            for knob, key in ((self.dram, "host_dram"), (self.nvme, "local_nvme"), (self.storage, "shared_storage")):
                K.assign(knob, "value", tiers[key])
            gb = tiers["host_dram_gb_per_server"]
            K.assign(self.dram_size, "value", "auto" if gb == "auto" else "gb")
            if gb != "auto":
                K.assign(self.dram_gb, "value", gb)
        on = prefix is not None
        K.show_if(on, self.reuse_box, self.shared, self.turns, self.chunks, self.tiers_on)
        K.show_if(on and prefix["turns"] > 1, self.think)
        K.show_if(on and prefix["rag_chunks"] > 0, self.chunk_tokens, self.corpus)
        K.show_if(tiers is not None, self.tiers_box, self.target, self.dram, self.nvme, self.storage)
        K.show_if(tiers is not None and tiers["host_dram"], self.dram_size)
        K.show_if(tiers is not None and tiers["host_dram"] and tiers["host_dram_gb_per_server"] != "auto",
                  self.dram_gb)


def _time(seconds) -> F.Shown:
    """A duration, or a dash where the class is empty (single-turn services have no history to find)."""
    return F.duration(seconds)


def host_ram_card(i, k, state: str) -> str:
    """The host RAM a server of service ``i`` uses. A DRAM tier sized "auto" takes all the RAM its other line
    items leave, so the figure equals the RAM installed: it is said as RAM used, all of it, and not as a need."""
    installed, used = i.server_host_memory_bytes, i.host_memory_needed_bytes
    kv = k.host_dram_per_server_bytes
    takes_rest = kv > 0 and abs(kv - k.host_dram_left_per_server_bytes) <= 1e-6 * max(installed, 1.0)
    parts = (f"{F.bytes_gpu(used - kv)} for the server's other line items + {F.bytes_gpu(kv)} KV tier"
             if kv else "the KV tier's buffers included")
    if takes_rest:
        return K.card("reuse.host_ram", "Host RAM used", F.bytes_gpu(used), "per server: all installed",
                      f"{parts}: the DRAM tier (auto) takes the RAM left; "
                      f"{F.bytes_gpu(installed)} installed", state=state)
    return K.card("reuse.host_ram", "Host RAM needed", F.bytes_gpu(used), "per server",
                  f"{parts}; of {F.bytes_gpu(installed)} installed", state=state)


def reuse_cards(i) -> str:
    """The plan's prompt-reuse and KV-tier figures of service ``i`` (empty without ``prefix``)."""
    k = i.kv_tiers
    if k is None:
        return ""
    ok = (lambda flag: "good" if flag else "bad")
    items = [
        K.card("reuse.hit_rate", "Reuse hit rate", F.pct(k.hit_rate), "",
               "Share of reusable prompts (session histories; single-turn RAG: chunk retrievals) found cached"
               + (f"; target {F.pct(k.target_hit_rate)}" if k.target_hit_rate else ""),
               state=ok(k.target_met) if k.target_hit_rate else ""),
        K.card("reuse.prefill_saved", "Prefill saved", F.pct(k.prefill_saved_share), "",
               "Share of prompt tokens found cached, so not computed again"),
        K.card("reuse.sessions", "Sessions kept", F.count(k.resident_sessions), "",
               "Sessions running or held in the largest tier (Little's law)"),
        K.card("reuse.ttft_hit", "TTFT mean on a hit", _time(k.ttft_hit_s), "",
               "Mean TTFT of a request whose history was found (reloaded first below HBM)"),
        K.card("reuse.ttft_miss", "TTFT mean on a miss", _time(k.ttft_miss_s), "",
               "Mean TTFT of first turns and of histories that were evicted"),
    ]
    for r in k.tiers:
        size = F.bytes_gpu if r.name in ("hbm", "dram") else F.bytes_si  # memory in GiB, drives in GB (issue 47)
        way = ("in place" if r.name == "hbm" else
               f"reload {F.duration(r.reload_s)} vs recompute {F.duration(r.recompute_s)} over {r.path}")
        items.append(K.card(f"reuse.tier.{r.name}", f"Hits from {TIER_NAMES[r.name]}", F.pct(r.served), "",
                            f"{size(r.capacity_per_server_bytes)} per server, {size(r.capacity_bytes)} "
                            f"in the fleet; {way}" + ("" if r.used else ": recomputing is faster, so it finds nothing"),
                            state="" if r.used else "bad"))
    # memory in binary GiB, drives in decimal GB as they are sold (issue 47): each card's unit says which
    if k.host_dram_per_server_bytes:
        items.append(K.card("reuse.host_dram", "KV in host DRAM", F.bytes_gpu(k.host_dram_per_server_bytes),
                            "per server (RAM: binary GiB)",
                            f"{F.bytes_gpu(k.host_dram_left_per_server_bytes)} of RAM left per server after its other "
                            "line items"))
    if k.host_dram_per_server_bytes or k.nvme_drives_per_server or k.storage_capacity_bytes:
        items.append(host_ram_card(i, k, ok(i.host_memory_fits)))
    if k.nvme_drives_per_server:
        items.append(K.card("reuse.nvme", "KV on local NVMe", F.bytes_si(k.nvme_per_server_bytes),
                            "per server (drives: decimal GB)",
                            f"{k.nvme_drives_per_server:,} drives per server; "
                            f"{F.bytes_si(k.nvme_installed_per_server_bytes)} installed"))
    if k.storage_capacity_bytes:
        items += [K.card("reuse.storage", "KV on shared storage", F.bytes_si(k.storage_capacity_bytes), "",
                         "Capacity the tier keeps on the scenario's storage"),
                  K.card("reuse.storage_io", "KV storage IO", F.rate(k.storage_read_bytes_per_s
                                                                      + k.storage_write_bytes_per_s), "",
                         f"reads {F.rate(k.storage_read_bytes_per_s)}, writes {F.rate(k.storage_write_bytes_per_s)}"
                         f" (one more workload of the storage's IO blend)")]
    notes = "".join(f"<p class='aisize-note'>{html.escape(n)}</p>" for n in kv_notes_text(k))
    return ("<h3 class='aisize-h'>Prompt reuse and KV-cache tiers</h3>" + K.cards(items) + notes)
