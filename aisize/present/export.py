"""A plan as files: JSON, one CSV per table, an Excel workbook; and the tables whose cells are words.

The planner's tables of numbers (:mod:`aisize.plan.bom`: bill of materials, placement, timeline, job streams,
storage) and its data (:func:`aisize.plan.bom.to_dict`) carry no sentences; the cells and keys that are words
(a cost line's basis, a training layout and time basis, a service's shape, a finding, a KV tier's note) are
written here, each by the one function every surface uses, so the JSON, CSV, Excel, app and report say the same
thing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from aisize import format as F
from aisize.plan import bom
from aisize.plan.service_notes import ServiceNote
from aisize.plan.spreadsheet import defuse
from aisize.present.cost_text import operating_basis
from aisize.present.findings import finding_text
from aisize.present.fleet_text import failures_basis_text, target_basis_text
from aisize.present.jobstreams import job_streams_table, stream_target_text
from aisize.present.kvtiers import kv_note_text
from aisize.present.network_text import bom_table, unused_nics_text
from aisize.present.service_text import model_source_text, service_note_text
from aisize.present.slo_text import slo_reason_text
from aisize.present.training_text import days_range_text, throughput_basis_text
from aisize.units import GB, GiB


def cost_table(plan) -> pd.DataFrame:
    """Capital by bill-of-materials line: quantity, unit price, total and where the price comes from [USD]."""
    return pd.DataFrame(cost_rows(plan.cost))


def cost_rows(c) -> list[dict]:
    """:func:`cost_table`'s rows (of ``plan.cost``), for a page that writes them without a frame."""
    rows = [{"item": x.item, "quantity": x.quantity, "unit": x.unit, "unit_usd": x.unit_usd, "capital_usd": x.usd,
             "price": x.price_id, "price_kind": x.kind} for x in c.capital_lines]
    rows.append({"item": "total capital", "quantity": None, "unit": "", "unit_usd": None,
                 "capital_usd": c.capital_usd, "price": "", "price_kind": ""})
    rows += [{"item": f"operating: {x['item']} (per year)", "quantity": None, "unit": "", "unit_usd": None,
              "capital_usd": None, "usd_per_year": x["usd_per_year"], "price": operating_basis(x), "price_kind": ""}
             for x in c.operating_lines]
    return rows


def workloads_table(plan) -> pd.DataFrame:
    """One row per workload with its headline figures (base units converted in the column names)."""
    rows = []
    for t in plan.training:
        c = t.checkpoint
        rows.append({"workload": t.name, "kind": "training", "model": t.model, "gpus": t.gpus,
                     "servers": t.servers, "days": t.training_days, "days_low": t.days_low,
                     "days_high": t.days_high, "goodput": t.goodput,
                     "mfu_assumed": t.mfu_assumed, "mfu_predicted": t.mfu_predicted,
                     # a transformer's rate is in tokens (plan.training): the column says which it holds
                     ("samples_per_s_per_gpu" if t.seq_len is None else "tokens_per_s_per_gpu"):
                         t.samples_per_s_per_gpu, "throughput_basis": throughput_basis_text(t.throughput_basis),
                     "layout": F.layout(t.layout),
                     "memory_per_gpu_gib": t.memory_bytes["total_bytes"] / GiB, "memory_fits": t.memory_fits,
                     "read_gb_per_s": t.read_bytes_per_s / GB,
                     "checkpoint_gb": c.checkpoint_bytes / GB if c else None,
                     "checkpoint_write_s": c.write_seconds if c else None,
                     "restore_s": c.restore_seconds if c else None,
                     "host_ram_gib": t.host_memory_needed_bytes / GiB, "host_ram_fits": t.host_memory_fits})
    for i in plan.inference:
        rows.append({"workload": i.name, "kind": "inference", "model": i.model, "gpus": i.gpus,
                     # the plan's one wording of the shape, adding up to the GPUs (disaggregated: both pools)
                     "servers": i.servers, "replicas": i.replicas, "shape": F.serving_shape(i),
                     "batch": i.batch, "ttft_mean_s": i.ttft_seconds, "ttft_p95_s": i.ttft_p95_seconds,
                     "tpot_mean_ms": i.tpot_seconds * 1e3, "tpot_p95_ms": i.tpot_p95_seconds * 1e3,
                     "request_latency_p95_s": i.latency_p95_seconds, "utilisation": i.utilisation,
                     "memory_per_gpu_gib": i.memory_per_gpu_bytes["total_bytes"] / GiB, "memory_fits": i.fits,
                     "host_ram_gib": i.host_memory_needed_bytes / GiB, "host_ram_fits": i.host_memory_fits})
    for j in plan.job_streams:
        rows.append({"workload": j.name, "kind": "job-stream", "gpus": j.gpus,
                     "servers": len(plan.placement.assignment[j.name]["servers"]), "utilisation": j.utilisation,
                     "wait_mean_h": j.wait_mean_seconds / 3600.0, "wait_p95_h": j.wait_p95_seconds / 3600.0})
    for d in plan.dataprep:
        rows.append({"workload": d.name, "kind": "data-prep", "gpus": 0, "servers": 0,
                     "read_gb_per_s": d.read_bytes_per_s / GB, "write_gb_per_s": d.write_bytes_per_s / GB})
    return pd.DataFrame(rows)


def _finding_row(f) -> dict:
    # the check's stable code beside its sentence: a script filters on the code, a reader reads the text
    return {"severity": f.severity, "area": f.area, "code": f.code, "text": finding_text(f)}


def findings_table(plan) -> pd.DataFrame:
    """One row per finding: severity, area, the check's code and its sentence
    (:func:`aisize.present.findings.finding_text`)."""
    return pd.DataFrame([_finding_row(f) for f in plan.findings], columns=["severity", "area", "code", "text"])


TABLES = {"bom": bom_table, "cost": cost_table, "placement": bom.placement_table,
          "timeline": bom.timeline_table, "job_streams": job_streams_table, "workloads": workloads_table,
          "storage": bom.storage_table, "findings": findings_table}


def _note(n) -> str:
    """A service's note: the estimate's notes are text already; a KV tier's and the planner's are typed notes
    worded here."""
    if isinstance(n, str):
        return n
    return service_note_text(n) if isinstance(n, ServiceNote) else kv_note_text(n)


def to_dict(plan) -> dict:
    """The whole plan as plain JSON-compatible data (:func:`aisize.plan.bom.to_dict`) with its words: each
    finding as severity, area and text; each KV tier note, each service's reason for unmet targets, each training
    job's throughput and time-range basis, and the fleet's failures basis and each service's target basis, as its
    sentence."""
    data = bom.to_dict(plan)
    if "network" in data:  # the typed reason for idle compute NICs, last in the network plan, as its words
        data["network"].pop("unused_nics")
        data["network"]["compute_nics_unused_reason"] = unused_nics_text(plan.network.unused_nics)
    if "findings" in data:
        data["findings"] = [_finding_row(f) for f in plan.findings]
    for d, s in zip(data.get("job_streams", []), plan.job_streams):
        d["target"] = stream_target_text(s.target)
    for d, t in zip(data.get("training", []), plan.training):
        d["throughput_basis"] = throughput_basis_text(t.throughput_basis)
        d["days_range_basis"] = days_range_text(t.days_range_basis)
    for d, i in zip(data.get("inference", []), plan.inference):
        d["model_source"] = model_source_text(i.model_source)
        d["slo_reason"] = slo_reason_text(i.slo_reason)
        if d.get("notes") is not None:
            d["notes"] = [_note(n) for n in i.notes]
        if i.kv_tiers is not None:
            d["kv_tiers"]["notes"] = [kv_note_text(n) for n in i.kv_tiers.notes]
    fleet = getattr(plan, "fleet", None)
    if fleet is not None:
        data["fleet"]["failures_basis"] = failures_basis_text(fleet.failures_basis)
    for d, sf in zip((data.get("fleet") or {}).get("services", []), fleet.services if fleet else ()):
        d["day"]["target_basis"] = target_basis_text(sf.day.target_basis)
        _word_peak_plan(d["day"]["peak_plan"], sf.day.peak_plan)
    return data


def _word_peak_plan(d: dict, i) -> None:
    """A fleet service's plan at its peak (nested in the fleet's day): its model source, its reason for unmet
    targets and the planner's notes in words (its KV-tier notes stay as codes and facts, as they were before the
    planner wrote no text)."""
    d["model_source"] = model_source_text(i.model_source)
    d["slo_reason"] = slo_reason_text(i.slo_reason)
    d["notes"] = [service_note_text(n) if isinstance(n, ServiceNote) else v for n, v in zip(i.notes, d["notes"])]


def to_json(plan, *, indent: int = 2) -> str:
    """The whole plan as JSON text (:func:`to_dict`)."""
    return json.dumps(to_dict(plan), indent=indent, allow_nan=False) + "\n"


def write_csv(plan, out_dir) -> list[Path]:
    """Write one CSV per table of :data:`TABLES` (bom.csv, cost.csv, ..., findings.csv) into ``out_dir``
    (text that would start a formula is defused: :mod:`aisize.plan.spreadsheet`)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, table in TABLES.items():
        path = out / f"{name}.csv"
        defuse(table(plan)).to_csv(path, index=False)
        paths.append(path)
    return paths


def write_excel(plan, path) -> Path:
    """Write one Excel workbook with a sheet per table (needs openpyxl; text defused as in :func:`write_csv`)."""
    import importlib.util

    if importlib.util.find_spec("openpyxl") is None:
        raise ValueError("Excel export is not available: install openpyxl")
    path = Path(path)
    with pd.ExcelWriter(path, engine="openpyxl") as xl:
        for name, table in TABLES.items():
            defuse(table(plan)).to_excel(xl, sheet_name=name, index=False)
    return path


__all__ = ["TABLES", "cost_table", "findings_table", "to_dict", "to_json", "workloads_table", "write_csv",
           "write_excel"]
