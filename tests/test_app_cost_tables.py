"""The Cost tab's tables written from the rows' columns (``aisize.app.controls.frame_columns``) hold what the
DataFrames held, cell for cell and type for type (issue 51 item 2: the capital, workloads and prices tables' frames
were 1 to 2.5 ms of a Cost move's 5 to 7): for every preset's capital and operating lines, workload costs and prices,
and for columns of every kind pandas infers (text, ints, floats, missing values, booleans and mixes, which go through
the frame)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from aisize.app import controls as K
from aisize.app.sections import cost
from aisize.plan import plan
from aisize.present.export import cost_rows, cost_table
from aisize.scenario import preset, preset_names


def _typed(columns: dict[str, list]) -> dict[str, list]:
    """Each cell as (type name, value), NaN as the string "nan" (NaN equals nothing, itself included)."""
    return {name: [(type(v).__name__, "nan" if isinstance(v, float) and math.isnan(v) else v) for v in values]
            for name, values in columns.items()}


def _frames(rows, columns=None) -> dict[str, list]:
    frame = pd.DataFrame(list(rows), columns=columns)
    return {c: frame[c].tolist() for c in frame.columns}


@pytest.mark.parametrize("name", preset_names())
def test_every_presets_cost_tables_are_the_frames_tables(name):
    c = plan(preset(name)).cost
    cases = ((cost_rows(c), None), (cost.workload_cost_rows(c), cost.WORKLOAD_COLUMNS),
             (list(c.prices_used), cost.PRICE_COLUMNS))
    for rows, columns in cases:
        assert _typed(K.frame_columns(rows, columns)) == _typed(_frames(rows, columns))
    shown = pd.DataFrame(list(c.prices_used))[cost.PRICE_COLUMNS]
    assert K.table(K.frame_columns(c.prices_used, cost.PRICE_COLUMNS)) == K.table(shown)
    assert K.table(K.frame_columns(cost_rows(c))) == K.table(cost_table(plan(preset(name))))
    assert (K.table(K.frame_columns(cost.workload_cost_rows(c), cost.WORKLOAD_COLUMNS), formats={"usd": cost._usd})
            == K.table(cost.workload_costs(c), formats={"usd": cost._usd}))


@pytest.mark.parametrize("rows", [
    [{"a": "x", "b": 1}, {"a": None, "b": None}],  # text and ints with None: NaN, floats
    [{"a": "x", "b": 1}, {"c": 2}],  # keys a row lacks
    [{"b": 1}, {"b": 2.5}], [{"b": np.float64(1)}, {"b": 2}], [{"b": np.int64(3)}, {"b": 2}],  # numbers
    [{"b": 3}, {"b": 4}], [{"b": 2 ** 63}, {"b": 1}],  # ints; one too large for int64
    [{"b": True}, {"b": False}], [{"b": True}, {"b": None}], [{"b": True}, {"b": 1}],  # booleans: the frame
    [{"b": None}, {"b": None}], [{"b": "s"}, {"b": 1}], [{"b": float("nan")}, {"b": "s"}],  # no values, mixes
    [{"b": float("inf"), "a": ""}, {"b": -0.0, "a": "y"}], [],
])
def test_every_kind_of_column_is_the_frames(rows):
    assert _typed(K.frame_columns(rows)) == _typed(_frames(rows))
    if rows:
        columns = sorted({k for r in rows for k in r}, reverse=True)
        assert _typed(K.frame_columns(rows, columns)) == _typed(_frames(rows, columns))
    assert _typed(K.frame_columns(rows, ["a", "b"])) == _typed(_frames(rows, ["a", "b"]))
