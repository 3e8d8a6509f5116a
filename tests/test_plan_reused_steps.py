"""The whole-plan steps after the workloads' plans (the placement, the pools' fabrics, the network: aisize.plan.cluster
through :meth:`aisize.plan.incremental.PlanCache.reuse`) are reused where their inputs are equal to the last plan's,
and a plan with them reused is the fresh plan, field for field (its JSON).

Each edit below changes one input of one step while leaving the workloads' demands (or, for the rate, only them):
dropping that input from the step's key reuses a stale result, which the comparison with a fresh plan catches.
"""

from __future__ import annotations

import copy

import pytest

from aisize.plan import plan
from aisize.plan.incremental import PlanCache
from aisize.present.export import to_json
from aisize.scenario import DEFAULT_PRESET, from_dict, preset, to_dict

BASE = to_dict(preset(DEFAULT_PRESET))
SERVICE = next(i for i, w in enumerate(BASE["workloads"]) if w["kind"] == "inference")


def _edit(data: dict, path: tuple, value) -> dict:
    out = copy.deepcopy(data)
    node = out
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else node[key]
    node[path[-1]] = value
    return out


W = ("workloads", SERVICE)
TARGET = _edit(BASE, W + ("ttft_target_ms",), BASE["workloads"][SERVICE]["ttft_target_ms"] * 1.1)
FABRIC = _edit(BASE, ("hardware", "fabric"), "rail-optimized")  # a compute fabric, priced (the preset needs none)
# (step, index of its input, the scenario before, an edit that changes that input and what the step makes of it)
EDITS = (
    ("placement", 1, BASE, _edit(BASE, W + ("requests_per_s",), BASE["workloads"][SERVICE]["requests_per_s"] * 3)),
    ("pools", 2, BASE, _edit(BASE, ("hardware", "fabric_growth"), 0.5)),
    ("pools", 3, FABRIC, _edit(FABRIC, ("cost", "prices"), {"optics-per-link": 100.0})),
    ("network", 6, BASE, _edit(BASE, ("hardware", "oversubscription"), 3.0)),
)


def _moves(cache) -> list[str]:
    """(warm, fresh) JSON of the base, then each edit and back, then a target move (which keeps every demand)."""
    out = []
    for data in [BASE] + [d for _, _, b, e in EDITS for d in (b, e, b)] + [TARGET]:
        s = from_dict(data)
        out.append((to_json(plan(s, cache)), to_json(plan(s))))
    return out


def test_the_steps_are_reused_and_the_plan_is_the_fresh_plan():
    cache = PlanCache()
    for i, (warm, fresh) in enumerate(_moves(cache)):
        assert warm == fresh, f"move {i}"
    before = cache.steps_reused
    plan(from_dict(BASE), cache)  # the target back: the demands as they were
    assert cache.steps_reused >= before + 3  # the placement, the pools and the network (and the storage)


@pytest.mark.parametrize("step,index,before,edited", EDITS, ids=[f"{s}-{i}" for s, i, _, _ in EDITS])
def test_a_key_without_one_input_gives_a_stale_plan(step, index, before, edited, monkeypatch):
    real = PlanCache.reuse

    def blind(self, name, inputs, ctx, compute):
        if name == step:
            inputs = inputs[:index] + (None,) + inputs[index + 1:]
        return real(self, name, inputs, ctx, compute)
    monkeypatch.setattr(PlanCache, "reuse", blind)
    cache = PlanCache()
    plan(from_dict(before), cache)
    s = from_dict(edited)
    assert to_json(plan(s, cache)) != to_json(plan(s))
