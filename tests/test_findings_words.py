"""Findings are typed facts in the planner and sentences in presentation (issue 47 item 4, issue 49 item 5).

The planner's Finding states a code and figures (no text); aisize.present.findings words each code. The words
are checked against worked figures: hpe-weka-resnet's storage feeds 30 GB/s (data/storage.csv, the HPE/WekaIO
benchmark) and each V100 reads 1,040.25 images/s x 114,660 B = 119.3 MB/s, so storage would limit the job
beyond 30e9 / 119.3e6 = 251.5 GPUs, 7.86x the 32 it uses.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from aisize.plan import plan
from aisize.plan.findings import Finding
from aisize.present.findings import WORDS, finding_text
from aisize.present.summary import workload_tables
from aisize.scenario import preset

ROOT = Path(__file__).resolve().parents[1] / "aisize"
PRESETS = ["xe9680-genai", "hpe-weka-resnet", "serving-at-scale", "fleet-over-the-day", "littles-law"]


@pytest.fixture(scope="module")
def plans():
    return {name: plan(preset(name)) for name in PRESETS}


def test_a_finding_carries_figures_not_a_sentence():
    assert [f.name for f in dataclasses.fields(Finding)] == ["severity", "area", "code", "facts", "refs"]
    for module in ("plan/findings.py", "plan/fleet.py"):
        source = (ROOT / module).read_text()
        assert not re.search(r"^\s*(from aisize\.(format|present)|import aisize\.(format|present)|from aisize import "
                             r"(format|present))", source, re.M), module


def test_every_code_the_planner_states_has_words_and_no_words_lack_a_code():
    said = set()
    for module in ("plan/findings.py", "plan/fleet.py"):
        source = (ROOT / module).read_text().split("def assumptions_used")[0]  # its keys are not codes
        said |= set(re.findall(r'"([a-z]+\.[a-z_]+)"', source))
    assert said == set(WORDS)


def test_an_unknown_code_is_refused_naming_it():
    with pytest.raises(ValueError, match="'storage.nonsense'"):
        finding_text(Finding("info", "storage", "storage.nonsense", {}))


def _knee(need, bought):
    return finding_text(Finding("info", "storage", "storage.units_for_knee", {
        "system": "yanrong-f9000x", "units_at_knee": need, "units": bought, "binding": "read", "knee_factor": 2.0}))


def test_units_at_the_knee_agree_in_number_and_say_what_to_add():
    assert _knee(1, 1).startswith("the 1 unit of yanrong-f9000x bought (for read bandwidth) keeps the IO blend")
    assert _knee(1, 4) == ("the 4 units of yanrong-f9000x bought (for read bandwidth) keep the IO blend below the "
                           "latency knee (mean latency within 2x unloaded); 1 unit would be enough for that")
    assert _knee(4, 3).endswith("the plan buys 3, for read bandwidth: add 1 for latency headroom")


def test_the_storage_bound_is_said_beside_the_job_in_worked_numbers(plans):
    texts = [finding_text(f) for f in plans["hpe-weka-resnet"].findings]
    assert ("ResNet-50 ImageNet: storage would limit this job beyond about 252 GPUs, 7.86x the 32 it uses"
            in texts)
    # LoRA 70B on 8 GPUs reads a few MB/s: its bound (millions of GPUs) is said as far above, not as a count
    lora = next(finding_text(f) for f in plans["xe9680-genai"].findings
                if f.code == "storage.bottleneck_gpus" and f.facts["workload"] == "LoRA fine-tune 70B")
    assert lora.endswith("it would limit it only beyond 100x the 8 GPUs it uses")


def test_no_finding_reads_like_a_log_line(plans):
    for name, p in plans.items():
        for f in p.findings:
            if f.code == "assumptions.used":
                continue  # present.assumption_text's sentences, listed by name (surfaces show them apart)
            text = finding_text(f)
            assert not re.search(r"\d{1,3}(,\d{3}){2,} GPUs", text), (name, text)  # "9,671,148 GPUs"
            assert not re.search(r"\b[A-Z][A-Z_]{6,}\b", text.replace("IOPS", "")), (name, text)  # a constant's name
            assert not re.search(r"\b1 (units|prices|servers|tenants)\b|\(s\)", text), (name, text)


def test_tenants_are_named_in_the_right_number():
    def said(*tenants):
        return finding_text(Finding("warning", "inference", "fleet.tenants_unstable", {
            "workload": "Chat", "at_seconds": 8 * 3600.0, "tenants": tenants}))
    assert "at 08:00 tenant Free is unstable (its queue" in said("Free")
    assert "tenants Free and Batch are unstable (their queue" in said("Free", "Batch")


def test_a_disaggregated_service_shows_both_pools_memory(plans):
    p = plans["serving-at-scale"]
    rag = next(i for i in p.inference if i.serving_mode == "disaggregated")
    _, frame, _ = next(t for t in workload_tables(p) if t[0] == "Inference")
    cell = frame.set_index("workload").loc[rag.name, "memory_per_gpu_gib"]
    prefill = rag.pools_estimate.weights_per_gpu_bytes["prefill"] / 2**30
    decode = rag.memory_per_gpu_bytes["total_bytes"] / 2**30
    assert prefill > rag.memory_per_gpu_bytes["weights_bytes"] / 2**30  # TP 1 prefill holds twice TP 2's weights
    assert cell == f"decode {decode:.1f}; prefill ≥ {prefill:.1f} (its weights alone)"


def test_the_summary_workload_tables_are_narrow_enough_for_the_page(plans):
    # the one table of every column ran off a 1,400 px page (screenshot review 09:15); one table per kind
    for p in plans.values():
        for title, frame, _ in workload_tables(p):
            assert frame.columns[0] == "workload" and len(frame.columns) <= 11, (title, list(frame.columns))


def test_the_summary_training_row_states_the_headline_before_its_range(plans):
    """The Summary's training table showed only '0.429–0.564' where every other surface states 0.499 days."""
    from aisize import format as F

    for p in plans.values():
        for title, frame, headers in workload_tables(p):
            if title != "Training":
                continue
            assert headers["days"] == "time [days] (range)"
            for t, cell in zip(p.training, frame["days"]):
                assert cell.startswith(F.num(t.training_days)), (t.name, cell)
                if t.days_low != t.days_high:
                    assert cell.endswith(f"({F.span(t.days_low, t.days_high)})")


def test_derived_iops_and_a_default_latency_are_said_as_what_they_are(plans):
    """A storage queue on derived IOPS or the default latency says so in the plan's findings, as the Queueing tab
    does (YanRong F9000X: drives x datasheet IOPS capped at the 562,525 IO/s one node of Sangfor's F8000 served
    in SPECstorage 2020 (1,125,050 / 2 nodes); latency the 0.3 ms median of six published results)."""
    said = [finding_text(f) for f in plans["xe9680-genai"].findings if f.code == "assumptions.storage_queue"]
    assert len(said) == 1
    text = said[0]
    assert "no measured IOPS" in text and "upper bound" in text and "562,525 IO/s a node" in text
    assert "0.300 ms unloaded, typical of published all-flash file systems" in text and "not this system's" in text
