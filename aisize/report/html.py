"""Executed notebook -> one self-contained HTML file, with no request to any host.

The ``aisize`` nbconvert template (``templates/aisize``) extends the ``lab``
template and empties its CDN blocks (require.js, MathJax, Mermaid, widgets);
code cells are hidden, charts are inline SVG, and the result is parsed and
checked for any element or attribute still referring to a remote host before
it is written.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from aisize.report.execute import ReportError

TEMPLATES = Path(__file__).resolve().parent / "templates"
TEMPLATE_NAME = "aisize"
# Cells that are for people reading the notebook, and papermill's bookkeeping cells.
REMOVE_TAGS = ("report-hide", "parameters", "injected-parameters", "papermill-error-cell-tag")

# Attributes whose value the browser loads (or navigates to); srcset holds several URLs.
URL_ATTRIBUTES = frozenset({"src", "href", "action", "poster", "data", "srcset", "xlink:href", "formaction",
                            "background", "cite", "longdesc", "ping", "manifest", "codebase", "archive"})
_URL = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)  # http(s)://, ftp://, protocol-relative //
_SCRIPT_URL = re.compile(r"""\b(?:https?|ftp|wss?):(?://|\\/\\/)[^\s"'<>]+""", re.IGNORECASE)
_CSS_URL = re.compile(r"""(?:url\(\s*["']?\s*|@import\s+["']?)((?:[a-z][a-z0-9+.-]*:)?//[^\s"'()<>]*)""",
                      re.IGNORECASE)


class _RemoteFinder(HTMLParser):
    """Collects remote URLs from elements and attributes only: text, escaped or not, is never a request."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in = None  # "style" or "script" while inside one

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in URL_ATTRIBUTES:
                urls = [u.strip().split()[0] for u in value.split(",") if u.strip()] if name == "srcset" else [value]
                self.found += [f"{name}={u.strip()}" for u in urls if _URL.match(u)]
            elif name == "style":
                self.found += [f"style: {m}" for m in _CSS_URL.findall(value)]
        self._in = tag if tag in ("style", "script") else None

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        self._in = None

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in == "style":  # CSS, not text
            self.found += [f"<style>: {m}" for m in _CSS_URL.findall(data)]
        elif self._in == "script":  # code that could fetch
            self.found += [f"<script>: {m}" for m in _SCRIPT_URL.findall(data)]


def remote_references(html: str) -> list[str]:
    """Every attribute, ``url()`` or ``@import`` in ``html`` that points at another host.

    The page is parsed: only elements' attributes and ``<style>`` content count, so a URL quoted
    as text (a description showing an ``<img src=...>`` snippet, escaped) is not a reference.
    """
    finder = _RemoteFinder()
    finder.feed(html)
    finder.close()
    return finder.found


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
