"""Scenarios: the one input type shared by the API, the CLI, the app and the reports.

The names below are imported on first use (PEP 562): the command line's parser reads
:data:`DEFAULT_PRESET` without importing the scenario model (pydantic, pandas: 0.4 s).
"""

from aisize import lazy

_WHERE = {**dict.fromkeys(("ScenarioError", "dumps", "from_dict", "load", "loads", "to_dict"), "io"),
          **dict.fromkeys(("SCHEMA_VERSION", "Cost", "DataPrep", "Hardware", "Inference", "JobStream", "Layout",
                           "Phase", "Policies", "Pool", "Scenario", "Training", "When"), "model"),
          **dict.fromkeys(("DEFAULT_PRESET", "preset", "preset_names"), "presets")}

__all__ = ["SCHEMA_VERSION", "Scenario", "Training", "Inference", "DataPrep", "Hardware",
           "Policies", "Layout", "JobStream", "Pool", "Phase", "When", "Cost", "ScenarioError", "load", "loads",
           "dumps", "from_dict", "to_dict", "preset", "preset_names", "DEFAULT_PRESET"]

__getattr__, __dir__ = lazy.exports(__name__, _WHERE)
