"""The report's placement, job-queue, cost and comparison sections agree with the plan (no rendering),
and the comparison report renders (slow)."""

from __future__ import annotations

import re
import shutil
import subprocess
from html import unescape

import pytest

from aisize import format as F
from aisize.plan import plan
from aisize.present.comparison import comparison_table
from aisize.present.cost_text import verdict
from aisize.report import markup as M
from aisize.report import sections as S
from aisize.report.cluster_sections import simulated_points, usd
from aisize.report.context import ReportContext
from aisize.report.pdf import chromium_path
from aisize.scenario import dumps, from_dict, preset, to_dict


def text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


@pytest.fixture(scope="module")
def shared():
    return S.context(preset("shared-cluster"))


def test_cost_section_shows_the_plans_cost(shared):
    c = shared.plan.cost
    shown = text(S.section("cost", shared, S.SECTIONS))
    for figure in (c.capital_usd, c.operating_usd_per_year, c.usd_per_gpu_hour, c.rent_usd_per_year):
        assert usd(figure) in shown
    for line in c.capital_lines:
        assert line.item in shown
    for i in c.inference:
        assert usd(i["usd_per_million_tokens"]) in shown
    assert "assumption" in shown and "Prices used" in shown


def test_placement_section_lists_every_server_and_the_timeline(shared):
    p = shared.plan
    shown = text(S.section("placement", shared, S.SECTIONS))
    assert shown.count("Holds (workload: GPUs)") == 1
    for s in p.placement.servers:
        assert "; ".join(f"{w['workload']}: {w['gpus']}" for w in s.workloads) in shown
    pre = next(t for t in p.training if t.name == "Pre-train 8B")
    assert f"1-{pre.servers}" in shown  # the pre-training servers hold the same: one row
    for r in p.timeline.rows:
        assert r["workload"] in shown
    assert "<svg" in S.section("placement", shared, S.SECTIONS)


def test_job_queue_section_shows_the_closed_form_and_simulated_points(shared):
    j = shared.plan.job_streams[0]
    html = S.section("jobqueue", shared, S.SECTIONS)
    shown = text(html)
    assert M.duration(j.wait_p95_seconds) in shown and M.pct(j.utilisation) in shown
    sims = simulated_points(j)
    assert list(sims["gpus"]) == [g * j.gpus_per_job for g in (j.slots - 1, j.slots, j.slots + 1)
                                  if g * j.gpus_per_job > j.offered_gpus]
    for r in sims.itertuples():
        assert M.duration(r.wait_mean_hours * 3600) in shown
    assert S.section("jobqueue", S.context(preset("xe9680-genai")), S.SECTIONS) is None  # no stream: left out


def test_compare_section_highlights_what_differs():
    a, b = plan(preset("xe9680-genai")), plan(preset("shared-cluster"))
    ctx = ReportContext(a.scenario, a, b)
    html = S.section("compare", ctx, S.SECTIONS)
    table = comparison_table(a, b)
    assert html.count('<tr class="differs">') == int(table["differs"].sum())
    assert f"{int(table['differs'].sum())} of {len(table)} figures differ" in text(html)
    assert S.section("compare", S.context(a.scenario), S.SECTIONS) is None  # only in a comparison report


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("pdftotext"), reason="poppler-utils not installed")
@pytest.mark.skipif(chromium_path() is None, reason="Chromium not installed (or hidden by AISIZE_CHROMIUM)")
def test_comparison_report_renders(tmp_path):
    from aisize.cli import main

    pa, pb = tmp_path / "a.yaml", tmp_path / "b.yaml"
    pa.write_text(dumps(preset("xe9680-genai")))
    pb.write_text(dumps(preset("shared-cluster")))
    assert main(["compare", str(pa), str(pb), "--report", str(tmp_path / "out"), "--format", "pdf"]) == 0
    pdf = tmp_path / "out" / "compare-a-b.pdf"
    flat = re.sub(r"\s+", "", subprocess.run(["pdftotext", "-raw", str(pdf), "-"], capture_output=True, text=True,
                                             check=True).stdout)
    assert "2.Comparison" in flat and "figuresdiffer" in flat and "B:SharedAIclusterforseveralteams" in flat
    assert "5.Cost" in flat


def test_cost_section_shows_the_plans_buy_or_rent_verdict():
    # issue 49: "Pays back: never at this use" said neither why nor what renting costs; the section now says
    # the plan's verdict (present.cost_text) word for word, and "—" only with the reason where no rate rents the GPU
    ctx = S.context(preset("xe9680-genai"))
    c = ctx.plan.cost
    shown = text(S.section("cost", ctx, S.SECTIONS))
    assert verdict(c).startswith("renting wins at 12.5 % busy") and f"Buy or rent: {verdict(c)}." in shown
    assert (f"never within the 4-year life (at 12.5 % busy; buying pays back at {F.pct(c.break_even_utilisation)} "
            "busy or more) Pays back" in shown)
    assert "$6.88 per h100-sxm GPU-hour (aws-p5-on-demand) Cloud rate" in shown
    d = to_dict(preset("xe9680-genai"))
    d["hardware"]["server"] = "dgx-b300"  # no public B300 rental rate
    ctx = S.context(from_dict(d))
    shown = text(S.section("cost", ctx, S.SECTIONS))
    assert f"Buy or rent: {verdict(ctx.plan.cost)}." in shown
    assert "— (no rental rate for b300 in data/prices.csv" in shown and "never" not in shown
    assert "— (no rate) Break-even busy share" in shown
