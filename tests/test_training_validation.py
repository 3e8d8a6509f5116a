"""aisize.training.estimate against published runs: the thresholds issue 17 sets, read from the CSVs.

* torchtitan (data/validation/training_torchtitan.csv, a copy of reference/training_torchtitan.csv):
  tokens/s per GPU within 15 % on at least 80 % of the rows, peak memory within 10 % on at least
  80 % of the rows that give it; the context-parallel rows fall with sequence length as published.
* published large runs (data/validation/training_runs.csv): MFU (or HFU) within 15 % relative where
  the run is expressible.
"""

import math

import pandas as pd
import pytest

from aisize.validation.training import (MFU_TOLERANCE_PCT, TOKENS_TOLERANCE_PCT, runs_table, torchtitan_kwargs,
                                        torchtitan_rows, torchtitan_table)

TITAN = torchtitan_table()
RUNS = runs_table()


def test_torchtitan_rows_are_all_expressible():
    rows = torchtitan_rows()
    assert len(rows) == 19
    tokens = TITAN[TITAN["metric"] == "tokens/s per GPU"]
    assert len(tokens) == 19 and tokens["predicted"].notna().all()


def test_torchtitan_tokens_per_gpu_within_15_percent_on_80_percent():
    tokens = TITAN[TITAN["metric"] == "tokens/s per GPU"]
    within = (tokens["error_pct"].abs() <= TOKENS_TOLERANCE_PCT).sum()
    assert within >= math.ceil(0.8 * len(tokens)), tokens[["case", "error_pct"]]
    assert tokens["error_pct"].abs().median() < 5


def test_torchtitan_peak_memory_within_10_percent_on_80_percent():
    mem = TITAN[TITAN["metric"] == "peak memory"]
    assert len(mem) == 14
    assert (mem["error_pct"].abs() <= 10).sum() >= math.ceil(0.8 * len(mem)), mem[["case", "error_pct"]]


def test_context_parallel_rows_fall_with_sequence_length():
    # torchtitan Table 2: 8B, 8 GPUs, FSDP x CP, 32k -> 262k tokens: 3890, 2540, 1071, 548 tokens/s per GPU
    cp = TITAN[(TITAN["metric"] == "tokens/s per GPU") & TITAN["case"].str.contains(" CP ")]
    assert len(cp) == 4
    assert cp["predicted"].is_monotonic_decreasing and cp["published"].is_monotonic_decreasing
    ratio_pub = cp["published"].iloc[0] / cp["published"].iloc[-1]
    ratio_pred = cp["predicted"].iloc[0] / cp["predicted"].iloc[-1]
    assert ratio_pred == pytest.approx(ratio_pub, rel=0.2)  # 7.1x published, 6.0x predicted


def test_compile_and_float8_gains_follow_the_published_ones():
    # torchtitan Table 1 (8B, 8 H100): compile +16 %, Float8 a further +28 %
    t = TITAN[TITAN["metric"] == "tokens/s per GPU"].set_index(TITAN[TITAN["metric"] == "tokens/s per GPU"]
                                                              ["case"].str.split().str[0])
    compile_gain = t.loc["C2", "predicted"] / t.loc["C1", "predicted"]
    fp8_gain = t.loc["C3", "predicted"] / t.loc["C2", "predicted"]
    assert compile_gain == pytest.approx(6667 / 5762, rel=0.06)  # 1.157 published; constants fitted on both sets
    assert fp8_gain == pytest.approx(8532 / 6667, rel=0.08)
    # interleaved 1F1B over 1F1B for 405B on PP 8 (Table 5: 128 vs 100)
    assert t.loc["C14", "predicted"] / t.loc["C13", "predicted"] == pytest.approx(1.28, rel=0.05)


def test_published_large_runs_mfu_within_15_percent():
    expressible = RUNS[RUNS["metric"].isin(["MFU", "HFU"]) & RUNS["predicted"].notna()]
    assert len(expressible) >= 3
    assert (expressible["error_pct"].abs() <= MFU_TOLERANCE_PCT).all(), expressible[["case", "error_pct"]]


def test_runs_that_cannot_be_expressed_say_why():
    missing = RUNS[RUNS["predicted"].isna()]
    assert set(missing["case"]) == {"GPT-3 175B", "PaLM 540B"}
    assert missing["note"].str.startswith("not expressible").all()


def test_llama2_gpu_hours_are_predicted_and_reported():
    llama = RUNS[(RUNS["metric"] == "GPU-hours") & RUNS["case"].str.startswith("Llama")]
    assert len(llama) == 3 and llama["predicted"].notna().all()
    # aisize's steady state (torchtitan-calibrated) over Llama 3's 90 % goodput: 7B and 70B within 15 %,
    # 13B low (its published GPU-hours imply 43 % MFU; torchtitan measures 61 % for it, row C20)
    by = llama.set_index("case")
    assert abs(by.loc["Llama-2-70B", "error_pct"]) <= 15 and abs(by.loc["Llama-2-7B", "error_pct"]) <= 15
    assert -30 < by.loc["Llama-2-13B", "error_pct"] < -15


def test_check_tool_layout_convention():
    # the row -> estimate mapping is the one tools/check_training.py uses
    row = next(r for r in torchtitan_rows() if r["id"] == "C13")
    model, gpu, kw = torchtitan_kwargs(row)
    assert (model, gpu) == ("llama-3.1-405b", "h100-sxm")
    assert kw | {} == dict(gpus=512, tensor_parallel=8, pipeline_parallel=8, context_parallel=1, micro_batch=32,
                           global_batch=256, seq_len=8192, recompute="full", precision="fp8", compiled=True,
                           schedule="1f1b")


def test_tables_are_frames():
    assert isinstance(TITAN, pd.DataFrame) and set(TITAN["unit"]) == {"tokens/s", "GiB"}


def test_pythia_gpu_hours_run_on_the_layouts_of_their_configs():
    # Biderman et al. 2023 (GPUs, GPU-hours) with EleutherAI/pythia's GPT-NeoX configs: 1,024 x 2,048-token
    # steps, TP 1 up to 2.8B (micro-batch 32 on 32 GPUs, 16 on 64), TP 2 and 4 for 6.9B and 12B (8 x 2).
    pythia = RUNS[RUNS["case"].str.startswith("Pythia")].set_index("case")
    assert len(pythia) == 8 and pythia["predicted"].notna().all()
    assert "TP 4" in pythia.loc["Pythia-12B", "layout"] and "TP 1" in pythia.loc["Pythia-1B", "layout"]
    # reported, not hidden: aisize's 2024-fitted kernels are faster than the 2022 runs (fewer GPU-hours)
    assert (pythia["error_pct"] < -15).all() and (pythia["error_pct"] > -50).all()
