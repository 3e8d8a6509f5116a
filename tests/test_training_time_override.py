"""The headline training time comes from the step-time model; ``policies.training_time: mfu`` is an explicit
override by the MFU policy, and the plan then says so (issue 47 item 5)."""

from __future__ import annotations

import pytest

from aisize.plan import plan
from aisize.scenario import from_dict, preset, to_dict


def _pretrain(**policies):
    data = to_dict(preset("llama3-70b-pretrain"))
    data["policies"].update(policies)
    return from_dict(data)


def test_the_mfu_override_times_the_job_at_the_policy_mfu():
    base = plan(_pretrain()).training[0]
    assert base.throughput_rule == "step-time" and base.step_seconds_predicted is not None
    over = plan(_pretrain(training_time="mfu", mfu=0.25)).training[0]
    assert over.throughput_rule == "policy-mfu" and over.step_seconds_predicted is None
    assert over.mfu_assumed == 0.25
    # time = model FLOPs / (GPUs x peak x MFU) / goodput: the policy's arithmetic, not the step-time model's
    running = over.model_flops / (over.gpus * over.peak_flops_per_s * 0.25)
    assert over.training_seconds == pytest.approx(running / over.goodput, rel=1e-6)
    assert over.training_days != pytest.approx(base.training_days, rel=1e-3)


def test_the_override_is_listed_as_set_by_the_scenario():
    from aisize.present.assumption_text import assumption_rows

    scenario = _pretrain(training_time="mfu")
    rows, _ = assumption_rows(scenario, plan=plan(scenario))
    row = next(r for r in rows if r[0] == "Training time from")
    assert row[1:3] == ["mfu", "scenario"]
    mfu = next(r for r in rows if r[0].startswith("Model FLOPs utilisation"))
    assert not mfu[3].startswith("unused")  # the MFU policy times the job now
    rows, _ = assumption_rows(preset("llama3-70b-pretrain"), plan=plan(preset("llama3-70b-pretrain")))
    assert next(r for r in rows if r[0] == "Training time from")[1:3] == ["step-time", "default"]


def test_a_training_section_is_listed_as_the_scenarios():
    """The assumptions list the constants the plan used: the file's training section, labelled as the scenario's."""
    import json

    from aisize.calibration import Calibration
    from aisize.present.assumption_text import assumption_rows
    from aisize.training.calibration import CALIBRATION

    mine = CALIBRATION.with_(name="mine", step_time_cv=0.05)
    data = to_dict(preset("llama3-70b-pretrain"))
    data["policies"]["serving_calibration"] = {"file": "mine.json", "content": json.loads(
        Calibration(training=mine).to_json())}
    scenario = from_dict(data)
    _, defaults = assumption_rows(scenario, plan=plan(scenario))
    cv = next(r for r in defaults if "STEP_TIME_CV" in r[0] or "step-time" in r[0].lower() and "cv" in r[0].lower())
    assert cv[1].startswith("0.05") and cv[2] == "scenario (mine)"


def test_an_unknown_training_time_is_refused_by_name():
    with pytest.raises(ValueError, match="training_time"):
        _pretrain(training_time="guess")
