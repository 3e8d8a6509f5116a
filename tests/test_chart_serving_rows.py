"""The latency chart's rows are one a rate with its four series, which each panel folds into its two lines (issue
51: 8.7 kB a new curve where a row a point was 21 kB). Drawn, they are the chart of a row a point: the same SVG as the
long-form chart (a row per rate, metric and statistic, each panel filtering its metric), for a curve of the default
service and a made-up one; a row with another value draws another chart."""

from __future__ import annotations

from dataclasses import replace

import altair as alt
import pandas as pd
import pytest

from aisize import charts
from aisize.charts.serving import SERIES_COLUMNS
from aisize.plan import latency_curve, plan
from aisize.scenario import DEFAULT_PRESET, preset

vl_convert = pytest.importorskip("vl_convert")


def _long_form(curve: pd.DataFrame, ttft: float, tpot: float, rate: float, factor: int) -> dict:
    """The chart as drawn from a row a point (the rows before the fold), as a spec."""
    chart = charts.serving_latency(curve, ttft, tpot, rate, rate_factor=factor).to_dict()
    wide = chart["datasets"][charts.SERVING_CURVE]
    chart["datasets"][charts.SERVING_CURVE] = [
        {"requests_per_s": row["requests_per_s"], "metric": series.split()[0], "statistic": series.split()[1],
         "ms": row[series]} for series in SERIES_COLUMNS for row in wide]
    for panel in chart["hconcat"]:
        lines = panel["layer"][0]
        metric = panel["title"]
        fold, calculate, *rest = lines["transform"]
        assert fold["fold"] == [f"{metric} mean", f"{metric} p95"] and "calculate" in calculate
        lines["transform"] = [{"filter": alt.FieldEqualPredicate(field="metric", equal=metric).to_dict()}, *rest]
    return chart


def _curves():
    p = plan(preset(DEFAULT_PRESET))
    i = next(i for i in p.inference if i.estimate is not None and i.estimate.feasible)
    yield latency_curve(replace(i, replicas=1)), i.ttft_target_seconds, i.tpot_target_seconds, i.requests_per_s, \
        max(i.replicas, 1)
    made_up = pd.DataFrame({"requests_per_s": [0.1, 1.3, 2.7], "ttft_seconds": [0.1, 0.2, 0.9],
                            "ttft_p95_seconds": [0.2, 0.3, 1.5], "tpot_seconds": [0.01, 0.02, 0.05],
                            "tpot_p95_seconds": [0.02, 0.03, 0.08]})
    yield made_up, 0.5, 0.05, 9.0, 7


@pytest.mark.parametrize("case", list(_curves()), ids=["default service", "made up"])
def test_the_folded_rows_draw_the_long_forms_chart(case):
    curve, ttft, tpot, rate, factor = case
    folded = charts.serving_latency(curve, ttft, tpot, rate, rate_factor=factor).to_dict()
    long_form = _long_form(curve, ttft, tpot, rate, factor)
    svg = vl_convert.vegalite_to_svg(folded)
    assert svg == vl_convert.vegalite_to_svg(long_form)
    long_form["datasets"][charts.SERVING_CURVE][0]["ms"] *= 2  # another value: another chart
    assert svg != vl_convert.vegalite_to_svg(long_form)


def test_a_row_holds_each_series_in_ms():
    curve = next(_curves())[0]
    rows = charts.serving_latency_data(curve)[charts.SERVING_CURVE]
    assert len(rows) == len(curve)
    for row, (_, point) in zip(rows, curve.iterrows()):
        assert row["requests_per_s"] == point["requests_per_s"]
        assert {k: row[k] for k in SERIES_COLUMNS} == {k: float(point[c]) * 1e3 for k, c in SERIES_COLUMNS.items()}
