"""HTML building blocks of the report and the report's rounding of numbers.

Every number a report shows goes through :mod:`aisize.format` (re-exported here under the names
the sections use), so a test can compare the PDF's text with the API's value in the same rounding
(``sig(plan.training[0].training_days)`` is what the training table prints).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable
from contextlib import contextmanager

from aisize import format as F

DASH = F.DASH


class Html(str):
    """Trusted HTML markup; Jupyter displays it as HTML."""

    def _repr_html_(self) -> str:
        return str(self)

    def __repr__(self) -> str:  # keeps the notebook's text/plain output short
        return f"<aisize report HTML, {len(self)} characters>"


def esc(value) -> str:
    """``value`` as HTML text, unless it already is :class:`Html`."""
    return value if isinstance(value, Html) else html.escape(str(value), quote=True)


def table(headers: Iterable[str], rows: Iterable[Iterable], *, caption: str = "",
          css: str = "") -> Html:
    """An HTML table; cells are escaped unless they are :class:`Html`."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    head = f"<thead><tr>{head}</tr></thead>" if head else ""
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return Html(f'<table class="aisize-table {esc(css)}">{cap}{head}'
                f"<tbody>{body}</tbody></table>")


_ahead: dict | None = None  # inside drawing_ahead(): marker -> (Drawing, caption) of figures not placed yet


@contextmanager
def drawing_ahead():
    """Within, :func:`figure` sends each chart to the drawing helper and returns a marker at once, so the
    helper draws while the section builds the rest; ``place(text)`` puts each drawn figure where its marker
    is (waiting for those not drawn yet). Every chart sent is settled on the way out, even after an error,
    so the helper's next answer is a later chart's."""
    global _ahead
    from aisize.report import svg

    if _ahead is not None:  # nested: the outermost settles them
        yield _place
        return
    _ahead = {}
    try:
        yield _place
    finally:
        sent, _ahead = _ahead, None
        for drawing, _ in sent.values():
            svg.settle(drawing)


def _place(text: str) -> Html:
    from aisize.report.svg import result

    for marker, (drawing, caption) in list(_ahead.items()):
        if marker in text:
            text = text.replace(marker, _figure_html(result(drawing), caption))
    return Html(text)


def _figure_html(svg: str, caption: str) -> str:
    # Inline SVG in HTML needs no namespace declarations; dropping them leaves no http reference.
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    return f'<figure class="aisize-figure">{svg}<figcaption>{esc(caption)}</figcaption></figure>'


def figure(chart, caption: str, *, keep: bool = False) -> Html:
    """An Altair chart as inline SVG in a ``<figure>``: no script, no request to any host.

    ``keep``: the SVG is kept in the validation store by its spec (for a chart the same in every report
    of a version, as the accuracy appendix's: SVG text costs about 3 ms a label to lay out). Within
    :func:`drawing_ahead` an unkept chart is a marker until the block places it."""
    import vl_convert
    from altair.utils import schemapi

    from aisize.report import svg as drawer

    spec = chart.to_dict(validate=schemapi.DEBUG_MODE)
    if keep:
        from aisize.validation.store import remembered_text

        key = f"vl-convert {vl_convert.__version__} " + json.dumps(spec, sort_keys=True, default=str)
        svg = remembered_text("figure", lambda: drawer.to_svg(spec), key=key, valid=_drawn_svg)
    elif _ahead is not None:
        marker = f"\x00figure {len(_ahead)}\x00"  # no text the report writes holds a NUL
        _ahead[marker] = (drawer.submit(spec), caption)
        return Html(marker)
    else:
        svg = drawer.to_svg(spec)
    return Html(_figure_html(svg, caption))


# What vl-convert's SVG never holds: a file read back that does is drawn again, not put in the report.
_ACTIVE = re.compile(r"<script|<foreignobject|<iframe|\son[a-z]+\s*=|javascript:", re.IGNORECASE)


def _drawn_svg(text: str) -> bool:
    """Whether ``text`` reads as a chart vl-convert drew: one SVG element, nothing that runs."""
    return text.lstrip().startswith("<svg") and text.rstrip().endswith("</svg>") and not _ACTIVE.search(text)


def facts(items: Iterable[tuple[str, str]]) -> Html:
    """Key figures as a row of cards: (label, value) pairs."""
    cards = "".join(f'<div class="aisize-fact"><div class="value">{esc(v)}</div>'
                    f'<div class="label">{esc(k)}</div></div>' for k, v in items)
    return Html(f'<div class="aisize-facts">{cards}</div>')


def para(*texts) -> Html:
    """Paragraphs of escaped text."""
    return Html("".join(f"<p>{esc(t)}</p>" for t in texts if t))


def note(text) -> Html:
    """A muted explanatory note under a table or chart."""
    return Html(f'<p class="aisize-note">{esc(text)}</p>')


def block(*parts) -> Html:
    """Parts kept together on one page (a heading with its table, a chart with its note)."""
    return Html('<div class="aisize-keep">' + "".join(esc(p) for p in parts if p) + "</div>")


def h3(text) -> Html:
    return Html(f"<h3>{esc(text)}</h3>")


# The report's numbers are :mod:`aisize.format`'s, under the names the sections use.
sig, count, per_s, duration = F.sig, F.count, F.per_s, F.duration
days = F.sig  # in a column headed [days]


def number(value: float, digits: int = 3) -> str:
    """A large count as "70.6 B", "25.6 M", "4,096" (:func:`aisize.format.large`)."""
    return F.large(value, digits)


def pct(value, digits: int = 1) -> str:
    """A share as a percentage (:func:`aisize.format.pct`): 0.4192 -> "41.9 %"; tiny non-zero as "< 0.1 %"."""
    return str(F.pct(value))


def gb(bytes_: float) -> str:
    """Bytes, decimal, in the unit their size reads best in (:func:`aisize.format.bytes_si`)."""
    return str(F.bytes_si(bytes_))


def gib(bytes_: float) -> str:
    """GPU or host memory, binary (:func:`aisize.format.bytes_gpu`): "76.1 GiB", as nvidia-smi and free show it."""
    return str(F.bytes_gpu(bytes_))


def rate(bytes_per_s: float) -> str:
    """A data rate: "1.23 GB/s", "456 MB/s", "12.3 kB/s"."""
    return str(F.rate(bytes_per_s))


def mwh(joules: float) -> str:
    """Energy in kWh, MWh or GWh by its size (:func:`aisize.format.energy`)."""
    return str(F.energy(joules))


def yes_no(flag: bool, yes: str = "yes", no: str = "no") -> Html:
    """A check mark cell: green "yes" or red "no"."""
    css = "ok" if flag else "bad"
    return Html(f'<span class="{css}">{esc(yes if flag else no)}</span>')
