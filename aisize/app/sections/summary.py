"""Summary: bill of materials, workloads, findings; downloads (JSON, CSV) and the customer report.

Downloads are ``data:`` links built in the kernel (nothing is fetched from a
server path); the report is :func:`aisize.report.render` of the current
scenario, offered as a download when done.
"""

from __future__ import annotations

import base64
import html
import tempfile
from pathlib import Path

import ipywidgets as widgets

from aisize import format as F
from aisize.app import controls as K
from aisize.app.sections import Section
from aisize.present.assumption_text import assumption_sentences
from aisize.present.export import to_json, write_csv
from aisize.present.findings import finding_text
from aisize.present.network_text import bom_table
from aisize.present.summary import workload_tables
from aisize.scenario import dumps

SEVERITY_ICON = {"problem": "⛔", "warning": "⚠", "info": "ℹ"}
MIME = {".json": "application/json", ".csv": "text/csv", ".yaml": "application/yaml", ".html": "text/html",
        ".pdf": "application/pdf"}


def download_link(name: str, payload: bytes, label: str | None = None) -> str:
    """An anchor that saves ``payload`` as ``name`` (a data: URI; no request to any server)."""
    mime = MIME.get(Path(name).suffix, "application/octet-stream")
    b64 = base64.b64encode(payload).decode("ascii")
    return (f"<a class='aisize-download' download='{html.escape(name, quote=True)}' "
            f"href='data:{mime};base64,{b64}'>⬇ {html.escape(label or name)}</a>")


def findings_html(findings) -> str:
    items = [f"<li class='aisize-finding {html.escape(f.severity)}'>{SEVERITY_ICON.get(f.severity, '')} "
             f"<b>{html.escape(f.area)}</b>: {html.escape(finding_text(f))}</li>"
             for f in findings if f.area != "assumptions"]
    return "<ul class='aisize-findings'>" + "".join(items) + "</ul>"


def workloads_html(plan) -> str:
    """One compact table per kind of workload (present.summary.workload_tables), each in a box that scrolls
    sideways if a long name still makes it wider than the page (the workload's name is its first column)."""
    parts = [f"<div class='aisize-note'><b>{html.escape(title)}</b></div>"
             f"<div class='aisize-workloads' style='overflow-x:auto; max-width:100%'>"
             f"{K.table(frame, headers=headers)}</div>" for title, frame, headers in workload_tables(plan)]
    # a workload's and its model's names read on one line, left-aligned like the words they are
    style = ("<style>.aisize-workloads td:nth-child(-n+2) {white-space:nowrap; text-align:left}</style>")
    return style + "".join(parts) + ("<p class='aisize-note'>Every figure of every workload: workloads.csv under "
                                     "Downloads.</p>")


class SummarySection(Section):
    title = "Summary"

    def __init__(self, state):
        self.figures, self.bom, self.workloads = widgets.HTML(), widgets.HTML(), widgets.HTML()
        self.findings, self.assumptions, self.downloads = widgets.HTML(), widgets.HTML(), widgets.HTML()
        self.report_format = K.dropdown("Report format", [("HTML", "html"), ("PDF", "pdf"), ("HTML and PDF", "both")],
                                        "html", "What the customer report is rendered to")
        self.customer = widgets.Text(value="", description="Customer", placeholder="(optional)",
                                     tooltip="Customer name shown on the report's title page",
                                     style={"description_width": K.LABEL_WIDTH},
                                     layout=widgets.Layout(width=K.CONTROL_WIDTH))
        self.make_report = widgets.Button(description="Make report", icon="file", button_style="primary",
                                          tooltip="Render the customer report (HTML/PDF) of this scenario")
        self.report_status = widgets.HTML()
        super().__init__(state)
        self.make_report.on_click(lambda _: self.render_report())
        report = widgets.VBox([self.report_format, self.customer, widgets.HBox([self.make_report]),
                               self.report_status])
        self.view.children = [self.figures, K.heading("Bill of materials"), self.bom,
                              K.heading("Findings"), self.findings, K.heading("Workloads"), self.workloads,
                              K.heading("Downloads"), self.downloads, K.heading("Customer report"), report,
                              K.heading("Assumptions used"), self.assumptions]

    def update(self, plan) -> None:
        problems = sum(f.severity == "problem" for f in plan.findings)
        warnings = sum(f.severity == "warning" for f in plan.findings)
        K.assign(self.figures, "value", K.cards([
            K.card("summary.gpus", "GPUs installed", plan.gpus, plan.accelerator),
            K.card("summary.servers", "Servers", plan.servers, plan.server),
            K.card("summary.racks", "Racks", plan.racks, "racks"),
            K.card("summary.power", "Server power", F.power(plan.power_watts), ""),
            K.card("summary.storage_units", "Storage", plan.storage.units, plan.storage.system),
            K.card("summary.raw_tb", "Raw capacity needed", F.bytes_si(plan.storage.capacity_bytes["raw_bytes"]), ""),
            K.card("summary.problems", "Problems", problems, "", state="bad" if problems else "good"),
            K.card("summary.warnings", "Warnings", warnings, "", state="bad" if warnings else "")]))
        K.assign(self.bom, "value", K.table(bom_table(plan)))
        K.assign(self.workloads, "value", workloads_html(plan))
        K.assign(self.findings, "value", findings_html(plan.findings))
        # the sentences the CLI, the report and the findings say (present.assumption_text), not `key = value`
        K.assign(self.assumptions, "value", "<ul class='aisize-note aisize-assumptions'>" + "".join(
            f"<li>{html.escape(line)}</li>" for line in assumption_sentences(plan.scenario, plan.assumptions, plan))
            + "</ul>")
        self._downloads(plan)

    def _downloads(self, plan) -> None:
        links = [download_link("scenario.yaml", dumps(plan.scenario).encode(), "scenario (YAML)"),
                 download_link("plan.json", to_json(plan).encode(), "plan (JSON)")]
        with tempfile.TemporaryDirectory() as tmp:
            for path in write_csv(plan, tmp):
                links.append(download_link(path.name, path.read_bytes(), f"{path.stem} (CSV)"))
        K.assign(self.downloads, "value", "<div class='aisize-downloads'>" + " ".join(links) + "</div>")

    def render_report(self) -> None:
        """Render the report of the current scenario and offer it for download (or say why not)."""
        from aisize.report import ReportError, render

        self.make_report.disabled = True
        self.report_status.value = "<p class='aisize-note'>Rendering the report…</p>"
        try:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "scenario.yaml"
                path.write_text(dumps(self.state.plan.scenario), encoding="utf-8")
                result = render(scenario_path=path, fmt=self.report_format.value, out_dir=Path(tmp) / "out",
                                customer=self.customer.value.strip()[:200] or None, name="aisize-report")
                links = [download_link(p.name, p.read_bytes(), f"report ({p.suffix[1:].upper()})")
                         for p in (result.html_path, result.pdf_path) if p is not None]
            self.report_status.value = (f"<p>Report ready in {result.seconds:.1f} s: " + " ".join(links) + "</p>")
        except (ReportError, ValueError, OSError) as error:
            self.report_status.value = K.error_html(f"the report could not be made: {error}")
        finally:
            self.make_report.disabled = False
