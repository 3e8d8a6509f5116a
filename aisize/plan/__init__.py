"""The cluster planner: a scenario becomes a bill of materials, with findings.

    from aisize.scenario import preset
    from aisize.plan import plan, findings, bom_table
    from aisize.present.export import to_json  # the plan as JSON, its findings worded
    from aisize.present.findings import finding_text  # a finding's sentence (the planner writes none)
    p = plan(preset("xe9680-genai"))
    p.gpus, p.servers, p.storage.binding, [finding_text(f) for f in p.findings]

Views for charts, from the same glue the plan uses: ``layout_candidates`` (best
layouts of a training job), ``gpus_vs_days`` (its GPUs against target time),
``latency_curve`` / ``storage_latency_curve`` / ``concurrency_curve`` (the
planned queues' ``station``).
"""

from aisize.plan.bom import bom_table
from aisize.plan.cluster import NetworkPlan, Plan, PoolPlan, plan
from aisize.plan.costing import CostPlan
from aisize.plan.explore import gpus_vs_days, layout_candidates
from aisize.plan.findings import Finding, findings
from aisize.plan.inference import InferencePlan
from aisize.plan.jobstreams import JobStreamPlan, job_wait_curve
from aisize.plan.placement import Placement
from aisize.plan.job import CheckpointResult
from aisize.plan.queues import concurrency_curve, latency_curve, storage_latency_curve
from aisize.plan.sensitivity import compare, sweep
from aisize.plan.spreadsheet import defuse
from aisize.plan.storage import JobStorage, StoragePlan
from aisize.plan.timeline import Timeline
from aisize.plan.training import LayoutChoice, TrainingPlan

# Packages whose memoised functions are planner results (catalog and price loads stay cached).
_MEMOISED_PACKAGES = ("aisize.plan.", "aisize.serving.", "aisize.training.", "aisize.models.")


def clear_caches() -> None:
    """Forget every memoised planner result (benchmarks measure cold plans with it).

    Finds the ``functools.lru_cache`` functions of the loaded planner, serving, training and
    model modules rather than listing them, so that a renamed helper cannot break it.
    """
    import sys

    for name, module in list(sys.modules.items()):
        if not name.startswith(_MEMOISED_PACKAGES):
            continue
        for f in vars(module).values():
            if callable(getattr(f, "cache_clear", None)) and getattr(f, "__module__", None) == name:
                f.cache_clear()


__all__ = ["clear_caches", "plan", "Plan", "sweep", "compare", "findings", "Finding",
           "defuse",
           "bom_table", "TrainingPlan", "InferencePlan", "StoragePlan", "NetworkPlan", "JobStorage",
           "CheckpointResult", "LayoutChoice", "latency_curve", "storage_latency_curve", "concurrency_curve",
           "layout_candidates", "gpus_vs_days", "PoolPlan", "CostPlan", "JobStreamPlan", "job_wait_curve",
           "Placement", "Timeline"]
