"""Customer reports: one parameterized notebook rendered headless to HTML and PDF.

    from aisize.report import render
    result = render(preset="xe9680-genai", fmt="both", out_dir="reports", customer="ACME")
    result.html_path, result.pdf_path, result.seconds

Steps: validate (parameters, paths, scenario) -> execute (papermill) -> HTML
(nbconvert, no remote references) -> PDF (Chromium). Only the PDF needs a
browser: without one, "pdf" and "both" are refused before execution and
"html" works. Any failure is a
:class:`ReportError` naming the step; a failed execution keeps its partial
notebook in the output folder.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from aisize.report.execute import ReportError
from aisize.report.parameters import ParameterError

__all__ = ["render", "ReportResult", "ReportError", "ParameterError", "NOTEBOOK", "FORMATS"]

FORMATS = ("html", "pdf", "both")


def _notebook_path() -> Path:
    here = Path(__file__).resolve()
    checkout = here.parents[2] / "notebooks" / "report.ipynb"
    return checkout if checkout.is_file() else here.parent / "report.ipynb"


NOTEBOOK = _notebook_path()


@dataclass(frozen=True)
class ReportResult:
    """Where the report went and how long it took (``notebook_path`` None unless the executed notebook
    was kept: ``render(keep_notebook=True)``)."""

    html_path: Path | None
    pdf_path: Path | None
    notebook_path: Path | None
    seconds: float


def customer_sections(sections: Sequence[str] | None, accuracy_appendix: bool) -> list[str]:
    """The sections a report holds: the chosen ones (default: every section but the accuracy appendix, which
    is aisize's own validation record, not the customer's plan), with the appendix added on request."""
    from aisize.report.contents import HEADINGS

    chosen = list(sections) if sections is not None else [n for n in HEADINGS if n != "accuracy"]
    if accuracy_appendix and "accuracy" not in chosen:
        chosen.append("accuracy")
    return chosen


def _validate(scenario_path, preset, fmt, out_dir, title, customer, sections, name, notebook, compare_path=None):
    from aisize.report import parameters as P
    from aisize.report import contents as C
    from aisize.scenario import DEFAULT_PRESET, ScenarioError, load
    from aisize.scenario import preset as load_preset

    if fmt not in FORMATS:
        raise ParameterError(f"format: {fmt!r} is not one of {', '.join(FORMATS)}")
    if scenario_path is not None and preset is not None:
        raise ParameterError("give a scenario file or a preset, not both")
    values = {"title": title if title is not None else C.DEFAULT_TITLE,
              "customer": customer if customer is not None else ""}
    if sections is not None:
        values["sections"] = sections
    try:
        if compare_path is not None:
            values["compare_path"] = str(P.scenario_file(compare_path))
            load(values["compare_path"])
        if scenario_path is not None:
            path = P.scenario_file(scenario_path)
            values.update(scenario_path=str(path), preset="")
            scenario, default_name = load(path), path.stem
        else:
            values.update(scenario_path="", preset=P.coerce("preset", preset or DEFAULT_PRESET, "str"))
            scenario, default_name = load_preset(values["preset"]), values["preset"]
    except ScenarioError as exc:
        raise ParameterError(str(exc)) from None
    values = P.validate(values, notebook)
    if "sections" in values:
        try:
            C.check_sections(values["sections"])
        except ValueError as exc:
            raise ParameterError(str(exc)) from None
    out = P.output_dir(out_dir)
    stem = P.slug(default_name) if name is None else name
    paths = {s: P.output_path(out, stem, s) for s in (".ipynb", ".html", ".pdf")}
    if fmt != "html":  # say so before minutes of execution, not after
        from aisize.report.pdf import chromium_path, missing_chromium_message

        if chromium_path() is None:
            raise ParameterError(f"format: {fmt!r}: {missing_chromium_message()}")
    footer = " · ".join(t for t in (values["title"], values["customer"], scenario.name) if t)
    return values, paths, footer


def render(scenario_path=None, preset=None, fmt: str = "both", out_dir=".", title=None,
           customer=None, sections: Sequence[str] | None = None, *, name: str | None = None,
           notebook=None, progress: Callable[[str, float], None] | None = None,
           compare_path=None, keep_notebook: bool = False, accuracy_appendix: bool = False) -> ReportResult:
    """Render a report of a scenario file or a built-in preset to HTML, PDF or both.

    Parameters
    ----------
    scenario_path : a .yaml/.yml/.json scenario file; give this or ``preset`` (default preset if neither).
    preset : a built-in scenario name (``aisize.scenario.preset_names()``).
    fmt : "html", "pdf" or "both" (the PDF is printed from the HTML, which is kept).
    out_dir : folder for the executed notebook, the HTML and the PDF (created if missing).
    title, customer : shown on the title page and in the page footer.
    sections : section names to include [default: all but the accuracy appendix]; see
        ``aisize.report.sections.SECTIONS``.
    name : file name stem of the outputs [default: from the preset or the scenario file].
    notebook : the report notebook [default: notebooks/report.ipynb].
    progress : called with (step, seconds) after each step: validate, execute, HTML, PDF.
    compare_path : scenario B of a comparison report (its "compare" section); see aisize.report.compare.
    keep_notebook : keep the executed notebook beside the HTML and PDF [default: False: the folder holds what
        a customer gets; a failed execution keeps its partial notebook whatever this says].
    accuracy_appendix : add the appendix of aisize's accuracy against published figures [default: False].
    """
    from aisize.report.execute import execute, start_kernel, stop_kernel
    from aisize.report.html import to_html

    start = time.perf_counter()
    notebook = Path(notebook) if notebook is not None else NOTEBOOK
    tick = [start]

    def done(step: str) -> None:
        now = time.perf_counter()
        if progress:
            progress(step, now - tick[0])
        tick[0] = now

    # the kernel boots and imports the report code while the inputs are checked (in the notebook's folder:
    # the output folder is not checked yet; the notebook reads and writes no file by a relative path)
    kernel = start_kernel(notebook.parent)
    try:
        if not isinstance(keep_notebook, bool) or not isinstance(accuracy_appendix, bool):
            raise ParameterError(f"keep_notebook={keep_notebook!r}, accuracy_appendix={accuracy_appendix!r}: "
                                 "each must be True or False")
        if sections is None or isinstance(sections, (list, tuple)):  # anything else: refused by _validate
            sections = customer_sections(sections, accuracy_appendix)
        values, paths, footer = _validate(scenario_path, preset, fmt, out_dir, title, customer,
                                          sections, name, notebook, compare_path)
    except BaseException:
        stop_kernel(kernel)
        raise
    done("validate")
    execute(notebook, paths[".ipynb"], values, kernel=kernel)
    done("execute")
    html_path = to_html(paths[".ipynb"], paths[".html"], title=values["title"])
    done("HTML")
    pdf_path = None
    if fmt in ("pdf", "both"):
        from aisize.report.pdf import to_pdf

        pdf_path = to_pdf(html_path, paths[".pdf"], footer=footer)
        done("PDF")
        if fmt == "pdf":
            html_path.unlink()
            html_path = None
    notebook_path = paths[".ipynb"]
    if not keep_notebook:  # the folder holds what a customer gets: the HTML and the PDF
        notebook_path.unlink(missing_ok=True)
        notebook_path = None
    return ReportResult(html_path, pdf_path, notebook_path, time.perf_counter() - start)
