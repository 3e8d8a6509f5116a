"""An engine's behaviour is catalog data (issue 47, item 3): ``mixes_prefill`` and ``dp_gather_nccl`` are columns of
``data/engines.csv``, read by :func:`aisize.serving.engine.engine`, so a site's engine table sets them.

The shipped rows keep the values the code used to set (every engine mixes prefill into decode iterations, SGLang's
own default having lost cross-validation: docs/calibration.md, "Prefill alone"; SGLang and TensorRT-LLM exchange
their attention-DP tokens with NCCL, vLLM keeps the roofline), each row's note citing where its values come from; an
overlay row that turns them off changes the estimate as ``Engine.with_`` does.
"""

from __future__ import annotations

import csv
import io

import pytest

from aisize import catalog, serving
from aisize.serving.engine import ENGINES, engine
from engine_tables import fresh_engines, shipped_rows, site_table  # noqa: F401 (a fixture)

COLUMNS = ("mixes_prefill", "dp_gather_nccl")
SHIPPED = {"trtllm-bench": (True, True), "trtllm": (True, True), "vllm": (True, False), "sglang": (True, True)}


def test_the_shipped_rows_state_both_columns_with_a_source():
    rows = shipped_rows()
    assert {r["id"] for r in rows} == set(SHIPPED)
    for r in rows:
        # written in the row, not left to the record's default; the row's note cites where each comes from, as
        # accelerators.csv's notes cite a column's figure (the source keeps the row's limits, exported with plans)
        assert tuple(r[c] == "true" for c in COLUMNS) == SHIPPED[r["id"]], r["id"]
        assert all(r[c] in ("true", "false") for c in COLUMNS)
        assert all(f"{c}" in r["note"] for c in COLUMNS), r["id"]
    sglang = next(r for r in rows if r["id"] == "sglang")["note"]
    assert "enable_mixed_chunk = False" in sglang and "dp_attention.py" in sglang


def test_engine_reads_them_from_its_row():
    for key, (mixes, gathers) in SHIPPED.items():
        e = ENGINES[key]
        assert (e.mixes_prefill, e.dp_gather_nccl) == (mixes, gathers) == (
            catalog.engines[key].mixes_prefill, catalog.engines[key].dp_gather_nccl)
        assert e.launch().mixes_prefill is mixes


def test_a_site_table_sets_them(tmp_path, monkeypatch, fresh_engines):
    kw = dict(tensor_parallel=8, weight_precision="fp8", kv_precision="fp8", input_tokens=922, output_tokens=922,
              concurrency=64, attention_dp=8, expert_parallel=8)
    shipped = serving.estimate("deepseek-r1", "b200", engine="sglang", **kw)
    monkeypatch.setenv("AISIZE_CATALOG", str(site_table(tmp_path, "sglang", mixes_prefill="false", dp_gather_nccl="false")))
    catalog.engines.__dict__.pop("_rows", None)
    site = engine("sglang")
    assert (site.mixes_prefill, site.dp_gather_nccl) == (False, False)
    # the site's row gives the figures the same flags give through Engine.with_
    by_table = serving.estimate("deepseek-r1", "b200", engine="sglang", **kw)
    monkeypatch.delenv("AISIZE_CATALOG")
    catalog.engines.__dict__.pop("_rows", None)
    by_flags = serving.estimate("deepseek-r1", "b200", engine=ENGINES["sglang"].with_(
        mixes_prefill=False, dp_gather_nccl=False), **kw)
    assert (by_table.tpot_s, by_table.ttft_s) == (by_flags.tpot_s, by_flags.ttft_s)
    assert by_table.tpot_s != shipped.tpot_s


def test_a_table_written_before_the_columns_keeps_the_defaults(tmp_path, monkeypatch, fresh_engines):
    rows = [{k: v for k, v in r.items() if k not in COLUMNS} for r in shipped_rows() if r["id"] == "vllm"]
    rows[0]["id"] = "site-vllm"
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (tmp_path / "engines.csv").write_text(out.getvalue(), encoding="utf-8")
    monkeypatch.setenv("AISIZE_CATALOG", str(tmp_path))
    e = engine("site-vllm")
    assert (e.mixes_prefill, e.dp_gather_nccl) == (True, False)


def test_a_bad_cell_is_named(tmp_path, monkeypatch, fresh_engines):
    monkeypatch.setenv("AISIZE_CATALOG", str(site_table(tmp_path, "sglang", mixes_prefill="sometimes")))
    with pytest.raises(catalog.CatalogError, match=r"engines.csv, line 5, column 'mixes_prefill': value "
                                                   r"'sometimes' is not true/false"):
        engine("sglang")
