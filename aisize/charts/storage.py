"""Storage: the IO blend by workload and what the capacity holds."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import altair as alt
import pandas as pd

from aisize.charts.style import BLUE, NUMBER, ORANGE, RED, WIDTH, as_frame, tips
from aisize.units import GB, TB

def _rate_unit(values: Iterable[float]) -> tuple[str, float]:
    """GB/s: transfer rates read in one unit on every surface (the Data path cards and blend table say GB/s)."""
    return "GB/s", GB


BLEND_DATA, CAPACITY_DATA = "io_blend", "capacity_items"  # named datasets (swapped as a Vega changeset)


def io_blend_rows(rows) -> dict[str, list[dict]]:
    """The rows :func:`io_blend` draws (long form, in its unit), by dataset name; ``rows`` as :func:`io_blend`
    takes them (dicts are read as they are: no DataFrame, the same values)."""
    records = rows.to_dict("records") if isinstance(rows, pd.DataFrame) else list(rows)
    unit, div = _rate_unit([r["read_bytes_per_s"] for r in records] + [r["write_bytes_per_s"] for r in records])
    return {BLEND_DATA: [{"name": r["name"], "direction": d, "rate": float(r[f"{d}_bytes_per_s"]) / div}
                         for r in records for d in ("read", "write")]}


def io_blend(rows, *, title: str = "Storage IO blend: average rate by workload") -> alt.Chart:
    """Horizontal stacked bars of each workload's average read and write rate [GB/s].

    ``rows`` are ``StoragePlan.workloads`` dicts (or a DataFrame with ``name``,
    ``read_bytes_per_s``, ``write_bytes_per_s``).
    """
    df = as_frame(rows)
    unit, _ = _rate_unit(list(df["read_bytes_per_s"]) + list(df["write_bytes_per_s"]))
    return alt.Chart(alt.NamedData(name=BLEND_DATA)).mark_bar().encode(
        x=alt.X("sum(rate):Q", title=f"average rate [{unit}]"),
        y=alt.Y("name:N", title=None, sort=list(df["name"])),
        color=alt.Color("direction:N", title="direction", scale=alt.Scale(domain=["read", "write"],
                                                                         range=[BLUE, ORANGE])),
        tooltip=tips("name:N", "direction:N", alt.Tooltip("rate:Q", title=unit, format=NUMBER)),
    ).properties(width=WIDTH - 80, height=alt.Step(22), title=title, datasets=io_blend_rows(rows))


CAPACITY_ITEMS = {"datasets_bytes": "datasets", "checkpoints_bytes": "checkpoints",
                  "data_preparation_bytes": "data preparation", "model_repository_bytes": "model repository",
                  "kv_cache_bytes": "KV-cache tier"}


def capacity_breakdown_rows(capacity_bytes: Mapping[str, float]) -> dict[str, list[dict]]:
    """The rows :func:`capacity_breakdown` draws, by dataset name: what is kept [TB] and the raw capacity [TB]."""
    kept = [{"item": v, "order": i, "tb": float(capacity_bytes.get(k, 0.0)) / TB, "bar": "usable"}
            for i, (k, v) in enumerate(CAPACITY_ITEMS.items())]
    return {CAPACITY_DATA: kept, CAPACITY_DATA + "_raw": [{"limit": "raw (after data protection)",
                                                          "tb": capacity_bytes["raw_bytes"] / TB}]}


def capacity_breakdown(capacity_bytes: Mapping[str, float], *, title: str = "Storage capacity") -> alt.LayerChart:
    """Stacked bar of what the storage keeps [TB], with the raw capacity after data protection (rule).

    ``capacity_bytes`` is ``StoragePlan.capacity_bytes``; the rows live in the named datasets of
    :func:`capacity_breakdown_rows`.
    """
    bars = alt.Chart(alt.NamedData(name=CAPACITY_DATA)).mark_bar(height=34).encode(
        x=alt.X("sum(tb):Q", title="capacity [TB]"), y=alt.Y("bar:N", title=None, axis=None),
        color=alt.Color("item:N", title="kept", sort=list(CAPACITY_ITEMS.values())), order=alt.Order("order:Q"),
        tooltip=tips("item:N", alt.Tooltip("tb:Q", title="TB", format=",.2f")))
    rule = alt.Chart(alt.NamedData(name=CAPACITY_DATA + "_raw")).mark_rule(color=RED, size=2).encode(
        x=alt.X("tb:Q"), tooltip=tips("limit:N", alt.Tooltip("tb:Q", title="TB", format=",.2f")))
    return (bars + rule).properties(width=WIDTH, height=70, title=title,
                                    datasets=capacity_breakdown_rows(capacity_bytes))
