"""A scenario's calibration file may carry a training section (``aisize.calibration``: one file, serving and/or
training constants): every training step time of its plan then uses it, through the planner's layout search and
its estimate alike; a serving-only file leaves training on the shipped constants."""

from __future__ import annotations

import json
import math

import pytest

from aisize import training
from aisize.calibration import Calibration
from aisize.plan import plan
from aisize.scenario import from_dict, preset, to_dict
from aisize.training.calibration import CALIBRATION

CV = CALIBRATION.step_time_cv


def _with_file(content: dict):
    data = to_dict(preset("llama3-70b-pretrain"))
    data["policies"]["serving_calibration"] = {"file": "mine.json", "content": content}
    return from_dict(data)


def test_the_training_section_sets_the_plans_step_time():
    """Doubling the step-time CV lengthens every step (stragglers: the slowest of the data-parallel ranks sets
    it): the plan's predicted step and its training days grow by one ratio at the same GPUs, and a file of
    serving constants alone leaves training on the shipped constants."""
    base = plan(preset("llama3-70b-pretrain")).training[0]
    doubled = CALIBRATION.with_(name="doubled-cv", step_time_cv=2 * CV)
    mine = plan(_with_file(Calibration(training=doubled).to_dict())).training[0]
    serving_only = plan(_with_file(json.loads(Calibration().serving.to_json()))).training[0]
    assert serving_only.training_days == base.training_days
    assert serving_only.step_seconds_predicted == base.step_seconds_predicted
    ratio = mine.step_seconds_predicted / base.step_seconds_predicted
    assert ratio > 1.01
    if mine.gpus == base.gpus:
        assert mine.training_days / base.training_days == pytest.approx(ratio, rel=1e-6)
    else:  # a target of days buys GPUs for the slower step
        assert mine.gpus > base.gpus


def test_estimate_reads_a_calibration_file(tmp_path):
    """``training.estimate(..., calibration=PATH)`` and a TrainingCalibration give the same step; the default
    is the shipped one; anything else is refused by name."""
    doubled = CALIBRATION.with_(step_time_cv=2 * CV)
    path = Calibration(training=doubled).save(tmp_path / "c.json")
    kw = dict(gpus=8, micro_batch=1, global_batch=8, seq_len=8192)
    base = training.estimate("llama-3.1-8b", "h100-sxm", **kw)
    by_file = training.estimate("llama-3.1-8b", "h100-sxm", calibration=str(path), **kw)
    by_value = training.estimate("llama-3.1-8b", "h100-sxm", calibration=doubled, **kw)
    z = math.sqrt(2 * math.log(8))  # expected maximum of 8 data-parallel ranks
    assert by_file.step_seconds == by_value.step_seconds
    assert by_file.step_seconds / base.step_seconds == pytest.approx((1 + 2 * CV * z) / (1 + CV * z), rel=1e-6)
    with pytest.raises(ValueError, match="calibration=.*not allowed"):
        training.estimate("llama-3.1-8b", "h100-sxm", calibration=3, **kw)
