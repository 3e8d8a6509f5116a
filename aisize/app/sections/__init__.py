"""The app's sections (one tab each). Each edits fields of the one scenario and shows the plan.

A section builds its controls, binds each to a scenario field (:meth:`Section.bind`),
and on every new plan re-reads its controls from the scenario (``sync``) and
refreshes its figures and charts (``update``). Only the section on screen
updates at once; the others are marked stale and update when shown
(:meth:`Section.show`), so a slider move costs one section's work and the page
opens fast.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets

from aisize.app import controls as K
from aisize.app.ahead import SLIDERS, next_value
from aisize.app.edits import model_label
from aisize.app.state import AppState, set_path

OWN_MODEL = "(the workload's own model)"  # a Model dropdown's value for a model that is no catalog id


class Kept:
    """The last value built for each kind of key: ``get((kind, *inputs), build)`` builds only when the inputs
    differ from the last ones of that kind (compared by ==), so a move that leaves a table's inputs alone sends
    nothing for it and builds no DataFrame."""

    def __init__(self):
        self._last: dict = {}

    def get(self, key: tuple, build):
        kept = self._last.get(key[0])
        if kept is None or kept[0] != key[1:]:
            kept = self._last[key[0]] = (key[1:], build())
        return kept[1]


class Section:
    """Base class: a titled box with controls, an error line, figures and charts."""

    title = ""

    def __init__(self, state: AppState):
        self.state = state
        self.error = K.error_box()
        self.active = False  # on screen
        self.stale = True  # a plan arrived while hidden
        self._syncing = False
        self.view = widgets.VBox(layout=widgets.Layout(padding="6px 4px"))
        state.subscribe(self._on_plan)

    # binding controls to scenario fields

    def bind(self, widget, path: Callable[[], tuple | None], convert: Callable = lambda v: v) -> None:
        """On a user change of ``widget``, set the scenario field ``path()`` to ``convert(value)``."""
        def changed(change) -> None:
            if self._syncing:
                return
            where = path()
            if where is None:
                return
            try:
                value = convert(change["new"])
            except (TypeError, ValueError) as error:
                K.assign(self.error, "value", K.error_html(str(error)))
                return
            refused = self.state.set(where, value)
            if refused:
                K.assign(self.error, "value", K.error_html(refused))
            elif isinstance(widget, SLIDERS) and change["old"] != change["new"]:  # the next key step, while idle
                self._plan_ahead(widget, where, convert, 1 if change["new"] > change["old"] else -1)

        widget.observe(changed, names="value")

    def _plan_ahead(self, widget, where: tuple, convert: Callable, direction: int) -> None:
        step = next_value(widget, direction)
        if step is None:
            return
        try:
            value = convert(step)
        except (TypeError, ValueError):
            return
        self.state.ahead.schedule(lambda data: set_path(data, where, value))

    def quietly(self, assignments: Callable[[], None]) -> None:
        """Run control assignments without sending them back to the state."""
        self._syncing = True
        try:
            assignments()
        finally:
            self._syncing = False

    def _on_plan(self, plan) -> None:
        K.assign(self.error, "value", "")
        self.quietly(self.sync)
        if self.active:
            self.update(plan)
        else:
            self.stale = True

    def refresh(self) -> None:
        """Update now if on screen, else when next shown (for section-local controls)."""
        if self.active:
            self.update(self.state.plan)
        else:
            self.stale = True

    def show(self) -> None:
        """The tab is on screen: bring figures and charts up to date."""
        self.active = True
        if self.stale:
            self.stale = False
            self.update(self.state.plan)

    def hide(self) -> None:
        self.active = False

    # for subclasses

    def sync(self) -> None:
        """Set the controls from ``self.state.data``."""

    def update(self, plan) -> None:
        """Refresh figures and charts from a plan (called while on screen)."""


def selected(dropdown: widgets.Dropdown, choices: list[tuple[int, str]]) -> None:
    """Offer ``choices`` ((index, name) pairs) in ``dropdown``, keeping the selection when still offered."""
    opts = [(name, index) for index, name in choices]
    if list(dropdown.options) != opts:
        keep = dropdown.value if dropdown.value in [i for i, _ in choices] else (choices[0][0] if choices else None)
        dropdown.options = opts
        if keep is not None:
            dropdown.value = keep


def show_model(dropdown: widgets.Dropdown, ids: list[str], model, resolved) -> None:
    """Offer the catalog ``ids`` in a Model ``dropdown`` and select the workload's ``model`` (its dict form;
    ``resolved``: validated). A model that is no catalog id (an uploaded config.json, fields in the file) is
    offered first, as :data:`OWN_MODEL`, so the dropdown never names a model the workload no longer has."""
    offered = K.options(ids)
    if not isinstance(model, str):
        offered = [(model_label(resolved)[:120], OWN_MODEL)] + offered
    if [tuple(o) for o in dropdown.options] != offered:
        dropdown.options = offered
    K.assign(dropdown, "value", model if isinstance(model, str) else OWN_MODEL)
