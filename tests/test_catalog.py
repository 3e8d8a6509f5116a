"""Catalog tables in data/: loading, lookups, datasheet spot checks, referential integrity,
and the loader's error messages on corrupted copies."""

import csv
import dataclasses

import pandas as pd
import pytest

from aisize import catalog
from aisize.catalog import CatalogError, Link, Server, Table

TABLES = list(catalog.TABLES.items())


@pytest.mark.parametrize("name,table", TABLES, ids=[n for n, _ in TABLES])
def test_every_table_loads_with_sources(name, table):
    assert len(table) > 0
    for row in table:
        assert row.source.strip(), f"{name}/{row.id} has no source"
    frame = table.frame()
    assert isinstance(frame, pd.DataFrame) and list(frame.index) == table.ids()


def test_lookup_filter_and_model():
    assert catalog.accelerators["h100-sxm"].name.startswith("H100")
    assert "h100-sxm" in catalog.accelerators and "h100-xyz" not in catalog.accelerators
    with pytest.raises(ValueError, match="h100-xyz"):
        catalog.accelerators["h100-xyz"]
    h100_servers = {s.id for s in catalog.servers.filter(accelerator="h100-sxm")}
    assert h100_servers == {"dgx-h100", "dell-xe9680-h100"}
    assert all(l.kind == "infiniband" for l in catalog.links.filter(lambda l: l.id.startswith("ib-")))
    assert catalog.model("llama-2-7b").layers == 32 and catalog.model("resnet-50").default_batch == 256


def test_h100_sxm_datasheet():
    # H100 whitepaper Table 3: dense BF16 989.4 TFLOP/s; datasheet 3.35 TB/s; nvidia-smi 81,559 MiB.
    h100 = catalog.accelerators["h100-sxm"]
    assert h100.bf16_flops_per_s == pytest.approx(989.4e12)
    assert h100.memory_bandwidth_bytes_per_s == pytest.approx(3.35e12)
    assert h100.memory_visible_bytes == 81_559 * 2**20
    assert h100.memory_bytes == 80 * 2**30
    assert h100.tdp_watts == 700


def test_dense_peaks_are_below_sparse_headlines():
    # Sparse headlines are never stored: A100 datasheet 312 dense / 624 sparse BF16.
    assert catalog.accelerators["a100-sxm-80gb"].bf16_flops_per_s == pytest.approx(312e12)
    assert catalog.accelerators["h200-sxm"].fp8_flops_per_s == pytest.approx(1978.9e12)


def test_link_figures():
    # NDR 400 Gb/s = 50 GB/s per direction; NVLink-4 900 GB/s bidirectional = 450 per direction.
    assert catalog.links["ib-ndr"].bandwidth_per_direction_bytes_per_s == pytest.approx(50e9)
    nvl4 = catalog.links["nvlink-4"]
    assert nvl4.bandwidth_per_direction_bytes_per_s == pytest.approx(450e9)
    assert nvl4.vendor_figure_bidirectional
    assert catalog.links["pcie-gen5-x16"].bandwidth_per_direction_bytes_per_s == pytest.approx(63e9)
    assert catalog.accelerators["h100-sxm"].scaleup_bidirectional_bytes_per_s == pytest.approx(
        2 * nvl4.bandwidth_per_direction_bytes_per_s)


def test_storage_and_dataset_figures():
    weka = catalog.storage["hpe-weka-flash"]
    assert weka.read_bandwidth_bytes_per_s == pytest.approx(30e9)
    assert weka.read_iops_per_s == pytest.approx(2.5e6) and weka.iops_io_size_bytes == 4096
    assert catalog.storage["superpod-h100-best"].read_bandwidth_bytes_per_s == pytest.approx(40e9)
    assert catalog.datasets["imagenet-1k"].samples == 1_281_167
    assert catalog.datasets["mlperf-unet3d"].record_sample_bytes == 146_600_628
    assert catalog.other_models["unet3d"].input_sample_bytes == 146_600_628


def test_referential_integrity():
    links, accs = catalog.links, catalog.accelerators
    for a in accs:
        assert a.scaleup_link is None or a.scaleup_link in links, a.id
    for s in catalog.servers:
        assert s.accelerator in accs, s.id
        assert s.compute_nic_link in links and (s.storage_nic_link is None or s.storage_nic_link in links)
    for m in catalog.other_models:
        assert m.dataset in catalog.datasets, m.id


# --- corrupted copies ------------------------------------------------------------------------

def _copy(tmp_path, filename, edit):
    """Copy data/<filename> to tmp_path after ``edit(rows)`` on its list of CSV rows."""
    rows = list(csv.reader((catalog.data_dir() / filename).open(newline="", encoding="utf-8")))
    edit(rows)
    path = tmp_path / filename
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    return path


def _set(rows, line, column, value):
    rows[line - 1][rows[0].index(column)] = value


def _load_error(path, record_type, *expected):
    with pytest.raises(CatalogError) as info:
        Table(path.name, record_type, path).ids()
    message = str(info.value)
    assert path.name in message
    for part in expected:
        assert part in message, message
    return message


def test_missing_column(tmp_path):
    def drop(rows):
        i = rows[0].index("tdp [W]")
        for r in rows:
            del r[i]
    _load_error(_copy(tmp_path, "accelerators.csv", drop), catalog.Accelerator, "line 1", "'tdp'")


def test_non_numeric_value(tmp_path):
    path = _copy(tmp_path, "accelerators.csv", lambda r: _set(r, 3, "memory [GiB]", "eighty"))
    _load_error(path, catalog.Accelerator, "line 3", "'memory [GiB]'", "not a number")


def test_negative_value(tmp_path):
    path = _copy(tmp_path, "links.csv", lambda r: _set(r, 4, "bandwidth_per_direction", "-63"))
    _load_error(path, Link, "line 4", "'bandwidth_per_direction'", ">= 0")


def test_unknown_header_unit(tmp_path):
    def rename(rows):
        rows[0][rows[0].index("tdp [W]")] = "tdp [horsepower]"
    _load_error(_copy(tmp_path, "accelerators.csv", rename), catalog.Accelerator,
                "line 1", "'tdp [horsepower]'", "unknown unit")


def test_unknown_row_unit(tmp_path):
    path = _copy(tmp_path, "links.csv", lambda r: _set(r, 5, "bandwidth_per_direction_unit", "Gb/s"))
    _load_error(path, Link, "line 5", "'bandwidth_per_direction_unit'", "unknown unit 'Gb/s'")


def test_missing_source(tmp_path):
    path = _copy(tmp_path, "servers.csv", lambda r: _set(r, 2, "source", " "))
    _load_error(path, Server, "line 2", "'source'", "missing source")


def test_duplicate_id(tmp_path):
    path = _copy(tmp_path, "links.csv", lambda r: _set(r, 3, "id", r[1][0]))
    _load_error(path, Link, "line 3", "'id'", "duplicate id")


def test_extra_unknown_column(tmp_path):
    def add(rows):
        rows[0].append("colour")
        for r in rows[1:]:
            r.append("green")
    _load_error(_copy(tmp_path, "links.csv", add), Link, "line 1", "'colour'", "unknown column")


def test_row_with_too_many_cells(tmp_path):
    path = _copy(tmp_path, "links.csv", lambda r: r[2].append("surplus"))
    # The loader names file and line; a surplus cell has no header, so no column is named.
    _load_error(path, Link, "line 3", "row has 11 cells but the header has 10 columns", "column '#11")


def test_good_copy_loads(tmp_path):
    path = _copy(tmp_path, "links.csv", lambda rows: None)
    assert Table("links.csv", Link, path).ids() == catalog.links.ids()
    assert [dataclasses.asdict(r) for r in Table("links.csv", Link, path)] == \
        [dataclasses.asdict(r) for r in catalog.links]
