"""Built-in scenarios (``data/presets/*.yaml``), replaying the cases in docs/DESIGN.md section 1."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aisize.catalog import data_dir

if TYPE_CHECKING:
    from aisize.scenario.model import Scenario

# The app opens with this one: a single server, small and instantly understandable.
DEFAULT_PRESET = "xe9680-genai"


def _folder():
    return data_dir() / "presets"


def preset_names() -> list[str]:
    """Names of the built-in scenarios, sorted."""
    return sorted(p.stem for p in _folder().glob("*.yaml"))


def preset(name: str = DEFAULT_PRESET) -> Scenario:
    """A built-in scenario by name."""
    from aisize.scenario.io import ScenarioError, load  # here: the names above serve a CLI's help cheaply

    names = preset_names()
    if name not in names:
        shown = repr(name) if len(repr(name)) <= 80 else repr(name)[:80] + "..."
        raise ScenarioError(f"preset {shown} does not exist; allowed: {', '.join(names)}")
    return load(_folder() / f"{name}.yaml")
