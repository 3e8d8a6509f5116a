"""The app's one piece of state: a scenario (dict form), its last valid plan, and who listens.

Every edit arrives from the browser, so it is untrusted: :meth:`AppState.set`
applies it to a copy of the scenario dict, validates the copy with
:func:`aisize.scenario.from_dict` and plans it; only when both succeed does the
copy become the state and the listeners see the new plan. Otherwise the state
and the plan stay as they were and the message (no traceback) is returned for
the page to show next to the control. Planning goes through the state's
:class:`~aisize.plan.incremental.PlanCache`: a move re-plans only the workloads whose inputs it changed.

The scenario as loaded (a preset, a file, a reset) is kept as ``origin``: each edit's title,
description and workload names are derived from it (:func:`aisize.app.edits.follow`), so they
never claim what an edit changed.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable

from aisize.app.ahead import PlanAhead
from aisize.app.controls import uploaded_text
from aisize.app.edits import follow
from aisize.plan import Plan, plan
from aisize.plan.incremental import PlanCache
from aisize.scenario import DEFAULT_PRESET, ScenarioError, from_dict, preset, to_dict

# What a planner or validation failure may raise; anything else is a bug and propagates.
INPUT_ERRORS = (ScenarioError, ValueError, ArithmeticError, KeyError, TypeError)
MAX_MESSAGE_CHARS = 600
MAX_UPLOAD_BYTES = 1_000_000


def message(error: Exception) -> str:
    """A short, plain message for the page: the error's text without its class or a traceback."""
    text = str(error).strip() or type(error).__name__
    text = text.replace("invalid scenario:\n  ", "").replace("\n  ", "; ")
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + " …"


def load_failure(error: Exception) -> str:
    """The page's words when loading a file (a scenario, a config.json, a calibration) failed.

    An input error's own message; for anything else (memory running out, a bug) still a plain line, since a
    widget callback's exception shows nothing on the page. The unexpected ones are logged with their traceback.
    """
    if isinstance(error, INPUT_ERRORS):
        return message(error)
    logging.getLogger(__name__).error("loading a file failed", exc_info=error)
    if isinstance(error, MemoryError):
        return "the file could not be loaded: the server ran out of memory reading it"
    return f"the file could not be loaded ({type(error).__name__})"


def upload_text(value) -> tuple[str, str]:
    """(text, "yaml"|"json") of one uploaded scenario file (FileUpload's value). Raises ScenarioError."""
    try:
        name, text = uploaded_text(value, "scenario file (.yaml, .yml or .json)", MAX_UPLOAD_BYTES)
    except ValueError as error:
        raise ScenarioError(str(error)) from None
    return text, "json" if name.lower().endswith(".json") else "yaml"


def set_path(data: dict, path: tuple, value) -> dict:
    """A deep copy of ``data`` with ``path`` (keys and list indexes) set to ``value``.

    A workload's ``gpus`` and ``target_days`` exclude each other (the schema wants
    exactly one), so setting one clears the other.
    """
    out = copy.deepcopy(data)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    if len(path) == 3 and path[0] == "workloads" and path[2] in ("gpus", "target_days") and value is not None:
        node["target_days" if path[2] == "gpus" else "gpus"] = None
    return out


class AppState:
    """The scenario being edited, its last valid plan, and the callbacks run after each change."""

    def __init__(self, data: dict | None = None):
        self.origin = from_dict(data) if data is not None else preset(DEFAULT_PRESET)  # the scenario as loaded
        self.data: dict = to_dict(self.origin)
        self._origin_data = (self.origin, to_dict(self.origin))  # the origin's dict, written once for each origin
        self.cache = PlanCache()  # a move re-plans only the workloads whose inputs it changed
        self.plan: Plan = plan(self.origin, self.cache)
        self.listeners: list[Callable[[Plan], None]] = []
        self.ahead = PlanAhead(self)  # the next slider step, planned while the page waits

    @property
    def scenario(self):
        return self.plan.scenario

    def workloads(self, kind: str) -> list[tuple[int, str]]:
        """(index in ``workloads``, name) of each workload of ``kind`` (training, inference, data-prep)."""
        return [(i, w["name"]) for i, w in enumerate(self.data["workloads"]) if w["kind"] == kind]

    def set(self, path: tuple, value) -> str | None:
        """Set one field; plan; notify. Returns None, or the message of why it was refused."""
        try:
            candidate = set_path(self.data, path, value)
        except (KeyError, IndexError, TypeError) as error:
            return f"{'.'.join(map(str, path))}: cannot be set ({error})"
        return self.replace(candidate)

    def load(self, data) -> str | None:
        """Take a whole scenario dict as loaded (preset, upload, reset): its names are as written."""
        return self.replace(data, loaded=True)

    def _scenario(self, data, loaded: bool):
        """(scenario, its dict) of ``data`` as an edit (the origin's names followed) or as loaded."""
        scenario = from_dict(data)
        fields = to_dict(scenario)  # written once a move (it was three times, and the origin's each move)
        if not loaded:
            if self._origin_data[0] is not self.origin:
                self._origin_data = (self.origin, to_dict(self.origin))
            followed = follow(self.origin, self._origin_data[1], scenario, fields)
            if followed != fields:
                scenario = from_dict(followed)
                fields = to_dict(scenario)
        return scenario, fields

    def plan_edited(self, edit: Callable[[dict], dict]) -> tuple[dict, Plan]:
        """(fields, plan) of the scenario ``edit`` makes of the data (a copy: :func:`set_path`), as :meth:`replace`
        would make them, leaving the state as it is (:class:`~aisize.app.ahead.PlanAhead` plans the next slider
        step with it). Raises what they raise."""
        scenario, fields = self._scenario(edit(self.data), loaded=False)
        return fields, plan(scenario, self.cache)

    def replace(self, data, loaded: bool = False) -> str | None:
        """Take a whole scenario dict: an edit of several fields, or (``loaded``) a new scenario. Returns
        None, or why it was refused."""
        self.ahead.cancel()
        try:
            scenario, fields = self._scenario(data, loaded)
            new_plan = self.ahead.take(fields, loaded)  # the plan of this scenario made ahead, if it was
            if new_plan is None:
                new_plan = plan(scenario, self.cache)
        except INPUT_ERRORS as error:
            return message(error)
        except MemoryError:  # a widget callback's exception shows nothing: the page says so (issue 46.4)
            logging.getLogger(__name__).error("planning ran out of memory", exc_info=True)
            return ("the plan could not be made: the server ran out of memory planning this scenario; the "
                    "last plan is kept")
        self.data, self.plan = fields, new_plan
        if loaded:
            self.origin = scenario
        for listener in list(self.listeners):
            listener(new_plan)
        return None

    def subscribe(self, listener: Callable[[Plan], None]) -> None:
        self.listeners.append(listener)
