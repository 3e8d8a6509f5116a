"""The KV tiers' notes: the planner states a code and its figures (KVTierNote), present words them once.

The expected sentences are those the planner wrote before the words moved (same figures, same text), so a
change of wording or of a figure's unit shows here.
"""

import pytest

from aisize.plan.kvtiers import KVTierNote
from aisize.present.kvtiers import kv_note_text, kv_notes_text


@pytest.mark.parametrize("note, expected", [
    (KVTierNote("dram_left_out", {"dram_per_server_bytes": 1e9, "session_bytes": 916e6}),
     "host DRAM: 1.00 GB per server holds less than one session's KV (916 MB); the tier is left out"),
    (KVTierNote("nvme_adds_no_hits"),
     "host DRAM already holds what the target needs: the NVMe tier below it adds no hits"),
    (KVTierNote("short_of_target", {"hit_share": 0.829, "target_share": 0.9, "cause": "dram_capped"}),
     "the tiers find 82.9 % of reusable prompts, short of the 90.0 % target: host DRAM is capped by the RAM the "
     "server has left"),
    (KVTierNote("short_of_target", {"hit_share": 0.091, "target_share": 0.95, "cause": "reload_slower"}),
     "the tiers find 9.1 % of reusable prompts, short of the 95.0 % target: a tier reloads slower than recomputing"),
    (KVTierNote("re_evaluated", {"system": "yanrong-f9000x", "latency_seconds": 50e-3,
                                 "sized_latency_seconds": 200e-6}),
     "KV tiers re-evaluated on yanrong-f9000x (50.0 ms unloaded); the service was sized with a 0.200 ms reload "
     "latency, before the storage was chosen"),
])
def test_each_note_reads_as_the_planner_wrote_it(note, expected):
    assert kv_note_text(note) == expected


def test_a_note_without_words_is_refused_by_name():
    with pytest.raises(ValueError, match="'no_such_code'.*known: dram_inside_hbm"):
        kv_note_text(KVTierNote("no_such_code"))


def test_a_service_without_tiers_has_no_notes():
    assert kv_notes_text(None) == []
