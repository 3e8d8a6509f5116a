"""Cost: the price table's sourcing, the TCO formulas against a hand-worked example, and the plan's cost."""

import csv
import math

import pytest

from aisize import cost
from aisize.catalog import data_dir, servers
from aisize.plan import plan
from aisize.present.cost_text import operating_basis
from aisize.scenario import ScenarioError, from_dict, preset, to_dict


def test_one_server_worked_by_hand():
    # One 8-GPU server bought for $250,000, amortised over 4 years (8,760 h a year):
    #   capital      250,000 / (4 x 8,760)                  = $7.1347 per hour
    #   energy       11.5 kW x 0.8 average x PUE 1.5 x 8,760 h x $0.10/kWh = $12,088.80 a year = $1.3800/h
    #   support      10 % of 250,000 = $25,000 a year       = $2.8539 per hour
    #   total        $11.3686 per hour / 8 GPUs             = $1.42 per GPU-hour
    energy = cost.energy_per_year(11_500 * 0.8, 1.5, 0.10)
    assert energy == pytest.approx(12_088.80)
    rate = cost.per_gpu_hour(250_000, 4, energy + 25_000, 8)
    assert round(rate, 2) == 1.42 and rate == pytest.approx(11.368584 / 8, rel=1e-6)


def test_the_plan_reproduces_the_hand_worked_server():
    d = to_dict(preset("xe9680-genai"))
    d["workloads"] = [d["workloads"][1] | {"when": {"phase": "always", "hours": None}}]  # one 8-GPU job
    d["phases"] = []
    zero = ["switch-ib-ndr", "switch-ethernet", "optics-per-link", "storage-per-tb",
            "rack-per-month"]
    d["cost"] = {"life_years": 4, "average_power_share": 0.8, "cloud_rate": "aws-p5-capacity-block",
                 "prices": {"server-dell-xe9680-h100": 250_000, "energy-per-kwh": 0.10, "pue": 1.5,
                            "support-share": 0.10} | {k: 0 for k in zero}}
    p = plan(from_dict(d))
    assert p.servers == 1 and p.gpus == 8
    assert servers["dell-xe9680-h100"].power_watts == 11_500  # the figure the hand-worked example uses
    assert p.cost.capital_usd == 250_000
    assert p.cost.operating_usd_per_year == pytest.approx(12_088.80 + 25_000)
    assert round(p.cost.usd_per_gpu_hour, 2) == 1.42
    t = p.cost.training[0]
    assert t["usd"] == pytest.approx(p.training[0].gpu_hours * p.cost.usd_per_gpu_hour)
    # the operating lines carry the hand-worked inputs typed; present.cost_text words them, the plan does not
    energy, racks, support = p.cost.operating_lines
    assert (energy["power_watts"], energy["average_power_share"], energy["pue"], energy["usd_per_kwh"]) == (
        11_500, 0.8, 1.5, 0.10)
    assert racks["racks"] == 1 and racks["usd_per_rack_month"] == 0 and support["support_share"] == 0.10
    assert [operating_basis(x) for x in p.cost.operating_lines] == [
        "11.5 kW max x 80.0 % average x PUE 1.5 x 8,760 h x $0.1/kWh", "1 rack x $0.00/month",
        "10.0 % of capital per year"]


def test_dollars_per_million_tokens_follow_the_serving_throughput():
    p = plan(preset("shared-cluster"))
    for row, i in zip(p.cost.inference, p.inference):
        capacity = i.replicas * i.output_tokens_per_s_per_replica
        assert row["tokens_per_s_capacity"] == pytest.approx(capacity)
        # $/M tokens x tokens per hour / 1e6 gives back the GPUs' cost per hour
        assert row["usd_per_million_tokens_at_capacity"] * capacity * 3600 / 1e6 == pytest.approx(row["usd_per_hour"])
        assert row["usd_per_hour"] == pytest.approx(i.gpus * p.cost.pools[1]["usd_per_gpu_hour"])
    assert cost.per_million_tokens(3.6, 1000) == pytest.approx(1.0)  # $3.60/h at 1,000 tokens/s = $1 per M


def test_break_even():
    # owning at $2/GPU-h against renting at $4: busy half the time costs the same
    assert cost.break_even_utilisation(2.0, 4.0) == 0.5
    # $1.2 M capital, $100k/yr to run, $700k/yr of rent saved: pays back in 1.2 M / 600k = 2 years
    assert cost.break_even_months(1.2e6, 1e5, 7e5) == pytest.approx(24.0)
    assert math.isinf(cost.break_even_months(1.2e6, 1e5, 5e4))
    assert plan(preset("xe9680-genai")).cost.break_even_months is None  # 12.5 % busy: renting stays cheaper


def test_every_price_is_sourced_or_flagged():
    rows = list(csv.DictReader(open(data_dir() / "prices.csv", encoding="utf-8")))
    assert {r["kind"] for r in rows} <= set(cost.KINDS)
    for r in rows:
        assert r["source"].strip(), r["id"]
        if r["kind"] == "assumption":
            assert "ASSUMPTION" in r["note"] or "no public" in r["source"], r["id"]
        else:
            assert r["date"].strip(), r["id"]  # a list price, quote or rate carries its date
    table = cost.load_prices()
    assert all(cost.server_price_id(s.id) in table for s in servers)  # every catalog server is priced
    assert len(table.ids("cloud")) >= 2


def test_overrides_apply_and_bad_prices_are_refused_naming_the_field():
    d = to_dict(preset("xe9680-genai"))
    d["cost"]["prices"] = {"energy-per-kwh": 0.3}
    p = plan(from_dict(d))
    used = {x["id"]: x for x in p.cost.prices_used}
    assert used["energy-per-kwh"]["usd"] == 0.3 and used["energy-per-kwh"]["kind"] == "overridden"
    for prices, match in (({"energy-per-kwh": -0.1}, "cost.prices.energy-per-kwh.*must not be negative"),
                          ({"pue": 0.9}, "cost.prices.pue"), ({"server-nope": 1}, "not a price id")):
        d["cost"]["prices"] = prices
        with pytest.raises(ScenarioError, match=match):
            from_dict(d)
    d["cost"]["prices"] = {}
    d["cost"]["cloud_rate"] = "pue"
    with pytest.raises(ScenarioError, match="cost.cloud_rate"):
        from_dict(d)


def test_capital_lines_add_up_and_cost_reaches_json():
    import json

    from aisize.present.export import to_json

    p = plan(preset("shared-cluster"))
    c = p.cost
    assert c.capital_usd == pytest.approx(sum(x.usd for x in c.capital_lines))
    assert c.operating_usd_per_year == pytest.approx(sum(x["usd_per_year"] for x in c.operating_lines))
    assert c.own_usd_per_year == pytest.approx(c.capital_usd / c.life_years + c.operating_usd_per_year)
    assert c.usd_per_gpu_hour == pytest.approx(c.own_usd_per_year / 8760 / p.gpus)
    data = json.loads(to_json(p))
    assert data["cost"]["capital_usd"] == pytest.approx(c.capital_usd, rel=1e-5)
    assert {"pools", "placement", "timeline", "job_streams"} <= set(data)
    assert data["placement"]["assignment"]["Fine-tuning jobs"]["pool"] == "training"
