"""Sensitivity: vary one scenario input and tabulate the plan's key outputs; compare scenarios."""

from __future__ import annotations

import copy

import pandas as pd

from aisize.plan.cluster import plan
from aisize.scenario import ScenarioError, from_dict, to_dict
from aisize.units import GB


def key_outputs(p) -> dict:
    """The headline numbers of a plan, in user units."""
    stalls = [j.stall_fraction for j in p.storage.jobs]
    return {
        "gpus": p.gpus, "servers": p.servers, "racks": p.racks, "power_kw": p.power_watts / 1e3,
        "training_days": max((t.training_days for t in p.training), default=None),
        "storage_read_gb_per_s": p.storage.read_bytes_per_s / GB,
        "storage_write_gb_per_s": p.storage.write_bytes_per_s / GB,
        "storage_units": p.storage.units, "storage_binding": p.storage.binding,
        "storage_p95_latency_ms": p.storage.latency_p95_seconds * 1e3,
        "max_data_stall": max(stalls, default=0.0),
        "inference_replicas": sum(i.replicas for i in p.inference),
        "gpus_busy_peak": p.gpus_busy_peak, "capital_usd": p.cost.capital_usd,
        "usd_per_gpu_hour": p.cost.usd_per_gpu_hour,
        "queue_wait_p95_h": max((j.wait_p95_seconds / 3600 for j in p.job_streams), default=None),
        "problems": sum(f.severity == "problem" for f in p.findings),
        "warnings": sum(f.severity == "warning" for f in p.findings),
    }


def _set(data: dict, path: str, value) -> dict:
    """A copy of ``data`` with the dotted ``path`` set; list items by index or by workload name."""
    out = copy.deepcopy(data)
    keys = path.split(".")
    node = out
    for i, key in enumerate(keys):
        last = i == len(keys) - 1
        if isinstance(node, list):
            names = [w.get("name") for w in node if isinstance(w, dict)]
            if key.isdigit() and int(key) < len(node):
                key = int(key)
            elif key in names:
                key = names.index(key)
            else:
                raise ScenarioError(f"{path}: {key!r} is not a list index (0-{len(node) - 1}) or a workload "
                                    f"name; allowed: {', '.join(map(str, names))}")
        elif not isinstance(node, dict) or (key not in node and not last):
            allowed = ", ".join(node) if isinstance(node, dict) else "(none: not a mapping)"
            raise ScenarioError(f"{path}: {key!r} is not a key here; allowed: {allowed}")
        if last:
            node[key] = value
        else:
            node = node[key]
    if isinstance(out, dict):
        _drop_exclusive(out, path)
    return out


def _drop_exclusive(data: dict, path: str) -> None:
    """Setting a workload's gpus clears its target_days and vice versa (the schema wants one of them)."""
    keys = path.split(".")
    if keys[0] != "workloads" or keys[-1] not in ("gpus", "target_days"):
        return
    other = "target_days" if keys[-1] == "gpus" else "gpus"
    ref = keys[1]
    items = data["workloads"]
    idx = int(ref) if ref.isdigit() else [w.get("name") for w in items].index(ref)
    items[idx][other] = None


def sweep(scenario, path: str, values) -> pd.DataFrame:
    """Plan the scenario once per value of the input at dotted ``path``; one row of key outputs each.

    Parameters
    ----------
    scenario : an :class:`~aisize.scenario.Scenario`
    path : e.g. "workloads.0.target_days", "hardware.server", "policies.mfu",
        "workloads.Chat assistant 8B.requests_per_s", "hardware.storage"
    values : the values to try (each variant is validated as a scenario)
    """
    base = to_dict(scenario)
    rows = []
    for v in values:
        variant = from_dict(_set(base, path, v))
        rows.append({path: v} | key_outputs(plan(variant)))
    return pd.DataFrame(rows)


def compare(scenarios) -> pd.DataFrame:
    """Key outputs of several scenarios (or plans) side by side: one column per scenario."""
    cols = {}
    for s in scenarios:
        p = s if hasattr(s, "storage") else plan(s)
        name = p.scenario_name
        while name in cols:
            name += "'"
        cols[name] = key_outputs(p)
    return pd.DataFrame(cols)
