"""The command line: `size` and `sweep` outputs, and exit status 2 with a named field on bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aisize.cli import main


@pytest.fixture
def scenario(tmp_path, capsys):
    assert main(["preset", "xe9680-genai"]) == 0
    path = tmp_path / "s.yaml"
    path.write_text(capsys.readouterr().out)
    return path


def test_size_prints_a_summary(scenario, capsys):
    assert main(["size", str(scenario)]) == 0
    out = capsys.readouterr().out
    assert "Bill of materials" in out and "Findings" in out


def test_size_json_csv_excel(scenario, tmp_path, capsys):
    assert main(["size", str(scenario), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpus"] > 0
    assert main(["size", str(scenario), "--csv", str(tmp_path / "csv")]) == 0
    assert (tmp_path / "csv" / "bom.csv").exists()
    assert main(["size", str(scenario), "--excel", str(tmp_path / "plan.xlsx")]) == 0
    assert (tmp_path / "plan.xlsx").stat().st_size > 0


def test_sweep_prints_and_writes(scenario, tmp_path, capsys):
    # every job of the preset is timed by the step-time model: the MFU policy times them when it is the override
    scenario.write_text(scenario.read_text().replace("  training_time: step-time", "  training_time: mfu"))
    assert main(["sweep", str(scenario), "--vary", "policies.mfu=0.3:0.5:3"]) == 0
    out = capsys.readouterr().out
    rows = out.strip().splitlines()
    # a header and one row per value for the outputs that change; the ones that do not on a line of their own
    assert rows[0].startswith("policies.mfu") and "training [days]" in rows[0]
    assert [r.split()[0] for r in rows[1:4]] == ["0.300", "0.400", "0.500"]
    assert "The same at every value of policies.mfu:" in out
    # headers in words with their units, numbers as aisize.format writes them (no "7.331e+05" capital)
    assert "capital_usd" not in out and "capital $" in out and "power [kW]" in out and "e+0" not in out
    assert main(["sweep", str(scenario), "--vary", "hardware.server=dgx-h100,dgx-b200",
                 "--csv", str(tmp_path / "t.csv")]) == 0
    assert (tmp_path / "t.csv").read_text().count("\n") == 3


def test_sweep_that_changes_nothing_says_so(scenario, capsys):
    # the README's example: the LoRA job needs one server for any target from 1 to 8 days (it takes 0.575)
    assert main(["sweep", str(scenario), "--vary", "workloads.0.target_days=1:8:8"]) == 0
    out = capsys.readouterr().out
    assert "changes none of the plan's key outputs" in out and "a longer target cannot save a GPU" in out
    assert "workloads.0.target [days]" not in out  # the path as typed, never a header made of it
    assert len(out.strip().splitlines()) < 12  # a message, not eight identical rows
    # a sweep that does change the plan is a table headed by the path as typed, one row per value
    assert main(["sweep", str(scenario), "--vary", "workloads.0.target_days=0.05,1"]) == 0
    out = capsys.readouterr().out
    assert "workloads.0.target_days" in out and "changes none" not in out
    assert [line.split()[0] for line in out.splitlines() if re.match(r"^ +[\d.]+ +\d", line)] == ["0.0500", "1"]


@pytest.mark.parametrize("edit, expected", [
    (lambda t: t.replace("  mfu: 0.4", "  mfuu: 0.4"), ["policies.mfuu", "unknown key"]),
    (lambda t: t.replace("requests_per_s: 20.0", "requests_per_s: lots"), ["requests_per_s", "lots"]),
    (lambda t: t.replace("  mfu: 0.4", "  mfu: 1.5"), ["policies.mfu", "less than or equal to 0.9"]),
    (lambda t: t.replace("server: dell-xe9680-h100", "server: nope"), ["hardware: server 'nope'", "allowed:", "dgx-h100"]),
    (lambda t: t.replace("method: lora", "method: dora"), ["workloads.0.training.method", "'full', 'lora' or 'qlora'"]),
    (lambda t: t + "\n  - [unbalanced", ["not valid YAML"]),
])
def test_bad_scenario_exits_2_naming_the_field(scenario, capsys, edit, expected):
    scenario.write_text(edit(scenario.read_text()))
    assert main(["size", str(scenario)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for text in expected:
        assert text in err


def test_missing_file_and_bad_vary_exit_2(scenario, tmp_path, capsys):
    assert main(["size", str(tmp_path / "none.yaml")]) == 2
    assert "cannot be read" in capsys.readouterr().err
    assert main(["sweep", str(scenario), "--vary", "policies.mfu"]) == 2
    assert "--vary" in capsys.readouterr().err
    assert main(["sweep", str(scenario), "--vary", "policies.nope=1,2"]) == 2
    assert "policies.nope" in capsys.readouterr().err


def test_unwritable_output_exits_2(scenario, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["size", str(scenario), "--csv", str(blocker / "sub")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_validate_subcommand_runs_the_validation_suite(capsys):
    from aisize.cli import main

    assert main(["validate", "--family", "storage"]) == 0
    out = capsys.readouterr().out
    assert "ckpt-llama-3-405b" in out and "MFU range" in out


def test_report_subcommand_rejects_a_bad_name_before_running(capsys, tmp_path):
    from aisize.cli import main

    assert main(["report", "--preset", "xe9680-genai", "--out", str(tmp_path), "--name", "../x"]) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_presets_prints_one_line_per_preset_its_name_first(capsys):
    # ../shared/tools/check_consistency.py (and scripts) read the first word of each line as a preset's name
    from aisize.cli import main
    from aisize.scenario import preset_names

    assert main(["presets"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip()]
    assert [ln.split()[0].rstrip(":") for ln in lines] == list(preset_names())
    assert all(len(ln) <= 120 for ln in lines)


def test_a_closed_pipe_ends_the_command_quietly():
    import subprocess
    import sys

    # `aisize validate` prints about 77 kB line by line: read one line and close the pipe, so that the
    # writer (more than a pipe buffer of 64 kB still to write) meets the closed pipe
    p = subprocess.Popen([sys.executable, "-m", "aisize.cli", "validate"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=Path(__file__).parents[1])
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 0 and first.strip()
    assert "Traceback" not in err and "BrokenPipe" not in err
