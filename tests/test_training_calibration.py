"""One calibration for serving and training (issue 47 item 3, issue 50): the training step's constants in a
:class:`~aisize.training.calibration.TrainingCalibration` that a file can override, carried by the Engine.

The shipped calibration holds the values the step was validated with (``check_training.py`` and
``check_training_megatron.py`` outputs unchanged); a changed constant moves the step by the amount its formula
says, worked by hand below (the slowest of n ranks: 1 + cv sqrt(2 ln n), Gumbel 1958; memory-bound time:
bytes / (HBM x share), NVIDIA's matrix-multiplication guide), so these tests fail if the Engine's calibration
is not the one the step reads.
"""

import json
import math

import numpy as np
import pytest

from aisize import calibration as both
from aisize import catalog
from aisize.serving import calibration as serving_calibration
from aisize.training import efficiency as E
from aisize.training.calibration import CALIBRATION, from_dict
from aisize.training.dims import model_dims
from aisize.training.setup import default_links, engine
from aisize.training.step_time import step_breakdown
from aisize.training.values import Layouts, Options

MODEL, GPU = "llama-3.1-8b", "h100-sxm"


def _step(cal, *, dp=8):
    """One Llama 3.1 8B step on dp H100s (FSDP, bf16, s=8192, b=1, no recompute) under ``cal`` as the Engine
    carries it, evaluated as aisize.training.evaluate does."""
    acc = catalog.accelerators[GPU]
    eng = engine(acc, precision="bf16", framework="fsdp", optimizer="adamw", links=default_links(acc),
                 calibration=cal)
    assert eng.calibration is (CALIBRATION if cal is None else cal)
    lay = Layouts(seq_len=8192, micro_batch=1, microbatches=1, accumulation=1, tp=np.int64(1), pp=np.int64(1),
                  cp=np.int64(1), dp=np.int64(dp), ep=np.int64(1), stage=np.int64(3))
    return step_breakdown(model_dims(MODEL), lay, eng, Options(framework="fsdp"))


def test_the_shipped_calibration_holds_the_validated_values():
    assert CALIBRATION.gemm_efficiency["hopper:16"] == 0.678 and CALIBRATION.step_time_cv == 0.031
    assert CALIBRATION.moe_sync_host_seconds["alltoall"] == 5.34e-3
    assert E.GEMM_EFFICIENCY[("hopper", "16")] == 0.678  # the old names read the same values
    assert _step(None).step_seconds == _step(CALIBRATION).step_seconds
    rows = {r["constant"]: r for r in CALIBRATION.as_table()}
    assert rows["gemm_efficiency[hopper:16]"]["origin"] == "fitted" and rows["dp_overlap"]["origin"] == "assumed"
    assert rows["attention_half_tokens[hopper:fa3]"]["origin"] == "sourced" and all(r["unit"] and r["source"] for r in rows.values())
    again = from_dict(CALIBRATION.to_dict())
    assert again == CALIBRATION and hash(again) == hash(CALIBRATION)


def test_a_file_with_a_changed_jitter_moves_the_step_by_the_hand_worked_factor(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"training": {"name": "mine", "step_time_cv": 0.062}}))
    cal = both.load(path)
    assert cal.serving == serving_calibration.CALIBRATION  # a section left out keeps the shipped one
    base, mine = _step(None, dp=8), _step(cal.training, dp=8)
    # slowest of 8 ranks: 1 + cv sqrt(2 ln 8) = 1 + cv x 2.0393; 0.031 -> 1.06322, 0.062 -> 1.12644
    z = math.sqrt(2.0 * math.log(8))
    assert z == pytest.approx(2.0393, abs=1e-4)
    assert float(mine.step_seconds / base.step_seconds) == pytest.approx((1 + 0.062 * z) / (1 + 0.031 * z), rel=1e-9)
    assert float(mine.step_seconds / base.step_seconds) == pytest.approx(1.05946, abs=1e-5)
    assert float(mine.compute_seconds) == float(base.compute_seconds)  # the jitter touches nothing else


def test_a_lower_hbm_share_slows_the_memory_bound_work_by_its_ratio():
    base, slow = _step(None), _step(CALIBRATION.with_(hbm_efficiency=0.275))
    assert float(slow.step_seconds) > float(base.step_seconds)
    # a thin GEMM (8192 x 4096 @ 4096 x 64) is memory-bound: its time doubles when the share halves
    args = (8192, 4096, 64, 989.4e12, 0.634, 3.35e12)
    assert float(E.gemm_seconds(*args, cal=CALIBRATION.with_(hbm_efficiency=0.275))) == pytest.approx(
        2.0 * float(E.gemm_seconds(*args)), rel=1e-12)
    # bytes 2 x (8192·4096 + 4096·64 + 8192·64) = 68,681,728 B at 3.35 TB/s x 0.55 = 37.28 µs
    assert float(E.gemm_seconds(*args)) == pytest.approx(68_681_728 / (3.35e12 * 0.55), rel=1e-12)


def test_a_partial_mapping_keeps_the_other_keys_and_old_serving_files_still_load(tmp_path):
    cal = from_dict({"gemm_efficiency": {"hopper:16": 0.5}})
    assert cal.gemm_efficiency["hopper:16"] == 0.5 and cal.gemm_efficiency["hopper:8"] == 0.753
    assert float(_step(cal).step_seconds) > float(_step(None).step_seconds)
    old = tmp_path / "serving-only.json"
    serving_calibration.CALIBRATION.save(old)
    loaded = both.load(old)
    assert loaded.serving == serving_calibration.CALIBRATION and loaded.training == CALIBRATION
    again = both.CALIBRATION.save(tmp_path / "both.json")
    assert both.load(again) == both.CALIBRATION


@pytest.mark.parametrize("section,match", [
    ({"hbm_efficiency": 0}, r"hbm_efficiency=0 is not allowed: must be from 0.05 to 1 \(share\)"),
    ({"step_time_cv": 2}, r"step_time_cv=2 is not allowed: must be from 0 to 0.5"),
    ({"gemm_efficiency": {"hopper:32": 0.5}}, r"gemm_efficiency\['hopper:32'\] is not allowed: keys are"),
    ({"moe_sync_host_seconds": {"flex": "fast"}}, r"moe_sync_host_seconds\[flex\]='fast' is not allowed"),
    ({"bogus": 1}, "unknown keys"),
    ({"dp_overlap": float("nan")}, "dp_overlap=nan is not allowed: a finite number")])
def test_a_bad_training_section_is_refused_naming_constant_value_and_range(tmp_path, section, match):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"training": section}))
    with pytest.raises(ValueError, match=match) as e:
        both.load(path)
    assert "section 'training'" in str(e.value)


def test_unknown_sections_and_wrong_engine_calibrations_are_refused(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"training": {}, "inference": {}}))
    with pytest.raises(ValueError, match="unknown sections"):
        both.load(path)
    with pytest.raises(ValueError, match="calibration=.* is not allowed"):
        _step(serving_calibration.CALIBRATION)


def test_the_vectorized_step_reads_the_calibration_element_by_element():
    """The layout search evaluates a grid in one call: each element moves by its own hand-worked factor."""
    dp = np.array([8, 16, 128])
    base, mine = _step(None, dp=dp), _step(CALIBRATION.with_(step_time_cv=0.062), dp=dp)
    z = np.sqrt(2.0 * np.log(dp))  # 2.0393, 2.3548, 3.1151
    assert np.allclose(mine.step_seconds / base.step_seconds, (1 + 0.062 * z) / (1 + 0.031 * z), rtol=1e-12)
    assert np.allclose(mine.step_seconds / base.step_seconds, [1.05946, 1.06803, 1.08806], atol=1e-5)
