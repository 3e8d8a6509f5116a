"""The Inference tab's serving controls (issues 23 and 26): load as a rate or as users in flight, the SGLang
engine, speculative decoding, length spread, prompt reuse and KV-cache tiers, the uncalibrated flag.

Each control is driven as a user would (its widget's value); the scenario the app then holds and the figures
it shows must equal what the API plans for the same scenario."""

from __future__ import annotations

import re

import pytest

from aisize import serving
from aisize.app import build_app
from aisize.plan import plan
from aisize.scenario import DEFAULT_PRESET, from_dict, preset, to_dict
from shown_figures import shown

SERVICE = 2  # the default preset's inference service (workloads index)


def scenario(name=DEFAULT_PRESET, edit=None) -> dict:
    data = to_dict(preset(name))
    if edit:
        edit(data)
    return data


def service_plan(data, index=0):
    return plan(from_dict(data)).inference[index]


def open_inference(data=None):
    app = build_app(display=False, data=data)
    return app, app.open_tab("Inference")


def figures(section) -> str:
    return section.figures.value


def hidden(*controls) -> bool:
    return all(c.layout.display == "none" and getattr(c, "disabled", True) for c in controls)


def visible(*controls) -> bool:
    return all(c.layout.display != "none" and not getattr(c, "disabled", False) for c in controls)


# --- load: a request rate or users in flight -----------------------------------------------------------------

def users_scenario(users=64.0):
    def edit(d):
        d["workloads"][SERVICE].update(requests_per_s=None, concurrency=users)
    return scenario(edit=edit)


def test_a_scenario_given_as_users_in_flight_opens():
    data = users_scenario()
    app, inference = open_inference(data)
    expected = service_plan(data)
    assert inference.error.value == ""
    assert inference.load.value == "users" and inference.users.value == 64
    assert visible(inference.users) and hidden(inference.rate)
    f = figures(inference)
    assert shown(f, "inference.users") == 64
    assert shown(f, "inference.rate") == pytest.approx(expected.requests_per_s, rel=5e-3)
    assert shown(f, "inference.replicas") == expected.replicas
    assert inference.latency_chart.chart.params.marked == pytest.approx(expected.requests_per_s)


def test_switching_to_users_keeps_the_load_by_littles_law():
    # at a load well below the replicas' capacity (10 requests/s on one replica of about 23), so that the
    # open loop's queueing does not inflate the latency Little's law turns into users (at 86 % busy it does,
    # and the users' plan then buys another replica and serves more)
    def edit(d):
        d["workloads"][SERVICE].update(requests_per_s=10.0)
    app, inference = open_inference(scenario(edit=edit))
    before = app.state.plan.inference[0]
    inference.load.value = "users"
    w = app.state.data["workloads"][SERVICE]
    users = round(before.requests_per_s * before.latency_mean_seconds)  # the planner's own relation
    assert (w["requests_per_s"], w["concurrency"]) == (None, users)
    assert inference.error.value == ""
    assert visible(inference.users) and hidden(inference.rate) and inference.users.value == users
    expected = service_plan(users_scenario(users))
    assert shown(figures(inference), "inference.users") == users
    assert shown(figures(inference), "inference.rate") == pytest.approx(expected.requests_per_s, rel=5e-3)
    assert expected.requests_per_s == pytest.approx(before.requests_per_s, rel=0.1)  # about the same load

    inference.load.value = "rate"  # back: the rate the plan found for those users
    w = app.state.data["workloads"][SERVICE]
    assert (w["requests_per_s"], w["concurrency"]) == (expected.requests_per_s, None)
    assert visible(inference.rate) and hidden(inference.users)


def test_users_slider_sets_concurrency():
    app, inference = open_inference(users_scenario())
    inference.users.value = 400.0
    assert app.state.data["workloads"][SERVICE]["concurrency"] == 400
    expected = service_plan(users_scenario(400.0))
    f = figures(inference)
    assert shown(f, "inference.replicas") == expected.replicas
    assert shown(f, "inference.rate") == pytest.approx(expected.requests_per_s, rel=5e-3)
    assert shown(f, "inference.ttft") == pytest.approx(expected.ttft_p95_seconds, rel=5e-3)


def test_users_in_flight_with_a_load_profile_is_refused_with_a_message():
    app, inference = open_inference(scenario("fleet-over-the-day"))
    inference.load.value = "users"
    assert "fleet needs requests_per_s" in inference.error.value
    assert app.state.data["workloads"][0]["requests_per_s"] == 30.0
    assert app.state.data["workloads"][0]["concurrency"] is None
    assert inference.load.value == "rate" and visible(inference.rate)  # the controls follow the scenario
    assert "Traceback" not in inference.error.value


# --- engine, speculation, length spread ----------------------------------------------------------------------

def test_sglang_engine_reaches_the_plan():
    def slow(d):
        d["workloads"][SERVICE]["requests_per_s"] = 5.0  # one replica (see the test below)
    app, inference = open_inference(scenario(edit=slow))
    inference.engine.value = "sglang"
    assert inference.error.value == ""
    assert app.state.data["workloads"][SERVICE]["engine"] == "sglang"
    i = app.state.plan.inference[0]
    assert i.estimate.engine == "sglang"
    # no batch limit of its own: a replica admits what its KV pool holds
    assert 1 <= i.max_batch <= i.estimate.max_concurrency < i.estimate.max_batch_size
    expected = service_plan(scenario(edit=lambda d: (slow(d), d["workloads"][SERVICE].update(engine="sglang"))))
    assert shown(figures(inference), "inference.capacity") == pytest.approx(
        expected.output_tokens_per_s_per_replica, rel=5e-3)
    assert expected.output_tokens_per_s_per_replica != service_plan(
        scenario(edit=slow)).output_tokens_per_s_per_replica


def test_sglang_engine_plans_the_default_service():
    app, inference = open_inference()
    inference.engine.value = "sglang"
    assert inference.error.value == ""
    assert app.state.plan.inference[0].estimate.engine == "sglang"


def test_speculative_decoding_raises_capacity_and_shows_its_acceptance():
    app, inference = open_inference()
    assert hidden(inference.draft_tokens)
    without = app.state.plan.inference[0]
    assert "inference.acceptance" not in figures(inference)
    inference.speculative.value = "mtp"
    w = app.state.data["workloads"][SERVICE]
    assert (w["speculative_method"], w["speculative_tokens"]) == ("mtp", 1)
    assert visible(inference.draft_tokens)
    inference.draft_tokens.value = 3
    assert app.state.data["workloads"][SERVICE]["speculative_tokens"] == 3
    expected = service_plan(scenario(edit=lambda d: d["workloads"][SERVICE].update(
        speculative_method="mtp", speculative_tokens=3)))
    f = figures(inference)
    assert shown(f, "inference.speculative") == "mtp"
    assert shown(f, "inference.acceptance") == pytest.approx(expected.estimate.acceptance_length, rel=5e-3)
    assert expected.estimate.acceptance_length > 2  # the table's MTP curve at k = 3
    assert shown(f, "inference.capacity") == pytest.approx(expected.output_tokens_per_s_per_replica, rel=5e-3)
    assert expected.output_tokens_per_s_per_replica > without.output_tokens_per_s_per_replica
    assert shown(f, "inference.tpot") == pytest.approx(expected.tpot_p95_seconds, rel=5e-3)

    inference.speculative.value = "none"
    w = app.state.data["workloads"][SERVICE]
    assert (w["speculative_method"], w["speculative_tokens"]) == (None, None)
    assert hidden(inference.draft_tokens) and "inference.acceptance" not in figures(inference)


def test_length_spread_sliders():
    app, inference = open_inference()
    inference.prompt_cv.value = 0.5
    inference.output_cv.value = 1.5
    w = app.state.data["workloads"][SERVICE]
    assert (w["prompt_cv"], w["output_cv"]) == (0.5, 1.5)
    expected = service_plan(scenario(edit=lambda d: d["workloads"][SERVICE].update(prompt_cv=0.5, output_cv=1.5)))
    plain = service_plan(scenario())
    assert expected.tpot_p95_seconds != plain.tpot_p95_seconds
    f = figures(inference)
    assert shown(f, "inference.tpot") == pytest.approx(expected.tpot_p95_seconds, rel=5e-3)
    assert shown(f, "inference.ttft") == pytest.approx(expected.ttft_p95_seconds, rel=5e-3)


# --- prompt reuse and KV-cache tiers -------------------------------------------------------------------------

def assert_reuse_cards(f, i):
    k = i.kv_tiers
    assert shown(f, "reuse.hit_rate") == pytest.approx(k.hit_rate, abs=5e-4)
    assert shown(f, "reuse.prefill_saved") == pytest.approx(k.prefill_saved_share, abs=5e-4)
    assert shown(f, "reuse.sessions") == pytest.approx(k.resident_sessions, abs=0.5)
    for key, value in (("reuse.ttft_hit", k.ttft_hit_s), ("reuse.ttft_miss", k.ttft_miss_s)):
        assert shown(f, key) == ("—" if value is None else pytest.approx(value, rel=5e-3))
    for r in k.tiers:
        assert shown(f, f"reuse.tier.{r.name}") == pytest.approx(r.served, abs=5e-4)
    if k.host_dram_per_server_bytes:
        assert shown(f, "reuse.host_dram") == pytest.approx(k.host_dram_per_server_bytes, rel=5e-3)
        assert shown(f, "reuse.host_ram") == pytest.approx(i.host_memory_needed_bytes, rel=5e-3)
    if k.nvme_drives_per_server:
        assert shown(f, "reuse.nvme") == pytest.approx(k.nvme_per_server_bytes, rel=5e-3)
    if k.storage_capacity_bytes:
        assert shown(f, "reuse.storage") == pytest.approx(k.storage_capacity_bytes, rel=5e-3)
        assert shown(f, "reuse.storage_io") == pytest.approx(
            k.storage_read_bytes_per_s + k.storage_write_bytes_per_s, rel=5e-3)


def test_prompt_reuse_and_tiers_switch_on_and_off():
    app, inference = open_inference()
    r = inference.reuse
    assert hidden(r.reuse_box, r.shared, r.turns, r.think, r.tiers_on, r.tiers_box, r.target)
    assert "reuse.hit_rate" not in figures(inference)
    r.on.value = True
    w = app.state.data["workloads"][SERVICE]
    assert w["prefix"] == to_dict(from_dict(scenario(edit=lambda d: d["workloads"][SERVICE].update(
        prefix={}))))["workloads"][SERVICE]["prefix"]
    assert w["kv_tiers"] is None
    assert visible(r.shared, r.turns, r.tiers_on) and hidden(r.think, r.chunk_tokens, r.corpus, r.target)
    r.shared.value = 512
    r.turns.value = 3  # sessions: the think time comes with them (the slider's value)
    r.tiers_on.value = True
    assert inference.error.value == ""
    w = app.state.data["workloads"][SERVICE]
    assert (w["prefix"]["shared_tokens"], w["prefix"]["turns"], w["prefix"]["think_time_s"]) == (
        512, 3, r.think.value)
    assert w["kv_tiers"]["host_dram"] and w["kv_tiers"]["target_hit_rate"] == 0.9
    assert visible(r.think, r.target, r.dram, r.dram_size) and hidden(r.dram_gb)
    r.storage.value = True
    assert app.state.data["workloads"][SERVICE]["kv_tiers"]["shared_storage"]
    i = app.state.plan.inference[0]
    assert [t.name for t in i.kv_tiers.tiers] == ["hbm", "dram", "storage"]
    assert service_plan(app.state.data).kv_tiers == i.kv_tiers
    assert_reuse_cards(figures(inference), i)

    kept = app.state.data["workloads"][SERVICE]
    r.on.value = False  # off: no prefix, no tiers, no cards
    w = app.state.data["workloads"][SERVICE]
    assert (w["prefix"], w["kv_tiers"]) == (None, None)
    assert "reuse.hit_rate" not in figures(inference) and hidden(r.reuse_box, r.tiers_box, r.shared)
    r.on.value = True  # on again: what it was
    w = app.state.data["workloads"][SERVICE]
    assert (w["prefix"], w["kv_tiers"]) == (kept["prefix"], kept["kv_tiers"])


def test_host_dram_given_in_gb_per_server():
    app, inference = open_inference(scenario("agentic-coding"))
    r = inference.reuse
    r.dram_size.value = "gb"
    assert app.state.data["workloads"][0]["kv_tiers"]["host_dram_gb_per_server"] == r.dram_gb.value
    assert visible(r.dram_gb)
    r.dram_gb.value = 512.0
    assert app.state.data["workloads"][0]["kv_tiers"]["host_dram_gb_per_server"] == 512.0
    i = app.state.plan.inference[0]
    assert i.kv_tiers.host_dram_per_server_bytes == pytest.approx(512e9)
    assert_reuse_cards(figures(inference), i)
    r.dram_size.value = "auto"
    assert app.state.data["workloads"][0]["kv_tiers"]["host_dram_gb_per_server"] == "auto"
    assert hidden(r.dram_gb)


@pytest.mark.parametrize("name", ["agentic-coding", "rag-service"])
def test_reuse_presets_show_their_controls_and_the_plans_figures(name):
    data = scenario(name)
    app, inference = open_inference(data)
    w, r = data["workloads"][0], inference.reuse
    assert r.on.value and r.tiers_on.value and inference.error.value == ""
    assert r.shared.value == w["prefix"]["shared_tokens"] and r.target.value == w["kv_tiers"]["target_hit_rate"]
    assert (r.dram.value, r.nvme.value, r.storage.value) == (
        w["kv_tiers"]["host_dram"], w["kv_tiers"]["local_nvme"], w["kv_tiers"]["shared_storage"])
    assert (inference.prompt_cv.value, inference.output_cv.value) == (w["prompt_cv"], w["output_cv"])
    assert inference.engine.value == w["engine"]
    if w["prefix"]["rag_chunks"]:
        assert visible(r.chunk_tokens, r.corpus) and r.corpus.value == w["prefix"]["rag_corpus_chunks"]
    if w["prefix"]["turns"] > 1:
        assert visible(r.think) and r.think.value == w["prefix"]["think_time_s"]
    i = app.state.plan.inference[0]
    assert_reuse_cards(figures(inference), i)
    if w["speculative_method"]:
        assert inference.speculative.value == w["speculative_method"]
        assert inference.draft_tokens.value == w["speculative_tokens"]
        assert shown(figures(inference), "inference.acceptance") == pytest.approx(
            i.estimate.acceptance_length, rel=5e-3)


def test_rag_chunks_come_with_a_size_and_a_corpus():
    app, inference = open_inference()
    r = inference.reuse
    r.on.value = True
    r.chunks.value = 1  # of 512 tokens (the slider's value), in a 1,024-token prompt
    p = app.state.data["workloads"][SERVICE]["prefix"]
    assert inference.error.value == ""
    assert (p["rag_chunks"], p["rag_chunk_tokens"], p["rag_corpus_chunks"]) == (
        1, round(r.chunk_tokens.value), round(r.corpus.value))
    assert visible(r.chunk_tokens, r.corpus)
    r.corpus.value = 1000.0
    assert app.state.data["workloads"][SERVICE]["prefix"]["rag_corpus_chunks"] == 1000


@pytest.mark.parametrize("move, words", [
    (lambda s: setattr(s.reuse.dram, "value", False), "enable at least one of host_dram"),  # no tier left
    (lambda s: setattr(s.reuse.shared, "value", 4096), "prompt_tokens"),  # more shared than the prompt
    (lambda s: setattr(s.reuse.chunks, "value", 8), "prompt_tokens"),  # chunks longer than the prompt
])
def test_bad_combinations_get_the_apps_message(move, words):
    def edit(d):
        d["workloads"][SERVICE].update(prefix={}, kv_tiers={})
    data = scenario(edit=edit)
    app, inference = open_inference(data)
    before = app.state.data
    move(inference)
    assert words in inference.error.value and "Traceback" not in inference.error.value
    assert app.state.data == before  # the last valid scenario and plan stay
    assert inference.reuse.dram.value  # a refused switch is put back


# --- calibration ---------------------------------------------------------------------------------------------

def card_class(markup: str, key: str) -> str:
    match = re.search(r"<div class='([^']*)' title='[^']*'><div class='aisize-label'>[^<]*</div><div>"
                      rf"<span class='aisize-value' data-key='{re.escape(key)}'>", markup)
    assert match, key
    return match[1]


def test_a_gpu_generation_without_public_runs_is_flagged_uncalibrated():
    app, inference = open_inference()
    f = figures(inference)
    assert shown(f, "inference.calibration") == serving.CALIBRATION.name
    assert card_class(f, "inference.calibration") == "aisize-card"
    assert app.state.set(("hardware", "server"), "dgx-a100") is None  # Ampere: no public serving rows
    i = app.state.plan.inference[0]
    assert i.uncalibrated and i.estimate.uncalibrated
    f = figures(inference)
    assert shown(f, "inference.calibration") == "uncalibrated"
    assert card_class(f, "inference.calibration") == "aisize-card bad"


def test_a_disaggregated_services_shape_card_adds_up_to_its_gpus():
    # serving-at-scale's RAG chat 70B: the card said "13 replicas", "Replica shape (TP) 4" beside 32 GPUs
    from aisize import format as F

    app, inference = open_inference(to_dict(preset("serving-at-scale")))
    p = app.state.plan
    index = next(k for k, i in enumerate(p.inference) if i.serving_mode == "disaggregated")
    inference.service.value = inference.service.options[index][1] if isinstance(
        inference.service.options[index], tuple) else inference.service.options[index]
    i = app.state.plan.inference[index]
    page = figures(inference)
    assert F.serving_shape(i) in page and "prefill replica" in page and "Replicas (prefill + decode)" in page
    # the shape's parts add up to the GPUs shown beside it
    assert i.pools.prefill_gpus + i.pools.decode_gpus == i.gpus
    assert "past it" in page or i.requests_per_s <= i.knee_requests_per_s


def test_a_disaggregated_service_draws_its_pools_latency_curve():
    # the Inference tab drew no latency chart for a disaggregated service (screenshots): now the pools' curve,
    # from the model that gives the cards' figures, passing through them at the planned load
    import numpy as np

    from aisize.plan import latency_curve

    app, inference = open_inference(to_dict(preset("serving-at-scale")))
    index = next(k for k, i in enumerate(app.state.plan.inference) if i.serving_mode == "disaggregated")
    option = inference.service.options[index]
    inference.service.value = option[1] if isinstance(option, tuple) else option
    i = app.state.plan.inference[index]
    assert inference.latency_chart.chart is not None
    c = latency_curve(i)
    assert np.interp(i.requests_per_s, c["requests_per_s"], c["tpot_p95_seconds"]) == pytest.approx(
        i.tpot_p95_seconds, rel=0.02)
