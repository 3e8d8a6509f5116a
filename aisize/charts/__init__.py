"""Altair chart builders shared by the app and the reports, one module per subject.

Pure functions: plan figures or DataFrames in, an ``alt.Chart`` (or layer) out, each with a
title and axis titles that carry their units. Nothing here computes a sizing figure: the
numbers come from :mod:`aisize.plan`, :mod:`aisize.queueing` and :mod:`aisize.validation`;
these functions only convert units for display and draw. The app renders them with
``alt.JupyterChart`` (offline), the report as SVG. Callers use the names exported here.
"""

from aisize.charts.cluster import (COST_DATA, TIMELINE_DATA, TIMELINE_PHASES, WAIT_CURVE, WAIT_PLANNED, WAIT_TARGET,
                                   comparison, cost_breakdown, cost_breakdown_rows, cost_rows, packing, packing_rows,
                                   timeline, timeline_key, timeline_rows, wait_vs_gpus, wait_vs_gpus_rows)
from aisize.charts.fleet import (DAY_LOAD, DAY_REPLICAS, POOL_GPUS, day_curve, day_curve_rows, pool_day, pool_day_key,
                                 pool_day_rows)
from aisize.charts.latency import (CONCURRENCY_CURVE, CONCURRENCY_KNEE, LATENCY_UNITS, LOAD_CURVE, LOAD_KNEE,
                                   LOAD_TARGET, latency_vs_concurrency, latency_vs_concurrency_data, latency_vs_load,
                                   latency_vs_load_data)
from aisize.charts.memory import LIMIT_DASHES, LIMITS_DATA, MEMORY_DATA, MEMORY_ITEMS, memory_breakdown, \
    memory_breakdown_data
from aisize.charts.network import COLLECTIVE_DATA, COLLECTIVE_MARK, collective_time, collective_time_rows
from aisize.charts.serving import (FLEET_RATE, RATE_FACTOR, SERVING_CURVE, SERVING_TARGETS, serving_frontier,
                                   serving_latency, serving_latency_data)
from aisize.charts.storage import (BLEND_DATA, CAPACITY_DATA, CAPACITY_ITEMS, capacity_breakdown,
                                   capacity_breakdown_rows, io_blend, io_blend_rows)
from aisize.charts.style import BLUE, GREY, HEIGHT, MARK, MARK_DAYS, MARK_GPUS, ORANGE, RED, WIDTH
from aisize.charts.training import (DAYS_DATA, STEP_DATA, STEP_PARTS, gpus_vs_days, gpus_vs_days_rows, layout_label, step_breakdown,
                                    step_breakdown_data, step_breakdown_rows)
from aisize.charts.validation import serving_validation, validation_errors

__all__ = [
    "BLUE", "CAPACITY_ITEMS", "CONCURRENCY_CURVE", "CONCURRENCY_KNEE", "GREY", "HEIGHT", "LATENCY_UNITS",
    "LIMIT_DASHES", "LIMITS_DATA", "LOAD_CURVE", "MEMORY_DATA", "memory_breakdown_data", "LOAD_KNEE", "LOAD_TARGET", "MARK", "MARK_DAYS", "MARK_GPUS", "MEMORY_ITEMS",
    "ORANGE", "RED", "COST_DATA", "cost_breakdown_rows", "COLLECTIVE_DATA", "COLLECTIVE_MARK",
    "collective_time_rows", "BLEND_DATA", "CAPACITY_DATA", "capacity_breakdown_rows", "io_blend_rows", "DAYS_DATA",
    "gpus_vs_days_rows", "FLEET_RATE", "RATE_FACTOR", "SERVING_CURVE", "SERVING_TARGETS", "STEP_DATA", "STEP_PARTS", "WIDTH",
    "capacity_breakdown", "collective_time", "comparison", "cost_breakdown", "cost_rows", "day_curve", "gpus_vs_days",
    "io_blend", "latency_vs_concurrency", "latency_vs_concurrency_data", "latency_vs_load", "latency_vs_load_data",
    "layout_label", "memory_breakdown", "packing", "packing_rows", "pool_day", "serving_frontier", "serving_latency",
    "serving_latency_data", "serving_validation", "step_breakdown", "step_breakdown_data", "step_breakdown_rows",
    "timeline", "validation_errors", "wait_vs_gpus", "TIMELINE_DATA", "TIMELINE_PHASES", "timeline_key",
    "timeline_rows", "DAY_LOAD", "DAY_REPLICAS", "POOL_GPUS", "day_curve_rows", "pool_day_key", "pool_day_rows",
    "WAIT_CURVE", "WAIT_PLANNED", "WAIT_TARGET", "wait_vs_gpus_rows",
]
