"""What every plan section reads: the scenario and its plan, computed once per report."""

from __future__ import annotations

from dataclasses import dataclass

from aisize.plan import Plan, plan
from aisize.scenario import Scenario


@dataclass(frozen=True)
class ReportContext:
    """A scenario and the plan of it that the report's sections show."""

    scenario: Scenario
    plan: Plan
    other: Plan | None = None  # scenario B of a comparison report (aisize.report.compare)


def as_context(value: Scenario | ReportContext) -> ReportContext:
    """``value`` if it is a context already, else the scenario planned (``aisize.plan.plan``)."""
    return value if isinstance(value, ReportContext) else ReportContext(value, plan(value))
