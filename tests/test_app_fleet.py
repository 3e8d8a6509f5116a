"""The app's Fleet tab in-process: the day's figures are the plan's, controls edit the service's fleet."""

from __future__ import annotations

import re

import pytest

from aisize.app import build_app


def shown(section_html: str, key: str):
    match = re.search(rf"data-key='{re.escape(key)}'>([^<]*)<", section_html)
    assert match, f"{key} not shown"
    text = match[1].replace(",", "").replace("$", "")
    try:
        return float(text)
    except ValueError:
        return text


@pytest.fixture
def app():
    return build_app(display=False)


def test_fleet_tab_shows_the_day_and_edits_the_autoscaler(app):
    app.preset.value = "fleet-over-the-day"
    tab = app.open_tab("Fleet")
    sf = app.state.plan.fleet.service("Chat 70B")
    assert shown(tab.figures.value, "fleet.gpu_hours") == pytest.approx(round(sf.day.day.gpu_hours), abs=1)
    assert shown(tab.figures.value, "fleet.replicas") == f"{sf.day.day.least_replicas} – {sf.day.day.peak_replicas}"
    assert tab.day_chart.chart is not None and tab.pool_chart.chart is not None
    assert "Paid" in tab.tables.value and "dgx-b200" in tab.tables.value
    tab.least.value = 6
    assert app.state.data["workloads"][0]["fleet"]["autoscaling"]["min_replicas"] == 6
    assert app.state.plan.fleet.service("Chat 70B").day.day.least_replicas >= 6
    tab.load_from.value = "host-cache"
    assert app.state.plan.fleet.service("Chat 70B").day.load_from == "host-cache"
    tab.site.value = 5.0
    assert app.state.data["site"]["power_mw"] == pytest.approx(5.0, rel=1e-3)


def test_fleet_tab_gives_a_plain_service_a_profile(app):
    tab = app.open_tab("Fleet")  # the default preset's service has no fleet
    assert "no load profile" in tab.figures.value and tab.least.disabled
    tab.add.click()
    assert app.state.data["workloads"][tab.service.value]["fleet"]["load_profile"]["hourly"][12] == 1.0
    assert app.state.plan.fleet is not None and not tab.least.disabled
    assert "fleet.gpu_hours" in tab.figures.value


def test_fleet_tables_name_the_statistic_of_each_latency(app):
    # the pairing table's ttft_s/tpot_s are the service's target statistic (fleet.hetero), the tenants' TTFT a mean
    app.preset.value = "fleet-over-the-day"
    tab = app.open_tab("Fleet")
    stat = app.state.plan.fleet.service("Chat 70B").day.peak_plan.slo_statistic
    assert stat == "p95"
    assert "<th>TTFT p95 [ms]</th>" in tab.tables.value and "<th>TPOT p95 [ms]</th>" in tab.tables.value
    assert "<th>TTFT mean [ms]</th>" in tab.tables.value  # the tenants' TTFT
    assert "<th>TPOT [ms]</th>" not in tab.tables.value and "<th>TTFT [ms]</th>" not in tab.tables.value


def test_a_fleet_move_swaps_the_rows_of_the_drawn_day_and_pool_charts(app):
    """A minimum-replicas move keeps the Fleet tab's day and pool charts and swaps in their new rows (issue 51: each
    rebuild was an Altair construction and validation, about half of a 51-55 ms move): what is drawn is what charts
    built from the new plan hold."""
    from aisize import charts

    app.preset.value = "fleet-over-the-day"
    tab = app.open_tab("Fleet")
    drawn = tab.day_chart.chart, tab.pool_chart.chart
    before = dict(tab.day_chart.data)
    tab.least.value = tab.least.value + 2
    sf = app.state.plan.fleet.service("Chat 70B")
    pool = next(p for p in app.state.plan.fleet.pools if p.pool == sf.pool)
    assert (tab.day_chart.chart, tab.pool_chart.chart) == drawn  # not built again
    assert tab.day_chart.data == charts.day_curve(sf).to_dict()["datasets"] != before
    assert tab.pool_chart.data == charts.pool_day(pool).to_dict()["datasets"]
