"""Per-GPU memory: the line items stacked against the GPU's memory and the usable part."""

from __future__ import annotations

from collections.abc import Mapping

import altair as alt

from aisize.charts.style import LABEL_LIMIT, RED, WIDTH, tips
from aisize.units import GiB

# Memory line items in drawing order (training and inference breakdowns), with display names.
MEMORY_ITEMS = {
    "weights_bytes": "weights", "gradients_bytes": "gradients", "master_weights_bytes": "master weights",
    "optimizer_moments_bytes": "optimizer moments", "activations_bytes": "activations",
    "loss_buffers_bytes": "logits and loss", "kv_cache_bytes": "KV cache", "activation_workspace_bytes": "activation workspace",
    "temporary_buffers_bytes": "temporary buffers", "communication_buffers_bytes": "communication buffers",
    "cuda_context_bytes": "CUDA context", "fragmentation_bytes": "fragmentation",
    "runtime_bytes": "runtime (engine reserve, activations)",  # a service's: its bar adds up to the plan's total
}


LIMIT_DASHES = {"GPU memory": [1, 0], "usable after headroom": [4, 3]}  # solid, dashed


MEMORY_DATA, LIMITS_DATA = "memory_items", "memory_limits"  # named datasets (swapped as a Vega changeset)


def memory_breakdown_data(memory_bytes: Mapping[str, float], gpu_memory_bytes: float,
                          usable_bytes: float | None = None) -> dict[str, list[dict]]:
    """The rows :func:`memory_breakdown` draws, by dataset name: the line items [GiB] and the limits [GiB]."""
    rows = [{"item": MEMORY_ITEMS[k], "order": i, "gib": float(memory_bytes[k]) / GiB, "bar": "need"}
            for i, k in enumerate(MEMORY_ITEMS) if float(memory_bytes.get(k, 0.0) or 0.0) > 0.0]
    limits = [{"limit": "GPU memory", "gib": gpu_memory_bytes / GiB}]
    if usable_bytes is not None:
        limits.append({"limit": "usable after headroom", "gib": usable_bytes / GiB})
    return {MEMORY_DATA: rows, LIMITS_DATA: limits}


def memory_breakdown(memory_bytes: Mapping[str, float], gpu_memory_bytes: float,
                     usable_bytes: float | None = None, *, title: str = "Memory per GPU") -> alt.LayerChart:
    """Stacked bar of the per-GPU memory line items [GiB] against the GPU's memory (red rule).

    Parameters
    ----------
    memory_bytes : line items [B], e.g. ``TrainingPlan.memory_bytes`` or
        ``InferencePlan.memory_per_gpu_bytes`` (``total_bytes`` and ``host_bytes`` are not drawn)
    gpu_memory_bytes : the GPU's memory [B]
    usable_bytes : memory after headroom [B] (dashed rule), optional

    The rows live in the named datasets of :func:`memory_breakdown_data`, so new figures of the same
    limits need no new chart.
    """
    data = memory_breakdown_data(memory_bytes, gpu_memory_bytes, usable_bytes)
    x = alt.X("sum(gib):Q", title="memory per GPU [GiB]", scale=alt.Scale(zero=True, nice=True))
    bars = alt.Chart(alt.NamedData(name=MEMORY_DATA)).mark_bar(height=34).encode(
        x=x, y=alt.Y("bar:N", title=None, axis=None),
        color=alt.Color("item:N", title="line item", sort=list(MEMORY_ITEMS.values()),
                        scale=alt.Scale(scheme="tableau20"), legend=alt.Legend(labelLimit=LABEL_LIMIT)),
        order=alt.Order("order:Q"),
        tooltip=tips("item:N", alt.Tooltip("gib:Q", title="GiB", format=",.2f")))
    # the legend lists only the limits drawn: a domain entry without a rule would still get a swatch
    drawn = [x["limit"] for x in data[LIMITS_DATA]]
    rules = alt.Chart(alt.NamedData(name=LIMITS_DATA)).mark_rule(color=RED, size=2).encode(
        x=alt.X("gib:Q"), strokeDash=alt.StrokeDash("limit:N", title="limit",
                                             scale=alt.Scale(domain=drawn, range=[LIMIT_DASHES[k] for k in drawn])),
        tooltip=tips("limit:N", alt.Tooltip("gib:Q", title="GiB", format=",.1f")))
    return (bars + rules).properties(width=WIDTH, height=70, title=title, datasets=data)
