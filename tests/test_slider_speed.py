"""The service re-plan's shortcuts (issue 51 item 2) change no plan: each is checked against the long way round.

- :func:`aisize.plan.replica_count._sized_by_estimate` skips a screened shape one replica of which already needs
  the GPUs of the best shape found; the reference below sizes every screened shape with
  :func:`~aisize.plan.replica_count._fewest_replicas` as the code did before, and both must pick the same
  shape, replicas and estimate for every service of every preset, and under edits that move the best shape.
- a load-free replica (:func:`aisize.plan.replica_count.load_free`) reads its knee and capacity off one estimate,
  and estimates are kept across plans by their arguments: sweeps of a rate and of the targets plan the same with
  both off.
- :func:`aisize.plan.replica_count.elasticity_at` computes a latency elasticity once for the knee check and the
  plan's figure: the plan's figure must equal :func:`aisize.serving.curves.latency_elasticity` computed afresh.

No timings are asserted here (they move with the machine): ``benchmarks/bench_sliders.py`` measures them.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from aisize import serving
from aisize.plan import inference as PI
from aisize.plan import plan
from aisize.present.export import to_json
from aisize.plan import replica_count as RC
from aisize.scenario import from_dict, preset, preset_names, to_dict
from aisize.serving.curves import latency_elasticity


def _unpruned(w, ctx, policies, arch, fleet, kw, engine, cal, ttft_t, tpot_t):
    """The search as it was before the skip: every screened shape sized with the full estimate."""
    best, nearest = None, None
    for shape, n, _ in fleet.ranked[:RC.REFINE_SHAPES]:
        floor = best[0] if best else math.inf
        got = RC._fewest_replicas(w, ctx, policies, arch, shape, n, RC._one(w, shape, kw, engine, cal), ttft_t,
                                  tpot_t, floor)
        if got is None:
            continue
        replicas, kv, est, met = got
        key = (replicas * shape.gpus, shape.gpus)
        if met and (best is None or key < best[:2]):
            best = key + (shape, replicas, kv, est)
        if not met and nearest is None and shape == fleet.shape:
            nearest = (shape, replicas, kv, est)
    if best is None and nearest is None:
        return fleet.shape, fleet.replicas
    shape, replicas, _, _ = best[2:] if best else nearest
    return shape, replicas


def _sized_calls(scenario) -> list:
    """(arguments, result) of every :func:`_sized_by_estimate` call the planner makes for ``scenario``."""
    calls = []
    real = PI._sized_by_estimate

    def recording(*args):
        got = real(*args)
        calls.append((args, got))
        return got

    PI.plan_inference.cache_clear()  # memoised: a plan made before would not size again
    PI._sized_by_estimate = recording
    try:
        plan(scenario)
    finally:
        PI._sized_by_estimate = real
    return calls


def _check_same(scenario) -> int:
    calls = _sized_calls(scenario)
    for args, (fleet, _, _) in calls:
        assert (fleet.shape, fleet.replicas) == _unpruned(*args), args[0].name
    return len(calls)


def test_the_skip_picks_what_sizing_every_screened_shape_picks():
    checked = sum(_check_same(preset(name)) for name in preset_names())
    assert checked >= 5  # the presets' aggregated services


@pytest.mark.parametrize("field, factor", [("requests_per_s", 7.0), ("requests_per_s", 0.05),
                                           ("prompt_tokens", 8.0), ("tpot_target_ms", 0.3),
                                           ("ttft_target_ms", 0.25)])
def test_the_skip_holds_where_an_edit_moves_the_best_shape(field, factor):
    # the default preset's chat service: wider shapes win at a low TPOT target or a long prompt, narrower at a
    # low rate; each edit is sized both ways
    data = to_dict(preset("xe9680-genai"))
    for w in data["workloads"]:
        if w["kind"] == "inference":
            w[field] = type(w[field])(w[field] * factor)
    assert _check_same(from_dict(data)) == 1


def test_the_skip_leaves_out_only_shapes_that_cannot_win():
    # the default preset's chat service at 20 requests/s: 2 x TP 1 meets the targets, so TP 2, 4 and 8 (one
    # replica of 2, 4 or 8 GPUs) are not estimated; before, each cost a full estimate and returned None
    ((args, (fleet, _, _)),) = _sized_calls(preset("xe9680-genai"))
    sized = []
    real = RC._fewest_replicas

    def recording(w, ctx, policies, arch, shape, *rest):
        sized.append(shape)
        return real(w, ctx, policies, arch, shape, *rest)

    RC._fewest_replicas = recording
    try:
        RC._sized_by_estimate(*args)
    finally:
        RC._fewest_replicas = real
    assert (fleet.shape.gpus, fleet.replicas) == (1, 2)
    assert [s.gpus for s in sized] == [1]
    assert len(args[4].ranked) > 1  # the screen ranked others, skipped


def test_the_plans_elasticity_is_the_curves_own():
    for name in ("xe9680-genai", "agentic-coding", "shared-cluster"):
        for i in plan(preset(name)).inference:
            if i.estimate is None or not i.estimate.feasible or i.replicas <= 0:
                continue
            fresh = latency_elasticity(i.estimate, i.requests_per_s / i.replicas, statistic=i.slo_statistic)
            assert i.latency_elasticity == fresh or (math.isinf(fresh) and math.isinf(i.latency_elasticity)), i.name


def test_elasticity_at_answers_for_the_estimate_it_was_given():
    est = plan(preset("xe9680-genai")).inference[0].estimate
    rate = est.requests_per_s
    first = RC.elasticity_at(est, rate, "p95")
    assert first == latency_elasticity(est, rate, statistic="p95")
    assert RC.elasticity_at(est, rate, "p99") == latency_elasticity(est, rate, statistic="p99")
    longer = serving.estimate(est.model, est.accelerator, tensor_parallel=est.tensor_parallel,
                              weight_precision=est.weight_precision, kv_precision=est.kv_precision,
                              input_tokens=4 * est.input_tokens, output_tokens=est.output_tokens,
                              requests_per_s=rate / 8)
    # another estimate at the same rate is never answered from the first one's entry
    assert RC.elasticity_at(longer, rate / 8, "p95") == latency_elasticity(longer, rate / 8, statistic="p95")
    assert RC.elasticity_at(longer, rate, "p95") == latency_elasticity(longer, rate, statistic="p95") != first
    copy = replace(est)
    assert copy is not est and RC.elasticity_at(copy, rate, "p95") == first


def _rate_sweep(name: str, steps=range(0, 31, 3), field="requests_per_s", factor=1.12, **given) -> list[str]:
    """to_json of the preset's plan with each inference service's ``field`` x factor**k: the request-rate
    slider's path in benchmarks/bench_app.py (20 to 630 requests/s), each plan made afresh but for the caches
    across plans that the shortcuts keep (replica capacities)."""
    base = to_dict(preset(name))
    out = []
    for k in steps:
        data = to_dict(preset(name))
        for w, w0 in zip(data["workloads"], base["workloads"]):
            if w["kind"] == "inference" and w0.get(field) is not None:
                w.update(given)
                w[field] = w0[field] * factor ** k
        PI.plan_inference.cache_clear()
        out.append(to_json(plan(from_dict(data))))
    return out


@pytest.mark.parametrize("name, field, factor, given", [
    ("xe9680-genai", "requests_per_s", 1.12, {}), ("xe9680-genai", "tpot_target_ms", 0.93, {}),
    ("xe9680-genai", "ttft_target_ms", 0.8, {}), ("shared-cluster", "requests_per_s", 1.25, {}),
    ("agentic-coding", "tpot_target_ms", 0.9, {}),
    # a spread of lengths: its capacity and decoding context come from the lengths, not the rate
    ("xe9680-genai", "requests_per_s", 1.12, {"prompt_cv": 0.4, "output_cv": 0.7}),
    ("xe9680-genai", "tpot_target_ms", 0.93, {"output_cv": 1.0})])
def test_load_free_shortcuts_plan_what_the_long_way_plans(monkeypatch, name, field, factor, given):
    # load_free False and nothing kept across plans: every replica count of the knee's top-up estimated and its
    # own curve read, every screened shape estimated before its capacity rules it out, every estimate made
    # afresh, as before the shortcuts
    fast = _rate_sweep(name, field=field, factor=factor, **given)
    monkeypatch.setattr(RC, "load_free", lambda w, arch: False)
    monkeypatch.setattr(RC, "_estimates", RC._Kept(0))
    monkeypatch.setattr(RC, "_probes", RC._Kept(0))
    monkeypatch.setattr(RC, "_replicas", RC._Kept(0))
    monkeypatch.setattr(RC, "_capacities", RC._Kept(0))
    assert _rate_sweep(name, field=field, factor=factor, **given) == fast


def test_load_free_is_false_where_the_load_changes_the_replica():
    # agentic-coding's DeepSeek-R1 (MoE: its expert-parallel layout is picked at the rate) with prompt reuse
    scenario = preset("agentic-coding")
    w = next(w for w in scenario.workloads if w.kind == "inference")
    from aisize import models
    assert not RC.load_free(w, models.resolve(w.model))
    chat = next(w for w in preset("xe9680-genai").workloads if w.kind == "inference")
    assert RC.load_free(chat, models.resolve(chat.model))
    spread = chat.model_copy(update={"output_cv": 0.5})
    assert RC.load_free(spread, models.resolve(chat.model))  # the lengths, not the rate, set its capacity
