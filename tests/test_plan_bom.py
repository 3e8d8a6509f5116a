"""Exports (JSON, CSV, Excel, tables) and sensitivity (sweep, compare) of a plan."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from aisize.plan import bom_table, compare, plan, sweep
from aisize.present.export import to_json, write_csv, write_excel
from aisize.present.summary import parse_vary, summary_text
from aisize.scenario import ScenarioError, preset


@pytest.fixture(scope="module")
def genai():
    return plan(preset("xe9680-genai"))


def test_json_is_the_whole_plan(genai):
    data = json.loads(to_json(genai))
    assert data["gpus"] == genai.gpus and data["servers"] == genai.servers
    assert len(data["training"]) == 2 and data["inference"][0]["replicas"] == genai.inference[0].replicas
    assert data["storage"]["binding"] == genai.storage.binding
    assert data["scenario"]["name"] == "Dell XE9680 generative AI"
    assert {"severity", "area", "code", "text"} == set(data["findings"][0])  # the check's code beside its words


def test_the_exports_words_come_from_present_and_the_planner_exports_no_words(genai):
    import aisize.plan
    from aisize.plan import bom
    from aisize.present import export
    from aisize.present.findings import finding_text

    # the planner's data holds each finding as its code and facts; the export words it once
    assert {"code", "facts"} <= set(bom.to_dict(genai)["findings"][0])
    assert [f["text"] for f in json.loads(to_json(genai))["findings"]] == [finding_text(f) for f in genai.findings]
    for name in ("to_json", "write_csv", "write_excel"):
        assert not hasattr(aisize.plan, name) and callable(getattr(export, name))
    for name in ("cost_table", "workloads_table", "findings_table", "TABLES"):
        assert not hasattr(bom, name) and hasattr(export, name)


def test_json_writes_unbounded_values_as_null():
    from aisize.scenario import from_dict, to_dict

    d = to_dict(preset("llama3-70b-pretrain"))
    d["policies"]["node_mtbf_hours"] = 20
    data = json.loads(to_json(plan(from_dict(d))))
    assert data["training"][0]["training_days"] is None


def test_bom_lists_installed_gpus_and_each_workloads_share(genai):
    bom = bom_table(genai).set_index("item")
    names = [w.name for w in genai.training + genai.inference]
    gpu, server = f"GPU {genai.accelerator}", f"server {genai.server}"
    assert bom.loc[gpu, "quantity"] == genai.gpus == 16 and bom.loc[server, "quantity"] == genai.servers == 2
    assert list(bom.loc[gpu, names]) == [w.gpus for w in genai.training + genai.inference]
    # the fine-tunes run together, then the service reuses a server: shares exceed the installed GPUs
    assert bom.loc[gpu, names].sum() == 16 + genai.inference[0].gpus > bom.loc[gpu, "quantity"]
    assert list(bom.loc[server, names]) == [len(genai.placement.assignment[n]["servers"]) for n in names]


def test_csv_and_excel(genai, tmp_path):
    paths = write_csv(genai, tmp_path / "out")
    assert sorted(p.name for p in paths) == ["bom.csv", "cost.csv", "findings.csv", "job_streams.csv",
                                             "placement.csv", "storage.csv", "timeline.csv", "workloads.csv"]
    assert pd.read_csv(tmp_path / "out" / "bom.csv").quantity.iloc[0] == genai.gpus
    storage = pd.read_csv(tmp_path / "out" / "storage.csv")
    assert storage.name.iloc[-1] == "total"
    xl = write_excel(genai, tmp_path / "plan.xlsx")
    assert set(pd.ExcelFile(xl).sheet_names) == {"bom", "cost", "placement", "timeline", "job_streams", "workloads",
                                                 "storage", "findings"}


def test_summary_text_names_totals_and_findings(genai):
    text = summary_text(genai)
    assert f"{genai.gpus} GPUs (h100-sxm)" in text and "Findings" in text and "Bill of materials" in text


def test_sweep_target_days_trades_gpus_for_time():
    t = sweep(preset("xe9680-genai"), "workloads.Full fine-tune 8B.target_days", [0.25, 1.0])
    assert list(t["workloads.Full fine-tune 8B.target_days"]) == [0.25, 1.0]
    assert t.gpus.iloc[0] > t.gpus.iloc[1]


def test_sweep_gpu_type_storage_and_rate():
    servers = sweep(preset("xe9680-genai"), "hardware.server", ["dell-xe9680-h100", "dgx-b200"])
    assert servers.training_days.iloc[1] < servers.training_days.iloc[0]
    storage = sweep(preset("hpe-weka-resnet"), "hardware.storage", ["hpe-weka-flash", "chassis-4u-15gbs"])
    assert list(storage.storage_units) == [1.0, 1.0]
    rate = sweep(preset("littles-law"), "workloads.1.requests_per_s", [10, 200])
    assert rate.inference_replicas.iloc[1] > rate.inference_replicas.iloc[0]


def test_sweep_rejects_bad_paths_and_values():
    with pytest.raises(ScenarioError, match="allowed: .*hardware"):
        sweep(preset("xe9680-genai"), "hardwar.server", ["dgx-h100"])
    with pytest.raises(ScenarioError, match="workload"):
        sweep(preset("xe9680-genai"), "workloads.9.gpus", [8])
    with pytest.raises(ScenarioError, match="policies.mfu"):
        sweep(preset("xe9680-genai"), "policies.mfu", [2.0])


def test_compare_side_by_side():
    table = compare([preset("xe9680-genai"), preset("littles-law")])
    assert list(table.columns) == ["Dell XE9680 generative AI", "Little's law - CNN training and NLP inference"]
    assert table.loc["gpus"].tolist() == [plan(preset("xe9680-genai")).gpus, plan(preset("littles-law")).gpus]


@pytest.mark.parametrize("spec, path, values", [
    ("policies.mfu=0.3:0.5:3", "policies.mfu", [0.3, 0.4, 0.5]),
    ("workloads.0.gpus=8:32:4", "workloads.0.gpus", [8, 16, 24, 32]),
    ("hardware.scale_out_link=eth-10g,eth-40g", "hardware.scale_out_link", ["eth-10g", "eth-40g"]),
])
def test_parse_vary(spec, path, values):
    p, v = parse_vary(spec)
    assert p == path and v == pytest.approx(values) if isinstance(values[0], float) else v == values


@pytest.mark.parametrize("spec", ["policies.mfu", "=1:2:3", "policies.mfu=a:b:3", "policies.mfu=1:2:0"])
def test_parse_vary_rejects(spec):
    with pytest.raises(ValueError, match="--vary"):
        parse_vary(spec)
