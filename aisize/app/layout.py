"""The page: a scenario bar (preset, upload, download, reset; the cluster's server; a workload's model
from an uploaded config.json) above one tab per section.

``build_app()`` is what ``notebooks/app.ipynb`` calls. It opens on
:data:`aisize.scenario.DEFAULT_PRESET`. The first tab draws its charts at once;
the others when first shown, so the page opens fast.
"""

from __future__ import annotations

import gc
import html
from dataclasses import dataclass

import ipywidgets as widgets

from aisize import catalog
from aisize.app import controls as K
from aisize.app.chart_bundle import use_offline_charts
from aisize.app.model_upload import ModelUpload
from aisize.app.move_timer import install_from_env
from aisize.app.scenario_yaml import ScenarioYaml
from aisize.app.sections import Section
from aisize.app.sections.accuracy import AccuracySection
from aisize.app.sections.cluster import ClusterSection
from aisize.app.sections.compare import CompareSection
from aisize.app.sections.cost import CostSection
from aisize.app.sections.datapath import DataPathSection
from aisize.app.sections.fleet import FleetSection
from aisize.app.sections.inference import InferenceSection
from aisize.app.sections.network import NetworkSection
from aisize.app.sections.queueing import QueueingSection
from aisize.app.sections.summary import SummarySection, download_link
from aisize.app.sections.training import TrainingSection
from aisize.app.state import AppState, load_failure, upload_text
from aisize.scenario import DEFAULT_PRESET, loads, preset, preset_names, to_dict

SECTIONS = (TrainingSection, InferenceSection, DataPathSection, NetworkSection, QueueingSection, ClusterSection,
            FleetSection, CostSection, SummarySection, CompareSection, AccuracySection)
TITLES = tuple(cls.title for cls in SECTIONS)

CSS = """<style>
.aisize-bar {background:#f3f6fa; border:1px solid #d8e0ea; border-radius:6px; padding:6px 10px; margin-bottom:6px}
.aisize-title h2 {margin:2px 0 0 0; font-size:17px} .aisize-title p {margin:2px 0; color:#555; font-size:12px}
.aisize-cards {display:flex; flex-wrap:wrap; gap:6px; margin:4px 0}
.aisize-card {border:1px solid #d8e0ea; border-left:4px solid #4c78a8; border-radius:4px; padding:4px 8px;
  min-width:118px; background:#fff}
.aisize-card.good {border-left-color:#54a24b} .aisize-card.bad {border-left-color:#e45756; background:#fff5f5}
.aisize-label {font-size:11px; color:#666} .aisize-value {font-size:17px; font-weight:600; color:#1f2d3d}
.aisize-unit {font-size:11px; color:#666}
.aisize-error {color:#a4161a; background:#fff0f0; border:1px solid #f5c2c7; border-radius:4px; padding:4px 8px;
  margin:4px 0; white-space:normal}
.aisize-note {color:#666; font-size:12px} .aisize-h {margin:10px 0 2px 0; font-size:14px; color:#1f2d3d}
.aisize-table {border-collapse:collapse; font-size:12px; margin:2px 0}
.aisize-table th {background:#eef2f7; text-align:left; padding:3px 8px; border-bottom:1px solid #ccd}
.aisize-table td {padding:2px 8px; border-bottom:1px solid #eee; text-align:right}
.aisize-table td:first-child {text-align:left}
.aisize-findings {padding-left:16px; margin:2px 0} .aisize-finding {margin:2px 0; font-size:13px}
.aisize-finding.problem {color:#a4161a} .aisize-finding.warning {color:#8a5a00}
.aisize-download {margin-right:14px; font-size:13px}
</style>"""


# the tabs of one workload at a time, and their workload dropdown (its value: the workload's index)
WORKLOAD_PICKERS = {"Training": "job", "Inference": "service"}


@dataclass
class App:
    """The page's parts; ``view`` is what the notebook displays.

    A section is built the first time its tab is shown (or asked for, ``app[title]``):
    the page opens with the widgets of the first tab only.
    """

    state: AppState
    sections: dict  # title -> Section, those built so far
    preset: widgets.Dropdown
    upload: widgets.FileUpload
    reset: widgets.Button
    server: widgets.Dropdown
    model: ModelUpload
    status: widgets.HTML
    title: widgets.HTML
    download: widgets.HTML
    tabs: widgets.Tab
    view: widgets.VBox

    def __getitem__(self, title: str) -> Section:
        if title not in self.sections:
            index = TITLES.index(title)
            section = self.sections[title] = SECTIONS[index](self.state)
            self.tabs.children[index].children = (section.view,)
        return self.sections[title]

    def open_tab(self, title: str) -> Section:
        """Select the tab ``title`` (as a click would) and return its section."""
        self.tabs.selected_index = TITLES.index(title)
        return self[title]


def server_options(data: dict) -> list[tuple[str, str]]:
    """The servers a scenario may name: the catalog's and its own rows."""
    own = [(f"{r['id']} (the scenario's own row)", r["id"]) for r in data["hardware"]["servers"]]
    return own + [(f"{s.id} ({s.gpus}× {s.accelerator})", s.id) for s in catalog.servers]


def no_echo() -> None:
    """No ``echo_update`` back to the page for each value it sends (ipywidgets 8 echoes every update for other
    clients of the same kernel; the app's kernel has one page, and its widget manager drops an echo of its own
    update: it applies only ``update`` messages, which the kernel still sends for a value its callbacks change). One
    message fewer a move (the kernel's send, the server's relay, the page's task)."""
    from ipywidgets.widgets import widget

    widget.JUPYTER_WIDGETS_ECHO = False


def build_app(display: bool = True, data: dict | None = None) -> App:
    """Build the page (on ``data``, default the built-in default scenario), wire it, and display it."""
    use_offline_charts()
    no_echo()
    state = AppState(data)
    choose = K.dropdown("Preset", preset_names(), DEFAULT_PRESET if data is None else None,
                        "Load a built-in scenario", style={"description_width": "50px"},
                        layout=widgets.Layout(width="300px"))
    upload = widgets.FileUpload(accept=".yaml,.yml,.json", multiple=False, description="Load file",
                                tooltip="Load a scenario file (YAML or JSON) from your computer",
                                layout=widgets.Layout(width="120px"))
    reset = widgets.Button(description="Reset", icon="undo", tooltip="Back to the default scenario",
                           layout=widgets.Layout(width="90px"))
    # hardware.server sizes every workload: a control of the scenario's, not of one job (issue 49.4)
    server = K.dropdown("Server (whole cluster)", server_options(state.data), state.data["hardware"]["server"],
                        "The server model, with its GPUs, that every workload of the scenario is sized on",
                        style={"description_width": "150px"}, layout=widgets.Layout(width="520px"))
    model = ModelUpload(state)
    status, title, download = widgets.HTML(), widgets.HTML(), widgets.HTML()
    tabs = widgets.Tab(children=[widgets.Box() for _ in SECTIONS], titles=list(TITLES))
    bar = widgets.VBox([widgets.HBox([choose, upload, reset, download],
                                     layout=widgets.Layout(align_items="center")), server, model.view, title, status])
    bar.add_class("aisize-bar")
    view = widgets.VBox([widgets.HTML(CSS), bar, tabs])
    app = App(state, {}, choose, upload, reset, server, model, status, title, download, tabs, view)

    syncing: list = []
    saved: list = [None]  # the scenario's fields the download link holds
    scenario_yaml = ScenarioYaml()

    def show_scenario(plan) -> None:
        d = state.data
        offered = server_options(d)
        syncing.append(True)  # a new option list moves the value: that is no edit
        try:
            if [tuple(o) for o in server.options] != offered:
                server.options = offered
            K.assign(server, "value", d["hardware"]["server"])
        finally:
            syncing.pop()
        paragraphs = "".join(f"<p>{html.escape(p)}</p>" for p in d["description"].split("\n\n") if p.strip())
        K.assign(title, "value", f"<div class='aisize-title'><h2>{html.escape(d['name'])}</h2>{paragraphs}</div>")
        # the YAML only when the scenario's fields changed: the same fields are the same text (dumps); and then
        # written again only for the fields that changed (ScenarioYaml: the bar 1.1 -> 0.6 ms a slider move)
        fields = to_dict(plan.scenario)
        if fields != saved[0]:
            saved[0] = fields
            K.assign(download, "value", download_link("scenario.yaml", scenario_yaml.text(fields).encode(),
                                                      "Save scenario"))

    def take(new_data, what: str) -> None:
        refused = state.load(new_data)
        K.assign(status, "value", K.error_html(f"{what}: {refused}") if refused else "")

    def on_preset(change) -> None:
        if change["new"] is not None:
            take(to_dict(preset(change["new"])), f"preset {change['new']}")

    def on_upload(change) -> None:
        if not change["new"]:
            return
        try:
            text, fmt = upload_text(change["new"])
            take(to_dict(loads(text, fmt=fmt)), "uploaded file")
        except Exception as error:  # MemoryError too: the page says so rather than nothing
            K.assign(status, "value", K.error_html(f"uploaded file: {load_failure(error)}"))
        upload.value = ()

    def on_reset(_) -> None:
        if choose.value == DEFAULT_PRESET:
            take(to_dict(preset(DEFAULT_PRESET)), "reset")
        choose.value = DEFAULT_PRESET

    def on_server(change) -> None:
        if not syncing and change["new"] is not None and change["new"] != state.data["hardware"]["server"]:
            refused = state.set(("hardware", "server"), change["new"])
            K.assign(status, "value", K.error_html(f"server: {refused}") if refused else "")
            if refused:
                show_scenario(state.plan)  # the control goes back to the scenario's server

    followed: set = set()

    def follow_workload(title_: str) -> None:
        """The bar's "Model of" names the workload the Training or Inference tab shows (it named the first
        workload above another service's tab), and follows that tab's workload dropdown."""
        picker = getattr(app[title_], WORKLOAD_PICKERS[title_], None)
        if picker is None:
            return

        def pick(_=None) -> None:
            if picker.value is not None and picker.value in [v for _, v in model.workload.options]:
                K.assign(model.workload, "value", picker.value)

        if id(picker) not in followed:
            followed.add(id(picker))
            picker.observe(pick, names="value")
        pick()

    def on_tab(change) -> None:
        for title_, section in app.sections.items():
            if TITLES.index(title_) != change["new"]:
                section.hide()
        if change["new"] is not None:
            app[TITLES[change["new"]]].show()
            if TITLES[change["new"]] in WORKLOAD_PICKERS:
                follow_workload(TITLES[change["new"]])

    state.subscribe(show_scenario)
    show_scenario(state.plan)
    choose.observe(on_preset, names="value")
    upload.observe(on_upload, names="value")
    reset.on_click(on_reset)
    server.observe(on_server, names="value")
    tabs.observe(on_tab, names="selected_index")
    tabs.selected_index = 0
    app[TITLES[0]].show()
    follow_workload(TITLES[0])
    if display:
        from IPython.display import display as show

        show(view)
        # the page lives as long as its kernel: its ~140,000 objects leave the cycle collector's full scans,
        # which otherwise stopped one move in about seventy for 75 ms
        gc.collect()
        gc.freeze()
        install_from_env()  # a benchmark's timer of each widget message, only where AISIZE_MOVE_TIMER is set
    return app
