"""The Data path tab's tables built from the plan's dicts show what the pandas path showed (issue 51 item 2: the
IO blend's and the tables' frames were 6 of a GPU-busy move's 15 ms): the IO blend table against the plan's own
``aisize.plan.bom.storage_table`` frame written out as the tab wrote it, the jobs table against its DataFrame, and
the blend chart's rows against the DataFrame's, for every preset and each preset's blend repeated seven times (6 to 42
rows)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from aisize import charts
from aisize import format as F
from aisize.app import controls as K
from aisize.app.sections import datapath
from aisize.plan import plan
from aisize.plan.bom import storage_table
from aisize.scenario import preset, preset_names
from aisize.units import GB


def _blend_frame_table(table: pd.DataFrame) -> pd.DataFrame:
    """The tab's blend table as it was written from storage_table's frame (before the dicts)."""
    out = {"workload": list(table["name"]), "kind": list(table["kind"])}
    for col, label in (("read_gb_per_s", "read"), ("write_gb_per_s", "write"), ("read_peak_gb_per_s", "read peak"),
                       ("write_peak_gb_per_s", "write peak")):
        unit, texts = datapath.column([v * GB for v in table[col]], "GB/s")
        out[f"{label} [{unit}]"] = texts
    for col, label in (("read_iops", "read"), ("write_iops", "write")):
        unit, texts = datapath.column(list(table[col]), "IO/s")
        out[f"{label} [{unit}]"] = texts
    out["read share"] = [str(F.pct(v)) for v in table["read_share"]]
    return pd.DataFrame(out)


def _many(p, copies: int):
    """``p`` with its blend repeated ``copies`` times, each copy's rates scaled apart (more rows than numpy sums in
    order)."""
    rows = tuple(dict(w, name=f"{w['name']} {k}", **{r: w[r] * (1 + 0.37 * k) for r in datapath._RATES})
                 for k in range(copies) for w in p.storage.workloads)
    return dataclasses.replace(p, storage=dataclasses.replace(p.storage, workloads=rows))


@pytest.mark.parametrize("name", preset_names())
def test_tables_from_dicts_are_the_frames_tables(name):
    p = plan(preset(name))
    for q in (p, _many(p, 7)):
        s = q.storage
        assert (K.table(datapath._blend_table(s.workloads, s.read_share))
                == K.table(_blend_frame_table(storage_table(q))))
        rows = [w for w in s.workloads if any(w[k] for k in datapath._RATES)]
        assert charts.io_blend_rows(rows) == charts.io_blend_rows(pd.DataFrame(rows))
    if p.training:
        jobs = datapath.DataPathSection._jobs_table(p)
        assert K.table(jobs) == K.table(pd.DataFrame(jobs))


def test_a_table_of_columns_is_the_frames_table():
    cells = {"job": ["a", "b"], "read need [GB/s]": ["1.20", ""], "utilisation": [0.5, None], "gpus": [8, 16]}
    assert K.table(cells) == K.table(pd.DataFrame(cells, dtype=object))
    assert K.table(cells) != K.table(dict(cells, gpus=[8, 17]))
