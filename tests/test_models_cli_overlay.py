"""`aisize model PATH` and the user catalog overlay (--catalog DIR, $AISIZE_CATALOG)."""

from __future__ import annotations

import json

import pytest

from aisize import catalog
from aisize.cli import main
from hf_configs import QWEN2_5_7B

ACC_HEADER = catalog.accelerators.headers()


@pytest.fixture
def overlay_reset():
    yield
    catalog._OVERLAYS.clear()
    for table in catalog.TABLES.values():
        table.__dict__.pop("_rows", None)


def test_model_command_prints_counts_and_the_safetensors_total(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps(dict(QWEN2_5_7B, torch_dtype="bfloat16")))
    index = {"metadata": {"total_size": 2 * 7_615_616_512}, "weight_map": {}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    assert main(["model", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "7,615,616,512" in out and "total_size: 15.23 GB; ours at bf16: 15.23 GB" in out
    assert "KV cache per token (all layers growing): bf16 56.0 KiB" in out  # 28 x 2 x 4 x 128 x 2 B
    assert main(["model", "gpt-oss-120b"]) == 0
    assert "5.133 B without it (OpenAI)" in capsys.readouterr().out
    assert main(["model", "no-such-model"]) == 2
    assert "not in the catalog" in capsys.readouterr().err


def _write_overlay(folder, rows):
    folder.mkdir()
    lines = [",".join(ACC_HEADER)] + [",".join(r) for r in rows]
    (folder / "accelerators.csv").write_text("\n".join(lines) + "\n")


def _row(**values):
    base = dict(zip([h.split(" [")[0] for h in ACC_HEADER], [""] * len(ACC_HEADER)))
    base.update(id="site-gpu", name="Site GPU", vendor="ACME", form_factor="PCIe", memory_type="HBM3",
                memory_label="100 GB", memory="100", memory_bandwidth="4", bf16="1000", scaleup_domain="1",
                pcie_gen="5", tdp="500", source="ACME datasheet rev 1")
    base.update(values)
    return [base[h.split(" [")[0]] for h in ACC_HEADER]


def test_overlay_adds_a_gpu_and_replaces_a_row(tmp_path, overlay_reset, capsys):
    _write_overlay(tmp_path / "site", [_row(), _row(id="h100-sxm", name="H100 (site-measured)", tdp="650")])
    assert main(["--catalog", str(tmp_path / "site"), "presets"]) == 0
    assert catalog.accelerators["site-gpu"].bf16_flops_per_s == pytest.approx(1e15)
    assert catalog.accelerators["h100-sxm"].tdp_watts == 650
    assert "a100-sxm-80gb" in catalog.accelerators  # ours still there


def test_overlay_by_environment_and_a_bad_row(tmp_path, overlay_reset, monkeypatch, capsys):
    _write_overlay(tmp_path / "bad", [_row(), _row(id="gpu-2", memory_bandwidth="fast")])
    monkeypatch.setenv("AISIZE_CATALOG", str(tmp_path / "bad"))
    with pytest.raises(catalog.CatalogError, match=r"bad/accelerators.csv, line 3, column "
                                                   r"'memory_bandwidth \[TB/s\]': value 'fast' is not a number"):
        catalog.accelerators["site-gpu"]
    monkeypatch.setenv("AISIZE_CATALOG", str(tmp_path / "missing"))
    catalog.accelerators.__dict__.pop("_rows", None)
    with pytest.raises(catalog.CatalogError, match="does not exist"):
        len(catalog.accelerators)
    monkeypatch.delenv("AISIZE_CATALOG")
    assert main(["--catalog", str(tmp_path / "nowhere"), "presets"]) == 2
    assert "catalog overlay must be a folder" in capsys.readouterr().err


def test_inline_row_parses_like_a_catalog_row():
    row = dict(id="x", name="X", vendor="v", form_factor="PCIe", memory_type="HBM3", memory_label="100 GB",
               memory=100, memory_bandwidth=4, bf16=1000, scaleup_domain=1, pcie_gen=5, tdp=500, source="sheet")
    acc = catalog.parse_row("scenario hardware.accelerators[0]", catalog.Accelerator, ACC_HEADER, row)
    assert acc.memory_bytes == 100 * 2**30 and acc.memory_bandwidth_bytes_per_s == 4e12
    with pytest.raises(catalog.CatalogError, match=r"accelerators\[0\], column 'source \(missing|column 'source"):
        catalog.parse_row("scenario hardware.accelerators[0]", catalog.Accelerator, ACC_HEADER,
                          {k: v for k, v in row.items() if k != "source"})
    with pytest.raises(catalog.CatalogError, match="unknown field"):
        catalog.parse_row("here", catalog.Accelerator, ACC_HEADER, dict(row, wings=2))
