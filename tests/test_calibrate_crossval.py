"""Cross-validated scores of the serving calibration (aisize.calibrate.crossval)."""

import pytest

from aisize import catalog
from aisize.calibrate import cross_validate, fit, fitted_constants, predict, read_table
from aisize.calibrate.crossval import _fallback_generations, group_of
from aisize.serving import CALIBRATION


@pytest.fixture(scope="module")
def dense_hopper_runs():
    runs = read_table(catalog.data_dir() / "validation" / "serving_throughput.csv")
    return [r for r in runs if r.model in ("llama-3.1-8b", "llama-3.3-70b") and r.accelerator in ("h100-sxm", "h200-sxm")]


def test_each_gpu_is_predicted_by_constants_fitted_without_it(dense_hopper_runs):
    cv = cross_validate(dense_hopper_runs, CALIBRATION, by="gpu", max_evaluations=4)
    assert set(cv.groups) == {"h100-sxm", "h200-sxm"} and not cv.skipped
    assert len(cv.held_out) == len(cv.in_sample) == len(dense_hopper_runs)
    # the H100 runs' held-out figures are exactly those of a refit on the H200 runs alone
    train = [r for r in dense_hopper_runs if r.accelerator == "h200-sxm"]
    refit = fit(train, CALIBRATION, constants=fitted_constants(train, CALIBRATION), max_evaluations=4).calibration
    for p in cv.held_out:
        if p.run.accelerator == "h100-sxm":
            assert p.tokens_per_s_per_gpu == pytest.approx(predict(p.run, refit).tokens_per_s_per_gpu, rel=1e-12)
    # fitted on the runs it scores, the shipped calibration does better than on runs it never saw
    assert cv.held_out_summary["within"] < cv.in_sample_summary["within"]


def test_a_generation_left_without_runs_takes_the_fallback_generations_constants(dense_hopper_runs):
    held = [r for r in read_table(catalog.data_dir() / "validation" / "serving_throughput.csv")
            if r.accelerator == "b200"]
    cal = CALIBRATION.with_(gemm_efficiency={**CALIBRATION.gemm_efficiency, "blackwell": 0.123})
    fb = cal.fallback_generation
    assert fb == "hopper"
    # trained on Hopper runs only, the held-out B200 (Blackwell) takes Hopper's refitted constants
    out = _fallback_generations(cal, dense_hopper_runs, held)
    assert out.value("gemm_efficiency", "blackwell") == cal.value("gemm_efficiency", fb) != 0.123
    # a generation the training runs still cover keeps its own constants
    assert _fallback_generations(cal, held, held).value("gemm_efficiency", "blackwell") == 0.123


def test_bad_grouping_and_budget_are_refused_with_the_allowed_values(dense_hopper_runs):
    with pytest.raises(ValueError, match="by='engine'.*model.*gpu"):
        cross_validate(dense_hopper_runs, CALIBRATION, by="engine")
    with pytest.raises(ValueError, match="max_evaluations"):
        cross_validate(dense_hopper_runs, CALIBRATION, max_evaluations=0)
    with pytest.raises(ValueError, match="runs is empty"):
        cross_validate([], CALIBRATION)
    assert group_of(dense_hopper_runs[0], "model") == dense_hopper_runs[0].model


def test_aisize_validate_cross_validate_prints_in_sample_beside_held_out(monkeypatch):
    # the command's lines on a small set (two Hopper GPUs, two dense models) so that the test runs in seconds
    from aisize.validation import cli

    runs = read_table(catalog.data_dir() / "validation" / "serving_throughput.csv")
    small = [r for r in runs if r.model in ("llama-3.1-8b", "llama-3.3-70b") and r.accelerator in ("h100-sxm", "h200-sxm")]
    monkeypatch.setattr("aisize.calibrate.read_table", lambda path: small if "throughput" in str(path) else [])
    lines = cli.cross_validation_lines(["gpu"], 4)
    assert lines[0].startswith("serving calibration aisize-") and "roofline GEMMs" in lines[0]
    assert "roofline attention" in lines[0] and lines[1].startswith("  on serving_throughput")
    assert lines[2].startswith("leave one gpu out (2 groups")
    assert lines[3].startswith("  in sample") and lines[4].startswith("  held out")
    assert all(len(x) <= 120 for x in lines)
