"""A hand-out, not a log (issue 49): a figure too small for the unit its column promises reads in a smaller unit of
its kind, shown in the cell, never as "0.0000418"; every table cell keeps three significant figures.

Worked from xe9680-genai (`aisize preset xe9680-genai > x.yaml; aisize size x.yaml`): the LoRA 70B job reads
41.8 kB/s (0.0000418 GB/s) and the full 8B job 224 kB/s; the CLI's workloads table heads the column
"read [GB/s]". 1 GB/s = 1e6 kB/s, so 0.0000418 GB/s = 41.8 kB/s; 1 day = 86,400 s, so 1e-5 days = 864 ms.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from aisize import format as F


@pytest.mark.parametrize("value, unit, expected", [
    (0.0000418, "GB/s", "41.8 kB/s"), (0.000224, "GB/s", "224 kB/s"), (0.00892, "GB/s", None),  # 3 figures
    (0.0004, "GB", "400 kB"), (0.0005, "GiB", "524 KiB"), (1e-5, "days", "864 ms"), (4e-4, "s", "400 µs"),
    (2e-4, "kW", "0.200 W"), (-3e-5, "GB/s", "-30.0 kB/s"),
    (0.0004, "IO/s", "< 0.001"), (-0.0004, "tokens/s", "> -0.001"),  # no smaller unit: bounded, not zero
    (1e-15, "GB/s", "< 0.001 B/s"),  # still tiny in the smallest unit
    (0.0, "GB/s", None), (0.001, "GB/s", None), (2e-5, "", None), (None, "GB/s", None), (math.nan, "GB/s", None),
])
def test_a_figure_too_small_for_its_unit(value, unit, expected):
    assert F.small(value, unit) == expected


def test_a_cell_keeps_three_significant_figures_without_noise():
    assert [F.in_unit(x, "GB") for x in (2.90, 112, 0.0, None, math.nan, math.inf)] == [
        "2.90", "112", "0", "", "", "unbounded"]
    assert F.in_unit(0.0000418, "GB/s") == "41.8 kB/s" and F.in_unit(1234.5, "GB/s") == "1,234"


def test_table_cells_under_a_unit_say_a_tiny_figure_in_its_own_unit():
    frame = pd.DataFrame({"workload": ["LoRA 70B", "Full 8B", "chat"], "read_gb_per_s": [0.0000418, 0.000224, 0.536],
                          "checkpoint_gb": [2.90, 112.0, None], "wait_hours": [0.0004, 2.0, 0.5]})
    cells = F.table_cells(frame)
    assert cells["read [GB/s]"] == ["41.8 kB/s", "224 kB/s", "0.536"]
    assert cells["checkpoint [GB]"] == ["2.90", "112", ""]
    assert cells["wait [h]"] == ["1.44 s", "2", "0.500"]  # 0.0004 h x 3,600 s/h
    text = F.text_table(frame)
    assert "0.0000418" not in text and "41.8 kB/s" in text


def test_the_cli_workloads_of_xe9680_read_in_kb_per_s():
    from aisize.plan import plan
    from aisize.present.summary import summary_text
    from aisize.scenario import preset

    text = summary_text(plan(preset("xe9680-genai")))
    assert "read [GB/s]: 41.8 kB/s" in text and "read [GB/s]: 224 kB/s" in text
    assert "checkpoint [GB]: 2.90" in text and "checkpoint [GB]: 112" in text
    assert "0.0000" not in text
