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


def _exporter_class():
    """nbconvert's HTMLExporter without the pass it makes over the finished page with BeautifulSoup.

    nbconvert 7 re-parses the whole page in pure Python to give ``<img>`` tags without one a
    placeholder ``alt`` and cells a ``tabindex``: about 1 s of a fresh ``aisize report`` on the 2-core
    dev machine (its 800 kB are mostly inline SVG). The report has no ``<img>`` and no code cells to
    focus, so its exporter
    registers the same two filters and renders the template directly (tests/test_report.py
    compares the two on a report).
    """
    from nbconvert import HTMLExporter, TemplateExporter
    from nbconvert.filters.highlight import Highlight2HTML
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

    class ReportExporter(HTMLExporter):
        def from_notebook_node(self, nb, resources=None, **kw):
            # HTMLExporter.from_notebook_node (nbconvert 7.17) up to its BeautifulSoup pass
            info = nb.metadata.get("language_info", {})
            lexer = info.get("pygments_lexer", info.get("name", None))
            resources = self._init_resources(resources)
            self.register_filter("highlight_code", self.filters.get(
                "highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)))
            self.register_filter("filter_data_type", WidgetsDataTypeFilter(
                notebook_metadata=self._nb_metadata, parent=self, resources=resources))
            return TemplateExporter.from_notebook_node(self, nb, resources, **kw)

    return ReportExporter


def exporter(*, stock: bool = False):
    """An nbconvert HTMLExporter using the aisize template, with inputs and prompts hidden (``stock``:
    nbconvert's own class, with its BeautifulSoup pass; :func:`_exporter_class`)."""
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    cls = HTMLExporter if stock else _exporter_class()
    # optimistic_validation: the notebook is checked once, after the last of its 13 preprocessors, not
    # after each of them
    exp = cls(template_name=TEMPLATE_NAME, extra_template_basedirs=[str(TEMPLATES)], optimistic_validation=True,
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
