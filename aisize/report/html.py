"""Executed notebook -> one self-contained HTML file, with no request to any host.

The ``aisize`` nbconvert template (``templates/aisize``) extends the ``lab``
template and empties its CDN blocks (require.js, MathJax, Mermaid, widgets);
code cells are hidden, charts are inline SVG, and the result is checked for
any remaining reference to a remote host before it is written.
"""

from __future__ import annotations

import re
from pathlib import Path

from aisize.report.execute import ReportError

TEMPLATES = Path(__file__).resolve().parent / "templates"
TEMPLATE_NAME = "aisize"
# Cells that are for people reading the notebook, and papermill's bookkeeping cells.
REMOVE_TAGS = ("report-hide", "parameters", "injected-parameters", "papermill-error-cell-tag")

# An attribute or CSS url() whose value is a URL to another host: http(s)://, or protocol-relative //.
_REMOTE = re.compile(
    r"""(?:\b(?:src|href|action|poster|data|srcset|xlink:href|formaction)\s*=\s*["']?\s*"""
    r"""|url\(\s*["']?\s*|@import\s+["']?)(?:[a-z][a-z0-9+.-]*:)?//[^\s"'()<>]*""",
    re.IGNORECASE)


def remote_references(html: str) -> list[str]:
    """Every attribute, ``url()`` or ``@import`` in ``html`` that points at another host."""
    return [m.group(0) for m in _REMOTE.finditer(html)]


def exporter():
    """An nbconvert HTMLExporter using the aisize template, with inputs and prompts hidden."""
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    exp = HTMLExporter(template_name=TEMPLATE_NAME, extra_template_basedirs=[str(TEMPLATES)],
                       exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
    exp.register_preprocessor(TagRemovePreprocessor(remove_cell_tags=set(REMOVE_TAGS), enabled=True),
                              enabled=True)
    return exp


def render_html(notebook) -> str:
    """The HTML text of an executed notebook node (``nbformat.NotebookNode``)."""
    body, _ = exporter().from_notebook_node(notebook)
    return body


def to_html(notebook_path: Path, html_path: Path, *, title: str = "") -> Path:
    """Write the HTML report of the executed notebook at ``notebook_path`` to ``html_path``.

    Parameters
    ----------
    notebook_path : an executed .ipynb (papermill output).
    html_path : where the .html goes.
    title : the page title [default: the notebook's file name].
    """
    import nbformat

    try:
        nb = nbformat.read(notebook_path, as_version=4)
        nb.metadata["title"] = title or Path(notebook_path).stem
        html = render_html(nb)
    except Exception as exc:  # template or notebook problem: name the step, keep the notebook
        raise ReportError("HTML", f"{type(exc).__name__}: {exc}", notebook_path=notebook_path) from exc
    remote = remote_references(html)
    if remote:
        raise ReportError("HTML", f"the page refers to remote hosts: {remote[:3]}",
                          notebook_path=notebook_path)
    html_path.write_text(html, encoding="utf-8")
    return html_path
