"""Packages whose names import on first use (PEP 562), so that the command line and the app's launcher
start without importing what they do not run (pandas, pydantic, Altair: about 0.5 s each)."""

from __future__ import annotations

import sys
from importlib import import_module


def exports(package: str, where: dict[str, str]):
    """``(__getattr__, __dir__)`` for ``package``: each name of ``where`` (name -> its submodule) is
    read from ``package.<submodule>`` when first asked for; any other name is an AttributeError."""

    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f"{package}.{where[name]}"), name)

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__
