"""KV-cache tiers in scenarios, the plan, the IO blender and the report (aisize.plan.kvtiers and its glue)."""

from types import SimpleNamespace

import pytest

from aisize import catalog, models, serving
from aisize.host import host_memory
from aisize.plan import context as C
from aisize.plan.kvtiers import KV_CHUNK_TOKENS, host_link, plan_kv_tiers, serving_extras
from aisize.present.kvtiers import kv_note_text
from aisize.report.kvtier_sections import kv_tiers as kv_tiers_section
from aisize.scenario import preset
from aisize.scenario.model import Inference
from aisize.serving.shapes import ReplicaShape
from aisize.storage import blend, kv_cache_tier


def _service(**kw):
    base = dict(name="chat", model="llama-3.1-8b", weight_precision="fp8", kv_precision="fp8", engine="vllm",
                requests_per_s=8, prompt_tokens=8000, output_tokens=300)
    return Inference(**(base | kw))


def test_scenario_fields_are_checked_where_they_enter():
    with pytest.raises(ValueError, match="kv_tiers needs prefix"):
        _service(kv_tiers={"target_hit_rate": 0.9})
    with pytest.raises(ValueError, match="target_hit_rate"):
        _service(prefix={"turns": 4, "think_time_s": 30}, kv_tiers={"target_hit_rate": 1.0})
    with pytest.raises(ValueError, match="prompt_tokens=800 is too short for prefix turns=8"):
        _service(prompt_tokens=800, prefix={"turns": 8, "think_time_s": 30})
    with pytest.raises(ValueError, match="nvme_drive 'superpod-h100-better' is not a local-nvme row"):
        _service(prefix={"turns": 4, "think_time_s": 30}, kv_tiers={"local_nvme": True,
                                                                    "nvme_drive": "superpod-h100-better"})
    with pytest.raises(ValueError, match="enable at least one"):
        _service(prefix={"turns": 4, "think_time_s": 30}, kv_tiers={"host_dram": False})
    with pytest.raises(ValueError, match="rag_chunks=3 needs"):
        _service(prefix={"rag_chunks": 3})


def test_presets_describe_the_two_services():
    agent = preset("agentic-coding").workloads[0]
    assert agent.speculative_method == "mtp" and agent.prompt_tokens == 100_000 and agent.prefix.turns == 30
    assert agent.kv_tiers.local_nvme and agent.output_cv > 1
    rag = preset("rag-service").workloads[0]
    assert rag.prefix.rag_chunks == 5 and rag.kv_tiers.shared_storage
    extras = serving_extras(agent)
    assert extras["speculative_method"] == "mtp" and extras["length_distribution"].output.cv == 1.5


def test_host_links_come_from_the_catalog():
    assert host_link(catalog.accelerators["h100-sxm"]) == ("PCIe 5.0 x16", 63e9)
    name, rate = host_link(catalog.accelerators["gb200"])
    assert "NVLink-C2C" in name and rate == pytest.approx(225e9)  # half of 450 GB/s per direction per Grace


def test_the_kv_tier_is_a_host_ram_line_item():
    m = host_memory(8, 80e9, kv_cache_bytes=500e9)
    assert m.kv_cache_bytes == 500e9 and m.total_bytes == pytest.approx(host_memory(8, 80e9).total_bytes + 500e9)
    with pytest.raises(ValueError, match="kv_cache_bytes"):
        host_memory(8, 80e9, kv_cache_bytes=-1)


def test_the_storage_tier_joins_the_io_blender():
    w = kv_cache_tier("chat KV cache tier", 2e9, 5e9, io_bytes=KV_CHUNK_TOKENS * 64e3)
    b = blend([w])
    assert b.read_bytes_per_s == 2e9 and b.write_iops == pytest.approx(5e9 / (256 * 64e3))
    with pytest.raises(ValueError, match="io_bytes"):
        kv_cache_tier("x", 1e9, 1e9, io_bytes=0)


def _plan(service, server="dgx-h100", storage="superpod-h100-better", replicas=2):
    from aisize.scenario.model import Hardware, Policies

    ctx = C.resolve(Hardware(server=server, storage=storage))
    one = dict(tensor_parallel=1, weight_precision=service.weight_precision, kv_precision=service.kv_precision,
               input_tokens=service.prompt_tokens, output_tokens=service.output_tokens,
               engine=serving.ENGINES[service.engine], **serving_extras(service))
    return plan_kv_tiers(service, ctx, Policies(), models.resolve(service.model), ReplicaShape(1), replicas, one), ctx


def test_a_dram_tier_sized_for_the_target():
    service = _service(requests_per_s=4, prefix={"shared_tokens": 1000, "turns": 8, "think_time_s": 90},
                       kv_tiers={"target_hit_rate": 0.9})
    (kv, est), ctx = _plan(service)
    assert kv.target_met and kv.hit_rate == pytest.approx(0.9, abs=0.01)
    dram = next(r for r in kv.tiers if r.name == "dram")
    # one replica is 1/8 of a DGX H100: its DRAM tier is the need, the server's eight times it
    assert dram.capacity_per_server_bytes == pytest.approx(8 * kv.needed_bytes_per_replica, rel=1e-6)
    assert kv.host_dram_per_server_bytes == pytest.approx(dram.capacity_per_server_bytes, rel=1e-6)
    assert dram.read_bytes_per_s_per_replica == 63e9 and dram.used
    assert est.kv_reuse is not None and kv.prefill_saved_share == est.kv_reuse.prefill_saved_share


def test_a_host_dram_budget_short_of_the_target_says_so():
    service = _service(prefix={"shared_tokens": 1000, "turns": 8, "think_time_s": 300},
                       kv_tiers={"target_hit_rate": 0.95, "host_dram_gb_per_server": 100})
    (kv, _), _ = _plan(service)
    short = next(n for n in kv.notes if n.code == "short_of_target")
    assert not kv.target_met and short.facts["target_share"] == 0.95 and short.facts["hit_share"] < 0.95
    assert "short of the 95.0 % target" in kv_note_text(short)  # the words: aisize.present.kvtiers


def test_nvme_and_storage_tiers_size_drives_and_storage():
    service = _service(prefix={"shared_tokens": 1000, "turns": 8, "think_time_s": 300},
                       kv_tiers={"target_hit_rate": 0.95, "host_dram_gb_per_server": 100, "local_nvme": True,
                                 "shared_storage": True})
    (kv, _), ctx = _plan(service)
    drive = catalog.storage["nvme-gen5"]
    assert kv.nvme_drives_per_server == max(-(-kv.nvme_per_server_bytes // drive.capacity_bytes), 1)
    assert kv.storage_capacity_bytes == pytest.approx(2 * kv.needed_bytes_per_replica, rel=1e-6)
    assert kv.storage_write_bytes_per_s > 0 and kv.storage_io_bytes == KV_CHUNK_TOKENS * 65536
    assert kv.hit_rate > 0.9


def test_the_report_section_renders_the_tiers():
    service = _service(prefix={"shared_tokens": 1000, "turns": 8, "think_time_s": 90}, kv_tiers={})
    (kv, _), ctx = _plan(service)
    plan = SimpleNamespace(inference=[SimpleNamespace(name="chat", kv_tiers=kv, host_memory_needed_bytes=1e12,
                                                      server_host_memory_bytes=2.2e12, host_memory_fits=True)])
    html = str(kv_tiers_section(SimpleNamespace(plan=plan)))
    assert "KV-cache tiers" in html and "Host DRAM" in html and "PCIe 5.0 x16" in html and "chat" in html


def test_the_storage_tier_reloads_at_the_latency_of_the_storage_bought():
    import dataclasses

    from aisize.storage.sizing import bought_latency_seconds, purchasable

    default = C.STORAGE_LATENCY_SECONDS
    a90 = catalog.storage["netapp-aff-a90-8node"]  # a measured system is bought as named: its 0.4 ms
    assert bought_latency_seconds(a90, catalog.storage, default) == a90.latency_seconds == pytest.approx(400e-6)
    level = catalog.storage["superpod-h100-better"]  # a guidance level: the plan buys a purchasable unit
    units = [s for s in catalog.storage if purchasable(s)]
    assert units and all(s.latency_seconds is None for s in units)  # none publishes one yet: the default
    assert bought_latency_seconds(level, catalog.storage, default) == default
    # a candidate with a published 1 ms makes the tier assume 1 ms, whichever unit the demand picks later
    slow = dataclasses.replace(units[0], id="slow-unit", latency_seconds=1e-3)
    assert bought_latency_seconds(dataclasses.replace(level, latency_seconds=5e-5), [*units, slow], default) == 1e-3
    with pytest.raises(ValueError, match="default_seconds"):
        bought_latency_seconds(level, units, 0.0)


def test_a_plans_storage_tier_is_on_the_system_it_buys():
    from aisize.plan import plan
    from aisize.storage.sizing import bought_latency_seconds

    p = plan(preset("rag-service"))
    named = catalog.storage[preset("rag-service").hardware.storage]
    k = p.inference[0].kv_tiers
    row = next(r for r in k.tiers if r.name == "storage")
    bought = catalog.storage[p.storage.system]
    # the second pass (aisize.plan.cluster): the tier names the system bought, not the guidance level
    assert named.kind == "guidance" and bought.name in row.path and named.name not in row.path
    # and reloads at its unloaded latency, the storage queue's (the first pass's assumption, never below it)
    assumed = bought_latency_seconds(named, catalog.storage, C.STORAGE_LATENCY_SECONDS)
    assert k.storage_latency_seconds == p.storage.station.service_seconds == (
        bought.latency_seconds or C.STORAGE_LATENCY_SECONDS) <= assumed


def test_the_second_pass_re_evaluates_the_tiers_on_the_bought_latency():
    """A bought system slower or faster than the sizing assumed: the tiers are planned again on it, at the same
    replicas, and give what plan_kv_tiers gives on that system directly; the service's sizing stands."""
    import dataclasses

    from aisize.plan import plan
    from aisize.plan import pools as P
    from aisize.plan.kvtiers import on_bought_storage
    from aisize.scenario import from_dict, to_dict

    d = to_dict(preset("agentic-coding"))
    d["workloads"][0]["kv_tiers"] |= {"local_nvme": False, "shared_storage": True}
    scenario = from_dict(d)
    p = plan(scenario)
    i, w = p.inference[0], scenario.workloads[0]
    ctx = P.resolve_pools(scenario)[0].ctx
    k = i.kv_tiers
    assert k.storage_latency_seconds == C.STORAGE_LATENCY_SECONDS  # no purchasable row publishes a latency yet
    before = next(r for r in k.tiers if r.name == "storage")
    slow = dataclasses.replace(catalog.storage[p.storage.system], latency_seconds=50e-3)
    j = on_bought_storage(i, w, ctx, scenario.policies, slow)
    after = next(r for r in j.kv_tiers.tiers if r.name == "storage")
    # a history reload pays the system's latency once: 50 ms for the default (0.3 ms, SPECstorage 2020's median)
    assert C.STORAGE_LATENCY_SECONDS == pytest.approx(300e-6)
    assert after.reload_s - before.reload_s == pytest.approx(50e-3 - 300e-6, rel=1e-6)
    arch, shape, kw = k.inputs
    direct, _ = plan_kv_tiers(w, dataclasses.replace(ctx, storage=slow), scenario.policies, arch, shape, i.replicas,
                              kw)
    assert j.kv_tiers.tiers == direct.tiers and j.kv_tiers.storage_latency_seconds == 50e-3
    last = j.kv_tiers.notes[-1]
    assert last.code == "re_evaluated" and last.facts["latency_seconds"] == 50e-3
    assert "re-evaluated on" in kv_note_text(last) and "0.300 ms" in kv_note_text(last)
    assert (j.replicas, j.ttft_seconds) == (i.replicas, i.ttft_seconds)  # only the tiers' figures move
    same = on_bought_storage(i, w, ctx, scenario.policies, catalog.storage[p.storage.system])
    assert same.kv_tiers == k  # the plan went through it already: nothing moves
