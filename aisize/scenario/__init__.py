"""Scenarios: the one input type shared by the API, the CLI, the app and the reports."""

from aisize.scenario.io import ScenarioError, dumps, from_dict, load, loads, to_dict
from aisize.scenario.model import (SCHEMA_VERSION, Cost, DataPrep, Hardware, Inference, JobStream, Layout,
                                   Phase, Policies, Pool, Scenario, Training, When)
from aisize.scenario.presets import DEFAULT_PRESET, preset, preset_names

__all__ = ["SCHEMA_VERSION", "Scenario", "Training", "Inference", "DataPrep", "Hardware",
           "Policies", "Layout", "JobStream", "Pool", "Phase", "When", "Cost", "ScenarioError", "load", "loads", "dumps", "from_dict", "to_dict",
           "preset", "preset_names", "DEFAULT_PRESET"]
