"""`aisize compare A B`: two plans side by side, the differing figures marked, in text, JSON and CSV."""

from __future__ import annotations

import json

import pytest

from aisize.cli import main
from aisize.plan import plan
from aisize.present.comparison import change_shown, comparison_table, difference_shown, shown
from aisize.scenario import dumps, from_dict, preset, to_dict


@pytest.fixture
def pair(tmp_path):
    """Two vendors' quotes for the same work: XE9680 (H100) against DGX B200, and B's server price."""
    a = preset("xe9680-genai")
    d = to_dict(a)
    d["name"] = "Same work on DGX B200"
    d["hardware"]["server"] = "dgx-b200"
    b = from_dict(d)
    pa, pb = tmp_path / "a.yaml", tmp_path / "b.yaml"
    pa.write_text(dumps(a))
    pb.write_text(dumps(b))
    return pa, pb, plan(a), plan(b)


def test_compare_prints_both_plans_and_marks_differences(pair, capsys):
    pa, pb, a, b = pair
    assert main(["compare", str(pa), str(pb)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == f"A: {a.scenario_name}" and lines[1] == f"B: {b.scenario_name}"
    table = comparison_table(a, b)
    assert f"{int(table['differs'].sum())} of {len(table)} figures differ (marked *)" in out
    power = next(l for l in lines if "Server power (max)" in l)
    assert power.startswith("*")
    assert shown(a.power_watts / 1e3, "kW") in power and shown(b.power_watts / 1e3, "kW") in power
    racks = next(l for l in lines if l.strip().startswith("Racks"))
    assert not racks.startswith("*")  # same figure: not marked
    capital = next(l for l in lines if "Capital" in l)
    assert capital.startswith("*") and capital.rstrip().endswith("A")  # cheaper: A is better


def test_compare_json_and_csv(pair, tmp_path, capsys):
    pa, pb, a, b = pair
    assert main(["compare", str(pa), str(pb), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["key"]: r for r in data["rows"]}
    assert rows["capital_usd"]["differs"] and rows["capital_usd"]["better"] == "A"
    assert rows["capital_usd"]["difference"] == pytest.approx(b.cost.capital_usd - a.cost.capital_usd, rel=1e-5)
    assert rows["gpus"]["differs"] is False and rows["gpus"]["difference"] == 0
    assert rows["training_days"]["better"] == "B"  # B200 trains faster
    assert main(["compare", str(pa), str(pb), "--csv", str(tmp_path / "c.csv")]) == 0
    assert (tmp_path / "c.csv").read_text().count("\n") == len(rows) + 1


def test_compare_refuses_a_bad_file(pair, tmp_path, capsys):
    pa, _, _, _ = pair
    bad = tmp_path / "bad.yaml"
    bad.write_text(pa.read_text().replace("requests_per_s: 20.0", "requests_per_s: -1"))
    assert main(["compare", str(pa), str(bad)]) == 2
    assert "requests_per_s" in capsys.readouterr().err


def test_size_json_has_cost_placement_timeline_and_queues(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(dumps(preset("shared-cluster")))
    assert main(["size", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cost"]["usd_per_gpu_hour"] > 0 and data["cost"]["capital_lines"]
    assert data["placement"]["servers"] and data["timeline"]["rows"]
    assert data["job_streams"][0]["wait_p95_seconds"] <= 2 * 3600 * (1 + 1e-6)
    assert [p["name"] for p in data["pools"]] == ["training", "inference"]


def test_a_comparison_reads_the_same_in_the_app_the_report_and_the_cli(pair, capsys):
    """One definition per figure: every cell of the comparison is the same text in the app's table, the
    report's section and ``aisize compare``."""
    import html as H
    import re

    from aisize.app.sections.compare import table_html
    from aisize.report import sections as S
    from aisize.report.context import ReportContext

    pa, pb, a, b = pair
    table = comparison_table(a, b)
    ca, cb = table.columns[3], table.columns[4]
    expected = [[shown(r[ca], r["unit"]), shown(r[cb], r["unit"]), difference_shown(r["difference"], r["unit"]),
                 change_shown(r["change"])] for r in table.to_dict("records")]
    assert any("$" in row[0] for row in expected) and any("%" in row[3] for row in expected)

    def rows(page):
        cells = [[H.unescape(re.sub("<[^>]+>", "", c)) for c in re.findall(r"<td>(.*?)</td>", tr)]
                 for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", page) if "<td>" in tr]
        return [c[2:6] for c in cells]

    assert rows(table_html(table)) == expected
    assert rows(S.section("compare", ReportContext(a.scenario, a, b), S.SECTIONS)) == expected
    assert main(["compare", str(pa), str(pb)]) == 0
    lines = capsys.readouterr().out.splitlines()
    for r, cells in zip(table.to_dict("records"), expected):
        # a long metric name wraps within its cell (the table fits 120 columns): its first words head the row
        head = r["metric"][:17]
        line = next(x for x in lines if f" {head}" in f" {x} ")
        assert all(c in line for c in cells if c != "—"), (line, cells)
