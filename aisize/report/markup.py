"""HTML building blocks of the report and the report's rounding of numbers.

Every number a report shows goes through one of the formatters here, so a test
can compare the PDF's text with the API's value in the same rounding
(``sig(plan.training[0].training_days)`` is what the training table prints).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable

from aisize.units import DAY, GB, HOUR, MINUTE, TB

DASH = "—"


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


def figure(chart, caption: str) -> Html:
    """An Altair chart as inline SVG in a ``<figure>``: no script, no request to any host."""
    import vl_convert

    svg = vl_convert.vegalite_to_svg(chart.to_dict())
    # Inline SVG in HTML needs no namespace declarations; dropping them leaves no http reference.
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    return Html(f'<figure class="aisize-figure">{svg}<figcaption>{esc(caption)}</figcaption></figure>')


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


def sig(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits (whole numbers keep all theirs), without an exponent:
    210.96 -> "211", 0.4476 -> "0.448", 1017.3 -> "1,017"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    if math.isinf(value):
        return "unbounded"
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    rounded = round(value, decimals)
    if rounded != 0 and math.floor(math.log10(abs(rounded))) != math.floor(math.log10(abs(value))):
        decimals = max(0, decimals - 1)  # 9.996 -> 10.0 has one decimal too many
    return f"{rounded:,.{decimals}f}"


def number(value: float, digits: int = 1) -> str:
    """A large count as "70.6 B", "25.6 M", "4,096"."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if abs(value) >= scale:
            return f"{value / scale:,.{digits}f} {suffix}"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.{digits}f}"


def count(value) -> str:
    """A whole count: "1,024"."""
    return f"{int(value):,}"


def pct(value, digits: int = 0) -> str:
    """A ratio as a percentage: 0.4192 -> "42 %"; tiny non-zero shares as "< 1 %"."""
    if value is None or not math.isfinite(value):
        return DASH
    if 0 < abs(value) < 0.5 * 10**-digits / 100:
        return f"< {10**-digits:g} %"
    return f"{value * 100:,.{digits}f} %"


def gb(bytes_: float) -> str:
    """Bytes as decimal GB (or TB from 10 TB), 3 significant digits."""
    if bytes_ is None:
        return DASH
    return f"{sig(bytes_ / TB)} TB" if abs(bytes_) >= 10 * TB else f"{sig(bytes_ / GB)} GB"


def rate(bytes_per_s: float) -> str:
    """A data rate: "1.23 GB/s", "456 MB/s", "12.3 kB/s"."""
    if bytes_per_s is None:
        return DASH
    for scale, unit in ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s")):
        if abs(bytes_per_s) >= scale:
            return f"{sig(bytes_per_s / scale)} {unit}"
    return f"{sig(bytes_per_s)} B/s"


def per_s(value: float) -> str:
    """Operations or requests per second: "11,400/s", "0.179/s"."""
    if value is None or not math.isfinite(value):
        return DASH
    return f"{sig(value)}/s"


def duration(seconds: float) -> str:
    """A duration in the unit that reads best: "850 ms", "56 s", "10.4 min", "12.5 h", "211 days"."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return DASH
    if math.isinf(seconds):
        return "never (unbounded)"
    for scale, unit in ((DAY, " days"), (HOUR, " h"), (MINUTE, " min"), (1.0, " s")):
        if abs(seconds) >= scale:
            return f"{sig(seconds / scale)}{unit}"
    return f"{sig(seconds * 1e3)} ms"


def days(value: float) -> str:
    """Days in the report's rounding (3 significant digits), as the training tables print them."""
    return sig(value)


def mwh(joules: float) -> str:
    return f"{sig(joules / 3.6e9)} MWh" if math.isfinite(joules) else DASH


def yes_no(flag: bool, yes: str = "yes", no: str = "no") -> Html:
    """A check mark cell: green "yes" or red "no"."""
    css = "ok" if flag else "bad"
    return Html(f'<span class="{css}">{esc(yes if flag else no)}</span>')
