"""Issue 47 item 4: a scenario's own training rate is a number in the plan (ThroughputBasis.samples_per_s_per_gpu),
worded once in aisize.present.training_text; the planner writes no sentence for it."""

from __future__ import annotations

import json

import pytest

from aisize.plan import plan
from aisize.plan.training import ThroughputBasis
from aisize.present.export import to_json, workloads_table
from aisize.present.findings import finding_text
from aisize.present.training_text import throughput_basis_text
from aisize.scenario import from_dict, preset, to_dict


def _given(rate: float):
    d = to_dict(preset("hpe-weka-resnet"))  # ResNet-50 on measured rates; the scenario's rate overrides them
    d["workloads"][0]["samples_per_s_per_gpu"] = rate
    return plan(from_dict(d))


@pytest.mark.parametrize("rate, words", [(500.0, "given by the scenario: 500 samples/s per GPU"),
                                         (12_345.6, "given by the scenario: 12,346 samples/s per GPU")])
def test_the_wording_reproduces_the_planners_old_sentence(rate, words):
    # the sentence plan/job.py built before (f"given by the scenario: {rate:,.0f} samples/s per GPU")
    assert throughput_basis_text(ThroughputBasis("scenario", samples_per_s_per_gpu=rate)) == words


def test_a_given_rate_is_carried_as_a_number_and_every_surface_words_it_once():
    p = _given(500.0)
    t = p.training[0]
    assert t.throughput_basis == ThroughputBasis("scenario", samples_per_s_per_gpu=500.0)
    assert t.throughput_basis.given is None  # no words in the plan
    words = "given by the scenario: 500 samples/s per GPU"
    assert workloads_table(p).iloc[0].throughput_basis == words
    assert json.loads(to_json(p))["training"][0]["throughput_basis"] == words
    assert any(f"throughput {words}" in finding_text(f) for f in p.findings if f.code == "compute.throughput_basis")


def test_a_scenario_basis_without_its_rate_is_refused_by_name():
    with pytest.raises(ValueError, match="samples_per_s_per_gpu is None"):
        throughput_basis_text(ThroughputBasis("scenario"))
