"""A plan builds each service's model costs once (issue 47, proof): the sizing screen passed the weight format
as a name ("fp8") and the estimate as WeightFormats("fp8", "fp8", "fp8"), so every service's costs were built
twice, under two keys, and could have drifted apart."""

from __future__ import annotations

import collections

import pytest

import aisize.serving.costs as costs
from aisize.plan import clear_caches, plan
from aisize.scenario import preset, preset_names


@pytest.mark.parametrize("name", preset_names())
def test_each_model_s_costs_are_built_once_per_plan(name, monkeypatch):
    built = collections.Counter()
    inner = costs._model_costs.__wrapped__

    def counted(model, fmt, kv):
        built[(model.id, fmt, kv)] += 1
        return inner(model, fmt, kv)

    clear_caches()
    monkeypatch.setattr(costs, "_model_costs", costs.lru_cache(maxsize=512)(counted))
    try:
        p = plan(preset(name))
    finally:
        clear_caches()
    assert all(n == 1 for n in built.values()), built
    # one set of costs per model and KV precision a service runs (its model, a speculative draft's)
    keys = collections.Counter((m, kv) for m, _, kv in built)
    assert all(n == 1 for n in keys.values()), built
    served = {w.model for w in preset(name).workloads if w.kind == "inference" and isinstance(w.model, str)}
    assert served <= {m for m, _ in keys}
