"""Packages that import their names on first use: the command line starts without pandas, pydantic or Altair."""

from __future__ import annotations

import subprocess
import sys

import pytest

import aisize.app
import aisize.calibrate
import aisize.scenario
import aisize.validation


def test_the_command_line_parser_imports_no_heavy_library():
    code = ("import sys\nfrom aisize.cli import build_parser\nbuild_parser()\n"
            "print(sorted(m for m in ('pandas', 'pydantic', 'altair', 'numpy', 'aisize.scenario.model') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("package", [aisize.scenario, aisize.validation, aisize.calibrate, aisize.app])
def test_every_listed_name_resolves_and_others_are_attribute_errors(package):
    for name in package.__all__:
        assert getattr(package, name) is not None
        assert name in dir(package)
    with pytest.raises(AttributeError, match=f"module '{package.__name__}' has no attribute 'nope'"):
        package.nope  # noqa: B018


def test_a_lazy_name_is_the_submodules_own():
    from aisize.scenario.io import load
    from aisize.validation.report import validate

    assert aisize.scenario.load is load and aisize.validation.validate is validate
