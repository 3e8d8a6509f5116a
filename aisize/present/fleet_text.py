"""The fleet's bases in words: the one phrase every surface (``aisize fleet``, the JSON, the report) shows for a
service's :class:`aisize.plan.service_day.TargetBasis` and the plan's :class:`aisize.plan.fleet.FailuresBasis`,
from their facts alone."""

from __future__ import annotations

from aisize.present.words import worded

# What the autoscaler's rate per replica is, by kind (shares to whole percent, as the planner said them before it
# wrote no text). plan/service_day.py words the same phrase in its error past the replica limit.
TARGET_BASES = {
    "utilisation": lambda b: f"{b.utilisation:.0%} of capacity",
    "slo": lambda b: "latency targets",
    "fallback": lambda b: f"{b.utilisation:.0%} of capacity (no rate meets the targets)",
    "disaggregated": lambda b: "the planner's disaggregated pools at the peak",
}

# Where the failure rates come from, by source (node MTBF to whole hours).
FAILURES_BASES = {
    "published": lambda b: f"published fleet {b.rates_id}",
    "node-mtbf": lambda b: f"node MTBF {b.node_mtbf_hours:,.0f} h (policies)",
}


def target_basis_text(basis) -> str:
    """What a service's autoscaler target rate is, in words ("70% of capacity", "latency targets")."""
    return worded(TARGET_BASES, basis.kind, "target basis kind", "aisize.present.fleet_text.TARGET_BASES", basis)


def failures_basis_text(basis) -> str:
    """Where the plan's failure rates come from, in words ("published fleet <id>", "node MTBF 5,000 h (policies)")."""
    return worded(FAILURES_BASES, basis.source, "failures basis source", "aisize.present.fleet_text.FAILURES_BASES",
                  basis)


__all__ = ["FAILURES_BASES", "TARGET_BASES", "failures_basis_text", "target_basis_text"]
