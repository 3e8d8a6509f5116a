"""TensorRT-LLM's attention-DP balancing is catalog data (issue 48): ``data/engines.csv`` carries
``attention_dp_balance_iters`` (``attention_dp_config.enable_balance`` with its ``timeout_iters``), read by
:func:`aisize.serving.engine.engine`, so a site's engine table sets it as ``Engine.with_`` does.

The ``trtllm`` row (trtllm-serve) carries 60, what its aggregated attention-DP deployments set (InferenceX
``dsr1_*_trt*.sh``, TensorRT-LLM's config database, Dynamo's aggregated B200 recipe); every other row keeps 0,
TensorRT-LLM's own default (``AttentionDpConfig.enable_balance`` False), which a site that does not balance states
in its table. Disaggregated pools do not move with it (a decode worker takes no prompts). docs/calibration.md,
"Long prompts under attention DP".
"""

from __future__ import annotations

import pytest

from aisize import catalog, serving
from aisize.serving.engine import ENGINES, engine
from engine_tables import fresh_engines, shipped_rows, site_table  # noqa: F401 (a fixture)

# DeepSeek-R1 on 8 x B200 with attention DP 8 at 256 in flight, 922/922: the MTP set's rows 11 and 12 without MTP
DP8 = dict(tensor_parallel=8, expert_parallel=8, attention_dp=8, weight_precision="fp8", kv_precision="fp8",
           input_tokens=922, output_tokens=922, concurrency=256)


def test_trtllm_serve_balances_as_its_deployments_do_and_every_other_row_states_zero():
    rows = shipped_rows()
    for r in rows:  # written in the row, not left to the default
        want = 60 if r["id"] == "trtllm" else 0
        assert r["attention_dp_balance_iters"] == str(want)
        assert ENGINES[r["id"]].attention_dp_balance_iters == catalog.engines[r["id"]].attention_dp_balance_iters == want
    for key in ("trtllm", "trtllm-bench"):
        note = next(r for r in rows if r["id"] == key)["note"]
        assert "timeout_iters 60" in note and "srt-slurm" in note and "Long prompts under attention DP" in note


def test_a_site_table_sets_balancing_as_with_does(tmp_path, monkeypatch, fresh_engines):
    shipped = serving.estimate("deepseek-r1", "b200", engine="trtllm", **DP8)
    assert engine("trtllm").launch(64, 8).balance_iters == 60.0
    monkeypatch.setenv("AISIZE_CATALOG", str(site_table(tmp_path, "trtllm", attention_dp_balance_iters="0")))
    catalog.engines.__dict__.pop("_rows", None)
    site = engine("trtllm")
    assert (site.attention_dp_balance_iters, site.launch(64, 8).balance_iters) == (0, 0.0)
    by_table = serving.estimate("deepseek-r1", "b200", engine="trtllm", **DP8)
    monkeypatch.delenv("AISIZE_CATALOG")
    catalog.engines.__dict__.pop("_rows", None)
    by_flags = serving.estimate("deepseek-r1", "b200", engine=ENGINES["trtllm"].with_(attention_dp_balance_iters=0),
                                **DP8)
    assert (by_table.tpot_s, by_table.ttft_s) == (by_flags.tpot_s, by_flags.ttft_s)
    # without the balancing each prompt stalls every rank's decoders alone, not once a set: a longer TPOT, and no
    # prompt waits for the others
    assert by_table.tpot_s > shipped.tpot_s and by_table.ttft_s < shipped.ttft_s


def test_balancing_moves_nothing_without_attention_dp(tmp_path, monkeypatch, fresh_engines):
    kw = dict(DP8, expert_parallel=1, attention_dp=1)
    shipped = serving.estimate("deepseek-r1", "b200", engine="trtllm", **kw)
    monkeypatch.setenv("AISIZE_CATALOG", str(site_table(tmp_path, "trtllm", attention_dp_balance_iters="0")))
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
