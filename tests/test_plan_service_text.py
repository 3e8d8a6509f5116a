"""A service's typed notes and model source, worded once (aisize.present.service_text) for every surface.

The planner states a service given as users in flight, and an autoscaled fleet's peak, as a ServiceNote (code +
figures); the JSON export words it. Checked against Little's law on the plan's own figures and against the
sentences the planner wrote before it wrote no text (the export's keys keep those sentences)."""

from __future__ import annotations

import json

import pytest

from aisize import models
from aisize.plan import plan
from aisize.plan.service_notes import ModelSource, ServiceNote
from aisize.present.export import to_json
from aisize.present.service_text import model_source_text, service_note_text
from aisize.scenario import preset


def test_concurrency_note_states_littles_law():
    """Users in flight C at mean request latency W send lambda = C / W requests/s (Little 1961): the note's rate
    and latency satisfy it to within the fixed point's damping, and the JSON words it."""
    s = preset("littles-law")
    w = next(w for w in s.workloads if w.kind == "inference")
    users = 64.0
    s = s.model_copy(update={"workloads": [x.model_copy(update={"requests_per_s": None, "concurrency": users})
                                           if x is w else x for x in s.workloads]})
    p = plan(s)
    i = next(i for i in p.inference if i.name == w.name)
    note = next(n for n in i.notes if isinstance(n, ServiceNote) and n.code == "concurrency")
    x = note.facts
    assert x["users"] == users and x["requests_per_s"] == pytest.approx(i.requests_per_s)
    assert x["requests_per_s"] * x["latency_mean_seconds"] == pytest.approx(users, rel=0.1)
    text = (f"{users:g} users in flight send {x['requests_per_s']:.4g} requests/s at a mean request latency of "
            f"{x['latency_mean_seconds']:.3g} s (Little's law); the fleet is planned for that rate")
    assert service_note_text(note) == text
    shown = next(d for d in json.loads(to_json(p))["inference"] if d["name"] == w.name)
    assert text in shown["notes"]


def test_autoscaler_peak_note_and_model_source_are_worded_in_the_json():
    p = plan(preset("fleet-over-the-day"))
    data = json.loads(to_json(p))
    peak = data["fleet"]["services"][0]["day"]["peak_plan"]
    i = p.inference[0]
    note = next(n for n in i.notes if isinstance(n, ServiceNote))
    assert note.code == "autoscaler_peak" and note.facts["peak_replicas"] == i.replicas
    assert service_note_text(note) in data["inference"][0]["notes"]
    assert service_note_text(note).startswith(f"replicas: {i.replicas}, the most the autoscaler holds")
    source = models.resolve(i.model).source
    assert data["inference"][0]["model_source"] == f"catalog: {source}" == peak["model_source"]
    assert all(isinstance(n, str) or "code" in n for n in peak["notes"])  # no typed object left unworded


@pytest.mark.parametrize("source, text", [
    (ModelSource("catalog", "hub row"), "catalog: hub row"),
    (ModelSource("hf-config", "cfg/config.json"), "Hugging Face config.json (cfg/config.json)"),
    (ModelSource("inline", None), "inline fields (no source)"),
    (ModelSource("inline", "paper"), "inline fields (paper)"),
])
def test_model_source_words(source, text):
    assert model_source_text(source) == text


def test_an_unknown_code_is_refused_by_name():
    with pytest.raises(ValueError, match="service note code 'nope'"):
        service_note_text(ServiceNote("nope"))
    with pytest.raises(ValueError, match="model source kind 'nope'"):
        model_source_text(ModelSource("nope", None))
