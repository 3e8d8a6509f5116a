"""Widget factories (labels with units, ranges, tooltips), figure cards, tables, and chart slots.

Shown figures are spans ``<span class='aisize-value' data-key=KEY>`` so tests and
the browser can read them back; every number goes through :mod:`aisize.format`. Widgets are only assigned when their value
changes, so unaffected outputs do not flicker.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Sequence

import altair as alt
import ipywidgets as widgets
import numpy as np
import pandas as pd
import traitlets

from aisize import format as F

LABEL_WIDTH = "165px"
CONTROL_WIDTH = "420px"
COLUMN_WIDTH = "440px"
# vega-embed's menu without "Open in Vega Editor" (an external site) and the source views.
EMBED_OPTIONS = {"actions": {"export": True, "source": False, "compiled": False, "editor": False}}


def _style(kwargs: dict) -> dict:
    kwargs.setdefault("style", {"description_width": LABEL_WIDTH})
    kwargs.setdefault("layout", widgets.Layout(width=CONTROL_WIDTH))
    return kwargs


def dropdown(label: str, options, value, tooltip: str, **kwargs) -> widgets.Dropdown:
    """A dropdown; ``options`` are values or (label, value) pairs."""
    return widgets.Dropdown(options=options, value=value, description=label, 
                            tooltip=tooltip, **_style(kwargs))


def float_slider(label: str, value: float, low: float, high: float, step: float, tooltip: str,
                 fmt: str = ".3g", **kwargs) -> widgets.FloatSlider:
    return widgets.FloatSlider(value=value, min=low, max=high, step=step, description=label,
                               tooltip=tooltip, readout_format=fmt,
                               continuous_update=False, **_style(kwargs))


def log_slider(label: str, value: float, low: float, high: float, tooltip: str, steps_per_decade: int = 20,
               fmt: str = ".4g", **kwargs) -> widgets.FloatLogSlider:
    """A slider over [low, high] in equal ratio steps (``steps_per_decade`` per factor 10)."""
    return widgets.FloatLogSlider(value=value, base=10, min=math.log10(low), max=math.log10(high),
                                  step=1.0 / steps_per_decade, description=label, 
                                  tooltip=tooltip, readout_format=fmt, continuous_update=False,
                                  **_style(kwargs))


def int_slider(label: str, value: int, low: int, high: int, step: int, tooltip: str, **kwargs) -> widgets.IntSlider:
    return widgets.IntSlider(value=value, min=low, max=high, step=step, description=label,
                             tooltip=tooltip, continuous_update=False,
                             **_style(kwargs))


def checkbox(label: str, value: bool, tooltip: str, **kwargs) -> widgets.Checkbox:
    """A labelled on/off switch, aligned with the other controls (label left, box right)."""
    return widgets.Checkbox(value=value, description=label, tooltip=tooltip, indent=True, **_style(kwargs))


def show_if(flag: bool, *controls) -> None:
    """Show and enable ``controls`` when ``flag``; else hide and disable them (a hidden slider is not moved)."""
    for c in controls:
        if hasattr(c, "disabled"):
            assign(c, "disabled", not flag)
        assign(c.layout, "display", None if flag else "none")


def error_box() -> widgets.HTML:
    """Where a refused change is explained (empty when all is well)."""
    return widgets.HTML("", layout=widgets.Layout(width="100%"))


def error_html(text: str | None) -> str:
    return "" if not text else f"<div class='aisize-error'>⚠ {html.escape(text)}</div>"


def uploaded_text(value, what: str, max_bytes: int) -> tuple[str, str]:
    """(file name, text) of the one file a FileUpload's ``value`` holds: untrusted, so its count,
    size and encoding are checked. Raises ValueError naming the file and ``what`` was expected."""
    files = list(value)
    if len(files) != 1:
        raise ValueError(f"upload one {what}")
    name, content = str(files[0].get("name", ""))[:200], bytes(files[0].get("content", b""))
    if len(content) > max_bytes:
        raise ValueError(f"{name}: {len(content):,} bytes; a {what} is at most {max_bytes:,}")
    try:
        return name, content.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not UTF-8 text") from None


def assign(widget, name: str, value) -> bool:
    """Set ``widget.name`` only when it differs (no message, no redraw otherwise).

    A value a selection widget does not offer is left alone (the control keeps its choice).
    """
    offered = getattr(widget, "_options_values", None)
    if name == "value" and offered is not None and value not in offered:
        return False
    if getattr(widget, name) != value:
        setattr(widget, name, value)
        return True
    return False


def num(x) -> str:
    """A number for display (:func:`aisize.format.num`: three significant figures, thousands separated)."""
    return F.num(x)


def card(key: str, label: str, value, unit: str = "", tooltip: str = "", *, state: str = "") -> str:
    """One headline figure: label above, value and unit below; ``state`` "bad"/"good" colours it.

    ``value`` is a :class:`aisize.format.Shown` (its own unit, then ``unit`` if given), text, or a
    number (:func:`num`)."""
    if isinstance(value, F.Shown):
        shown, unit = value.value, " ".join(u for u in (value.unit, unit) if u)
    else:
        shown = value if isinstance(value, str) else num(value)
    cls = f"aisize-card {state}".strip()
    return (f"<div class='{cls}' title='{html.escape(tooltip, quote=True)}'>"
            f"<div class='aisize-label'>{html.escape(label)}</div>"
            f"<div><span class='aisize-value' data-key='{html.escape(key)}'>{html.escape(shown)}</span>"
            f" <span class='aisize-unit'>{html.escape(unit)}</span></div></div>")


def cards(items: Iterable[str]) -> str:
    return "<div class='aisize-cards'>" + "".join(items) + "</div>"


class _Columns:
    """Columns of cells by name, read as :func:`aisize.format.table_cells` reads a DataFrame (``columns``, then
    ``frame[column].tolist()``), for a table whose cells are built as lists: no frame to build (a DataFrame of a
    few rows took 0.3 to 0.5 ms to make and read back)."""

    def __init__(self, columns: dict[str, list]):
        self.columns, self._columns = list(columns), columns

    def __getitem__(self, name: str) -> "_Cells":
        return _Cells(self._columns[name])


class _Cells(list):
    """A column's cells, with a Series' ``tolist``."""

    def tolist(self) -> list:
        return list(self)


_MISSING = object()


def _is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def frame_columns(rows: Sequence[dict], columns: Sequence[str] | None = None) -> dict[str, list]:
    """The columns ``pd.DataFrame(rows, columns=columns)`` holds, each as its ``tolist()`` gives it, for
    :func:`table`, without building the frame (0.3 to 1 ms a small table). Two kinds of column are written here as
    pandas infers them: text (str, with NaN for a None or a key a row lacks: pandas' str dtype) and numbers (not
    booleans, under 2**63: ints stay ints unless a float, a None or a lacking key makes the column floats, NaN for
    the missing); a table with any other column (booleans, mixed kinds, no values) is built through the frame."""
    names = list(dict.fromkeys(key for row in rows for key in row)) if columns is None else list(columns)
    out = {}
    for name in names:  # a row's keys first seen first, as pandas orders them
        values = [row.get(name, _MISSING) for row in rows]
        present = [v for v in values if v is not None and v is not _MISSING]
        holes = len(present) < len(values)
        if present and all(isinstance(v, str) for v in present):
            out[name] = [v if isinstance(v, str) else math.nan for v in values]
        elif present and all(_is_number(v) for v in present) and all(abs(v) < 2 ** 63 for v in present):
            if holes or not all(isinstance(v, (int, np.integer)) for v in present):
                out[name] = [math.nan if v is None or v is _MISSING else float(v) for v in values]
            else:
                out[name] = [int(v) for v in values]
        else:  # a huge int: pandas' uint64 or object
            frame = pd.DataFrame(list(rows), columns=columns)
            return {c: frame[c].tolist() for c in frame.columns}
    return out


def table(frame: pd.DataFrame | dict[str, list], *, cls: str = "aisize-table", formats: dict | None = None,
          headers: dict | None = None) -> str:
    """A DataFrame (or columns of cells by name: a dict of lists, cells of Python types) as an HTML table: headers
    with units and cells as :func:`aisize.format.table` shows them (``formats`` maps a column to a function of its
    value, ``headers`` a column to its header)."""
    shown = F.table_cells(_Columns(frame) if isinstance(frame, dict) else frame, formats, headers)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in shown)
    rows = ["<tr>" + "".join(f"<td>{html.escape(text)}</td>" for text in record) + "</tr>"
            for record in zip(*shown.values())]
    return f"<table class='{cls}'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def controls_column(children) -> widgets.VBox:
    """The fixed-width column of controls on a section's left."""
    return widgets.VBox(list(children), layout=widgets.Layout(width=COLUMN_WIDTH, min_width=COLUMN_WIDTH,
                                                              flex="0 0 auto"))


def figures_column(children) -> widgets.VBox:
    """The column of figures and charts right of the controls, taking the remaining width."""
    return widgets.VBox(list(children), layout=widgets.Layout(flex="1 1 auto", min_width="0",
                                                              padding="0 0 0 10px"))


# Tallest a long chart or table stands on a page before it scrolls in its own box [px]: the Accuracy tab's 131 cases
# and 82 serving runs made a page about 12,000 px tall (screenshot review 09:15)
SCROLL_HEIGHT_PX = 560


def scroll_box(child, max_height_px: int = SCROLL_HEIGHT_PX) -> widgets.Box:
    """``child`` in a box at most ``max_height_px`` tall that scrolls (its counts stay above it, whole)."""
    return widgets.Box([child], layout=widgets.Layout(max_height=f"{int(max_height_px)}px", overflow="auto",
                                                      flex_flow="column", flex="0 0 auto"))


def heading(text: str, note: str = "") -> widgets.HTML:
    extra = f"<span class='aisize-note'> — {html.escape(note)}</span>" if note else ""
    return widgets.HTML(f"<h3 class='aisize-h'>{html.escape(text)}{extra}</h3>")


# The param a slot's chart title reads (ChartSlot.show(title=...)): a new title needs no new chart. Its lines are
# split at "\n" (a Vega title of several lines): a title wider than the chart was cut at both ends ("ncy vs
# concurrency: shared storage (hpe-cray-e2000-enclosure) (marked: the plan's operating p").
TITLE = "chart_title"
TITLE_CHAR_PX, AXIS_PX = 7.0, 60  # a character of Vega's 13 px bold title font, generously; a y axis's width [px]


def title_lines(title: str, width_px: float) -> str:
    """``title`` in lines of at most ``width_px`` (at :data:`TITLE_CHAR_PX` a character), joined by "\n", broken only
    after ": " or before " (" outside parentheses (a name or a shape stays on one line); one line when it fits."""
    limit = max(20, int(width_px / TITLE_CHAR_PX))
    if len(title) <= limit:
        return title
    pieces, start, depth = [], 0, 0
    for k, ch in enumerate(title):
        if ch == "(" and depth == 0 and k > start and title[k - 1] == " ":
            pieces.append(title[start:k - 1])
            start = k
        elif ch == ":" and depth == 0 and title[k + 1:k + 2] == " ":
            pieces.append(title[start:k + 1])
            start = k + 2
        depth = max(0, depth + {"(": 1, ")": -1}.get(ch, 0))
    pieces.append(title[start:])
    lines = [pieces[0]]
    for piece in pieces[1:]:
        if len(lines[-1]) + 1 + len(piece) <= limit:
            lines[-1] += " " + piece
        else:
            lines.append(piece)
    return "\n".join(lines)


def _chart_width(spec) -> float:
    """The width of ``spec`` [px]: its plot's (its ``width`` where a number, else the charts' default) and a y axis,
    summed over the panels of a side-by-side chart."""
    from aisize.charts import WIDTH

    panels = getattr(spec, "hconcat", None)
    if isinstance(panels, list) and panels:
        return sum(_chart_width(panel) for panel in panels)
    width = getattr(spec, "width", None)
    return (width if isinstance(width, (int, float)) else WIDTH) + AXIS_PX


class PageChart(alt.JupyterChart):
    """An ``alt.JupyterChart`` whose params the page only takes from the kernel's changesets (``_py_to_js_updates``).

    Altair's page code runs the Vega view once for a ``_params`` change and again for a changeset, so a move that
    set a marker and new rows ran it twice (issue 51: about half of a rate move's chart work in the page). Here the
    page never holds params (``_params`` reaches it as ``{}``, and it registers no param listeners, which would
    send each new value back to the kernel); :class:`ChartSlot` sends them as signal updates beside the rows, one
    Vega run. ``params`` still follows in the kernel (``chart.params.<name>``).
    """

    _params = traitlets.Dict().tag(sync=True, to_json=lambda value, widget: {})

    def _should_send_property(self, key, value):
        return key != "_params" and super()._should_send_property(key, value)


class ChartSlot:
    """One offline Altair chart on the page, rebuilt only when its structure (``key``) changes.

    Between rebuilds, markers (the chart's params) and, for a chart drawn from named datasets, new rows
    go to the drawn view in one Vega changeset (JupyterChart's ``_py_to_js_updates``: signals, then data):
    no Altair construction or validation, no re-embedding, one run of the view.
    """

    def __init__(self, width: str = "auto"):
        self.chart: PageChart | None = None
        self.key = None
        self.data: dict[str, list] = {}  # the rows of each named dataset now drawn
        self.box = widgets.Box(layout=widgets.Layout(width=width))
        self.title_px = 0.0  # the width the title is broken to [px] (the drawn chart's)

    def show(self, key, build: Callable[[], alt.TopLevelMixin], params: dict | None = None,
             data: dict[str, list] | None = None, title: str | None = None) -> bool:
        """Draw ``build()`` unless ``key`` equals the last one drawn; else set the chart's ``params``
        (markers the chart reads, e.g. :data:`aisize.charts.MARK`), send the ``data`` rows (dataset
        name -> rows, those ``build()`` puts in the chart's ``datasets``) that changed, and set
        ``title`` (the title then reads the :data:`TITLE` param). Returns True if it rebuilt."""
        params = dict(params or {})
        if self.chart is not None and key == self.key:
            if title is not None:
                params[TITLE] = title_lines(title, self.title_px)
            self._send({name: value for name, value in params.items() if getattr(self.chart.params, name) != value},
                       {name: rows for name, rows in (data or {}).items()
                        if self.data.get(name) is not rows and self.data.get(name) != rows})
            return False
        spec = build()
        if title is not None:
            self.title_px = _chart_width(spec)
            spec = spec.add_params(alt.param(name=TITLE, value=title_lines(title, self.title_px))).properties(
                title=alt.TitleParams(text=alt.ExprRef(expr=f"split({TITLE}, '\\n')")))
        if self.chart is None:
            self.chart = PageChart(spec, embed_options=EMBED_OPTIONS)
            self.box.children = (self.chart,)
        else:
            with self.chart.hold_sync():
                self.chart.chart = spec
                # forget the rows sent to the previous view, so the same rows can be sent again
                self.chart._py_to_js_updates = None
        self.key = key
        self.data = dict(data or {})
        return True

    def clear(self) -> None:
        """Nothing to draw (a scenario without the workload the chart is of): the last chart goes."""
        if self.chart is not None:
            self.box.children = ()
            self.chart.close()  # its model leaves the page and the kernel
            self.chart, self.key, self.data = None, None, {}

    def _send(self, params: dict, data: dict[str, list]) -> None:
        """One changeset to the drawn view: the changed ``params`` as signals, then the changed ``data`` rows."""
        if not params and not data:
            return
        datasets = self.chart.spec.get("datasets", {})
        for name in data:
            if name not in datasets:
                raise KeyError(f"chart has no dataset {name!r} (has {sorted(datasets)})")
        # the kernel-side spec and params follow too (no message: the view gets the changeset below)
        for entry in self.chart.spec.get("params", ()):
            if entry.get("name") in params:
                entry["value"] = params[entry["name"]]
        for name, value in params.items():
            setattr(self.chart.params, name, value)
        datasets.update(data)
        self.data.update(data)
        self.chart._py_to_js_updates = (
            [{"namespace": "signal", "name": name, "scope": [], "value": value} for name, value in params.items()]
            + [{"namespace": "data", "name": name, "scope": [], "value": rows} for name, rows in data.items()])


def frame_key(frame: pd.DataFrame) -> tuple:
    """A hashable, exact key of a DataFrame's values (to compare chart inputs)."""
    return tuple(frame.columns), tuple(map(tuple, frame.to_numpy().tolist()))


def options(ids: Sequence[str]) -> list[tuple[str, str]]:
    return [(i, i) for i in ids]
