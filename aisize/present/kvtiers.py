"""A service's KV-tier notes in words: the one sentence each surface (app, report, JSON) shows for a
:class:`aisize.plan.kvtiers.KVTierNote`, from its facts alone."""

from __future__ import annotations

from aisize.format import bytes_si, ms, pct
from aisize.present.words import worded

# Why the tiers fall short of their target hit rate (KVTierNote "short_of_target", fact "cause").
SHORT_CAUSES = {"dram_capped": "host DRAM is capped by the RAM the server has left",
                "reload_slower": "a tier reloads slower than recomputing",
                "tiers_too_small": "the HBM and DRAM tiers cannot hold the sessions"}

WORDS = {
    "dram_left_out": lambda x: (f"host DRAM: {bytes_si(x['dram_per_server_bytes'])} per server holds less than one "
                                f"session's KV ({bytes_si(x['session_bytes'])}); the tier is left out"),
    "nvme_adds_no_hits": lambda x: "host DRAM already holds what the target needs: the NVMe tier below it adds no hits",
    "dram_inside_hbm": lambda x: ("the host-DRAM tier is no larger than the KV pool HBM leaves free, so it finds "
                                  "nothing HBM does not (write-through tiers are inclusive; SGLang's host pool "
                                  "defaults to twice the GPU pool)"),
    "short_of_target": lambda x: (f"the tiers find {pct(x['hit_share'])} of reusable prompts, short of the "
                                  f"{pct(x['target_share'])} target: {SHORT_CAUSES[x['cause']]}"),
    "re_evaluated": lambda x: (f"KV tiers re-evaluated on {x['system']} ({ms(x['latency_seconds'])} unloaded); the "
                               f"service was sized with a {ms(x['sized_latency_seconds'])} reload latency, before "
                               "the storage was chosen"),
}


def kv_note_text(note) -> str:
    """The sentence of one KV-tier note (its ``code`` worded from its ``facts``)."""
    return worded(WORDS, note.code, "KV-tier note code", "aisize.present.kvtiers.WORDS", note.facts)


def kv_notes_text(kv) -> list[str]:
    """The sentences of a :class:`aisize.plan.kvtiers.KVTierPlan`'s notes, in order (none for None)."""
    return [kv_note_text(n) for n in kv.notes] if kv is not None else []


__all__ = ["kv_note_text", "kv_notes_text", "SHORT_CAUSES", "WORDS"]
