"""The scenario bar's model row: a workload chooser, a ``config.json`` upload, and where the model came from.

An uploaded Hugging Face ``config.json`` becomes the chosen workload's model
(``{hf_config: <file name>, config: <its content>}``, as a scenario file writes it), so a
saved scenario carries the config with it. The file is untrusted: its size, encoding,
JSON and architecture are checked before the scenario sees it, and a refusal is shown
next to the control while the last valid plan stays.
"""

from __future__ import annotations

import html

import ipywidgets as widgets

from aisize import models
from aisize.app import controls as K
from aisize.app.sections import selected
from aisize.app.state import AppState, load_failure
from aisize.models.hf_config import parse_config
from aisize.report.provenance import model_origin

# A config.json is 1-10 kB; a saved scenario embeds it and must stay under the scenario file limit.
MAX_CONFIG_BYTES = 100_000
WHAT = "Hugging Face config.json"


def config_from_upload(value) -> tuple[str, dict]:
    """(file name, config dict) of one uploaded ``config.json`` (a FileUpload's value).

    Raises ValueError with a message for the page: not one file, too large, not UTF-8, not
    JSON (with the line and column), not a JSON object, or not a model aisize reads (an
    unknown model_type lists the supported ones; a missing or bad key is named).
    """
    name, text = K.uploaded_text(value, WHAT, MAX_CONFIG_BYTES)
    config = parse_config(text, name)
    models.from_hf_config(config, source=name)
    return name, config


class ModelUpload:
    """Choose a training or inference workload; upload a config.json for its model; see its origin."""

    def __init__(self, state: AppState):
        self.state = state
        self.workload = K.dropdown("Model of", [], None, "The workload whose model an uploaded config.json replaces",
                                   style={"description_width": "60px"}, layout=widgets.Layout(width="300px"))
        self.upload = widgets.FileUpload(accept=".json", multiple=False, description="Load config.json",
                                         tooltip="A Hugging Face config.json (read here, never fetched from the Hub)",
                                         layout=widgets.Layout(width="185px"))
        self.info = widgets.HTML(layout=widgets.Layout(flex="1 1 auto"))
        self.view = widgets.HBox([self.workload, self.upload, self.info], layout=widgets.Layout(align_items="center"))
        self.workload.observe(lambda _: self.show(), names="value")
        self.upload.observe(self._on_upload, names="value")
        state.subscribe(lambda _plan: self.show())
        self.show()

    def show(self, refused: str | None = None) -> None:
        """Offer the scenario's workloads that have a model; show the chosen one's origin, or ``refused``."""
        workloads = self.state.data["workloads"]
        selected(self.workload, [(i, w["name"]) for i, w in enumerate(workloads) if "model" in w])
        if refused:
            K.assign(self.info, "value", K.error_html(f"uploaded model refused: {refused}"))
            return
        text = ""
        if self.workload.value is not None:
            o = model_origin(self.state.scenario.workloads[self.workload.value].model)
            text = f"{o.name[:80]}, {K.num(o.params / 1e9)} B parameters: {o.origin[:200]}"
        K.assign(self.info, "value", f"<span class='aisize-note' data-key='model.origin'>{html.escape(text)}</span>")

    def _on_upload(self, change) -> None:
        if not change["new"]:
            return
        try:
            if self.workload.value is None:
                raise ValueError("this scenario has no training or inference workload to give a model")
            name, config = config_from_upload(change["new"])
            refused = self.state.set(("workloads", self.workload.value, "model"), {"hf_config": name, "config": config})
        except Exception as error:  # MemoryError too: the page says so rather than nothing
            refused = load_failure(error)
        if refused:
            self.show(refused)
        self.upload.value = ()
