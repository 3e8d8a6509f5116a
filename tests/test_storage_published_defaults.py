"""The storage queue's defaults, typical of published all-flash file systems (issue 49, item 1).

Hand-worked from the SPECstorage Solution 2020 results in data/storage_published_results.csv (each a Performance
table as published, its URL on the row):
- least mean latency: NetApp 8-node AFF A90 (EDA, storage2020-20240708-00080) 0.4 ms; 2-node AFF A900 (SWBUILD,
  -20231002-00055) 0.5 ms; Azure NetApp Files large volume, large volume scale, breakthrough mode (EDA,
  -20250929-00143, -00142, -20260227-00147) 0.3 ms each; 2-node Sangfor F8000 (EDA, -20250929-00140) 0.1 ms.
  Sorted 0.1, 0.3, 0.3, 0.3, 0.4, 0.5: the median is (0.3 + 0.3) / 2 = 0.3 ms, the planner's default.
- ops/s per storage node at the rated (last) point: A90 3,644,870 / 8 = 455,608.75; A900 949,973 / 2 = 474,986.5;
  F8000 1,125,050 / 2 = 562,525 (the ANF results publish no node count). The ceiling is the highest: 562,525.
- YanRong F9000X read IOPS = min(10 drives x 2,800,000, 100e9 B/s / 4,096 B = 24,414,062, 562,525) = 562,525, 43x
  below the drives-and-network figure the row gave before.
"""

from __future__ import annotations

import csv
import html
from pathlib import Path

import pytest

from aisize import catalog
from aisize.plan import context as C
from aisize.plan import plan
from aisize.plan.queues import storage_queue_basis
from aisize.scenario import preset
from aisize.present.storage_text import TYPICAL_WORDS, basis_text, latency_basis
from aisize.storage.published import (PublishedResult, node_ops_ceiling_per_s, published_results,
                                      typical_unloaded_latency_seconds)

DATA = Path(__file__).resolve().parents[1] / "data"


def test_every_result_is_a_spec_result_with_its_url():
    rows = published_results()
    assert [r.result for r in rows] == ["storage2020-20240708-00080", "storage2020-20231002-00055",
                                        "storage2020-20250929-00143", "storage2020-20250929-00142",
                                        "storage2020-20260227-00147", "storage2020-20250929-00140"]
    for r in rows:
        assert r.url.endswith(f"/{r.result}.txt") and "storage2020/results/res20" in r.url
    assert [r.least_latency_seconds * 1e3 for r in rows] == pytest.approx([0.4, 0.5, 0.3, 0.3, 0.3, 0.1])


def test_the_results_in_both_tables_read_the_same():
    # the load curves the queue's shape was fitted on are the same results: their least and last points must agree
    with open(DATA / "storage_load_curves.csv", newline="", encoding="utf-8") as f:
        curves = list(csv.DictReader(f))
    with open(DATA / "storage_published_results.csv", newline="", encoding="utf-8") as f:
        results = {r["result"]: r for r in csv.DictReader(f)}
    shared = 0
    for rid, r in results.items():
        points = [c for c in curves if rid in c["source"]]
        if not points:
            continue
        shared += 1
        least = min(float(c["latency_mean_ms"]) for c in points)
        last = max(points, key=lambda c: float(c["ops_per_s"]))
        assert float(r["least_latency_ms"]) == least, rid
        assert (float(r["rated_ops_per_s"]), float(r["rated_latency_ms"])) == (
            float(last["ops_per_s"]), float(last["latency_mean_ms"])), rid
    assert shared == 5  # all but the Sangfor F8000, whose curve is kept only here


def test_the_default_latency_is_the_median_least_latency():
    assert typical_unloaded_latency_seconds() == pytest.approx(0.3e-3, rel=1e-12)
    assert C.STORAGE_LATENCY_SECONDS == typical_unloaded_latency_seconds()
    # the rule, not the value, is what the code holds: another set of results gives its own median
    two = [PublishedResult("a", "a", 2, 0.1e-3, 1.0, ""), PublishedResult("b", "b", None, 0.5e-3, 1.0, "")]
    assert typical_unloaded_latency_seconds(two) == pytest.approx(0.3e-3)
    with pytest.raises(ValueError, match="results is empty"):
        typical_unloaded_latency_seconds([])


def test_the_node_ceiling_is_the_most_one_published_node_served():
    assert node_ops_ceiling_per_s() == 562_525
    per_node = sorted(r.rated_ops_per_s / r.storage_nodes for r in published_results() if r.storage_nodes)
    assert per_node == [455_608.75, 474_986.5, 562_525]
    with pytest.raises(ValueError, match="no result with a storage node count"):
        node_ops_ceiling_per_s([PublishedResult("x", "x", None, 1e-4, 1.0, "")])


def test_yanrong_derived_iops_hold_to_the_node_ceiling():
    y = catalog.storage["yanrong-f9000x"]
    assert y.read_iops_per_s == min(10 * 2_800_000, int(2 * 400e9 / 8 / 4096), node_ops_ceiling_per_s())
    assert y.write_iops_per_s == min(10 * 410_000 / 2, node_ops_ceiling_per_s())
    assert "IOPS DERIVED" in y.source and "storage2020-20250929-00140" in y.source
    assert "562,525" in y.note and "43x" in y.note  # the rule is written on the row


@pytest.fixture(scope="module")
def xe9680():
    return plan(preset("xe9680-genai"))


def test_every_surface_says_the_latency_is_typical_not_the_systems(xe9680):
    from aisize.app.sections.datapath import DataPathSection
    from aisize.app.sections.queueing import _latency_origin, _rate_origin
    from aisize.present.findings import finding_text

    b = storage_queue_basis(xe9680)
    assert (b.system, b.latency_published, b.latency_seconds) == ("yanrong-f9000x", False, pytest.approx(3e-4))
    assert b.latency_source == "typical" and basis_text(b) == TYPICAL_WORDS  # typed in the plan, worded in present
    assert TYPICAL_WORDS == ("typical of published all-flash file systems (SPECstorage Solution 2020), "
                             "not this system's")
    assert TYPICAL_WORDS in _latency_origin(b)  # the Queueing tab
    assert "capped at 562,525 IO/s a node, the most one node of a published all-flash file system" in _rate_origin(b)
    shown = html.unescape(DataPathSection._figures(xe9680.storage, 60.0))
    assert f"unloaded latency 300 µs, {TYPICAL_WORDS}" in shown  # the Data path tab's latency card
    said = " ".join(finding_text(f) for f in xe9680.findings)
    assert "no IO latency" in said and "0.300 ms" in said  # the finding reads the same figure


def test_a_published_latency_is_said_to_be_the_systems():
    from aisize.scenario import from_dict, to_dict

    d = to_dict(preset("xe9680-genai"))
    d["hardware"]["storage"] = "netapp-aff-a90-8node"
    b = storage_queue_basis(plan(from_dict(d)))
    assert b.latency_published and b.latency_source == "published"
    assert basis_text(b) == "published by netapp-aff-a90-8node"
    assert b.latency_seconds == pytest.approx(400e-6) and b.iops_node_ceiling_per_s is None


def test_the_latency_basis_is_worded_once_from_its_typed_source():
    """The planner states where the storage latency comes from as a code and the system (StorageQueueBasis);
    present/storage_text.py words it, and a code it does not know is an error naming it, never a blank."""
    assert latency_basis("published", "site-flash") == "published by site-flash"
    assert latency_basis("typical", "site-flash") == TYPICAL_WORDS and "site-flash" not in TYPICAL_WORDS
    with pytest.raises(ValueError, match="storage latency source 'measured' has no wording"):
        latency_basis("measured", "site-flash")
