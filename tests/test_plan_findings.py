"""Each kind of finding, triggered by a scenario built to trigger it (and absent where it should be)."""

from __future__ import annotations

import dataclasses

import pytest

from aisize.plan import context as C

from aisize.plan import plan
from aisize.plan.findings import inference_targets
from aisize.scenario import from_dict, preset, to_dict
from aisize.present.findings import finding_text


def _plan(name: str, edit=None):
    d = to_dict(preset(name))
    if edit:
        edit(d)
    return plan(from_dict(d))


def _has(p, severity: str, area: str, text: str) -> bool:
    return any(f.severity == severity and f.area == area and text in finding_text(f) for f in p.findings)


def _weka_gpus(n):
    return lambda d: d["workloads"][0].update(gpus=n, layout=d["workloads"][0]["layout"] | {"micro_batch": 128})


def test_memory_does_not_fit():
    # full training of Llama-3-70B (16 B/param of states = 1.1 TB) cannot fit one 8 x 80 GB server
    p = _plan("xe9680-genai", lambda d: d["workloads"][0].update(method="full", target_days=None, gpus=8))
    assert not p.training[0].memory_fits
    assert _has(p, "problem", "memory", "does not fit")
    assert not _has(_plan("xe9680-genai"), "problem", "memory", "")


def test_host_ram_short_and_over_provisioned():
    short = _plan("xe9680-genai", lambda d: d["policies"].update(host_ram_ratio=8))
    assert _has(short, "problem", "host", "of host RAM per server")
    assert _has(_plan("xe9680-genai"), "info", "host", "over-provisioned")


def test_storage_system_too_small_stalls_and_unstable_queue():
    # 448 V100 at the measured 1,040 images/s (DeepLearningExamples, 8x V100 AMP) x 114,660 B per
    # ImageNet record ask ~53 GB/s of a 30 GB/s system
    p = _plan("hpe-weka-resnet", _weka_gpus(448))
    assert _has(p, "problem", "storage", "is too small")
    assert _has(p, "problem", "storage", "wait for data")
    assert _has(p, "problem", "storage", "unstable")
    assert p.storage.jobs[0].stall_fraction > 0.1


def test_storage_over_provisioned_and_binding():
    p = _plan("hpe-weka-resnet", _weka_gpus(32))
    assert _has(p, "info", "storage", "over-provisioned")
    assert _has(p, "info", "storage", "read bandwidth is its busiest constraint")
    assert not _has(p, "problem", "storage", "")


def test_building_blocks_binding_and_knee():
    p = _plan("littles-law")
    assert _has(p, "info", "storage", "as many as read bandwidth")
    assert _has(p, "info", "storage", "below the latency knee")


def test_storage_past_its_knee_warns():
    # one 30 GB/s system at ~94 % of its IO capacity (272 V100 x 1,040 images/s): stable, past the knee
    p = _plan("hpe-weka-resnet", _weka_gpus(272))
    assert p.storage.io_utilisation < 1
    assert _has(p, "warning", "storage", "past its latency knee")


def test_network_link_levels():
    assert _has(_plan("littles-law", lambda d: d["hardware"].update(scale_out_link="eth-10g")),
                "problem", "network", "below the data demand")
    assert _has(_plan("littles-law", lambda d: d["policies"].update(mfu=0.35)), "warning", "network", "fills")
    assert _has(_plan("littles-law"), "info", "network", "uses")


def test_inference_tpot_unreachable_and_past_knee():
    slow = _plan("xe9680-genai", lambda d: d["workloads"][2].update(tpot_target_ms=0.1))
    assert not slow.inference[0].tpot_met
    assert _has(slow, "problem", "inference", "no replica shape meets the TPOT p95 target 0.1 ms (best achievable")
    p = _plan("littles-law")
    i = p.inference[0]
    assert i.latency_elasticity <= C.KNEE_ELASTICITY and not _has(p, "warning", "inference", "knee")
    # the knee is the slope at the operating point (issue 49): steep there, the warning fires
    busy = dataclasses.replace(p, inference=(dataclasses.replace(i, latency_elasticity=2.5),))
    assert any("past the latency knee" in finding_text(f) and "times as fast as the load" in finding_text(f)
               for f in inference_targets(busy))


def test_chinchilla_and_mfu_gap():
    p = _plan("llama3-70b-pretrain", lambda d: d["policies"].update(mfu=0.2))
    assert _has(p, "info", "compute", "Chinchilla")
    # the step-time model times the job (issue 47): the MFU policy does not move it, so no gap to warn of
    assert not _has(p, "warning", "compute", "predicts MFU")
    assert p.training[0].training_days == _plan("llama3-70b-pretrain").training[0].training_days
    assert not _has(_plan("llama3-70b-pretrain"), "warning", "compute", "predicts MFU")
    assert not _has(_plan("xe9680-genai"), "info", "compute", "Chinchilla")  # fine-tuning gets none


def test_low_goodput_and_slow_checkpoints():
    p = _plan("llama3-70b-pretrain", lambda d: d["policies"].update(node_mtbf_hours=200))
    assert 0 < p.training[0].goodput < 0.9
    assert _has(p, "warning", "checkpoint", "goodput")
    dead = _plan("llama3-70b-pretrain", lambda d: d["policies"].update(node_mtbf_hours=20))
    assert dead.training[0].goodput == 0 and dead.training[0].training_days == float("inf")
    assert _has(dead, "problem", "checkpoint", "never finishes")
    q = _plan("xe9680-genai", lambda d: d["policies"].update(checkpoint_interval_minutes=0.2))
    assert _has(q, "warning", "checkpoint", "checkpoints write at")


def test_assumptions_list_every_policy_in_the_sentences_the_cli_says():
    from aisize.present.assumption_text import POLICY_TEXT, assumption_sentences

    p = _plan("littles-law")
    text = next(finding_text(f) for f in p.findings if f.area == "assumptions" and "assumptions used" in finding_text(f))
    sentences = assumption_sentences(p.scenario, p.assumptions)
    assert text == "assumptions used: " + " ".join(sentences)  # one wording (was `key = value`)
    for key in to_dict(preset("littles-law"))["policies"]:
        assert f"{POLICY_TEXT[key][0]}: " in text and f"policies.{key}" not in text
    assert "OS and application RAM: 32 GiB. Per server: kernel, drivers, framework." in text
    assert "host.os_and_application_bytes" not in text and "34,359,738,368" not in text
    assert "Matmul efficiency, Hopper 16-bit (training)" in text and "Rack power budget" in text
    assert _has(p, "info", "assumptions", "publishes no write rate")


def test_findings_are_ordered_problems_first():
    p = _plan("hpe-weka-resnet", _weka_gpus(448))
    order = [f.severity for f in p.findings]
    assert order == sorted(order, key=["problem", "warning", "info"].index)


@pytest.mark.parametrize("edit, match", [
    (lambda d: d["workloads"][0].update(layout={"tensor_parallel": 3}, gpus=8, target_days=None),
     "tensor_parallel"),
    (lambda d: d["workloads"][0].update(global_batch=7, layout={"micro_batch": 2}, gpus=8, target_days=None),
     "global_batch"),
])
def test_inconsistent_fixed_layout_is_a_value_error(edit, match):
    with pytest.raises(ValueError, match=match):
        _plan("xe9680-genai", edit)


def test_an_uncalibrated_gpu_says_its_capacity_range_and_to_size_with_the_low_end():
    # littles-law serves Llama 2 7B on L40S (no calibrated generation): the finding carries the range the
    # calibrated generations' efficiencies give its fleet, read from the plan's one figure
    from aisize.plan import plan
    from aisize.scenario import preset

    p = plan(preset("littles-law"))
    i = p.inference[0]
    lo, hi = i.capacity_range_output_tokens_per_s
    assert i.uncalibrated and lo < hi
    text = next(finding_text(f) for f in p.findings if "uncalibrated" in finding_text(f))
    from aisize.format import sig

    assert f"serve {sig(lo)} to {sig(hi)} output tokens/s at most" in text and "size with the low end" in text
