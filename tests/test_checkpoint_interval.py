"""Issue 49: a job checkpoints at least once before it ends. The Young/Daly interval sqrt(2 x MTBF x write time)
(Young 1974; Daly 2006 eq. 37) is derived for a run many intervals long; xe9680-genai's Full fine-tune 8B ran
537 min with a 750 min interval, so it never checkpointed. The plan caps the interval at half the job's running
time, and the storage's checkpoint demand and every surface read that one interval."""

from __future__ import annotations

import math
from html import unescape

import numpy as np
import pytest

from aisize.plan import plan
from aisize.plan import context as C
from aisize.scenario import from_dict, preset, to_dict
from aisize.storage.checkpoint import interval_for_job, young_daly_interval
from aisize.units import HOUR, MINUTE


@pytest.fixture(scope="module")
def genai():
    return plan(preset("xe9680-genai"))


def _job(p, name):
    [t] = [t for t in p.training if t.name == name]
    return t


def _running_seconds(t):
    return t.training_days * 86_400.0 * t.goodput  # wall time x goodput = compute time


def test_the_rule_is_half_the_job_or_the_optimum_when_shorter():
    # Young/Daly at a 5,000 h MTBF and a 56.2 s write: sqrt(2 x 18e6 x 56.2) = 44,980 s = 749.7 min
    yd = young_daly_interval(5000 * HOUR, 56.2)
    assert yd / MINUTE == pytest.approx(749.7, abs=0.1)
    assert interval_for_job(yd, 537 * MINUTE) == pytest.approx(268.5 * MINUTE)  # a 537 min job: at 268.5 min
    assert interval_for_job(yd, 100 * HOUR) == yd  # a long job keeps the optimum
    np.testing.assert_allclose(interval_for_job(yd, np.array([600.0, 1e6])), [300.0, yd])
    with pytest.raises(ValueError, match="job_seconds"):
        interval_for_job(yd, 0.0)


def test_xe9680_full_fine_tune_checkpoints_before_it_ends(genai):
    t = _job(genai, "Full fine-tune 8B")
    c = t.checkpoint
    running = _running_seconds(t)
    yd = young_daly_interval(c.mtbf_seconds, c.write_seconds)
    assert c.young_daly_seconds == pytest.approx(yd, rel=1e-12)  # the plan carries the optimum it capped
    assert yd > running  # the optimum alone would never checkpoint this job (749.7 min against ~535 min)
    assert c.interval_seconds == pytest.approx(running / 2, rel=1e-9)
    assert 260 * MINUTE < c.interval_seconds < 275 * MINUTE
    # the write rate that keeps a checkpoint within 5 % of the interval follows the capped interval
    assert c.write_bytes_per_s_for_stall == pytest.approx(
        c.checkpoint_bytes / (C.CHECKPOINT_MAX_STALL * c.interval_seconds), rel=1e-12)
    # Daly's first-order goodput at that interval (lost = write / interval + (interval / 2 + restore) / MTBF)
    lost = c.write_seconds / c.interval_seconds + (c.interval_seconds / 2 + c.restore_seconds) / c.mtbf_seconds
    assert t.goodput == pytest.approx(1 - lost, rel=1e-12)


def test_a_long_job_keeps_the_young_daly_interval():
    t = plan(preset("llama3-70b-pretrain")).training[0]
    c = t.checkpoint
    assert c.interval_seconds == pytest.approx(young_daly_interval(c.mtbf_seconds, c.write_seconds), rel=1e-12)
    assert c.interval_seconds < _running_seconds(t) / 2


def test_every_preset_job_checkpoints_at_least_once():
    from aisize.scenario import preset_names

    for name in preset_names():
        for t in plan(preset(name)).training:
            if t.checkpoint is not None and math.isfinite(t.training_days):
                assert t.checkpoint.interval_seconds <= _running_seconds(t) / 2 * (1 + 1e-9), (name, t.name)


def test_a_scenarios_own_interval_is_kept():
    d = to_dict(preset("xe9680-genai"))
    d["policies"]["checkpoint_interval_minutes"] = 750.0
    t = _job(plan(from_dict(d)), "Full fine-tune 8B")
    assert t.checkpoint.interval_seconds == 750.0 * MINUTE


def test_the_storage_and_the_report_read_the_plans_interval(genai):
    from aisize.report.context import ReportContext
    from aisize.report.training_sections import checkpoint_table, interval_note, training
    from aisize.format import duration

    c = _job(genai, "Full fine-tune 8B").checkpoint
    [w] = [w for w in genai.storage.workloads if w["name"] == "Full fine-tune 8B checkpoints"]
    assert w["write_bytes_per_s"] == pytest.approx(c.checkpoint_bytes / c.interval_seconds, rel=1e-12)
    ctx = ReportContext(preset("xe9680-genai"), genai)
    shown = unescape(str(checkpoint_table(ctx)))
    assert f"<td>{duration(c.interval_seconds)}</td>" in shown
    # the report says why this interval is not the optimum: 4.46 h, half the job; the optimum 12.5 h
    assert (f"Full fine-tune 8B: {duration(c.interval_seconds)}, half its running time (the optimum, "
            f"{duration(c.young_daly_seconds)}, is longer than the job)") in interval_note(ctx)
    assert (duration(c.interval_seconds), duration(c.young_daly_seconds)) == ("4.46 h", "12.5 h")
    assert interval_note(ctx) in unescape(str(training(ctx)))
    assert "LoRA fine-tune 70B:" not in interval_note(ctx)  # its optimum, 2 h, is under half its 12 h


def test_a_scenarios_interval_is_named_as_the_scenarios():
    from aisize.report.context import ReportContext
    from aisize.report.training_sections import interval_note

    d = to_dict(preset("xe9680-genai"))
    d["policies"]["checkpoint_interval_minutes"] = 90.0
    sc = from_dict(d)
    assert interval_note(ReportContext(sc, plan(sc))) == \
        "Interval: the scenario's, 1.50 h (policies.checkpoint_interval_minutes)."
