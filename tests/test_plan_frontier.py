"""The report's frontier chart reads the planner's configuration search (issue 47: the report ran
``serving.search`` itself); the search is the planned service's own model, formats and targets."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from aisize.plan import plan
from aisize.plan.frontier import configuration_search
from aisize.scenario import preset

REPORT = Path(__file__).resolve().parents[1] / "aisize" / "report"


def test_no_report_module_runs_a_serving_search():
    for f in REPORT.glob("*.py"):
        calls = [n for n in ast.walk(ast.parse(f.read_text())) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Attribute) and n.func.attr == "search"
                 and getattr(n.func.value, "id", "") == "serving"]
        assert not calls, f"{f.name} runs serving.search; read aisize.plan.frontier instead"


def test_the_search_is_the_planned_service_and_finds_its_shape_feasible():
    p = plan(preset("rag-service"))
    i = p.inference[0]
    r = configuration_search(i, 50e9)
    assert r.configurations > 1000 and len(r.frontier) and len(r.feasible)
    assert set(r.feasible.weight_precision) == {i.estimate.weight_precision}
    ok = r.feasible[(r.feasible["mode"] == "aggregated") & (r.feasible.tensor_parallel == i.tensor_parallel)]
    assert len(ok), "the planned shape meets the targets, so the search must find it feasible"


def test_a_service_with_nothing_that_fits_is_a_clear_error():
    import dataclasses
    i = plan(preset("rag-service")).inference[0]
    with pytest.raises(ValueError, match="no replica fits"):
        configuration_search(dataclasses.replace(i, estimate=None), 50e9)
