"""Report content without rendering: the report's rounding, and every section agreeing with the API
(plan, validation ranges and summary) it shows."""

from __future__ import annotations

import math
import re
from html import unescape

import numpy as np
import pytest

from aisize import format as F

from aisize.plan import bom_table, sweep
from aisize.queueing import latency_vs_load
from aisize.report import markup as M
from aisize.report import sections as S
from aisize.report.queue_sections import storage_curve
from aisize.report.scenario_sections import DEFAULT_TEXT, POLICY_TEXT
from aisize.present.training_text import days_range_text
from aisize.report.training_sections import gpus_vs_days_frame, time_range_days
from aisize.scenario import preset, preset_names
from aisize.validation import left_out, mfu_range, summary, validate
from aisize.present.findings import finding_text

PRESETS = preset_names()
TRAINING_PRESETS = [n for n in PRESETS if any(w.kind == "training" for w in preset(n).workloads)]


@pytest.fixture(scope="module")
def contexts():
    return {name: S.context(preset(name)) for name in PRESETS}


def text(html: str) -> str:
    """The visible text of an HTML fragment, whitespace collapsed."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


@pytest.mark.parametrize("value, expected", [
    (210.96, "211"), (0.4476093, "0.448"), (9.996, "10.0"), (0.0149, "0.0149"), (1017.25, "1,017"),
    (0, "0"), (-0.0456, "-0.0456"), (math.inf, "unbounded"), (float("nan"), "—"),
])
def test_sig_rounds_to_three_significant_digits(value, expected):
    assert M.sig(value) == expected


@pytest.mark.parametrize("fmt, value, expected", [
    (M.pct, 0.4193, "41.9 %"), (M.pct, 1e-7, "< 0.1 %"), (M.pct, None, "—"),
    (M.duration, 0.0338, "33.8 ms"), (M.duration, 56.21, "56.2 s"), (M.duration, 628.1, "10.5 min"),
    (M.duration, 18e6, "208 days"), (M.duration, math.inf, "unbounded"),
    (M.rate, 2e9, "2.00 GB/s"), (M.rate, 186647.2, "187 kB/s"), (M.gb, 4.65e11, "465 GB"),
    (M.gb, 3.2e13, "32.0 TB"), (M.mwh, 216571282.79, "60.2 kWh"),
])
def test_formatters(fmt, value, expected):
    assert fmt(value) == expected


@pytest.mark.parametrize("name", PRESETS)
def test_every_assumption_of_the_plan_is_listed_with_its_value(contexts, name):
    ctx = contexts[name]
    html = S.assumptions_table(ctx.scenario, ctx.plan.assumptions)
    for key, value in ctx.plan.assumptions.items():
        if key.startswith("policies."):
            assert POLICY_TEXT[key.split(".", 1)[1]][0] in unescape(html), key
            continue
        assert key in DEFAULT_TEXT, f"{key}: a planner/engine default without a label in the report"
        label, unit, _ = DEFAULT_TEXT[key]
        row = re.search(rf"<tr><td>{re.escape(label)}</td><td>(.*?)</td><td>(.*?)</td>", html)
        assert row, key
        assert row.group(2) == ("planner default" if key.startswith("plan.") else
                                f"engine default ({key.rsplit('.', 1)[0]})")
    assert "<td>Rack power budget</td><td>40 kW</td>" in html
    assert "<td>Unloaded storage latency</td><td>0.3 ms</td>" in html  # SPECstorage median (docs/storage.md)


@pytest.mark.parametrize("name", TRAINING_PRESETS)
def test_time_range_table_shows_the_planners_range(contexts, name):
    ctx = contexts[name]
    assert ctx.plan.training
    html = S.section("training", ctx, ["training"]).split("<caption>Time-to-train range")[1]
    for t in ctx.plan.training:
        r = time_range_days(t)
        row = re.search(rf"<tr><td>{re.escape(t.name)}</td><td>{t.gpus:,}</td><td>(.*?)</td><td>(.*?)</td>"
                        rf"<td>(.*?)</td><td>(.*?)</td></tr>", html)
        low, expected, high, basis = row.groups()
        assert expected == M.days(t.training_days) and unescape(basis) == days_range_text(t.days_range_basis)
        if r is None:  # no spread (a given or assumed throughput): no range shown
            assert t.days_low == t.days_high and (low, high) == ("—", "—")
        else:
            assert (low, high) == (M.days(t.days_low), M.days(t.days_high))
            assert r.low_days <= r.expected_days <= r.high_days and r.low_days < r.high_days


def test_time_range_is_the_step_time_models_error_on_published_runs(contexts):
    # the step-time model sets the headline, so the range is its own error on published runs (issue 50 item 4),
    # no longer the spread of other runs' MFUs around it
    from aisize.validation.ranges import STEP_TIME_SPREAD, step_time_range

    t = contexts["llama3-70b-pretrain"].plan.training[0]
    r = time_range_days(t)
    assert t.throughput_rule == "step-time" and r.mfu is None and t.days_range_mfu is None
    assert (r.low_days, r.high_days) == pytest.approx(step_time_range(t.training_days))
    assert r.basis == STEP_TIME_SPREAD.basis and "210 published runs" in r.basis


def test_a_time_at_an_assumed_mfu_rests_on_published_mfus():
    from aisize.plan.training import days_range

    low, high, basis, r = days_range(100.0, 0.4, 1024, None)
    published = mfu_range(1024)  # aisize.validation.ranges, applied by the planner only
    assert (r.low, r.high, r.cases, r.expected) == (published.low, published.high, published.cases, 0.4)
    # time x MFU is constant: the plan's time at its assumed MFU, the range's ends at the published extremes
    assert low * r.high == pytest.approx(100.0 * 0.4, rel=1e-9)
    assert high * r.low == pytest.approx(100.0 * 0.4, rel=1e-9)
    assert basis.kind == "mfu" and basis.mfu_range == r and f"{len(r.cases)} published runs" in days_range_text(basis)


def test_report_computes_no_range_and_no_station_of_its_own():
    """One formula, one place: the report reads ranges, stations and sweeps from the plan."""
    from pathlib import Path

    import aisize.report as report

    for path in Path(report.__file__).parent.glob("*.py"):
        source = path.read_text(encoding="utf-8")
        for name in ("mfu_range(", "time_range(", "storage_station(", "inference_station(",
                     "STORAGE_LATENCY_SECONDS", "KNEE_FACTOR", "sweep(", "search_layouts("):
            assert name not in source, (path.name, name)


def test_time_range_of_a_measured_sample_rate_is_not_mfu_based(contexts):
    t = contexts["hpe-weka-resnet"].plan.training[0]
    r = time_range_days(t)
    assert t.model_kind == "other" and (r is None or r.mfu is None)


@pytest.mark.parametrize("name", PRESETS)
def test_executive_summary_shows_totals_and_every_finding(contexts, name):
    ctx = contexts[name]
    shown = text(S.section("executive", ctx, ["executive"]))
    p = ctx.plan
    assert f"The plan needs {F.plural(p.gpus, 'GPU')} in {F.plural(p.servers, 'server')}" in shown
    for t in p.training:
        assert f"{t.name}: {M.days(t.training_days)} days on {F.plural(t.gpus, 'GPU')}" in shown
    for f in p.findings:
        assert (finding_text(f) if f.area != "assumptions" or "used:" not in finding_text(f) else "assumptions used:") in shown
    assert shown.count("Problem") == sum(f.severity == "problem" for f in p.findings)


@pytest.mark.parametrize("name", PRESETS)
def test_bill_of_materials_matches_the_planner(contexts, name):
    ctx = contexts[name]
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>",
                      S.section("bom", ctx, ["bom"]).split("Share of each")[0])
    df = bom_table(ctx.plan)
    assert [(q, u) for _, q, u in rows] == [(M.count(q) if u not in ("kW", "TB") and float(q).is_integer()
                                             else (M.sig(q) if u in ("kW", "TB") else f"{q:,g}"), u)
                                            for q, u in zip(df["quantity"], df["unit"])]


def test_gpus_vs_days_passes_through_the_plan(contexts):
    for name, index in (("llama3-70b-pretrain", 0), ("xe9680-genai", 1)):  # GPUs given; a target time
        ctx = contexts[name]
        t = ctx.plan.training[index]
        frame = gpus_vs_days_frame(ctx, t)
        centre = t.target_days if t.target_days is not None else t.training_days
        assert list(frame.loc[frame["target_days"] == centre, "gpus"]) == [t.gpus], name
        assert frame["gpus"].is_monotonic_decreasing and len(frame) >= 4  # more time, fewer GPUs
        # a job the MFU policy times: each point is what plan() gives the scenario with that target (sweep),
        # this job's share; a job the step-time model times is sized at its plan's MFU away from its own point
        # (tests/test_plan_views.py)
        if t.throughput_rule == "step-time":
            continue
        others = ctx.plan.gpus - t.gpus
        for days, gpus in zip(frame["target_days"][::3], frame["gpus"][::3]):
            out = sweep(ctx.scenario, f"workloads.{t.name}.target_days", [days])
            assert int(out["gpus"].iloc[0]) - others == gpus, (name, days)


@pytest.mark.parametrize("name", PRESETS)
def test_storage_queue_chart_uses_the_planner_station(contexts, name):
    """The chart's curve, knee and operating point are the plan's storage station's."""
    ctx = contexts[name]
    s = ctx.plan.storage
    curve, knee, at = storage_curve(ctx)
    S = s.station.service_seconds
    # closed system: the fitted open curve read at N = X R(X) (issue 49.1: one curve), so each point's latency is
    # the open-system latency at its throughput, and N = X R by Little's law
    opened = latency_vs_load(s.station, curve["throughput_per_s"].to_numpy()).response_mean_seconds
    assert curve["response_mean_seconds"].to_numpy() == pytest.approx(np.asarray(opened), rel=1e-9)
    assert curve["concurrency"].to_numpy() == pytest.approx(
        (curve["throughput_per_s"] * curve["response_mean_seconds"]).to_numpy(), rel=1e-9)
    ops = max(s.read_iops + s.write_iops, 1e-9)
    assert float(latency_vs_load(s.station, ops).response_mean_seconds) == pytest.approx(
        s.latency_mean_seconds, rel=1e-9)
    assert knee == s.knee_concurrency == int(s.station.capacity_per_s * S * (1 + 1e-12)) and at == s.outstanding_ios >= 0
    assert curve["concurrency"].max() >= 2 * knee - 1e-9


def test_accuracy_appendix_shows_the_validation_summary(contexts):
    shown = text(S.section("accuracy", contexts["xe9680-genai"], ["accuracy"]))
    # ok, rough and outside counted apart as `aisize validate` counts them (was "Within tolerance": the ok count)
    assert ("ok (within 15 % and the case's tolerance) rough (within a wide tolerance only) outside its tolerance"
            in shown)
    for r in summary(validate()).to_dict("records"):
        assert f"{r['compared']} {r['ok']} {r['rough']} {r['outside']}" in shown, r
        assert r["ok"] + r["rough"] + r["outside"] == r["compared"]
    # the published MFUs behind a time range are listed when a job's range rests on them (a job the MFU policy
    # times); the default's jobs are all timed by the step-time model, whose range is its own error
    by_mfu = [t for t in contexts["xe9680-genai"].plan.training if (r := time_range_days(t)) and r.mfu]
    assert ("Published runs behind this plan's time-to-train ranges" in shown) == bool(by_mfu)
    # a case without a prediction is not an untested row: it is listed apart, with why
    for r in left_out(validate()).to_dict("records"):  # cases left out for one reason share a row
        assert r["case"] in shown and r["why"][:40] in shown, r
    for r in validate().query("status == 'outside' and not family.str.startswith('serving')").to_dict("records"):
        assert r["case"] in shown and r["tolerance_basis"][:40] in shown, r
    assert "gpt2-1.5b-activations" in shown and "s^2 attention terms" in shown  # the largest miss, explained


@pytest.mark.parametrize("name", PRESETS)
def test_every_section_renders_for_every_preset(contexts, name):
    ctx = contexts[name]
    for section in S.SECTIONS:
        html = S.section(section, ctx, list(S.SECTIONS))
        applies = S.SECTIONS[section][2](ctx)
        assert (html is not None) == applies
        if html is not None:
            assert "nan" not in text(html).lower().split() and "None" not in text(html).split()


def test_counts_agree_with_their_nouns():
    """"1 GPU", "1 server" (the report had written "1 GPUs"), "2 GPUs"; a replica's GPUs in words, not "GPU(s)"."""
    import dataclasses

    from aisize.report import plan_sections

    ctx = S.context(preset("xe9680-genai"))
    one = dataclasses.replace(ctx.plan, gpus=1, servers=1)
    line = plan_sections.headline(dataclasses.replace(ctx, plan=one))
    assert "needs 1 GPU in 1 server (" in line and "1 GPUs" not in line
    fleet = S.context(preset("fleet-over-the-day"))
    shown = str(S.section("fleet", fleet, ["fleet"]))
    assert "GPU(s)" not in shown and re.search(r"Each replica has \d+ GPUs? and", shown)


def test_fleet_section_names_the_statistic_of_each_latency():
    """The pairing table's TTFT and TPOT are the service's target statistic; the tenants' TTFT is a mean."""
    fleet = S.context(preset("fleet-over-the-day"))
    shown = str(S.section("fleet", fleet, ["fleet"]))
    assert fleet.plan.fleet.services[0].day.peak_plan.slo_statistic == "p95"
    assert "<th>TTFT p95</th><th>TPOT p95</th>" in shown and "<th>Mean TTFT</th>" in shown
    assert "<th>TTFT</th>" not in shown and "<th>TPOT</th>" not in shown
