"""Storage bought from demand (issue 49.1): real systems from data/storage.csv, sized on the blend's peaks.

Every check reads the catalog's own figures, so a plan that under-buys, over-buys by a unit, or
queues the blend on anything but the bought units fails here.
"""

from __future__ import annotations

import math

import pytest

from aisize import catalog
from aisize.cost import load_prices, unit_usd
from aisize.plan import plan
from aisize.plan import context as C
from aisize.scenario import ScenarioError, from_dict, preset, preset_names, to_dict
from aisize.storage.sizing import choose_system, purchasable, storage_units, unit_iops_at
from aisize.present.findings import finding_text  # a finding's one sentence

GIB = 2**30


@pytest.fixture(scope="module")
def plans():
    return {n: plan(preset(n)) for n in preset_names()}


def _with(name, edit):
    d = to_dict(preset(name))
    edit(d)
    return plan(from_dict(d))


def _unit_figures(system):
    """One unit's (read, write, IOPS, capacity) as the planner uses them (write assumed where unpublished)."""
    write = system.write_bandwidth_bytes_per_s or C.UNKNOWN_WRITE_SHARE * system.read_bandwidth_bytes_per_s
    return {"read": system.read_bandwidth_bytes_per_s, "write": write, "iops": system.read_iops_per_s,
            "capacity": system.capacity_bytes}


def _meets(demand, figures, units, headroom):
    return all(demand[k] <= units * figures[k] * (1 - headroom) * (1 + 1e-9)
               for k in demand if figures[k] is not None)


def test_purchasable_rows_are_sourced_building_blocks_with_capacity():
    rows = [s for s in catalog.storage if purchasable(s)]
    assert {"ddn-ai400x2t", "yanrong-f9000x", "huawei-oceanstor-a800"} <= {s.id for s in rows}
    for s in rows:
        assert s.scope == "unit" and s.capacity_bytes > 0 and s.read_bandwidth_bytes_per_s > 0
        assert "mlcommons/storage_results" in s.source  # a published result, not a guess
    # guidance levels, drives and one-off measured systems are not products bought by the unit
    assert not any(purchasable(catalog.storage[i]) for i in ("superpod-h100-better", "nvme-gen5", "weka-wekapod-8"))
    y = catalog.storage["yanrong-f9000x"]  # 169 GB/s over 3 nodes; 10 x 7,000 GiB per node
    assert y.read_bandwidth_bytes_per_s == pytest.approx(169e9 / 3, rel=1e-3)
    assert y.capacity_bytes == pytest.approx(10 * 7000 * GIB, rel=1e-3)


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_buys_storage_that_meets_its_peak_demand(plans, name):
    s = plans[name].storage
    sc = preset(name)
    named = catalog.storage[sc.hardware.storage]
    assert s.named == named.id and s.headroom == sc.policies.storage_headroom
    if named.kind == "guidance":  # a performance level: a real system is bought, the level is only compared
        assert purchasable(catalog.storage[s.system]) and s.system != named.id
        assert s.comparison["system"] == named.id and s.comparison["servers"] == plans[name].servers
        assert s.comparison["read_bytes_per_s"] == pytest.approx(named.read_bandwidth_bytes_per_s * s.comparison["servers"])
    if s.scope != "unit":
        return
    bought = catalog.storage[s.system]
    figures = _unit_figures(bought)
    demand = s.demand
    # peaks coincide; a checkpoint burst counts at most at the write that keeps it within its stall budget
    assert demand["read"] == pytest.approx(s.read_peak_bytes_per_s)
    assert demand["write"] <= s.write_peak_bytes_per_s * (1 + 1e-12)
    stall = sum(t.checkpoint.write_bytes_per_s_for_stall for t in plans[name].training if t.checkpoint)
    other = sum(r["write_peak_bytes_per_s"] for r in s.workloads if r["kind"] != "checkpoint")
    assert demand["write"] <= other + stall * (1 + 1e-9)
    assert demand["capacity"] == s.capacity_bytes["raw_bytes"]
    assert _meets(demand, figures, s.units, s.headroom)
    assert s.units >= s.minimum_units
    if s.units > s.minimum_units:  # the smallest count: one unit fewer misses some demand
        assert not _meets(demand, figures, s.units - 1, s.headroom)
        assert s.binding in ("read", "write", "iops", "capacity")
        assert s.units_by[s.binding] == s.units
    if bought.capacity_bytes is not None:
        assert not any("publishes no capacity" in finding_text(f) for f in plans[name].findings)


@pytest.mark.parametrize("name", [n for n in preset_names()
                                  if catalog.storage[preset(n).hardware.storage].kind == "guidance"])
def test_the_chosen_system_is_the_cheapest_count(plans, name):
    s = plans[name].storage
    chosen = s.candidates[s.system]
    assert chosen["units"] == s.units
    assert chosen["read_bytes_per_s"] == pytest.approx(s.units * catalog.storage[s.system].read_bandwidth_bytes_per_s)
    # each unit costs its unit price or its raw capacity x storage-per-tb (aisize.cost.storage): the cheapest wins
    assert chosen["cost"] == pytest.approx(s.units * unit_usd(catalog.storage[s.system], load_prices()))
    assert all(c["cost"] >= chosen["cost"] for c in s.candidates.values())
    assert set(s.candidates) == {r.id for r in catalog.storage if purchasable(r)}


@pytest.mark.parametrize("name", preset_names())
def test_queue_station_runs_on_the_bought_units(plans, name):
    s = plans[name].storage
    bought = catalog.storage[s.system]
    ops = s.read_iops + s.write_iops
    mean_io = (s.read_bytes_per_s + s.write_bytes_per_s) / ops if ops else C.READ_IO_BYTES
    per_unit = unit_iops_at(bought, mean_io)
    assert s.unit_iops == pytest.approx(per_unit)
    assert s.supply_iops == pytest.approx(s.units * per_unit)  # count x one unit's IOPS at the blend's IO size
    latency = bought.latency_seconds or C.STORAGE_LATENCY_SECONDS
    assert s.station.service_seconds == latency
    assert s.station.servers == max(1, round(s.supply_iops * latency))


def test_agentic_coding_buys_for_its_weights_load_and_a_floor_above_it(plans):
    s = plans["agentic-coding"].storage
    i = plans["agentic-coding"].inference[0]
    # model_loads_per_hour 0: still one deployment load of every replica's weights (docs/storage-demand.md)
    assert s.demand["read"] == pytest.approx(i.replicas * i.weights_bytes / C.MODEL_LOAD_SECONDS)
    assert s.demand["write"] == 0.0 and s.units_by["write"] == 0
    assert s.units == s.units_by["read"] and s.binding == "read"
    # the model repository (DeepSeek-R1 weights) needs capacity: a fraction of one unit
    assert 0 < s.demand["capacity"] < catalog.storage[s.system].capacity_bytes * (1 - s.headroom)
    # a stated floor above the demand is bought, and says it binds
    floor = int(s.units) + 2
    more = _with("agentic-coding", lambda d: d["policies"].update(storage_minimum_units=floor)).storage
    assert (more.units, more.binding) == (floor, "minimum")


def test_a_demand_of_zero_buys_the_minimum_and_nothing_more():
    rows = list(catalog.storage)
    for least in (1, 2, 5):
        c = choose_system(rows, minimum_units=least)
        assert c.sized.units == least and all(v["units"] == least for v in c.candidates.values())
    assert choose_system(rows, minimum_units=0).sized.units == 0
    zero = storage_units(unit_read_bytes_per_s=1e9, minimum_units=0)
    assert (zero.units, zero.binding) == (0.0, "none")


def test_headroom_buys_more_units_and_zero_headroom_buys_exactly_the_demand():
    ddn = catalog.storage["ddn-ai400x2t"]
    read = 2 * ddn.read_bandwidth_bytes_per_s  # exactly two appliances' rated read
    exact = storage_units(read_bytes_per_s=read, unit_read_bytes_per_s=ddn.read_bandwidth_bytes_per_s)
    spare = storage_units(read_bytes_per_s=read, unit_read_bytes_per_s=ddn.read_bandwidth_bytes_per_s, headroom=0.2)
    assert (exact.units, spare.units) == (2, math.ceil(2 / 0.8))


def test_a_named_purchasable_system_is_sized_not_replaced():
    p = _with("xe9680-genai", lambda d: d["hardware"].update(storage="ddn-ai400x2t"))
    assert p.storage.system == "ddn-ai400x2t" and p.storage.comparison is None and p.storage.units == 1


@pytest.mark.parametrize("call, name", [
    (lambda: storage_units(read_bytes_per_s=1e9, unit_read_bytes_per_s=1e9, headroom=0.95), "headroom"),
    (lambda: storage_units(unit_read_bytes_per_s=1e9, minimum_units=-1), "minimum_units"),
    (lambda: storage_units(unit_read_bytes_per_s=1e9, minimum_units=1.5), "minimum_units"),
    (lambda: unit_iops_at(catalog.storage["ddn-ai400x2t"], 0.0), "io_bytes"),
    (lambda: choose_system([catalog.storage["superpod-h100-good"]], read_bytes_per_s=1e9), "purchasable"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("field, value", [("storage_headroom", 0.95), ("storage_headroom", -0.1),
                                          ("storage_minimum_units", 0)])
def test_scenario_refuses_storage_policies_out_of_range(field, value):
    d = to_dict(preset("xe9680-genai"))
    d["policies"][field] = value
    with pytest.raises(ScenarioError, match=field):
        from_dict(d)


def test_the_mlperf_storage_v3_rows_hold_the_published_figures():
    mib, gib = 2**20, 2**30
    e2000 = catalog.storage["hpe-cray-e2000-enclosure"]  # the 4-node (2-enclosure) submission, per enclosure
    assert purchasable(e2000) and e2000.rack_units == 2
    assert e2000.read_bandwidth_bytes_per_s == pytest.approx(171_008.487 * mib / 2, rel=1e-3)  # U-Net3D read
    assert e2000.write_bandwidth_bytes_per_s == pytest.approx(48.180 * gib / 2, rel=1e-3)  # llama3-70b save
    assert e2000.capacity_bytes == pytest.approx(2 * 16 * 3.84e12, rel=1e-9)  # 2 nodes x 16 x 3.84 TB raw
    assert e2000.latency_seconds is None and e2000.read_iops_per_s is None  # not published
    exa = catalog.storage["pure-flashblade-exa-30dn"]  # a data-node count on a fixed metadata core: one system
    assert not purchasable(exa) and exa.scope == "system" and exa.rack_units == 47
    assert (exa.read_bandwidth_bytes_per_s, exa.write_bandwidth_bytes_per_s) == pytest.approx(
        (586.912 * gib, 887.735 * gib), rel=1e-3)
    k3000 = catalog.storage["hpe-cray-k3000-4node"]  # a preview product: named, never bought on its own
    assert not purchasable(k3000) and k3000.capacity_bytes == pytest.approx(4 * 16 * 15.36e12, rel=1e-9)
    assert (k3000.read_bandwidth_bytes_per_s, k3000.write_bandwidth_bytes_per_s) == pytest.approx(
        (354_178.979 * mib, 70.262 * gib), rel=1e-3)
    for s in (e2000, exa, k3000):
        assert "storage_results_v3.0" in s.source and "summary.json" in s.source and "2026-07" in s.source


def test_serving_at_scale_buys_the_e2000_its_read_peak_needs(plans):
    s = plans["serving-at-scale"].storage
    assert (s.system, s.units, s.binding) == ("hpe-cray-e2000-enclosure", 1.0, "read")
    assert s.candidates["hpe-cray-e2000-enclosure"]["cost"] < s.candidates["yanrong-f9000x"]["cost"]
