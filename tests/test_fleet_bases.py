"""The fleet's bases are typed values worded once (issue 47 item 4): a service's autoscaler target basis and the
plan's failures basis, each built in the planner with its figures and worded by aisize/present/fleet_text.py for
every surface (``aisize fleet``, the JSON, the report).

The worded cases are the sentences the planner wrote before it wrote no text (captured from ``aisize fleet`` on
variants of the preset "fleet-over-the-day" at commit 491e75f): the wording must reproduce them byte for byte.
"""

import copy

import pytest

import aisize.plan.service_day as SD
from aisize.plan import plan
from aisize.plan.fleet import FailuresBasis
from aisize.plan.service_day import TargetBasis
from aisize.present.fleet_summary import fleet_text
from aisize.present.fleet_text import failures_basis_text, target_basis_text
from aisize.scenario import from_dict, preset, to_dict


@pytest.mark.parametrize("basis, words", [
    (TargetBasis("utilisation", 0.7), "70% of capacity"),
    (TargetBasis("utilisation", 0.333), "33% of capacity"),
    (TargetBasis("slo"), "latency targets"),
    (TargetBasis("fallback", 0.7), "70% of capacity (no rate meets the targets)"),
    (TargetBasis("disaggregated"), "the planner's disaggregated pools at the peak"),
])
def test_target_basis_words_are_the_old_sentences(basis, words):
    assert target_basis_text(basis) == words


@pytest.mark.parametrize("basis, words", [
    (FailuresBasis("published", rates_id="llama3-405b-h100"), "published fleet llama3-405b-h100"),
    (FailuresBasis("node-mtbf", node_mtbf_hours=5000.0), "node MTBF 5,000 h (policies)"),
    (FailuresBasis("node-mtbf", node_mtbf_hours=12345.6), "node MTBF 12,346 h (policies)"),
])
def test_failures_basis_words_are_the_old_sentences(basis, words):
    assert failures_basis_text(basis) == words


def test_a_basis_without_its_figure_or_of_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="a utilisation is given for utilisation and fallback only"):
        TargetBasis("utilisation")
    with pytest.raises(ValueError, match="a utilisation is given for utilisation and fallback only"):
        TargetBasis("slo", 0.7)
    with pytest.raises(ValueError, match="target basis kind 'share' is not one of"):
        TargetBasis("share", 0.7)
    with pytest.raises(ValueError, match="published with a rates_id, or node-mtbf with node_mtbf_hours"):
        FailuresBasis("node-mtbf", rates_id="llama3-405b-h100")
    with pytest.raises(ValueError, match="published with a rates_id"):
        FailuresBasis("published")
    with pytest.raises(ValueError, match=r"failures basis source 'vendor' has no wording .*known: node-mtbf, "
                                         "published"):
        failures_basis_text(type("B", (), {"source": "vendor"})())


@pytest.fixture(scope="module")
def preset_plan():
    return plan(preset("fleet-over-the-day"))


def test_the_preset_carries_typed_bases_and_every_surface_words_them_alike(preset_plan):
    from aisize.report import sections as S
    from aisize.report.context import ReportContext

    f = preset_plan.fleet
    day = f.service("Chat 70B").day
    assert day.target_basis == TargetBasis("slo")  # the preset's autoscaler targets the SLOs
    assert f.failures_basis == FailuresBasis("published", rates_id="llama3-405b-h100")
    text = fleet_text(preset_plan)
    assert "req/s (latency targets)\n" in text
    assert "Failures (published fleet llama3-405b-h100): " in text
    report = S.section("fleet", ReportContext(preset_plan.scenario, preset_plan), list(S.SECTIONS))
    assert "requests/s (latency targets). A new replica" in report
    assert "Interruptions (published fleet llama3-405b-h100): " in report


@pytest.mark.parametrize("service, autoscaling, basis", [
    ({}, {}, TargetBasis("slo")),
    ({}, {"target": "utilisation", "target_utilisation": 0.65}, TargetBasis("utilisation", 0.65)),
    ({"tpot_target_ms": 3.0}, {}, TargetBasis("fallback", 0.7)),  # no rate meets a 3 ms TPOT
    ({"serving": "disaggregated"}, {}, TargetBasis("disaggregated")),
])
def test_the_planners_error_past_the_replica_limit_words_the_basis_as_present_does(monkeypatch, service, autoscaling,
                                                                                  basis):
    # the planner cannot import aisize.present: its error words the basis itself, and must say what the surfaces say
    data = copy.deepcopy(to_dict(preset("fleet-over-the-day")))
    data["workloads"][0].update(service)
    data["workloads"][0]["fleet"]["autoscaling"].update(autoscaling)
    monkeypatch.setattr(SD, "NO_LIMIT_REPLICAS", 2)  # the peak's 7-15 replicas then pass the limit
    SD.service_day.cache_clear()
    try:
        with pytest.raises(ValueError, match="more than aisize plans \\(2\\)") as info:
            plan(from_dict(data))
    finally:
        SD.service_day.cache_clear()
    assert f"requests/s per replica ({target_basis_text(basis)}); " in str(info.value)


def test_the_json_states_the_bases_in_the_same_words(preset_plan):
    from aisize.present.export import to_dict as export_dict

    data = export_dict(preset_plan)  # the words, not the typed value's fields
    assert data["fleet"]["failures_basis"] == "published fleet llama3-405b-h100"
    assert data["fleet"]["services"][0]["day"]["target_basis"] == "latency targets"
