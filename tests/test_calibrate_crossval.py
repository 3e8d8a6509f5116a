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
    assert lines[0].startswith("serving calibration aisize-") and "roofline GEMMs" in lines[1]
    assert "roofline attention" in lines[1] and "attention-DP gather" in lines[2]  # the sources, on two lines
    assert lines[3].startswith("  on serving_throughput") and lines[4].startswith("leave one gpu out (2 groups")
    assert lines[5].startswith("  in sample") and lines[6].startswith("  held out")
    assert all(len(x) <= 120 for x in lines)


def test_decode_identified_moe_constants_are_fitted_only_where_an_moe_run_measured_tpot():
    # flat-out MoE runs (Llama 4 Scout, Qwen3-30B-A3B) state no TPOT: the expert weight reads and the fixed
    # MoE-layer time are a few percent of their steps, so they do not identify them (a refit without
    # DeepSeek-R1 took moe_layer_seconds[hopper] from 63 to 431 us to absorb Scout's +44 % on H100)
    flat_out = read_table(catalog.data_dir() / "validation" / "serving_throughput.csv")
    names = fitted_constants(flat_out, CALIBRATION)
    assert ("expert_gemm_efficiency", None) in names and ("expert_bytes_per_token", None) in names
    assert not [c for c in names if c[0] in ("expert_memory_efficiency", "moe_layer_seconds")]
    # DeepSeek-R1's closed-loop runs measured TPOT on Blackwell, Hopper (H200) and CDNA4: each generation's own
    load = read_table(catalog.data_dir() / "validation" / "serving_load.csv")
    r1_b200 = [r for r in load if r.model == "deepseek-r1" and r.accelerator == "b200"]
    names = fitted_constants(flat_out + r1_b200, CALIBRATION)
    assert ("expert_memory_efficiency", None) in names
    assert [g for c, g in names if c == "moe_layer_seconds"] == ["blackwell"]


def test_every_shipped_fitted_constant_is_identified_by_the_three_fitted_sets():
    # the rule leaves the shipped fit as it was: on every fitted run, each fitted constant is identified
    runs = [r for s in ("serving_throughput", "serving_load", "serving_disagg")
            for r in read_table(catalog.data_dir() / "validation" / f"{s}.csv")]
    labels = {f"{c}[{g}]" if g else c for c, g in fitted_constants(runs, CALIBRATION)}
    assert labels == set(CALIBRATION.fitted) - {"request_seconds"}


def _aggregated_runs():
    """The max-throughput and fixed-concurrency validation runs (the fit's aggregated sets)."""
    return [r for s in ("serving_throughput", "serving_load")
            for r in read_table(catalog.data_dir() / "validation" / f"{s}.csv")]


def test_a_fold_that_cannot_identify_the_decode_moe_constants_does_not_keep_the_values_its_held_out_runs_fitted():
    # held out with DeepSeek-R1, no MoE run with a TPOT is left: the shipped MoE-layer times and expert HBM share
    # (fitted on R1's decode) would leak R1 into its own prediction, so they take values no run fitted
    from aisize.calibrate.crossval import _unidentified_defaults

    runs = _aggregated_runs()
    train = [r for r in runs if r.model != "deepseek-r1"]
    held = [r for r in runs if r.model == "deepseek-r1"]
    constants = fitted_constants(train, CALIBRATION)
    out = _unidentified_defaults(CALIBRATION, constants, train, held)
    assert all(out.value("moe_layer_seconds", g) == 0.0 for g in ("hopper", "blackwell", "cdna4"))
    for g in ("hopper", "blackwell"):
        assert out.value("expert_memory_efficiency", g) == CALIBRATION.value("memory_efficiency", g)
    # MI355X (CDNA4) has no run left: its constants are the fallback generation's, as for an uncalibrated GPU
    assert out.value("expert_memory_efficiency", "cdna4") == CALIBRATION.value("memory_efficiency", "hopper")
    # with R1 in, every constant is identified and nothing changes
    assert _unidentified_defaults(CALIBRATION, fitted_constants(runs, CALIBRATION), runs, held) == CALIBRATION


def test_one_fold_alone_is_the_same_fold_as_in_the_whole_cross_validation(dense_hopper_runs):
    # only= holds out the named groups alone: one refit, the same held-out figures as that fold of the whole run
    from aisize.calibrate.crossval import fold_lines, moved_constants, restored
    from aisize.calibrate.fitting import summary

    whole = cross_validate(dense_hopper_runs, CALIBRATION, by="gpu", max_evaluations=4)
    one = cross_validate(dense_hopper_runs, CALIBRATION, by="gpu", max_evaluations=4, only=["h100-sxm"])
    assert one.groups == ("h100-sxm",) and [g for g, _ in one.refits] == ["h100-sxm"]
    assert {p.run.accelerator for p in one.held_out} == {"h100-sxm"}
    mine = {p.run.id: p.tokens_per_s_per_gpu for p in whole.held_out if p.run.accelerator == "h100-sxm"}
    assert {p.run.id: p.tokens_per_s_per_gpu for p in one.held_out} == mine
    with pytest.raises(ValueError, match="only=.*b200.*names no gpu"):
        cross_validate(dense_hopper_runs, CALIBRATION, by="gpu", only=["b200"])
    # the per-fold table: the fold's runs within 15 % in sample and held out, then the constants its refit moved
    lines = fold_lines(whole, CALIBRATION)
    n = sum(p.run.accelerator == "h100-sxm" for p in whole.in_sample)
    row = next(x for x in lines if x.split()[0] == "h100-sxm")
    assert int(row.split()[1]) == n and all(len(x) <= 120 for x in lines)
    refit = dict(whole.refits)["h100-sxm"]
    moved = moved_constants(CALIBRATION, refit, most=3)
    assert moved and all(refit.value(c.split("[")[0], c[c.find("[") + 1:-1] if "[" in c else None) == y
                         for c, _, y in moved)
    assert lines[lines.index(row) + 1].strip().startswith(moved[0][0])
    assert moved_constants(CALIBRATION, CALIBRATION) == []
    # in detail: the fold's runs by model, and its counts with each moved constant alone put back
    detail = fold_lines(one, CALIBRATION, most=3, detail=True)
    assert all(len(x) <= 120 for x in detail)
    by = next(x for x in detail if x.strip().startswith("by model"))
    assert "llama-3.1-8b" in by and "llama-3.3-70b" in by
    put = "\n".join(detail[detail.index(next(x for x in detail if "put back alone" in x)):])
    refit = dict(one.refits)["h100-sxm"]
    held = summary(list(one.held_out))
    for label, _, _ in moved_constants(CALIBRATION, refit, most=1000):  # listed exactly where the counts change
        back = [predict(p.run, restored(CALIBRATION, refit, label)) for p in one.held_out]
        s = summary(back)
        assert (f"{label} ({s['within']}, {s['tpot_within']})" in put) == (
            (s["within"], s["tpot_within"]) != (held["within"], held["tpot_within"]))


def test_a_generation_whose_moe_runs_with_tpot_are_held_out_takes_the_other_generations_moe_layer_time():
    # held out with H200, Hopper keeps runs (H100) but none of an MoE model with a TPOT: its MoE-layer time, fitted
    # on H200's DeepSeek-R1 runs alone, would leak them; it takes the mean of the generations the fold identifies
    from aisize.calibrate.crossval import _unidentified_defaults

    runs = _aggregated_runs()
    train = [r for r in runs if r.accelerator != "h200-sxm"]
    held = [r for r in runs if r.accelerator == "h200-sxm"]
    constants = fitted_constants(train, CALIBRATION)
    assert sorted(g for c, g in constants if c == "moe_layer_seconds") == ["blackwell", "cdna4"]
    out = _unidentified_defaults(CALIBRATION, constants, train, held)
    m = CALIBRATION.moe_layer_seconds
    assert out.value("moe_layer_seconds", "hopper") == pytest.approx((m["blackwell"] + m["cdna4"]) / 2)
    assert out.value("moe_layer_seconds", "hopper") != m["hopper"]
    assert out.value("moe_layer_seconds", "blackwell") == m["blackwell"]
