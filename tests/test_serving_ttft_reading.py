"""Published runs whose mean TTFT is many times aisize's: read as such on every surface, never hidden."""

from __future__ import annotations

import math

from aisize.app.sections.serving_accuracy import runs_frame, summary_frame
from aisize.report.accuracy import ttft_readings
from aisize.validation.serving import (TTFT_READING_RATIO, _ttft_reading, family_table, misses, serving_results,
                                       ttft_read_misses)


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
