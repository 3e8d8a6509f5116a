"""A plan as tables of numbers (bill of materials, placement, timeline, job streams, storage) and as plain data.

The tables and files whose cells are words (cost with its basis, workloads with layouts and shapes, findings) and
the JSON, CSV and Excel exports are :mod:`aisize.present.export`'s: the planner writes no text.

The bill of materials' ``item`` cells ("GPU h100-sxm", "server dell-xe9680-h100 (inference)", "storage NIC
ib-ndr", "storage yanrong-f9000x (unit)") and the placement table's "holds" cells ("Pre-train 8B: 8") are labels,
not sentences: each is the identifier a customer reads on a BOM line (the catalog id of what is bought, with its
pool), the key a cost line and the CSV rows are matched by, so they are data and are built here
(tests/test_plan_no_words.py allows these functions and no other). A reason in words (why compute NICs are
unused) is not such a label: the network plan types it (:class:`aisize.plan.network.UnusedNics`) and
:func:`aisize.present.network_text.bom_table`, the table every surface shows, appends its words to the line."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
import math

import numpy as np
import pandas as pd

from aisize.units import GB, TB, GiB

SIGNIFICANT = 6  # floats in JSON keep 6 significant digits
COMPUTE_NIC = "compute NIC"  # the compute NICs' line: this and the link id (present words why they are unused)


def _round(x: float):
    if not math.isfinite(x):
        return None  # JSON has no inf/nan: "unbounded" or "not applicable"
    return float(f"{x:.{SIGNIFICANT}g}")


def _jsonable(obj):
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):  # a field may say it is not data (a function)
        return {f.name: _jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if f.metadata.get("export", True)}
    if hasattr(obj, "model_dump"):  # the pydantic Scenario
        return obj.model_dump(mode="json")
    if isinstance(obj, Mapping):  # dicts, and read-only mappings (serving calibration's mappingproxy)
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):  # a fleet's day by period
        return [_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, pd.DataFrame):  # a fleet's heterogeneous candidates
        return [_jsonable(r) for r in obj.to_dict("records")]
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return _round(float(obj))
    return obj


def to_dict(plan) -> dict:
    """The whole plan as plain JSON-compatible data (units in the keys; inf and nan as null); findings and KV-tier
    notes as their codes and facts (their words: :func:`aisize.present.export.to_dict`)."""
    return _jsonable(plan)


def bom_table(plan) -> pd.DataFrame:
    """Bill of materials: item, quantity, unit, and one column per GPU workload.

    A workload's column holds the GPUs it uses and the servers it sits on; servers are shared
    (:mod:`aisize.plan.placement`), so those columns need not add up to the totals.
    """
    names = [w.name for w in plan.training + plan.inference + plan.job_streams]
    net, st = plan.network, plan.storage
    fab, sfab = net.compute_fabric, net.storage_fabric
    where = plan.placement.assignment

    def row(item, qty, unit, per=None):
        return {"item": item, "quantity": qty, "unit": unit} | dict(zip(names, per or [None] * len(names)))

    gpus = [w.gpus for w in plan.training + plan.inference + plan.job_streams]
    rows = [row(f"GPU {plan.accelerator}" if len(plan.pools) == 1 else "GPUs (all pools)", plan.gpus, "GPUs",
                gpus)]
    for p in plan.pools:
        label = f"server {p.server}" if len(plan.pools) == 1 else f"server {p.server} ({p.name})"
        rows.append(row(label, p.servers, "servers", [len(where[n]["servers"]) if where[n]["pool"] == p.name
                                                      else 0 for n in names]))
    rows += [
        row("racks", plan.racks, "racks"),
        row("server power", plan.power_watts / 1e3, "kW"),
        # the servers come with their NICs; with no compute fabric they connect to nothing, and
        # aisize.present.network_text.bom_table words why on this line
        row(f"{COMPUTE_NIC} {net.compute_link}", net.compute_nics, "NICs"),
        row("compute fabric switches", fab["switches"], "switches"),
        row("compute fabric links (optics, cables)", net.compute_links, "links"),
        row(f"storage NIC {net.storage_link}", net.storage_nics, "NICs"),
        row("storage fabric switches", sfab["switches"], "switches"),
        row(f"storage {st.system} ({st.scope})", st.units, st.scope + "s"),
        row("storage capacity needed, raw", st.capacity_bytes["raw_bytes"] / TB, "TB"),
    ]
    if st.supply_capacity_bytes:  # what the units bought hold (priced by it where no unit price is published)
        rows.append(row("storage capacity bought, raw", st.supply_capacity_bytes / TB, "TB"))
    c = getattr(st, "comparison", None)
    if c:  # the guidance the scenario named: what its per-node level would give these servers; not bought
        rows.append(row(f"storage guidance {c['system']} x {c['servers']} nodes (comparison, not bought): read",
                        c["read_bytes_per_s"] / GB, "GB/s"))
    return pd.DataFrame(rows)


def placement_table(plan) -> pd.DataFrame:
    """One row per server: its pool, GPUs, what it holds (workload: GPUs) and its busiest slot's use."""
    rows = []
    for s in plan.placement.servers:
        rows.append({"pool": s.pool, "server": s.server + 1, "gpus": s.gpus,
                     "holds": "; ".join(f"{w['workload']}: {w['gpus']}" for w in s.workloads),
                     "peak_gpus_used": s.peak_gpus_used, "peak_host_ram_gib": s.peak_host_bytes / GiB,
                     "host_ram_gib": s.host_bytes / GiB, "peak_nics": s.peak_nics, "nics": s.nics})
    return pd.DataFrame(rows)


def placement_groups(plan) -> pd.DataFrame:
    """:func:`placement_table` with runs of servers that hold the same thing merged ("servers" 1-128)."""
    table = placement_table(plan)
    if table.empty:
        return table.assign(servers=[])
    same = ["pool", "holds", "peak_gpus_used", "peak_host_ram_gib", "peak_nics"]
    key = (table[same] != table[same].shift()).any(axis=1).cumsum()
    rows = []
    for _, g in table.groupby(key, sort=False):
        first, last = int(g["server"].iloc[0]), int(g["server"].iloc[-1])
        rows.append(g.iloc[0].to_dict() | {"server": f"{first}" if first == last else f"{first}-{last}",
                                           "count": len(g)})
    return pd.DataFrame(rows)[["pool", "server", "count"] + [c for c in table.columns if c not in ("pool", "server")]]


def timeline_table(plan) -> pd.DataFrame:
    """One row per GPU workload: phase, pool, start and end day, hours of the day, GPUs."""
    return pd.DataFrame([{k: v for k, v in r.items()} for r in plan.timeline.rows])


#: the IO blend's rates [B/s], shown in GB/s (storage_columns' ``*_gb_per_s`` columns)
STORAGE_RATES = ("read_bytes_per_s", "write_bytes_per_s", "read_peak_bytes_per_s", "write_peak_bytes_per_s")


def storage_columns(workloads, read_share: float) -> dict[str, list]:
    """The IO blend by column: one row per storage workload (``plan.storage.workloads``) and a total row, the rates
    in GB/s [GB/s, operations/s, B]. The total row sums every numeric column (numpy's sum, as pandas' was) but the
    read share, which is the blend's own (``plan.storage.read_share``). The one definition the plan's table
    (:func:`storage_table`) and the app's Data path table read."""
    first = workloads[0] if workloads else {}
    columns = {k: [w[k] for w in workloads] for k in first if k not in STORAGE_RATES}
    for k in STORAGE_RATES:
        columns[k.replace("bytes_per_s", "gb_per_s")] = [w[k] / GB for w in workloads]
    for k, values in columns.items():
        if k in ("name", "kind"):
            values.append("total" if k == "name" else "")
        elif k == "read_share":
            values.append(read_share)
        else:
            values.append(float(np.sum(np.asarray(values, dtype=float))))
    return columns


def storage_table(plan) -> pd.DataFrame:
    """The IO blend: one row per storage workload and a total row [GB/s, operations/s] (:func:`storage_columns`)."""
    return pd.DataFrame(storage_columns(plan.storage.workloads, plan.storage.read_share))

