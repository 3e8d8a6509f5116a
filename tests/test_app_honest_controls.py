"""Controls do what they say (issue 49.4), in-process: a control edits what its section names, titles and
names follow edits, the Model dropdown follows an uploaded config.json, and a tab with nothing to show
clears what the last scenario drew."""

from __future__ import annotations

import datetime
import json
from html import unescape

import pytest

from aisize.app import build_app
from aisize.app.edits import renamed
from aisize.app.sections import OWN_MODEL
from aisize.scenario import DEFAULT_PRESET, from_dict, preset, to_dict
from hf_configs import LLAMA_3_1_70B

ORIGIN = preset(DEFAULT_PRESET)  # xe9680-genai: two fine-tunes and "Chat assistant 8B" on Dell XE9680 (H100)


@pytest.fixture
def app():
    return build_app(display=False)


def descriptions(widget) -> list[str]:
    """The label of every control under ``widget``."""
    own = [widget.description] if getattr(widget, "description", "") else []
    return own + [d for child in getattr(widget, "children", ()) for d in descriptions(child)]


def uploaded(content: bytes, name: str = "config.json") -> tuple:
    return ({"name": name, "type": "application/json", "size": len(content), "content": memoryview(content),
             "last_modified": datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)},)


def names(app) -> list[str]:
    return [w["name"] for w in app.state.data["workloads"]]


def test_the_server_control_is_the_whole_clusters_not_the_training_jobs(app):
    training = app["Training"]
    assert not any(d.startswith("Server") for d in descriptions(training.view))
    assert "whole cluster" in app.server.description and app.server.value == ORIGIN.hardware.server
    jobs = [w for w in app.state.data["workloads"]]
    app.server.value = "dgx-b200"
    assert app.state.data["hardware"]["server"] == "dgx-b200" and app.status.value == ""
    assert [w["model"] for w in app.state.data["workloads"]] == [w["model"] for w in jobs]
    assert app.state.plan.accelerator == "b200"
    app.state.set(("hardware", "server"), "dgx-h100")  # an edit elsewhere moves the control too
    assert app.server.value == "dgx-h100"


def test_the_server_control_offers_the_scenarios_own_rows():
    from custom_scenario import scenario_data

    app = build_app(display=False, data=scenario_data())
    assert app.server.value == "site-server" and "own row" in app.server.label


def test_a_server_edit_marks_the_title_and_description_and_undoing_it_unmarks_them(app):
    app.server.value = "dgx-b200"
    title = unescape(app.title.value)
    assert "Dell XE9680 generative AI (edited: server now NVIDIA DGX B200)" in title
    assert "server now NVIDIA DGX B200 (was Dell PowerEdge XE9680" in app.state.data["description"]
    assert app.state.scenario.name == app.state.data["name"]  # downloads and reports carry the mark
    app.server.value = ORIGIN.hardware.server
    assert app.state.data["name"] == ORIGIN.name and app.state.data["description"] == ORIGIN.description


def test_any_other_edit_marks_the_title_edited(app):
    app["Training"].days.value = 0.5
    assert app.state.data["name"] == f"{ORIGIN.name} (edited)"
    assert "1 other setting (LoRA fine-tune 70B: target_days)" in app.state.data["description"]


def test_a_workload_named_for_its_model_size_takes_the_new_size(app):
    inference = app.open_tab("Inference")
    assert inference.service.label == "Chat assistant 8B"
    inference.model.value = "llama-3-70b"
    assert names(app)[2] == "Chat assistant 70B" and inference.service.label == "Chat assistant 70B"
    assert app.state.plan.inference[0].name == "Chat assistant 70B"
    assert "Chat assistant 70B's model now llama-3-70b (was llama-3-8b)" in app.state.data["description"]
    assert "(edited" in app.state.data["name"]
    app["Training"].model.value = "llama-2-13b"  # the first job, "LoRA fine-tune 70B"
    assert names(app)[:2] == ["LoRA fine-tune 13B", "Full fine-tune 8B"]
    inference.model.value = "llama-3-8b"
    assert names(app)[2] == "Chat assistant 8B"


def test_a_name_without_the_models_size_is_marked():
    app = build_app(display=False, data=to_dict(preset("agentic-coding")))
    app.open_tab("Inference").model.value = "llama-3-70b"
    assert names(app) == ["Coding agent R1 (edited: model llama-3-70b)"]


def test_a_rename_that_would_repeat_a_name_leaves_the_names_as_loaded():
    data = to_dict(preset(DEFAULT_PRESET))
    data["workloads"][1]["name"] = "LoRA fine-tune 8B"  # the 70B LoRA job's name once its model is 8B
    app = build_app(display=False, data=data)
    app["Training"].model.value = "llama-3-8b"
    assert names(app)[:2] == ["LoRA fine-tune 70B", "LoRA fine-tune 8B"]
    assert app["Training"].error.value == ""


def test_renamed_reads_sizes_within_a_fifth_of_the_count():
    s = from_dict(to_dict(preset(DEFAULT_PRESET)))
    b70, b8 = s.workloads[0].model, s.workloads[1].model
    assert renamed("Tune 70B on H100", b70, b8) == "Tune 8B on H100"
    assert renamed("Tune 70B", b70, b70) == "Tune 70B"
    assert renamed("Tune the big one", b70, b8) == "Tune the big one (edited: model llama-3-8b)"
    assert len(renamed("x" * 80, b70, b8)) <= 80


@pytest.mark.parametrize("tab, index", [("Training", 1), ("Inference", 2)])
def test_the_model_dropdown_names_an_uploaded_model(app, tab, index):
    section = app.open_tab(tab)
    app.model.workload.value = index
    if tab == "Training":
        section.job.value = index
    app.model.upload.value = uploaded(json.dumps(LLAMA_3_1_70B).encode())
    assert app.state.data["workloads"][index]["model"]["hf_config"] == "config.json"
    assert section.model.value == OWN_MODEL and section.model.label.startswith("config.json (llama, 70.6 B")
    assert section.error.value == ""
    section.model.value = "llama-3-8b"  # back to a catalog model: the upload is no longer offered
    assert app.state.data["workloads"][index]["model"] == "llama-3-8b"
    assert OWN_MODEL not in dict(section.model.options).values()


def test_a_scenario_file_with_config_json_models_names_them():
    from custom_scenario import scenario_data

    app = build_app(display=False, data=scenario_data())
    assert app["Training"].model.label.startswith("Qwen2.5-7B/config.json")
    assert app["Inference"].model.label.startswith("Qwen3-8B/config.json")


def test_a_preset_without_a_training_job_clears_the_training_tab(app):
    training = app["Training"]
    assert training.memory_chart.chart and training.days_chart.chart and training.step_chart.chart
    assert training.layouts.value
    app.preset.value = "agentic-coding"
    assert "no training job" in training.figures.value
    assert (training.memory_chart.chart, training.days_chart.chart, training.step_chart.chart) == (None,) * 3
    assert training.memory_chart.box.children == () and training.step_chart.box.children == ()
    assert training.layouts.value == training.range_note.value == training.days_note.value == ""
    assert training.controls.layout.display == "none"
    app.preset.value = DEFAULT_PRESET  # and a job draws them again
    assert training.memory_chart.chart and training.step_chart.chart and training.controls.layout.display is None


def test_a_hidden_tab_clears_when_next_shown(app):
    inference = app.open_tab("Inference")
    assert inference.memory_chart.chart and inference.latency_chart.chart
    app.open_tab("Summary")
    app.preset.value = "llama3-70b-pretrain"
    app.open_tab("Inference")
    assert "no inference service" in inference.figures.value
    assert inference.memory_chart.chart is None and inference.latency_chart.chart is None
    assert inference.controls.layout.display == "none"


def test_a_scenario_without_a_fleet_clears_the_fleet_tab(app):
    app.preset.value = "fleet-over-the-day"
    fleet = app.open_tab("Fleet")
    assert fleet.day_chart.chart and fleet.pool_chart.chart
    app.preset.value = "rag-service"
    assert "no load profile" in fleet.figures.value
    assert fleet.day_chart.chart is None and fleet.pool_chart.chart is None and fleet.tables.value == ""
    app.preset.value = "llama3-70b-pretrain"
    assert "no inference service" in fleet.figures.value


def test_a_scenario_without_a_job_stream_clears_the_queue(app):
    app.preset.value = "shared-cluster"
    cluster = app.open_tab("Cluster")
    assert cluster.waits.chart and cluster.queue.value
    app.preset.value = DEFAULT_PRESET
    assert cluster.waits.chart is None and cluster.queue.value == ""


def test_time_from_switches_the_training_time_to_the_mfu_policy_and_back():
    """'Time from' (policies.training_time) names what times the jobs: the step-time model, or the MFU slider as
    an override; the plan's rule and days follow, and the MFU slider then moves the days."""
    app = build_app(display=False, data=to_dict(preset("llama3-70b-pretrain")))
    training = app.open_tab("Training")
    first = app.state.plan.training[0]
    assert training.timed_by.value == "step-time" and first.throughput_rule == "step-time"
    training.timed_by.value = "mfu"
    t = app.state.plan.training[0]
    assert app.state.data["policies"]["training_time"] == "mfu" and t.throughput_rule == "policy-mfu"
    training.mfu.value = 0.2
    slower = app.state.plan.training[0]
    assert slower.mfu_assumed == 0.2 and slower.training_days > t.training_days
    training.timed_by.value = "step-time"
    assert app.state.plan.training[0].training_days == first.training_days


def test_the_knee_card_states_the_slope_at_the_planned_load():
    """The card states the latency's rise at the planned load for 10 % more load (issue 49.2: the knee is a property
    of the curve's slope at the operating point), coloured red only where that slope passes the plan's knee
    (plan.knee_elasticity), as the findings do. It read "Mean latency 2x unloaded at 0.356 requests/s" beside
    Reasoning R1's 1 request/s on serving-at-scale, a rate below the operating point on a flat curve."""
    import re

    from aisize import format as F
    from aisize.serving.curves import LOAD_RISE

    app = build_app(display=False, data=to_dict(preset("serving-at-scale")))
    inference = app.open_tab("Inference")
    steep = app.state.plan.assumptions["plan.knee_elasticity"]
    for i in app.state.plan.inference:
        inference.service.value = next(v for _, v in inference.service.options
                                       if app.state.data["workloads"][v]["name"] == i.name)
        card = re.search(r"<div class='(aisize-card[^']*)' title='([^']*)'><div class='aisize-label'>"
                         r"Latency (p95|p99|mean) rise at the planned load</div>"
                         r"<div><span class='aisize-value'[^>]*>([^<]*)</span> "
                         r"<span class='aisize-unit'>([^<]*)",
                         inference.figures.value)
        assert card is not None, i.name
        assert card.group(3) == i.slo_statistic
        shown = F.pct(i.latency_elasticity * LOAD_RISE, signed=True)
        assert (card.group(4), card.group(5)) == (shown.value, f"{shown.unit} per +{F.pct(LOAD_RISE)} load")
        assert ("bad" in card.group(1)) == (i.latency_elasticity > steep), (i.name, i.latency_elasticity)
        assert "unloaded at" in unescape(card.group(2))  # the doubling point stays, in the tooltip
        assert "Mean latency 2x unloaded at" not in inference.figures.value
    r1 = next(i for i in app.state.plan.inference if i.name == "Reasoning R1")
    assert r1.requests_per_s > r1.knee_requests_per_s and r1.latency_elasticity <= steep


def test_request_latency_is_in_seconds_as_in_the_workloads_table():
    """Request latency p95 reads in seconds on the Inference tab, as the Summary's workloads table's "request latency
    p95 [s]": Reasoning R1 read "1.35 min" there beside "81.2" in the table."""
    import re

    app = build_app(display=False, data=to_dict(preset("serving-at-scale")))
    inference = app.open_tab("Inference")
    r1 = next(i for i in app.state.plan.inference if i.name == "Reasoning R1")
    inference.service.value = next(v for _, v in inference.service.options
                                   if app.state.data["workloads"][v]["name"] == r1.name)
    for stat in ("p95", "p99"):
        card = re.search(rf"Request latency {stat}</div><div><span class='aisize-value'[^>]*>([^<]*)</span> "
                         r"<span class='aisize-unit'>([^<]*)",
                         inference.figures.value)
        assert card is not None and card.group(2).strip() == "s", card and card.groups()
        assert float(card.group(1).replace(",", "")) == pytest.approx(
            getattr(r1, f"latency_{stat}_seconds"), rel=5e-3)
    assert r1.latency_p95_seconds > 60  # the case that read in minutes


def test_a_workload_that_changes_kind_is_said_not_raised():
    """An edit that turns a job stream into a training job (a loaded file may do it) is said in words; the
    title's edit list read a job stream's model before and raised."""
    from aisize.app.edits import changes
    origin = preset("shared-cluster")
    data = to_dict(origin)
    i = next(k for k, w in enumerate(data["workloads"]) if w["kind"] == "job-stream")
    data["workloads"][i] = {"kind": "training", "name": "Fine-tuning jobs", "model": "llama-3-8b",
                            "tokens_billion": 1, "target_days": 1, "pool": "training"}
    edited = from_dict(data)
    said, other = changes(origin, edited, to_dict(origin), to_dict(edited))
    assert "Fine-tuning jobs now a training workload (was job-stream)" in said
