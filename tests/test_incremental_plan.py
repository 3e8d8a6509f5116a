"""Incremental re-planning (:class:`aisize.plan.incremental.PlanCache`, the app's): after any edit, the plan made
with the cache of earlier plans equals a fresh ``plan()`` field for field (its JSON), and an edit that leaves a
workload's inputs alone reuses that workload's plan.

A wrong hit is a wrong plan, so every numeric field of several presets (workloads, pools, policies, hardware,
phases, site, cost) is edited in turn, then the text choices (server, storage, fabric, failure rates, the
checkpoint interval, a serving calibration), each followed by the edit undone (a hit on the earlier entry).
"""

from __future__ import annotations

import json

import pytest

from aisize import serving
from aisize.plan import plan
from aisize.present.export import to_json
from aisize.plan import cluster
from aisize.plan.incremental import PlanCache
from aisize.scenario import ScenarioError, from_dict, preset, to_dict

# together: every workload kind, declared pools, phases, a service through the day and a site
PRESETS = ("shared-cluster", "xe9680-genai", "fleet-over-the-day", "agentic-coding", "io-blender")
HALF = serving.CALIBRATION.with_(name="half-hopper-gemm", gemm_efficiency={
    **serving.CALIBRATION.gemm_efficiency, "hopper": serving.CALIBRATION.value("gemm_efficiency", "hopper") / 2})
TEXT_EDITS = (  # (path, value): the choices a number sweep does not reach
    (("hardware", "server"), "dgx-b200"), (("hardware", "server"), "dgx-h200"),
    (("hardware", "storage"), "superpod-h100-best"), (("hardware", "fabric"), "rail-optimized"),
    (("hardware", "fabric"), "single-switch"), (("policies", "failure_rates"), "llama3-405b-h100"),
    (("policies", "checkpoint_interval_minutes"), 30.0),
    (("policies", "serving_calibration"), {"file": "half.json", "content": json.loads(HALF.to_json())}),
)


def _numbers(node, path=()):
    """(path, value) of every number in a scenario dict (not true/false); of a list of numbers (a load profile's
    24 hours) the first only."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _numbers(v, path + (k,))
    elif isinstance(node, list):
        scalars = all(not isinstance(v, (dict, list)) for v in node)
        for i, v in enumerate(node[:1] if scalars and len(node) > 2 else node):
            yield from _numbers(v, path + (i,))
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path, node


def _edited(data: dict, path: tuple, value) -> dict:
    out = json.loads(json.dumps(data))
    node = out
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else node[key]
    node[path[-1]] = value
    return out


def _changed(value):
    """Another valid-looking value: ints one up, floats a quarter up (zero: a half)."""
    return value + 1 if isinstance(value, int) else (value * 1.25 if value else 0.5)


def _outcome(scenario, cache=None) -> str:
    """The plan's JSON, or the planning error's message (both ways must fail alike)."""
    try:
        return to_json(plan(scenario, cache))
    except (ValueError, ArithmeticError) as error:
        return f"error: {error}"


def _differences(name: str, cache: PlanCache) -> list[str]:
    """Paths whose edit (or its undoing) gave a cached plan unlike the fresh one."""
    data = to_dict(preset(name))
    edits = [(p, _changed(v)) for p, v in _numbers(data)] + list(TEXT_EDITS)
    original = from_dict(data)
    fresh = _outcome(original)
    _outcome(original, cache)
    wrong = []
    for path, value in edits:
        try:
            scenario = from_dict(_edited(data, path, value))
        except (ScenarioError, ValueError):
            assert (path, value) not in TEXT_EDITS, f"{path}: {value!r} is no longer a valid choice"
            continue  # out of the field's range: nothing to plan
        # the edit, then back (a hit on the earlier entry)
        if _outcome(scenario, cache) != _outcome(scenario) or _outcome(original, cache) != fresh:
            wrong.append(".".join(map(str, path)))
    return wrong


@pytest.mark.slow
@pytest.mark.parametrize("name", PRESETS)
def test_every_edit_replans_to_the_fresh_plan(name):
    cache = PlanCache()
    assert _differences(name, cache) == []
    assert cache.hits > 0 and cache.misses > 0


def test_a_key_too_coarse_is_caught(monkeypatch):
    """The check above can fail: a key that names the workload only reuses a stale plan after its own edit."""
    monkeypatch.setattr(cluster, "workload_key", lambda w: w.name)
    wrong = _differences("agentic-coding", PlanCache())
    assert any(p.startswith("workloads.0.") for p in wrong)


def test_a_storage_policy_reuses_every_workload_and_a_prompt_replans_its_service_only():
    data = to_dict(preset("xe9680-genai"))
    cache = PlanCache()
    plan(from_dict(data), cache)
    # a result another plan memoised (an earlier test's) serves this one whole: its entry depends on every
    # policy, until a move plans it afresh and reads only what it needs
    data = _edited(data, ("policies", "checkpoint_retention"), 17)
    plan(from_dict(data), cache)
    misses = cache.misses
    data = _edited(data, ("policies", "checkpoint_retention"), 23)
    plan(from_dict(data), cache)
    assert cache.misses == misses  # no workload reads the retention: all reused
    service = next(i for i, w in enumerate(data["workloads"]) if w["kind"] == "inference")
    prompt = data["workloads"][service]["prompt_tokens"]
    plan(from_dict(_edited(data, ("workloads", service, "prompt_tokens"), prompt + 64)), cache)
    assert cache.misses == misses + 1  # the service's candidate only (no day: it has no load profile)


def test_the_cache_is_bounded():
    cache = PlanCache(max_keys=4)
    data = to_dict(preset("agentic-coding"))
    prompt = data["workloads"][0]["prompt_tokens"]
    for k in range(8):
        plan(from_dict(_edited(data, ("workloads", 0, "prompt_tokens"), prompt + 16 * k)), cache)
    assert len(cache._entries) <= 4


def test_the_recorder_sees_field_reads_and_counts_any_other_use_as_the_whole():
    from aisize.plan.incremental import ALL, _Reads
    from aisize.scenario.model import Policies

    policies = preset("xe9680-genai").policies
    fields = frozenset(Policies.model_fields)
    seen = _Reads(policies, fields)
    assert isinstance(seen, Policies) and seen.mfu == policies.mfu and seen.host_ram_ratio >= 0
    assert seen.read == {"mfu", "host_ram_ratio"}
    assert hash(seen) == hash(policies) and seen.read == {"mfu", "host_ram_ratio"}  # a hash decides nothing
    for use in (lambda r: r == policies, lambda r: policies == r, lambda r: r.model_dump(), dict, repr):
        whole = _Reads(policies, fields)
        use(whole)
        assert ALL in whole.read


def test_a_second_apps_cache_sees_what_a_memoised_hit_rests_on():
    # Two app states (two caches) planning the same scenario: the second's services hit the memoised planner
    # with the first's wrappers as the stored key. The comparison had recorded the use on the first wrapper
    # only, so the second cache keyed its services on no policy at all and a changed serving calibration
    # re-used the default's plan (tests/test_app_serving_accuracy.py failed after any other app test).
    from aisize.plan import clear_caches
    from aisize.plan.incremental import PlanCache
    from aisize.serving import CALIBRATION

    clear_caches()
    s = preset("xe9680-genai")
    first, second = PlanCache(), PlanCache()
    plan(s, cache=first)
    plan(s, cache=second)
    half = CALIBRATION.with_(name="half", gemm_efficiency={**CALIBRATION.gemm_efficiency,
                                                         "hopper": CALIBRATION.gemm_efficiency["hopper"] / 2})
    d = to_dict(s)
    d["policies"]["serving_calibration"] = {"file": "half.json", "content": json.loads(half.to_json())}
    edited = from_dict(d)
    cached = plan(edited, cache=second)
    assert cached.inference[0].estimate.calibration == "half"
    assert to_json(cached) == to_json(plan(edited))
