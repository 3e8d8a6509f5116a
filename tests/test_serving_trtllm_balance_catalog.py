"""TensorRT-LLM's attention-DP balancing is catalog data (issue 48): ``data/engines.csv`` carries
``attention_dp_balance_iters`` (``attention_dp_config.enable_balance`` with its ``timeout_iters``), read by
:func:`aisize.serving.engine.engine`, so a site's engine table sets it as ``Engine.with_`` does.

Every shipped row keeps 0 (TensorRT-LLM's own default, ``AttentionDpConfig.enable_balance`` False): the aggregated
deployments set 60 (InferenceX ``dsr1_*_trt*.sh``, TensorRT-LLM's config database, Dynamo's aggregated B200 recipe),
but with it and the per-rank exchange the MTP check falls from 19 to 15 runs on tokens/s, since the check passes no
batch limit (docs/calibration.md, "TensorRT-LLM's attention-DP exchange").
"""

from __future__ import annotations

import pytest

from aisize import catalog, serving
from aisize.serving.engine import ENGINES, engine
from engine_tables import fresh_engines, shipped_rows, site_table  # noqa: F401 (a fixture)

# DeepSeek-R1 on 8 x B200 with attention DP 8 at 256 in flight, 922/922: the MTP set's rows 11 and 12 without MTP
DP8 = dict(tensor_parallel=8, expert_parallel=8, attention_dp=8, weight_precision="fp8", kv_precision="fp8",
           input_tokens=922, output_tokens=922, concurrency=256)


def test_every_shipped_row_states_zero_and_the_trtllm_notes_say_why():
    rows = shipped_rows()
    assert all(r["attention_dp_balance_iters"] == "0" for r in rows)  # written in the row, not left to the default
    for r in rows:
        assert ENGINES[r["id"]].attention_dp_balance_iters == catalog.engines[r["id"]].attention_dp_balance_iters == 0
    for key in ("trtllm", "trtllm-bench"):
        note = next(r for r in rows if r["id"] == key)["note"]
        assert "timeout_iters 60" in note and "srt-slurm" in note and "19 -> 15" in note


def test_a_site_table_sets_balancing_as_with_does(tmp_path, monkeypatch, fresh_engines):
    shipped = serving.estimate("deepseek-r1", "b200", engine="trtllm", **DP8)
    monkeypatch.setenv("AISIZE_CATALOG", str(site_table(tmp_path, "trtllm", attention_dp_balance_iters="60",
                                                         dp_exchange_by_sizes="true")))
    catalog.engines.__dict__.pop("_rows", None)
    site = engine("trtllm")
    assert (site.attention_dp_balance_iters, site.dp_exchange_by_sizes) == (60, True)
    assert site.launch(64, 8).balance_iters == 60.0
    by_table = serving.estimate("deepseek-r1", "b200", engine="trtllm", **DP8)
    monkeypatch.delenv("AISIZE_CATALOG")
    catalog.engines.__dict__.pop("_rows", None)
    by_flags = serving.estimate("deepseek-r1", "b200", engine=ENGINES["trtllm"].with_(
        attention_dp_balance_iters=60, dp_exchange_by_sizes=True), **DP8)
    assert (by_table.tpot_s, by_table.ttft_s) == (by_flags.tpot_s, by_flags.ttft_s)
    # the set of one prompt a rank stalls the decoders once, not once a prompt: a shorter TPOT
    assert by_table.tpot_s < shipped.tpot_s


def test_balancing_moves_nothing_without_attention_dp(tmp_path, monkeypatch, fresh_engines):
    kw = dict(DP8, expert_parallel=1, attention_dp=1)
    shipped = serving.estimate("deepseek-r1", "b200", engine="trtllm", **kw)
    monkeypatch.setenv("AISIZE_CATALOG", str(site_table(tmp_path, "trtllm", attention_dp_balance_iters="60")))
    catalog.engines.__dict__.pop("_rows", None)
    site = serving.estimate("deepseek-r1", "b200", engine="trtllm", **kw)
    assert (site.tpot_s, site.ttft_s, site.output_tokens_per_s_per_gpu) == (
        shipped.tpot_s, shipped.ttft_s, shipped.output_tokens_per_s_per_gpu)


def test_a_table_without_the_column_or_with_an_empty_cell_is_off(tmp_path, monkeypatch, fresh_engines):
    monkeypatch.setenv("AISIZE_CATALOG", str(site_table(tmp_path, "trtllm", drop=("attention_dp_balance_iters",))))
    assert engine("trtllm").attention_dp_balance_iters == 0
    catalog.engines.__dict__.pop("_rows", None)
    monkeypatch.setenv("AISIZE_CATALOG", str(site_table(tmp_path, "trtllm", attention_dp_balance_iters="")))
    assert engine("trtllm").attention_dp_balance_iters == 0


@pytest.mark.parametrize("cell, error, match", [
    ("-60", catalog.CatalogError, r"column 'attention_dp_balance_iters': value '-60' must be a finite number >= 0"),
    ("1.5", catalog.CatalogError, r"column 'attention_dp_balance_iters': value '1.5' must be a whole number"),
    ("2000000", ValueError, r"attention_dp_balance_iters"),
])
def test_a_bad_cell_is_named(tmp_path, monkeypatch, fresh_engines, cell, error, match):
    monkeypatch.setenv("AISIZE_CATALOG", str(site_table(tmp_path, "trtllm", attention_dp_balance_iters=cell)))
    with pytest.raises(error, match=match):
        engine("trtllm")
