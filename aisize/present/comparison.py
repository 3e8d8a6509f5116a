"""Two plans side by side: GPUs, servers, power, storage, network, cost, SLO headroom, queue waits.

``comparison_table(a, b)`` has one row per metric with both values, the
difference, the change in percent and which plan is better (where "better"
has a direction: fewer servers, lower cost, more headroom). Rows whose values
differ are marked; ``compare_text`` prints them with a marker in the first column. :func:`shown` and
:func:`change_shown` give a cell's text: the app, the report and ``aisize compare`` all show a comparison
through them (and :func:`difference_shown` for B - A), so a figure reads the same in each.
"""

from __future__ import annotations

import math

import pandas as pd

from aisize import format as F
from aisize.units import GB, TB

LOWER, HIGHER, NEUTRAL = "lower", "higher", ""
MARK = "*"  # a row whose values differ


def _slo_headroom(p) -> float | None:
    """Smallest latency target / p95 latency over the inference services (>1: room to spare)."""
    ratios = [i.latency_target_seconds / i.latency_p95_seconds for i in p.inference
              if i.latency_p95_seconds and math.isfinite(i.latency_p95_seconds)]
    return min(ratios) if ratios else None


def _worst_wait_hours(p) -> float | None:
    waits = [j.wait_p95_seconds / 3600.0 for j in p.job_streams]
    return max(waits) if waits else None


# (key, label, unit, getter, better)
METRICS = (
    ("gpus", "GPUs installed", "GPUs", lambda p: p.gpus, LOWER),
    ("gpus_busy_peak", "GPUs busy at once (most)", "GPUs", lambda p: p.gpus_busy_peak, NEUTRAL),
    ("servers", "Servers", "servers", lambda p: p.servers, LOWER),
    ("server_types", "Server types", "", lambda p: ", ".join(f"{x.servers} x {x.server}" for x in p.pools), NEUTRAL),
    ("racks", "Racks", "racks", lambda p: p.racks, LOWER),
    ("power_kw", "Server power (max)", "kW", lambda p: p.power_watts / 1e3, LOWER),
    ("training_days", "Longest training", "days", lambda p: max((t.training_days for t in p.training), default=None),
     LOWER),
    ("slo_headroom", "Inference SLO headroom (target / p95, worst)", "x", _slo_headroom, HIGHER),
    ("queue_wait_p95_h", "Job queue p95 wait (worst)", "h", _worst_wait_hours, LOWER),
    ("storage_units", "Storage units", "", lambda p: p.storage.units, LOWER),
    ("storage_raw_tb", "Storage needed, raw capacity", "TB", lambda p: p.storage.capacity_bytes["raw_bytes"] / TB,
     NEUTRAL),
    ("storage_bought_tb", "Storage bought, raw capacity", "TB",  # None: the system publishes no capacity
     lambda p: p.storage.supply_capacity_bytes / TB if p.storage.supply_capacity_bytes else None, NEUTRAL),
    ("storage_read_gb_per_s", "Storage read supplied", "GB/s", lambda p: p.storage.supply_read_bytes_per_s / GB,
     HIGHER),
    ("storage_binding", "Storage binds on", "", lambda p: p.storage.binding, NEUTRAL),
    ("compute_fabric", "Compute fabric", "", lambda p: ", ".join(x.fabric.design for x in p.pools), NEUTRAL),
    ("compute_switches", "Compute fabric switches", "switches", lambda p: p.network.compute_fabric["switches"], LOWER),
    ("storage_switches", "Storage fabric switches", "switches", lambda p: p.network.storage_fabric["switches"],
     LOWER),
    ("capital_usd", "Capital", "USD", lambda p: p.cost.capital_usd, LOWER),
    ("operating_usd_per_year", "Operating cost", "USD/year", lambda p: p.cost.operating_usd_per_year, LOWER),
    ("usd_per_gpu_hour", "Cost per GPU-hour", "USD/GPU-hour", lambda p: p.cost.usd_per_gpu_hour, LOWER),
    ("gpu_utilisation", "GPUs busy over the life", "share", lambda p: p.cost.gpu_utilisation, HIGHER),
    ("break_even_utilisation", "Break-even vs renting (share busy)", "share",
     lambda p: p.cost.break_even_utilisation, LOWER),
    ("problems", "Problems", "", lambda p: sum(f.severity == "problem" for f in p.findings), LOWER),
    ("warnings", "Warnings", "", lambda p: sum(f.severity == "warning" for f in p.findings), LOWER),
)


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _columns(a, b) -> tuple[str, str]:
    na, nb = a.scenario_name, b.scenario_name
    return (f"A: {na}", f"B: {nb}") if na != nb else ("A", "B")


def comparison_table(a, b) -> pd.DataFrame:
    """Plans ``a`` and ``b`` side by side (columns: metric, unit, A, B, difference, change, better, differs)."""
    ca, cb = _columns(a, b)
    rows = []
    for key, label, unit, get, better in METRICS:
        va, vb = get(a), get(b)
        diff = change = None
        if _number(va) and _number(vb) and math.isfinite(va) and math.isfinite(vb):
            diff = vb - va
            change = diff / va if va else None
        differs = (diff is not None and abs(diff) > 1e-9 * max(abs(va), abs(vb), 1.0)) or (
            diff is None and va != vb)
        winner = ""
        if differs and diff is not None and better:
            winner = "B" if (diff < 0) == (better == LOWER) else "A"
        rows.append({"key": key, "metric": label, "unit": unit, ca: va, cb: vb, "difference": diff,
                     "change": change, "better": winner, "differs": differs})
    return pd.DataFrame(rows)


def shown(x, unit: str = "") -> str:
    """A comparison cell as every view shows it: :func:`aisize.format.cell` (money by ``usd``, shares as %,
    numbers to three significant figures, "unbounded" for an infinite one), "—" where a plan has no value."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return F.DASH
    return F.cell(x, unit)


def difference_shown(x, unit: str = "") -> str:
    """B - A as every view shows it: :func:`shown`, except that the difference of two shares is in percentage
    points ("-4.7 pp": 12.5 % and 7.8 %), since "%" beside it would read as a relative change (the "change"
    column's)."""
    if unit == "share" and _number(x) and math.isfinite(x):
        return f"{F.points(x * 100.0)} pp"  # unsigned when positive, as every B - A cell
    return shown(x, unit)


def change_shown(change) -> str:
    """The change from A to B as a signed percentage ("—" where A is zero or either has no number)."""
    if change is None or (isinstance(change, float) and math.isnan(change)):
        return F.DASH
    return str(F.pct(change, signed=True))


def compare_text(a, b) -> str:
    """The comparison as text; rows that differ start with ``*``, the better plan is named."""
    df = comparison_table(a, b)
    ca, cb = _columns(a, b)
    text = pd.DataFrame({
        "": [MARK if d else "" for d in df["differs"]], "metric": df["metric"], "unit": df["unit"],
        ca: [shown(x, u) for x, u in zip(df[ca], df["unit"])], cb: [shown(x, u) for x, u in zip(df[cb], df["unit"])],
        "B - A": [difference_shown(x, u) for x, u in zip(df["difference"], df["unit"])],
        "change": [change_shown(c) for c in df["change"]],
        "better": df["better"]})
    head = [f"A: {a.scenario_name}", f"B: {b.scenario_name}",
            f"{int(df['differs'].sum())} of {len(df)} figures differ (marked {MARK})", ""]
    return "\n".join(head) + F.text_table(text, shown=True) + "\n"  # within the terminal's 120 columns


def comparison_dict(a, b) -> dict:
    """The comparison as plain JSON-compatible data (inf and nan as null)."""
    from aisize.plan.bom import to_dict

    rows = [{k: v if isinstance(v, str) else to_dict(v) for k, v in r.items()}
            for r in comparison_table(a, b).to_dict("records")]
    return {"a": a.scenario_name, "b": b.scenario_name, "rows": rows}
