"""Every command's text output fits a 120-column terminal, on every preset (issue 49.5): wide tables wrap
their text cells or become one record per block, prose wraps under its indent. Machine formats (--json,
YAML and JSON scenario files) are data, not a hand-out, and are not held to it."""

from __future__ import annotations

import pytest

from aisize.cli import main
from aisize.catalog import data_dir
from aisize.scenario import preset_names

WIDTH = 120
PRESETS = preset_names()


def preset_path(name: str):
    return data_dir() / "presets" / f"{name}.yaml"


def _lines(capsys, argv) -> list[str]:
    assert main(argv) == 0, argv
    out = capsys.readouterr().out
    assert out.strip(), argv
    return out.splitlines()


def _assert_fits(lines, argv):
    wide = [line for line in lines if len(line) > WIDTH]
    assert not wide, (argv, len(wide), wide[0][:200])


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("command", ["size", "fleet"])
def test_plan_commands_fit(capsys, command, name):
    argv = [command, str(preset_path(name))]
    _assert_fits(_lines(capsys, argv), argv)


@pytest.mark.parametrize("name", PRESETS)
def test_preset_yaml_and_sweep_fit(capsys, name):
    path = str(preset_path(name))
    for argv in (["preset", name], ["sweep", path, "--vary", "policies.mfu=0.3:0.5:3"],
                 ["sweep", path, "--vary", "policies.memory_headroom=0.1,0.1"]):
        _assert_fits(_lines(capsys, argv), argv)


@pytest.mark.parametrize("name", PRESETS)
def test_compare_fits(capsys, name):
    argv = ["compare", str(preset_path(name)), str(preset_path("shared-cluster"))]
    _assert_fits(_lines(capsys, argv), argv)


@pytest.mark.parametrize("argv", [["presets"], ["validate"],
                                  ["validate", "--family", "training"], ["model", "deepseek-r1"],
                                  ["model", "llama-3-8b"], ["kernels", "list"]])
def test_other_commands_fit(capsys, argv):
    _assert_fits(_lines(capsys, argv), argv)


def test_every_command_is_covered():
    """A new subcommand is added here too (app and team serve; calibrate and report need input files and
    print a few lines of paths; their help is argparse's, wrapped to the terminal)."""
    from aisize.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert set(sub.choices) == {"presets", "preset", "size", "fleet", "sweep", "compare", "report", "validate",
                                "calibrate", "kernels", "model", "app", "team"}
