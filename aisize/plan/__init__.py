"""The cluster planner: a scenario becomes a bill of materials, with findings.

    from aisize.scenario import preset
    from aisize.plan import plan, findings, bom_table, to_json
    p = plan(preset("xe9680-genai"))
    p.gpus, p.servers, p.storage.binding, [f.text for f in p.findings]
"""

from aisize.plan.bom import bom_table, to_json, write_csv, write_excel
from aisize.plan.cluster import NetworkPlan, Plan, plan
from aisize.plan.findings import Finding, findings
from aisize.plan.inference import InferencePlan, latency_curve
from aisize.plan.sensitivity import compare, sweep
from aisize.plan.storage import JobStorage, StoragePlan
from aisize.plan.training import CheckpointResult, LayoutChoice, TrainingPlan

__all__ = ["plan", "Plan", "sweep", "compare", "findings", "Finding", "to_json", "write_csv", "write_excel",
           "bom_table", "TrainingPlan", "InferencePlan", "StoragePlan", "NetworkPlan", "JobStorage",
           "CheckpointResult", "LayoutChoice", "latency_curve"]
