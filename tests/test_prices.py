"""Prices priced today and compared like for like (issue 49.3): every row dated, stale prices named on the plan,
renting compared for the GPU the plan bought (or plainly not at all), and the buy-or-rent verdict in worked numbers."""

import datetime
import math

import pytest

from aisize import cost
from aisize.cost import prices as P
from aisize.cost.rental import choose_rate
from aisize.plan import costing, plan
from aisize.present.cost_text import verdict
from aisize.scenario import from_dict, preset, to_dict
from aisize.present.findings import finding_text

TODAY = datetime.date(2026, 12, 4)


@pytest.fixture
def today(monkeypatch):
    """Plans age their prices against 2026-12-04, so these tests do not drift with the clock."""
    monkeypatch.setattr(costing, "_today", lambda: TODAY)
    return TODAY


def _price(id_, date, accelerator="", category="cloud", usd=1.0):
    return P.Price(id_, category, id_, "per GPU-hour", usd, "cloud-rate", date, "test", "", accelerator)


def test_price_age_is_worked_from_its_date():
    # 2024-08 counts from 2024-08-01: 855 days to 2026-12-04, / (365.25 / 12 = 30.4375 days) = 28.09 months
    assert P.age_months("2024-08", TODAY) == pytest.approx(855 / 30.4375)
    assert P.age_months("2026-12-04", TODAY) == 0.0
    assert P.age_months("2025", TODAY) == pytest.approx((TODAY - datetime.date(2025, 1, 1)).days / 30.4375)


def test_a_stale_price_is_flagged_and_a_fresh_one_is_not():
    # 2025-06-01 is 551 days (18.10 months) before 2026-12-04: stale at 18 months; 2025-07-01 is 521 days (17.12)
    rows = [_price("old", "2025-06"), _price("fresh", "2025-07"), _price("override", "")]
    flagged = P.stale(rows, TODAY)
    assert [x["id"] for x in flagged] == ["old"]
    assert flagged[0]["date"] == "2025-06" and flagged[0]["age_months"] == pytest.approx(551 / 30.4375)
    assert P.stale(rows, TODAY, max_age_months=12) and [x["id"] for x in P.stale(rows, TODAY, 12)] == ["old", "fresh"]
    assert P.MAX_PRICE_AGE_MONTHS == 18


@pytest.mark.parametrize("text", ["2026-13", "26-01", "2026/01", "soon", "2026-02-30"])
def test_a_bad_date_is_refused_naming_it(text):
    with pytest.raises(ValueError, match=rf"where: '{text}' is not a date: allowed YYYY, YYYY-MM or YYYY-MM-DD"):
        P.parse_date("where", text)


@pytest.mark.parametrize("months", [0, -1, math.inf, math.nan, True])
def test_a_bad_age_limit_is_refused(months):
    with pytest.raises(ValueError, match="max_age_months: .* is not allowed: a number of months above 0"):
        P.stale([], TODAY, months)


def test_every_row_is_dated_and_every_cloud_row_names_its_gpu():
    from aisize.catalog import accelerators

    table = cost.load_prices()
    for p in table.rows.values():
        P.parse_date(p.id, p.date)  # every row has a date, assumptions included
    for i in table.ids("cloud"):
        assert table[i].accelerator in accelerators, i
    # the p4d block rate the issue found expired (2025-01-01) is still there for old scenarios and reads as stale
    # today; the p5 block rate was replaced by AWS's 2026 figure for the same item, so it is fresh
    stale = {x["id"] for x in P.stale(table.rows.values(), TODAY)}
    assert "aws-p4d-capacity-block" in stale and "aws-p5-capacity-block" not in stale
    # and the GPUs the catalog's servers carry mostly have a 2026 rate to compare with
    fresh = {table[i].accelerator for i in table.ids("cloud") if table[i].date.startswith("2026")}
    assert {"h100-sxm", "h200-sxm", "b200", "gb200", "a100-sxm-40gb", "l40s"} <= fresh


def test_a_price_row_without_a_date_is_refused(tmp_path, monkeypatch):
    src = (P.data_dir() / "prices.csv").read_text(encoding="utf-8").splitlines()
    head, first = src[0], next(row for row in src[1:] if ",2026-12," in row).replace(",2026-12,", ",,", 1)
    (tmp_path / "prices.csv").write_text(head + "\n" + first + "\n", encoding="utf-8")
    monkeypatch.setattr(P, "data_dir", lambda: tmp_path)
    P.load.cache_clear()
    try:
        with pytest.raises(ValueError, match="line 2: every price needs the date it was valid"):
            P.load()
    finally:
        P.load.cache_clear()


def test_the_rate_compared_with_rents_the_same_gpu():
    table = P.PriceTable({p.id: p for p in [
        _price("aws-h100-on-demand", "2026-03", "h100-sxm"), _price("neo-b200-on-demand", "2026-03", "b200"),
        _price("aws-b200-on-demand", "2024-01", "b200"), _price("aws-b200-reserved", "2026-03", "b200"),
        _price("neo-h200-on-demand", "2026-03", "h200-sxm"), _price("aws-h200-on-demand", "2026-03", "h200-sxm")]})
    same = choose_rate(table, "aws-h100-on-demand", "h100-sxm", TODAY)
    assert (same.id, same.note) == ("aws-h100-on-demand", "")
    # the scenario's provider first, among fresh on-demand rows for the GPU bought
    assert choose_rate(table, "aws-h100-on-demand", "h200-sxm", TODAY).id == "aws-h200-on-demand"
    # a stale row loses to a fresh one even from the scenario's provider; a reservation is never chosen for it
    b200 = choose_rate(table, "aws-h100-on-demand", "b200", TODAY)
    assert b200.id == "neo-b200-on-demand" and "rents h100-sxm; the plan bought b200" in b200.note
    none = choose_rate(table, "aws-h100-on-demand", "b300", TODAY)
    assert none.id == "" and "no rental rate for b300" in none.note


def test_a_b200_plan_is_compared_with_b200_rental(today):
    d = to_dict(preset("agentic-coding"))
    d["cost"]["cloud_rate"] = "aws-p5-on-demand"  # an H100 rate
    p = plan(from_dict(d))
    assert {x.accelerator for x in p.pools} == {"b200"}
    c, table = p.cost, cost.load_prices()
    assert table[c.cloud_rate].accelerator == "b200"  # not the scenario's H100 rate
    assert c.cloud_rate_requested == "aws-p5-on-demand"
    assert c.cloud_usd_per_gpu_hour == table.usd(c.cloud_rate)
    assert any("the plan bought b200, so it is compared with" in finding_text(f) for f in p.findings)


def test_a_plan_of_a_gpu_no_one_rents_says_so_instead_of_comparing(today):
    d = to_dict(preset("xe9680-genai"))
    d["hardware"]["server"] = "dgx-b300"  # no public B300 rental rate in data/prices.csv
    p = plan(from_dict(d))
    c = p.cost
    # no rate: no figure (None), never a NaN a reader could take for a number
    assert c.cloud_rate == "" and c.cloud_usd_per_gpu_hour is None and c.rent_usd_per_year is None
    assert c.break_even_utilisation is None and c.break_even_months is None and c.verdict_kind == "no-rate"
    assert verdict(c).startswith("not compared with renting: no rental rate for b300")
    assert [f.severity for f in p.findings if finding_text(f) == verdict(c)] == ["warning"]
    assert "h100" not in " ".join(x["id"] for x in c.prices_used)  # no other GPU's rate is used


def test_stale_prices_are_named_on_the_plan(monkeypatch):
    # the same plan read on 2028-01-01: AWS's 2026-05 block rate is 20.0 months old (610 days / 30.4375) and named
    monkeypatch.setattr(costing, "_today", lambda: datetime.date(2028, 1, 1))
    d = to_dict(preset("xe9680-genai"))
    d["cost"]["cloud_rate"] = "aws-p5-capacity-block"
    p = plan(from_dict(d))
    # oldest first: the storage price per TB (another vendor's 2023-03 system price), the XE9680's 2024-08 quote
    # carried forward (no public 2026 price), then by 2028 the 2025-07 PUE, the 2026-04 tariff and the block rate
    assert [x["id"] for x in p.cost.stale_prices] == ["storage-per-tb", "server-dell-xe9680-h100", "pue",
                                                      "energy-per-kwh", "aws-p5-capacity-block"]
    warn = [finding_text(f) for f in p.findings if f.severity == "warning" and f.area == "cost"]
    assert ("price aws-p5-capacity-block (AWS p5.48xlarge (8x H100), EC2 Capacity Blocks for ML, us-east-1) "
            "is dated 2026-05, 20.0 months ago (older than 18 months): replace it with a current figure "
            "(data/prices.csv or cost.prices)") in warn


def test_stale_prices_of_the_default_are_named_today(today):
    fresh = plan(preset("xe9680-genai"))  # the default's other prices are dated within 18 months
    assert [x["id"] for x in fresh.cost.stale_prices] == ["storage-per-tb", "server-dell-xe9680-h100"]
    assert [finding_text(f) for f in fresh.findings if "months ago" in finding_text(f)][1:] == [
        "price server-dell-xe9680-h100 (Dell PowerEdge XE9680 (8x H100 SXM)) is dated 2024-08, 28.1 months ago "
        "(older than 18 months): replace it with a current figure (data/prices.csv or cost.prices)"]


def _one_server(rate_usd):
    """test_cost's hand-worked server: one XE9680 at $250,000, busy all the time, $37,088.80 a year to run."""
    d = to_dict(preset("xe9680-genai"))
    d["workloads"] = [d["workloads"][1] | {"when": {"phase": "always", "hours": None}}]
    d["phases"] = []
    zero = ["switch-ib-ndr", "switch-ethernet", "optics-per-link", "storage-per-tb",
            "rack-per-month"]
    d["cost"] = {"life_years": 4, "average_power_share": 0.8, "cloud_rate": "aws-p5-on-demand",
                 "prices": {"server-dell-xe9680-h100": 250_000, "energy-per-kwh": 0.10, "pue": 1.5,
                            "support-share": 0.10, "aws-p5-on-demand": rate_usd} | {k: 0 for k in zero}}
    return plan(from_dict(d)).cost


def test_buying_wins_in_worked_numbers(today):
    # own:  250,000 / 4 + 12,088.80 energy + 25,000 support = $99,588.80 a year = $1.42107 per GPU-hour (8 GPUs)
    # rent: 100 % busy x 8 GPUs x 8,760 h x $4.00         = $280,320 a year
    # pays back: 12 x 250,000 / (280,320 - 37,088.80)      = 12.33 months; break-even 1.42107 / 4.00 = 35.5 % busy
    # over 4 years owning saves (280,320 - 99,588.80) x 4  = $722,925
    c = _one_server(4.0)
    assert c.verdict_kind == "buy"
    assert c.gpu_utilisation == 1.0 and c.rent_usd_per_year == pytest.approx(280_320)
    assert c.own_usd_per_year == pytest.approx(99_588.80)
    assert c.break_even_months == pytest.approx(3_000_000 / 243_231.20)
    assert c.break_even_utilisation == pytest.approx(99_588.80 / 8760 / 8 / 4.0)
    assert verdict(c) == ("buying wins at 100 % busy over the 4-year life: owning costs $723 k less over 4 years than "
                          "h100-sxm rented at aws-p5-on-demand ($4.00/GPU-hour), paying back in 12.3 months; buying "
                          "pays back at 35.5 % busy or more")


def test_renting_wins_says_by_how_much_and_where_buying_would_pay_back(today):
    # at $1.00 a GPU-hour renting all 70,080 GPU-hours a year costs $70,080 against $99,588.80 to own:
    # renting saves 29,508.80 x 4 = $118,035; buying would need 1.42107 / 1.00 = 142 % busy: within the life it
    # never pays back (its payback, 12 x 250,000 / (70,080 - 37,088.80) = 90.9 months, is past the 48-month life)
    c = _one_server(1.0)
    assert c.verdict_kind == "rent"
    assert c.break_even_utilisation == pytest.approx(1.42107, rel=1e-5)
    assert c.break_even_months == pytest.approx(3_000_000 / 32_991.20) and c.break_even_months > 48
    assert verdict(c) == ("renting wins at 100 % busy over the 4-year life: h100-sxm rented at aws-p5-on-demand "
                          "($1.00/GPU-hour) costs $118 k less over 4 years ($70.1 k/year against $99.6 k/year to own); "
                          "buying does not pay back even 100 % busy (owning costs $1.42 per GPU-hour, renting $1.00)")


def test_the_default_scenario_says_plainly_that_renting_wins(today):
    p = plan(preset("xe9680-genai"))
    c = p.cost
    # 2 servers bought for < 1 day of fine-tuning, then 2 of 16 GPUs serve chat: 12.5 % busy over the life
    assert c.gpu_utilisation == pytest.approx(0.125, abs=0.001)
    assert c.cloud_rate == "aws-p5-on-demand" and cost.load_prices()[c.cloud_rate].date.startswith("2026")
    saved = (c.own_usd_per_year - c.rent_usd_per_year) * c.life_years
    assert saved > 0 and verdict(c).startswith("renting wins at 12.5 % busy over the 4-year life: h100-sxm rented")
    assert f"buying pays back at {round(c.break_even_utilisation * 100, 1)} % busy or more" in verdict(c)
    assert verdict(c) in [finding_text(f) for f in p.findings]


def test_the_aws_h100_rates_are_awss_own_2026_figures_per_gpu():
    # AWS Machine Learning Blog, 2026-05-07: p5.48xlarge (8 x H100), US East (N. Virginia), $55.04 an hour on demand
    # and $34.608 an hour in a Capacity Block: per GPU-hour 55.04 / 8 = 6.88 and 34.608 / 8 = 4.326
    table = cost.load_prices()
    on_demand, block = table["aws-p5-on-demand"], table["aws-p5-capacity-block"]
    assert on_demand.usd == pytest.approx(55.04 / 8) and block.usd == pytest.approx(34.608 / 8)
    for p in (on_demand, block):
        assert p.date == "2026-05" and p.kind == "cloud-rate" and p.accelerator == "h100-sxm"
        assert "$55.04/hour on-demand" in p.source and "$34.608/hour with Capacity Blocks" in p.source
    # the 2026 H100 rates in the table span a factor of 2 between providers; AWS's sits inside that span
    h100 = [table.usd(i) for i in P.cloud_rates_for(table, "h100-sxm") if i.endswith("-on-demand")]
    assert min(h100) < on_demand.usd <= max(h100) * 1.2


def test_the_defaults_verdict_in_worked_numbers(today):
    # 16 H100 busy 12.5 % of 4 years, rented at $6.88: 0.125 x 16 x 8,760 h x 6.88 = $120,538 a year; buying pays
    # back at own / (16 x 8,760 x 6.88) busy, the share at which renting every busy hour costs what owning does
    c = plan(preset("xe9680-genai")).cost
    assert c.cloud_usd_per_gpu_hour == 6.88 and c.gpu_utilisation == pytest.approx(0.125, abs=0.001)
    assert c.rent_usd_per_year == pytest.approx(c.gpu_utilisation * 16 * 8760 * 6.88)
    assert c.break_even_utilisation == pytest.approx(c.own_usd_per_year / (16 * 8760 * 6.88))
    assert 0.30 < c.break_even_utilisation < 0.33 and c.verdict_kind == "rent"
