"""Storage rows sourced or said to be missing, the queue read from the row bought, prices dated as their
sources are (issue 49, items 1 and 3).

Hand-worked figures:
- YanRong F9000X publishes 56.3 GB/s of read per node (MLPerf Storage v1.0); its IOPS are derived from the same
  submission's system file: 10 data drives x 2,800,000 read IOPS at 4 KiB = 28,000,000, its 2 x 400 Gb/s NICs
  100e9 / 4,096 = 24,414,062 IO/s, and the most one node of a published all-flash file system served, 1,125,050 /
  2 = 562,525 ops/s (SPECstorage 2020, Sangfor F8000): 562,525; writes min(10 x 410,000 / 2 copies = 2,050,000,
  562,525). At the 1 MiB reads of xe9680-genai's training the bandwidth binds first: one node serves 56.3e9 /
  1,048,576 = 53,692 IO/s, and with no published latency its queue runs on the 0.3 ms default typical of published
  all-flash file systems: 53,692 x 0.0003 = 16.1, so 16 Little's-law channels.
- A row that publishes 1,000 IO/s at 4 KiB and 350 us: the queue serves 1,000 IO/s (IOPS binds before
  50 GB/s / 1 MiB = 47,684 IO/s) on 0.35 ms, 1,000 x 0.00035 = 0.35, so 1 channel.
- Pure FlashBlade//E at $0.20 per GB = $200 per TB (2023-03); one YanRong node of 75.16 TB raw costs
  75.16 x 200 = $15,032 unless a storage-unit row prices it.
- NVIDIA DGX B200 reported at $515k (2025-03): on 2026-12-04 that price is 21.1 months old (643 days /
  30.4375), past the 18-month limit, so the plan names it.
"""

from __future__ import annotations

import csv
import datetime
import re
from pathlib import Path

import pytest

from aisize import catalog
from aisize.cost import load_prices
from aisize.plan import costing, plan
from aisize.plan import context as C
from aisize.plan.queues import storage_queue_basis
from aisize.present.storage_text import basis_text
from aisize.scenario import from_dict, preset, preset_names, to_dict
from aisize.units import TB

ROOT = Path(__file__).resolve().parents[1]
TODAY = datetime.date(2026, 12, 4)


@pytest.fixture(scope="module")
def plans():
    return {n: plan(preset(n)) for n in preset_names()}


def _said(p) -> str:
    from aisize.present.findings import finding_text  # a finding's sentence (its one wording)

    return " ".join(finding_text(f) for f in p.findings)


@pytest.mark.parametrize("name", preset_names())
def test_every_storage_row_a_preset_uses_is_sourced_or_the_plan_says_what_it_lacks(plans, name):
    p = plans[name]
    s = p.storage
    named, bought = catalog.storage[s.named or s.system], s.record
    assert named.source.strip() and bought.source.strip()
    said = _said(p)
    lacks_iops = f"storage {bought.id} publishes no IOPS"
    lacks_latency = re.search(rf"storage {re.escape(bought.id)} publishes [^.]*no IO latency, so its queue assumes "
                              r"[^.]*0\.300 ms unloaded", said)
    assert (lacks_iops in said) == (bought.read_iops_per_s is None)
    assert bool(lacks_latency) == (bought.latency_seconds is None)
    # what the plan says is what its queue runs on
    b = storage_queue_basis(p)
    assert b.system == bought.id and b.rated_per_s == pytest.approx(s.supply_iops)
    assert b.latency_seconds == (bought.latency_seconds or C.STORAGE_LATENCY_SECONDS)
    assert b.latency_published == (bought.latency_seconds is not None)


def test_the_queue_serves_yanrong_at_what_its_catalog_row_gives(plans):
    p = plans["xe9680-genai"]
    s = p.storage
    y = catalog.storage["yanrong-f9000x"]
    assert s.system == y.id and y.latency_seconds is None
    assert y.read_bandwidth_bytes_per_s == pytest.approx(56.3e9)
    # derived IOPS (docstring): min(10 x 2.8 M, 2 x 400 Gb/s / 4 KiB, the published per-node ceiling), and
    # 10 x 410 k writes stored twice, under the same ceiling
    assert (y.read_iops_per_s, y.write_iops_per_s, y.iops_io_size_bytes) == (562_525, 562_525, 4096)
    assert y.read_iops_per_s == int(min(10 * 2_800_000, 2 * 400e9 / 8 / 4096, 1_125_050 / 2))
    assert y.write_iops_per_s == int(min(10 * 410_000 / 2, 1_125_050 / 2))
    assert "IOPS DERIVED" in y.source and "F9000X_10x7000GiB_nvme_2xNDR400_Nclients3.json" in y.source
    b = storage_queue_basis(p)
    assert b.bandwidth_bound and b.iops_derived and b.published_iops_per_s == 562_525
    assert b.iops_node_ceiling_per_s == 562_525 and "storage2020-20250929-00140" in y.source
    assert b.unit_rate_per_s == pytest.approx(53_692, rel=1e-3)  # 56.3 GB/s / 1 MiB, below the derived IOPS
    assert s.station.rated_per_s == pytest.approx(s.units * b.unit_rate_per_s)
    assert (s.station.service_seconds, s.station.servers) == (pytest.approx(300e-6), 16)
    assert basis_text(b).startswith("typical of published all-flash file systems") and not b.latency_published


def test_a_row_that_publishes_iops_and_latency_sets_the_queue():
    d = to_dict(preset("xe9680-genai"))
    d["hardware"]["storage"] = "site-flash"
    d["hardware"]["storage_systems"] = [dict(
        id="site-flash", name="Site flash", kind="shared-fs", scope="system", read_bandwidth=50, write_bandwidth=20,
        read_iops=1000, iops_io_size=4, latency=350, source="a test datasheet")]
    p = plan(from_dict(d))
    b = storage_queue_basis(p)
    assert (b.published_iops_per_s, b.iops_io_size_bytes, b.bandwidth_bound) == (1000.0, 4096.0, False)
    assert b.rated_per_s == pytest.approx(1000.0) and p.storage.station.rated_per_s == pytest.approx(1000.0)
    assert (p.storage.station.service_seconds, b.latency_published, b.channels) == (pytest.approx(350e-6), True, 1)
    assert "publishes no IOPS" not in _said(p) and "no IO latency" not in _said(p)


def _storage_line(p):
    (line,) = [x for x in p.cost.capital_lines if x.item.startswith("storage ") and "fabric" not in x.item]
    return line


def test_storage_capital_uses_the_systems_price_and_the_per_tb_price_only_as_a_flagged_fallback(plans):
    table = load_prices()
    tb = table["storage-per-tb"]
    assert (tb.usd, tb.kind, tb.date) == (200.0, "assumption", "2023-03") and "FlashBlade//E" in tb.source
    p = plans["xe9680-genai"]
    line = _storage_line(p)
    raw_tb = p.storage.units * p.storage.record.capacity_bytes / TB
    assert (line.price_id, line.kind) == ("storage-per-tb", "assumption")
    assert line.usd == pytest.approx(raw_tb * 200) and raw_tb == pytest.approx(75.16, abs=0.01)  # $15,032
    assert "storage-per-tb" in p.cost.assumed
    d = to_dict(preset("xe9680-genai"))
    d["cost"]["prices"] = {"storage-unit-yanrong-f9000x": 250_000}
    quoted = plan(from_dict(d))
    line = _storage_line(quoted)
    assert (line.price_id, line.usd) == ("storage-unit-yanrong-f9000x", pytest.approx(quoted.storage.units * 250_000))
    assert "storage-per-tb" not in quoted.cost.assumed


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_MONTH = r"\b(" + "|".join(_MONTHS) + r")\s+(20\d\d)\b"


def source_dates(text: str) -> list[tuple[int, int]]:
    """(year, month) of each date a price's source names, leaving out when a page was searched or seen (the
    date of the looking, not of the figure); a bare year counts as its December."""
    t = re.sub(r"\b(searched|seen|retrieved|updated|verified)\b[^;,)]*", "", text, flags=re.I)
    out = [(int(y), int(m)) for y, m in re.findall(r"\b(20\d\d)-(\d\d)(?:-\d\d)?\b", t)]
    t = re.sub(r"\b20\d\d-\d\d(?:-\d\d)?\b", "", t)
    out += [(int(y), _MONTHS.index(m.lower()) + 1) for m, y in re.findall(_MONTH, t, flags=re.I)]
    t = re.sub(_MONTH, "", t, flags=re.I)
    return out + [(int(y), 12) for y in re.findall(r"\b(20\d\d)\b", t)]


def _later_than_source(row: dict) -> bool:
    dates = source_dates(row["source"])
    date = row["date"]
    return bool(dates) and (int(date[:4]), int(date[5:7]) if len(date) >= 7 else 1) > max(dates)


def test_no_price_row_is_dated_later_than_its_source():
    with open(ROOT / "data" / "prices.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert not [r["id"] for r in rows if _later_than_source(r)]
    # the rule can fail: a 2024-08 quote carried forward under a 2026-12 date (the old storage-per-tb shape)
    assert _later_than_source({"date": "2026-12", "source": "a quote of 2024-08 (public pages searched 2026-12-04)"})
    assert _later_than_source({"date": "2026-12", "source": "flash drives averaged $95/TB in early 2024"})
    assert not _later_than_source({"date": "2026-12", "source": "no public price found (public pages searched "
                                                                  "2026-12-04)"})


def test_dgx_b200_is_priced_from_a_dated_report_and_named_when_old(monkeypatch):
    b200 = load_prices()["server-dgx-b200"]
    assert (b200.usd, b200.kind, b200.date) == (515_000.0, "quote", "2025-03") and "$515K" in b200.source
    h100 = load_prices()["server-dgx-h100"]
    assert (h100.kind, h100.date) == ("assumption", "2024-08")  # dated as the 2024-08 quote it carries forward
    monkeypatch.setattr(costing, "_today", lambda: TODAY)
    d = to_dict(preset("agentic-coding"))
    assert d["hardware"]["server"] == "dgx-b200"
    stale = {x["id"]: x["age_months"] for x in plan(from_dict(d)).cost.stale_prices}
    assert stale["server-dgx-b200"] == pytest.approx(643 / 30.4375, abs=0.01)  # 21.1 months
