"""Published runs whose mean TTFT is many times aisize's, deployments published again further apart than the
tolerance, and runs of a recipe measured again with a later engine build: read as such on every surface, never
hidden."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from aisize.app.sections.serving_accuracy import runs_frame, summary_frame
from aisize.calibrate import Run
from aisize.calibrate.runs import run_from_row
from aisize.report.accuracy import ttft_readings
from aisize.validation.serving import (TTFT_READING_RATIO, _repeat_readings, superseded_readings, _ttft_reading,
                                       family_table, latest_runs, misses, repeat_read_misses, serving_results,
                                       superseded_misses, ttft_read_misses)


def test_the_reading_names_both_ttfts_and_their_ratio():
    text = _ttft_reading(5.61, 0.34)
    assert text.startswith("published mean TTFT 5.61 s is 16x aisize's 340 ms")
    assert "warm-up" in text and "tokens/s per GPU" in text
    assert _ttft_reading(TTFT_READING_RATIO * 0.99 * 0.3, 0.3) == ""  # below the ratio: nothing to read
    assert _ttft_reading(None, 0.3) == "" and _ttft_reading(2.0, math.nan) == "" and _ttft_reading(2.0, 0.0) == ""


def test_a_sglang_run_with_seconds_of_ttft_is_read_and_stays_a_miss():
    """InferenceX's SGLang B200 run at C=4 published a 5.6 s mean TTFT for 7373-token prompts that prefill
    in about 0.3 s: its tokens/s per GPU is half of what its TPOT implies. It stays "outside"."""
    t = family_table("serving-load").set_index("case")
    row = t.loc["load-057"]
    assert row["published_ttft_ms"] > 5000 and row["predicted_ttft_ms"] < 500
    assert "x aisize's" in row["reading"] and row["note"] == ""
    results = serving_results("serving-load").set_index("case")
    assert results.loc["load-057", "status"] == "outside"
    assert "TTFT published 5.61 s" in results.loc["load-057", "assumptions"]
    assert t.loc["load-079", "reading"] == ""  # GPUStack's Qwen3-8B run: TTFT as aisize sees it


def test_the_readings_are_counted_per_family_on_the_page_and_in_the_report():
    t = family_table("serving-load")
    assert 0 < ttft_read_misses(t) <= misses(t) <= len(t)
    text = ttft_readings()
    assert f"{ttft_read_misses(t)} of the {misses(t)} runs at a fixed concurrency" in text
    assert "max-throughput" not in text  # those runs publish no TTFT
    runs = runs_frame("serving-load")
    assert {"TTFT published [ms]", "TTFT default [ms]", "reading"} <= set(runs.columns)
    summary = summary_frame().set_index("family")
    assert summary.loc["fixed concurrency", "misses with a TTFT reading"] == f"{ttft_read_misses(t)} of {misses(t)}"


def _run(id, tokens_per_s, tpot_s=0.02, concurrency=64.0):
    return Run(label=id, model="deepseek-r1", accelerator="b200", engine="trtllm", weight_precision="fp8",
               kv_precision="fp8", input_tokens=922, output_tokens=922, gpus=8, tensor_parallel=8,
               measured_tokens_per_s_per_gpu=tokens_per_s, measured_tpot_s=tpot_s, concurrency=concurrency, id=id)


def test_a_deployment_published_twice_apart_is_read_with_the_band_an_estimate_must_hit():
    """Within ±15 % of runs a and b means between 0.85·max and 1.15·min: 1,000 and 1,240 tokens/s leave
    1,054 to 1,150; 1,000 and 1,400 (beyond 1.15/0.85) leave nothing. Closer runs, or another concurrency
    (a different deployment to aisize), get no reading."""
    r = _repeat_readings([_run("a", 1000.0), _run("b", 1240.0), _run("c", 1000.0, concurrency=128.0)])
    assert set(r) == {"a", "b"}
    assert r["a"].startswith("the same deployment was published again (b) 24 % apart on tokens/s per GPU")
    assert "only a tokens/s estimate from 1,054 to 1,150 per GPU is within 15 % of every one" in r["a"]
    assert "(a)" in r["b"]
    far = _repeat_readings([_run("a", 1000.0), _run("b", 1400.0)])
    assert "no tokens/s estimate is within 15 % of every one" in far["a"]
    assert _repeat_readings([_run("a", 1000.0), _run("b", 1100.0)]) == {}
    tpot = _repeat_readings([_run("a", 1000.0, 0.020), _run("b", 1050.0, 0.025)])  # TPOT 25 % apart
    assert "5 % apart on tokens/s per GPU and 25 % on TPOT" in tpot["a"]
    assert "only a TPOT estimate from 21.2 to 23.0 ms is within 15 % of every one" in tpot["a"]
    assert "tokens/s estimate" not in tpot["a"]  # tokens/s agree within the tolerance: no band for them


def test_the_public_repeats_are_read_on_the_page_and_in_the_report():
    """InferenceX published Dynamo-SGLang's B200 NVFP4 deployment at C=1024 twice (disagg-011 and -016), 24 %
    apart; two TensorRT-LLM MTP runs on B200 (specdec-011, -012) agree within 1 % and are not read."""
    t = family_table("serving-disagg").set_index("case")
    assert "published again (disagg-016)" in t.loc["disagg-011", "reading"]
    assert t.loc["disagg-011", "published_again"] and not t.loc["disagg-001", "published_again"]
    assert "published again (disagg-011)" in t.loc["disagg-016", "reading"]
    spec = family_table("serving-specdec")
    assert "published again" not in spec.set_index("case").loc["specdec-011", "reading"]
    d = family_table("serving-disagg")
    assert 0 < repeat_read_misses(d) <= misses(d)
    assert repeat_read_misses(family_table("serving")) == 0  # no max-throughput run was published twice
    summary = summary_frame().set_index("family")
    assert summary.loc["disaggregated", "misses published again, apart"] == f"{repeat_read_misses(d)} of {misses(d)}"
    assert f"{repeat_read_misses(d)} of the {misses(d)} disaggregated runs" in ttft_readings()


def test_a_run_of_a_recipe_measured_again_later_is_read_as_an_earlier_build():
    """Runs a and b (2025-11-02) share their recipe with c (2026-01-29) at another load: a and b are read as an
    earlier build, c is not. Another engine, or a run with no date, is another matter."""
    a, b, c = (replace(_run(i, 1000.0, concurrency=n), run_date=d)
               for i, n, d in (("a", 16.0, "2025-11-02"), ("b", 32.0, "2025-11-02"), ("c", 64.0, "2026-01-29")))
    other = replace(_run("d", 1000.0), engine="sglang", run_date="2026-03-01")
    undated = _run("e", 1000.0, concurrency=8.0)
    r = superseded_readings([a, b, c, other, undated])
    assert set(r) == {"a", "b"}
    assert r["a"].startswith("measured on 2025-11-02; the same model, GPU, engine and weight format were measured "
                             "again on 2026-01-29 (c): an earlier engine build")
    many = [replace(_run(f"n{i}", 1000.0, concurrency=float(i)), run_date="2026-02-01") for i in range(1, 7)]
    assert "(n1, n2, n3, n4 and 2 more)" in superseded_readings([a, *many])["a"]


def test_the_run_date_comes_from_its_column_or_its_source_note():
    row = {"model_id": "deepseek-r1", "accelerator_id": "b200", "engine": "trtllm", "weight_precision": "fp8",
           "input_tokens": "922", "output_tokens": "922", "tensor_parallel": "8", "gpus": "8",
           "output_tokens_per_s_per_gpu": "100", "concurrency": "16"}
    assert run_from_row(row, "t").run_date == ""
    noted = run_from_row(row | {"source_note": "InferenceX; run date 2025-11-02; config x"}, "t")
    assert noted.run_date == "2025-11-02"
    given = run_from_row(row | {"run_date": "2026-02-05", "source_note": "run date 2025-01-01;"}, "t")
    assert given.run_date == "2026-02-05"  # the column wins over the note
    with pytest.raises(ValueError, match="t: column 'run_date' holds 'last week': a date YYYY-MM-DD is needed"):
        run_from_row(row | {"run_date": "last week"}, "t")


def test_the_earlier_builds_are_read_and_the_latest_builds_scored_on_the_page_and_in_the_report():
    """InferenceX's TensorRT-LLM B200 FP8 recipe ran on 2025-11-02 (load-073: TPOT 18.5 ms at C=16) and again on
    2026-01-29 (load-071: 11.1 ms at C=8; load-050: 21.5 ms at C=64). The earlier runs are read as such and stay
    misses; the all-runs figures are unchanged, and the latest build of each recipe is scored beside them."""
    t = family_table("serving-load")
    rows = t.set_index("case")
    assert rows.loc["load-073", "superseded"] and "again on 2026-01-29 (" in rows.loc["load-073", "reading"]
    assert not rows.loc["load-071", "superseded"] and not rows.loc["load-079", "superseded"]  # latest; undated
    assert not family_table("serving")["superseded"].any()  # max-throughput runs carry no run date
    latest = latest_runs(t)
    assert 0 < superseded_misses(t) <= misses(t) and 0 < len(latest) < len(t)
    summary = summary_frame().set_index("family")
    assert summary.loc["fixed concurrency", "runs"] == len(t)
    earlier = summary.loc["fixed concurrency", "misses of an earlier engine build"]
    assert earlier == f"{superseded_misses(t)} of {misses(t)}"
    within = int((latest["error_pct"].abs() <= 15.0).sum())
    assert summary.loc["fixed concurrency", "latest build of each recipe: within 15 %"] == f"{within} of {len(latest)}"
    text = ttft_readings()
    assert (f"{superseded_misses(t)} of the {misses(t)} runs at a fixed concurrency (on the latest build of each "
            f"recipe, {within} of {len(latest)} within 15 %") in text
