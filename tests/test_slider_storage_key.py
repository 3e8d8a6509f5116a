"""A service move that leaves what the storage reads of the services as it was keeps the storage plan (issue 51 item 2).

The storage plan reads each service through :func:`aisize.plan.storage.storage_views` (its weights' loads and its KV
tier on the storage), and the plan cache keys the storage on those views: a move of a length's CV or a latency target
changes the service's latencies, not its replicas, so the storage is reused; a rate move that adds replicas re-plans it.
"""

from __future__ import annotations

import dataclasses

from aisize.fleet.failures import FailureRates
from aisize.network.fabric import compute_nics_for
from aisize.plan import context as C
from aisize.plan import plan
from aisize.plan import storage as S
from aisize.plan.incremental import PlanCache
from aisize.present.export import to_json
from aisize.scenario import from_dict, preset, to_dict


def test_the_storage_plan_is_the_same_from_the_views_as_from_the_services():
    # rag-service keeps KV tiers on the storage: a view dropping them (or any field read) changes the plan
    p = plan(preset("rag-service"))
    assert any(i.kv_tiers is not None and i.kv_tiers.storage_capacity_bytes for i in p.inference)
    ctx, pol = C.resolve(p.scenario.hardware), p.scenario.policies
    nics = compute_nics_for(ctx.server, ctx.scale_out_link)
    whole = S.plan_storage(p.training, p.inference, p.dataprep, ctx, pol, p.servers, nics)
    viewed = S.plan_storage(p.training, S.storage_views(p.inference), p.dataprep, ctx, pol, p.servers, nics)
    assert repr(whole) == repr(viewed)


def test_the_model_loads_read_only_the_view():
    p = plan(preset("xe9680-genai"))
    rates = FailureRates("node-mtbf", 0.0, 1 / 5000, 0.0, "test")
    for service, view in zip(p.inference, S.storage_views(p.inference)):
        assert S.model_loads(service, rates) == S.model_loads(view, rates)


def _moved(d: dict, **change) -> dict:
    d = dict(d, workloads=[dict(w) for w in d["workloads"]])
    svc = next(w for w in d["workloads"] if w["kind"] == "inference")
    svc.update(change)
    return d


def test_a_move_that_leaves_the_views_keeps_the_storage_with_the_figures_of_a_fresh_plan():
    d = _moved(to_dict(preset("xe9680-genai")), requests_per_s=200.0)
    cache = PlanCache()
    first = plan(from_dict(d), cache=cache)
    for change in ({"prompt_cv": 0.6}, {"output_cv": 0.9}, {"requests_per_s": 260.0}, {"ttft_target_ms": 900.0}):
        d = _moved(d, **change)
        reused = cache.steps_reused
        kept = plan(from_dict(d), cache=cache)
        fresh = plan(from_dict(d))
        assert to_json(kept) == to_json(fresh), change
        same_views = S.storage_views(first.inference) == S.storage_views(fresh.inference)
        # the first pass's views (before the KV tiers are put on the bought storage) decide; this preset has none
        assert (kept.storage is first.storage) == same_views, change
        assert (cache.steps_reused > reused) or not same_views, change
        first = kept
    assert dataclasses.is_dataclass(first.storage)
