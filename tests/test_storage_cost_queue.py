"""Storage priced by the units bought and queued on the system bought (issue 49, items 1 and 3).

Hand-worked figures: YanRong F9000X holds 10 x 7,000 GiB = 75.16 TB raw per node (MLPerf Storage v1.0
submission; the catalog stores 75.16 TB); at data/prices.csv storage-per-tb ($200 per TB raw, Pure's 2023 FlashBlade//E price) one node
costs 75.16 x 200 = $15,032. NetApp's 8-node
AFF A90 served 3,644,870 ops/s at its last SPECstorage 2020 EDA load point and 0.4 ms at its first:
Little's law gives 3,644,870 x 0.0004 = 1,458 IOs in flight at the rated rate.
"""

from __future__ import annotations

import pytest

from aisize import catalog
from aisize.cost import load_prices, storage_line, storage_unit_price_id, unit_usd
from aisize.cost.prices import Price, PriceTable
from aisize.plan import plan
from aisize.plan import context as C
from aisize.queueing.curves import STORAGE_PEAK_UTILISATION
from aisize.scenario import from_dict, preset, preset_names, to_dict
from aisize.storage.sizing import choose_system, purchasable, unit_iops_at
from aisize.units import TB
from aisize.present.findings import finding_text  # a finding's one sentence


@pytest.fixture(scope="module")
def plans():
    return {n: plan(preset(n)) for n in preset_names()}


def _storage_line(p):
    (line,) = [x for x in p.cost.capital_lines if x.item.startswith("storage ") and "fabric" not in x.item]
    return line


def test_no_price_per_gb_per_s_and_the_capacity_price_is_a_stated_assumption():
    table = load_prices()
    assert "storage-per-gb-per-s" not in table
    tb = table["storage-per-tb"]
    assert (tb.unit, tb.kind) == ("per TB raw", "assumption") and "ASSUMPTION" in tb.note
    assert "FlashBlade//E" in tb.source and tb.date == "2023-03"  # the public datum, dated as it is


def test_one_yanrong_node_costs_its_raw_capacity_at_the_price_per_tb():
    y = catalog.storage["yanrong-f9000x"]
    table = load_prices()
    assert y.capacity_bytes / TB == pytest.approx(75.16, abs=0.01)  # 10 x 7,000 GiB
    assert unit_usd(y, table) == pytest.approx(75.16 * 200)  # $15,032
    line = storage_line(y, 3, 0.0, table)
    assert (line.price_id, line.unit, line.quantity) == ("storage-per-tb", "TB raw", pytest.approx(3 * 75.16))
    assert line.usd == pytest.approx(3 * 15_032)


def test_a_unit_price_row_prices_the_units_and_a_system_without_capacity_the_plans_need():
    table = load_prices()
    ddn = catalog.storage["ddn-ai400x2t"]
    own = Price(storage_unit_price_id(ddn.id), "storage", ddn.name, "per unit", 400_000.0, "quote", "2026-12",
                "a test quote", "")
    quoted = PriceTable(table.rows | {own.id: own})
    line = storage_line(ddn, 2, 1e15, quoted)
    assert (line.price_id, line.quantity, line.usd) == (own.id, 2.0, 800_000.0)  # the raw need does not enter
    assert unit_usd(ddn, quoted) == 400_000.0
    # a measured system with neither a capacity nor a unit price is unpriced and named, not billed for the
    # capacity the plan happens to store on it
    netapp = catalog.storage["netapp-aff-a90-8node"]
    assert unit_usd(netapp, table) is None
    line = storage_line(netapp, 1, 500e12, table)
    assert (line.kind, line.quantity, line.usd) == ("unpriced", 1.0, 0.0)
    quoted = table.with_overrides({storage_unit_price_id(netapp.id): 2.5e6})  # a quote for the installation
    line = storage_line(netapp, 1, 500e12, quoted)
    assert (line.kind, line.usd, quoted[line.price_id].category) == ("overridden", 2.5e6, "storage")
    for bad in ((ddn, -1, 0.0), (ddn, 1, -1.0)):
        with pytest.raises(ValueError, match="units|needed_raw_bytes"):
            storage_line(*bad, table)
    with pytest.raises(ValueError, match="storage-unit-x"):
        table.with_overrides({"storage-unit-x": -1.0})


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_pays_for_the_units_it_bought_not_for_bandwidth(plans, name):
    p = plans[name]
    s = p.storage
    line = _storage_line(p)
    bought = catalog.storage[s.system]
    assert not [x for x in p.cost.capital_lines if x.unit == "GB/s"]
    if bought.capacity_bytes is None:  # the source documents' systems (hpe-weka-resnet, littles-law): named, $0
        assert (line.kind, line.quantity, line.usd) == ("unpriced", s.units, 0.0)
        assert line.item in p.cost.unpriced and any("no price for storage" in finding_text(f) for f in p.findings)
        return
    assert line.price_id == "storage-per-tb" and line.kind == "assumption"  # no public unit price in the table
    tb = s.units * bought.capacity_bytes / TB
    assert line.quantity == pytest.approx(tb) and line.usd == pytest.approx(tb * 200)


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_buys_units_that_meet_its_io_demand_at_the_headroom(plans, name):
    s = plans[name].storage
    if s.scope != "unit":  # a named system or the guidance per node is bought as named, not sized
        return
    bought = catalog.storage[s.system]
    ops, io = s.demand["iops"], None
    if ops:
        io = (s.demand["read"] + s.demand["write"]) / ops
        # the IOPS one unit serves at the peak's IO size: rated, at most its read rate / IO size
        assert s.demand["iops"] <= s.units * unit_iops_at(bought, io) * (1 - s.headroom) * (1 + 1e-9)
    assert s.units >= s.minimum_units


def test_agentic_coding_buys_the_cheapest_count_for_its_weights_load(plans):
    # model_loads_per_hour 0, yet 15 replicas load DeepSeek-R1's weights at deployment: the read burst sizes
    # the storage (docs/storage-demand.md), at the cheapest count of units, each priced as a unit
    p = plans["agentic-coding"]
    s = p.storage
    assert s.demand["read"] > 0 and s.binding == "read"
    table = load_prices()
    cheapest = min(s.candidates.values(), key=lambda c: c["cost"])
    assert s.candidates[s.system]["cost"] == cheapest["cost"]
    assert _storage_line(p).usd == pytest.approx(s.units * unit_usd(catalog.storage[s.system], table))


@pytest.mark.parametrize("least", [1, 2, 4])
def test_a_demand_of_zero_buys_the_stated_minimum_of_the_cheapest_unit(least):
    table = load_prices()
    c = choose_system(catalog.storage, minimum_units=least, unit_usd=lambda r: unit_usd(r, table))
    cheapest = min((r for r in catalog.storage if purchasable(r)), key=lambda r: unit_usd(r, table))
    assert (c.system.id, c.sized.units) == (cheapest.id, least)
    assert c.candidates[c.system.id]["cost"] == pytest.approx(least * unit_usd(cheapest, table))


def test_a_cheaper_unit_price_changes_the_choice():
    table = load_prices()
    # at $1 a unit the 491 TB Huawei appliance is the cheapest way to hold even 1 TB
    c = choose_system(catalog.storage, capacity_bytes=1e12, unit_usd=lambda r: 1.0 if r.id == "huawei-oceanstor-a800"
                      else unit_usd(r, table))
    assert c.system.id == "huawei-oceanstor-a800"


def _named(system_id):
    d = to_dict(preset("hpe-weka-resnet"))
    d["hardware"]["storage"] = system_id
    return plan(from_dict(d))


def test_the_queue_serves_at_the_systems_iops_with_littles_law_channels():
    s = _named("netapp-aff-a90-8node").storage
    a90 = catalog.storage["netapp-aff-a90-8node"]
    assert (s.system, s.units) == (a90.id, 1.0)
    ops = s.read_iops + s.write_iops
    io = (s.read_bytes_per_s + s.write_bytes_per_s) / ops
    # the rated 3,644,870 ops/s, at most the 58.8 GB/s over the blend's ~115 kB ImageNet reads
    assert s.supply_iops == pytest.approx(min(3_644_870, 58.809e9 / io))
    assert s.station.service_seconds == a90.latency_seconds == pytest.approx(400e-6)  # published, not the default
    assert s.station.servers == round(s.supply_iops * 400e-6)  # Little: IOs in flight = IOPS x latency
    # the station's throughput limit is the fitted curve's saturation, open or closed: the rated IOPS / 0.959
    # (docs/storage.md; the Little channels' c / S, the former limit, is the rated IOPS to within half a channel)
    assert s.station.capacity_per_s == pytest.approx(s.supply_iops / STORAGE_PEAK_UTILISATION, rel=1e-12)
    assert abs(s.station.servers / s.station.service_seconds - s.supply_iops) <= 0.5 / s.station.service_seconds
    # at small IOs the rated IOPS binds: 1,458 channels of 0.4 ms serve 3.645 M IO/s
    assert unit_iops_at(a90, 4096) == 3_644_870
    assert round(unit_iops_at(a90, 4096) * a90.latency_seconds) == 1458


def test_a_system_without_a_published_latency_is_queued_at_the_stated_default():
    s = _named("ddn-ai400x2t").storage
    assert catalog.storage[s.system].latency_seconds is None
    assert s.station.service_seconds == C.STORAGE_LATENCY_SECONDS
    assert s.station.servers == max(1, round(s.supply_iops * C.STORAGE_LATENCY_SECONDS))
    # the stated default (plan assumptions: "Unloaded storage latency"): the median of the published all-flash
    # file systems' least latencies, 0.4, 0.5, 0.3, 0.3, 0.3 and 0.1 ms (tests/test_storage_published_defaults.py)
    assert C.STORAGE_LATENCY_SECONDS == pytest.approx(300e-6, rel=1e-12)


def test_a_scenario_quote_for_a_storage_unit_prices_the_units_bought():
    # cost.prices accepts storage-unit-<storage id>, as a server's quote: the plan prices the units at it
    from aisize.scenario import from_dict, to_dict

    d = to_dict(preset("xe9680-genai"))
    base = plan(from_dict(d))
    d["cost"]["prices"] = {"storage-unit-yanrong-f9000x": 200_000}
    quoted = plan(from_dict(d))
    assert quoted.storage.system == base.storage.system == "yanrong-f9000x"
    units = quoted.storage.units
    assert quoted.cost.capital_usd - base.cost.capital_usd == pytest.approx(
        units * 200_000 - units * 75.16 * 200, rel=0.01)
    d["cost"]["prices"] = {"storage-unit-no-such-system": 1}
    with pytest.raises(ValueError, match="storage-unit-<storage id>"):
        from_dict(d)
