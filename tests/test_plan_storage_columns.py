"""The IO blend's one definition (aisize.plan.bom.storage_columns), which the plan's table and the Data path tab read:
each workload's rates in GB/s and a total row that adds up every numeric column but the read share, the blend's."""

import math

import pytest

from aisize.plan import plan
from aisize.plan.bom import STORAGE_RATES, storage_columns, storage_table
from aisize.scenario import preset, preset_names
from aisize.units import GB


@pytest.mark.parametrize("name", preset_names())
def test_the_total_row_adds_up_the_workloads_and_keeps_the_blends_read_share(name):
    s = plan(preset(name)).storage
    cols = storage_columns(s.workloads, s.read_share)
    n = len(s.workloads)
    assert cols["name"][n:] == ["total"] and cols["kind"][n:] == [""] and cols["read_share"][n] == s.read_share
    for rate in STORAGE_RATES:
        shown = cols[rate.replace("bytes_per_s", "gb_per_s")]
        assert shown[:n] == [w[rate] / GB for w in s.workloads]
        assert math.isclose(shown[n], math.fsum(w[rate] for w in s.workloads) / GB, rel_tol=1e-12, abs_tol=1e-15)
    for k in ("read_iops", "write_iops", "metadata_ops_per_s"):
        assert math.isclose(cols[k][n], math.fsum(w[k] for w in s.workloads), rel_tol=1e-12, abs_tol=1e-12)


def test_the_plans_table_is_the_columns():
    p = plan(preset(preset_names()[0]))
    t = storage_table(p)
    cols = storage_columns(p.storage.workloads, p.storage.read_share)
    assert list(t.columns) == list(cols) and all(t[c].tolist() == v for c, v in cols.items())
