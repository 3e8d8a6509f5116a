"""Each built-in scenario plans sensibly, and plan totals are the sums of their parts (golden).

Workloads share servers (aisize.plan.placement): the servers are the packed pools' servers, and
every GPU a workload uses is a GPU of a server it was placed on.
"""

from __future__ import annotations

import pytest

from aisize import catalog
from aisize.plan import plan, sweep
from aisize.scenario import from_dict, preset, preset_names, to_dict
from aisize.units import DAY
from aisize.present.findings import finding_text


def _with(name: str, edit) -> object:
    d = to_dict(preset(name))
    edit(d)
    return from_dict(d)


@pytest.mark.parametrize("name", preset_names())
def test_totals_are_sums_of_parts(name):
    p = plan(preset(name))
    gpu_work = p.training + p.inference + p.job_streams
    assert p.servers == sum(x.servers for x in p.pools) == len(p.placement.servers)
    assert p.gpus == sum(x.servers * catalog.servers[x.server].gpus for x in p.pools) > 0
    assert p.gpus_busy_peak <= p.gpus
    per = catalog.servers[p.server].gpus
    assert all(w.servers == -(-w.gpus // per) for w in p.training + p.inference)  # servers a job spans
    held = {}
    for s in p.placement.servers:
        assert s.peak_gpus_used <= s.gpus
        for w in s.workloads:
            held[w["workload"]] = held.get(w["workload"], 0) + w["gpus"]
    assert held == {w.name: w.gpus for w in gpu_work}  # every GPU a workload uses is placed once
    assert p.power_watts == pytest.approx(sum(x.servers * catalog.servers[x.server].power_watts for x in p.pools))
    assert p.racks * p.servers_per_rack >= p.servers
    s = p.storage
    assert s.read_bytes_per_s == pytest.approx(sum(r["read_bytes_per_s"] for r in s.workloads))
    assert s.write_bytes_per_s == pytest.approx(sum(r["write_bytes_per_s"] for r in s.workloads))
    cap = s.capacity_bytes
    assert cap["usable_bytes"] == pytest.approx(cap["datasets_bytes"] + cap["checkpoints_bytes"]
                                                + cap["data_preparation_bytes"] + cap["model_repository_bytes"]
                                                + cap["kv_cache_bytes"])
    assert cap["raw_bytes"] == pytest.approx(cap["usable_bytes"] / p.policies["storage_usable_ratio"])
    assert p.network.compute_nics == p.network.compute_nics_per_server * p.servers
    assert all(i.gpus == i.replicas * i.gpus_per_replica for i in p.inference if i.serving_mode == "aggregated")
    assert {"problem", "warning", "info"} >= {f.severity for f in p.findings}


@pytest.mark.parametrize("model", ["resnet-50", "resnet-152", "googlenet", "vgg16", "inception-v4"])
def test_hpe_weka_storage_is_not_the_bottleneck_at_32_gpus(model):
    # HPE Apollo 6500 + WekaIO: 32 V100 read ImageNet records from > 30 GB/s flash without stalling
    # (DESIGN.md sec. 1); ResNet-50 at batch 256, the others at 128.
    batch = 256 if model == "resnet-50" else 128

    def edit(d):
        d["workloads"][0].update(model=model, layout=d["workloads"][0]["layout"] | {"micro_batch": batch})

    p = plan(_with("hpe-weka-resnet", edit))
    job = p.storage.jobs[0]
    assert job.stall_fraction == 0.0
    assert job.bottleneck_gpus > 32
    assert any("storage would limit this job beyond about" in finding_text(f) for f in p.findings)


def test_xe9680_lora_70b_fits_one_server_and_the_service_runs():
    p = plan(preset("xe9680-genai"))
    lora, full = p.training
    assert lora.gpus == 8 and lora.servers == 1 and lora.memory_fits
    assert full.memory_fits and full.training_days <= 1.0
    assert lora.training_days <= 2.0
    assert p.inference[0].replicas >= 1 and p.inference[0].tpot_met
    # the LoRA checkpoint holds the adapters only: far below 14 B x 70 B
    assert lora.checkpoint.checkpoint_bytes < 0.01 * 14 * 70e9


def test_io_blender_ratio_and_dominant_workload():
    p = plan(preset("io-blender"))
    rows = {r["name"]: r for r in p.storage.workloads}
    assert rows["NLP audio-text pipeline"]["read_share"] == pytest.approx(0.47)  # WEKA 2023: 47/53
    assert rows["ML development"]["read_share"] == pytest.approx(0.48)  # WEKA 2023: 48/52
    assert p.storage.dominant_workload in rows
    assert {"training", "checkpoint", "data-preparation"} <= {r["kind"] for r in rows.values()}


def test_littles_law_reports_chassis_knee_and_link_speed_matters():
    p = plan(preset("littles-law"))
    assert p.storage.scope == "unit" and p.storage.units >= 1
    assert p.storage.units_at_knee >= p.storage.units and p.storage.knee_iops > 0
    table = sweep(preset("littles-law"), "hardware.scale_out_link", ["eth-10g", "eth-40g"])
    slow, fast = (plan(_with("littles-law", lambda d, link=link: d["hardware"].update(scale_out_link=link)))
                  for link in ("eth-10g", "eth-40g"))
    net = [[f.severity for f in q.findings if f.area == "network"] for q in (slow, fast)]
    assert net[0] == ["problem"] and net[1] == ["info"]
    assert table.max_data_stall[0] > 0 and table.max_data_stall[1] == 0


def test_llama3_pretraining_days_checkpoint_and_goodput():
    p = plan(preset("llama3-70b-pretrain"))
    t = p.training[0]
    # the time is the step-time model's at the chosen layout (issue 47): its steps x the predicted step, / goodput;
    # the MFU it rests on is (6N + 12·L·h·s)·D FLOPs (PaLM appendix B) over that time on 1024 x 989.4 TFLOP/s
    n = t.params
    flops = (6 * n + 12 * 80 * 8192 * 8192) * 15e12
    assert n == pytest.approx(70.6e9, rel=0.01)  # the model card's 70.6 B
    steps = 15e12 / (t.layout.global_batch * t.seq_len)
    assert t.training_seconds == pytest.approx(steps * t.step_seconds_predicted / t.goodput, rel=1e-9)
    assert t.throughput_rule == "step-time" and t.training_days_predicted == t.training_days
    assert t.mfu_assumed == pytest.approx(flops / (1024 * 989.4e12 * t.training_seconds * t.goodput), rel=1e-3)
    assert t.mfu_assumed == pytest.approx(t.mfu_predicted, rel=0.02)
    assert 150 < t.training_days < 300
    assert 0.8 < t.goodput < 1.0
    # MLPerf Storage: Llama 3 70B checkpoint 912 GB (binary, 14 B/param)
    assert t.checkpoint.checkpoint_bytes / t.params == pytest.approx(14.0)
    assert t.checkpoint.checkpoint_bytes == pytest.approx(911.4 * 2**30, rel=0.02)
    assert t.checkpoint.restore_seconds > 600  # restart time included
    lay = t.layout
    assert lay.tensor_parallel * lay.pipeline_parallel * lay.context_parallel * lay.data_parallel == 1024
    assert t.training_days * DAY == pytest.approx(t.training_seconds)


def test_target_days_sizes_whole_servers_and_meets_the_target():
    p = plan(_with("xe9680-genai", lambda d: d["workloads"][1].update(target_days=0.1)))
    t = p.training[1]
    assert t.gpus % 8 == 0 and t.gpus > 8
    assert t.training_days <= 0.1
