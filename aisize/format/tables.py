"""Tables as text: headers with units from field names (``peak_host_ram_gb`` -> "peak host RAM [GB]"), cells
as :mod:`aisize.format.quantities` shows them, and aligned text tables and prose that fit a terminal."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

import pandas as pd

from aisize.format.quantities import DASH, _missing, num, pct, points, sig, small, usd, yes_no

# Words of field names as a reader writes them.
WORDS = {"gpu": "GPU", "gpus": "GPUs", "ram": "RAM", "nic": "NIC", "nics": "NICs", "kv": "KV", "mfu": "MFU",
         "tp": "TP", "pp": "PP", "dp": "DP", "cp": "CP", "ep": "EP", "io": "IO", "iops": "IOPS", "id": "id",
         "ttft": "TTFT", "tpot": "TPOT", "slo": "SLO", "hbm": "HBM", "cpu": "CPU", "p95": "p95", "p99": "p99", "p50": "p50",
         "pct": "%", "llm": "LLM", "moe": "MoE", "zero": "ZeRO", "usd": "USD", "bom": "BOM", "ssd": "SSD",
         "nvlink": "NVLink", "pue": "PUE"}
# Unit suffixes of field names: (words that end a name) -> the unit the header states.
SUFFIXES = (
    (("usd", "per", "gpu", "hour"), "USD/GPU-hour"), (("usd", "per", "year"), "USD/year"),
    (("usd", "per", "hour"), "USD/h"), (("usd",), "USD"),
    (("bytes", "per", "s"), "B/s"), (("gb", "per", "s"), "GB/s"), (("mb", "per", "s"), "MB/s"),
    (("gbit", "per", "s"), "Gbit/s"), (("tokens", "per", "s"), "tokens/s"), (("per", "s"), "/s"),
    (("gib",), "GiB"), (("gb",), "GB"), (("tb",), "TB"), (("mb",), "MB"), (("bytes",), "B"),
    (("seconds",), "s"), (("s",), "s"), (("ms",), "ms"), (("hours",), "h"), (("h",), "h"), (("days",), "days"),
    (("kw",), "kW"), (("watts",), "W"), (("tflops",), "TFLOP/s"), (("pct",), "%"), (("billion",), "billion"),
)
_UNITS = {u for _, u in SUFFIXES}
# Names whose words alone do not say it.
HEADERS = {
    "unit_usd": "unit price [USD]", "capital_usd": "capital [USD]", "price_kind": "price basis",
    "usd_per_year": "per year [USD]", "price": "price id", "peak_gpus_used": "peak GPUs used",
    "peak_host_ram_gb": "peak host RAM [GB]", "host_ram_gb": "host RAM [GB]",
    "peak_host_ram_gib": "peak host RAM [GiB]", "host_ram_gib": "host RAM [GiB]", "peak_nics": "peak NICs used",
    "start_day": "start [day]", "end_day": "end [day]", "busy_gpu_hours": "busy GPU-hours",
    "gpu_hours": "GPU-hours", "days_low": "time, low [days]", "days_high": "time, high [days]",
    "mfu_assumed": "MFU of the time", "mfu_predicted": "MFU predicted", "samples_per_s_per_gpu": "samples/s per GPU",
    "tokens_per_s_per_gpu": "tokens/s per GPU", "request_latency_p95_s": "request latency p95 [s]",
    "tpot_p95_ms": "TPOT p95 [ms]",
    "throughput_basis": "throughput basis", "memory_per_gpu_gb": "memory per GPU [GB]",
    "memory_per_gpu_gib": "memory per GPU [GiB]",
    "memory_fits": "fits in memory", "host_ram_fits": "host RAM fits",
    "tpot_mean_ms": "TPOT mean [ms]", "tpot_ms": "TPOT [ms]",
    "latency_p95_s": "latency p95 [s]", "latency_p99_s": "latency p99 [s]", "utilisation": "utilisation",
    "error_pct": "error [%]", "abs_error_pct": "|error| [%]", "hours": "hours of the day",
    "tolerance_pct": "tolerance [%]", "needs_input": "needs input", "median_abs_error_pct": "median |error| [%]",
    "max_abs_error_pct": "max |error| [%]", "ok": "within tolerance", "implied": "implied"
}
# Latencies kept in seconds whose figures read in milliseconds (a TPOT of 0.0364 s is "36.4" under "TPOT [ms]");
# a column that names its statistic says it ("tpot_mean_s" -> "TPOT mean [ms]").
MS_COLUMNS = {"ttft_s": "TTFT [ms]", "tpot_s": "TPOT [ms]", "kv_transfer_s": "KV transfer [ms]",
              "ttft_p95_s": "TTFT p95 [ms]", "tpot_p95_s": "TPOT p95 [ms]", "tpot_mean_s": "TPOT mean [ms]",
              "ttft_p99_s": "TTFT p99 [ms]", "tpot_p99_s": "TPOT p99 [ms]",
              "ttft_mean_s": "TTFT mean [ms]"}
# Columns that hold a share (0-1): shown as percentages.
SHARES = {"goodput", "mfu", "mfu_assumed", "mfu_predicted", "utilisation", "read_share", "stall_fraction",
          "max_data_stall", "link_utilisation", "io_utilisation", "share", "MFU", "goodput share"}


def header(name: str) -> str:
    """A column's header with its unit: ``peak_host_ram_gb`` -> "peak host RAM [GB]",
    ``usd_per_year`` -> "per year [USD]". Names that are already words pass unchanged."""
    name = str(name)
    if name in HEADERS:
        return HEADERS[name]
    words = name.split("_")
    unit = ""
    for suffix, u in SUFFIXES:
        if tuple(words[-len(suffix):]) == suffix:
            if len(words) == len(suffix):
                return u  # the name is its unit: usd_per_gpu_hour -> "USD/GPU-hour"
            words, unit = words[:-len(suffix)], u
            break
    text = " ".join(WORDS.get(w, w) for w in words)
    text = re.sub(r"\bper s\b", "/s", text).replace(" /s", "/s")
    if unit.startswith("/"):
        return text + unit  # requests_per_s -> "requests/s"
    return f"{text} [{unit}]" if unit else text


def unit_of(name: str) -> str:
    """The unit :func:`header` puts in brackets ("" if none)."""
    shown = header(name)
    m = re.search(r"\[([^\]]+)\]$", shown)
    if m:
        return m.group(1)
    return shown if shown in _UNITS else ""  # a name that is its unit: usd_per_gpu_hour -> "USD/GPU-hour"


def cell(value, unit: str = "") -> str:
    """One table cell: money by :func:`usd`, shares as %, booleans as yes/no, numbers by :func:`num`; a number
    too small for its column's unit reads as :func:`small` says ("41.8 kB/s" under "read [GB/s]")."""
    if isinstance(value, bool):
        return yes_no(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if unit == "USD" or unit.startswith("USD/"):  # money, per unit too ("$2.22" per GPU-hour)
            return str(usd(value))
        if unit == "%":
            return points(value)
        if unit == "share":
            return str(pct(value))
        return small(value, unit) or num(value)
    if hasattr(value, "dtype") and hasattr(value, "item"):  # numpy scalar
        return cell(value.item(), unit)
    return str(value)


def table(frame: pd.DataFrame, formats: Mapping[str, Callable] | None = None,
          headers: Mapping[str, str] | None = None) -> pd.DataFrame:
    """``frame`` as shown: every cell text (:func:`cell`, or ``formats[column]``), every column a header
    with its unit (:func:`header`, or ``headers[column]``). Money columns state USD in their cells."""
    out = table_cells(frame, formats, headers)
    return pd.DataFrame(out, columns=list(out))


def _in_ms(seconds) -> str:
    return "" if _missing(seconds) == DASH else sig(float(seconds) * 1e3) if _missing(seconds) is None else \
        _missing(seconds)


def table_cells(frame: pd.DataFrame, formats: Mapping[str, Callable] | None = None,
                headers: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """What :func:`table` shows, as each column's header and cell texts (for a page that writes them out)."""
    formats, headers = dict(formats or {}), dict(headers or {})
    out = {}
    for column in frame.columns:
        unit = "share" if column in SHARES else unit_of(column)
        fmt = formats.get(column) or (lambda v, u=unit: cell(v, u))
        title = headers.get(column) or header(column)
        if column in MS_COLUMNS and column not in formats:
            fmt = _in_ms
            title = headers.get(column) or MS_COLUMNS[column]
        if unit == "USD" and column not in headers:
            title = title.replace(" [USD]", "")
        out[title] = [fmt(v) for v in frame[column].tolist()]
    return out


WIDTH = 120  # the widest line the command line prints (a terminal's width; a wider table wraps or becomes records)


def fit_lines(text: str, width: int = WIDTH) -> str:
    """Prose lines wrapped at ``width``; a wrapped line continues under its own indent plus four spaces."""
    import textwrap

    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip())]
        out += textwrap.wrap(line.strip(), width=width, initial_indent=indent, subsequent_indent=indent + "    ",
                             break_on_hyphens=False, break_long_words=True)
    return "\n".join(out)


_NUMERIC = re.compile(r"^[-+<>~$]?\s?[\d.,]+(\s?\S{0,12})?$")


def _wrapped(text: str, width: int) -> list[str]:
    import textwrap

    if len(text) <= width:
        return [text]
    return textwrap.wrap(text, width=width, break_on_hyphens=False, break_long_words=True) or [""]


def text_table(frame: pd.DataFrame, width: int = WIDTH, *, indent: int = 0, shown: bool = False,
               title_column: str | None = None) -> str:
    """A table as aligned text no wider than ``width``: numbers right-aligned, headers with units
    (:func:`table`, unless ``shown``: the cells are text already). Headers, then text cells, wrap onto
    more lines where the table is too wide; a table that still does not fit is written one record per
    block ("name" line, then "  header: value" lines), as a form reads."""
    cells = {str(k): [str(v) for v in vals] for k, vals in (
        {c: frame[c].tolist() for c in frame.columns} if shown else table_cells(frame)).items()}
    heads = list(cells)
    n = len(next(iter(cells.values()), []))
    pad = " " * indent
    if not heads:
        return ""
    natural = [max([len(h)] + [len(v) for v in cells[h]]) for h in heads]
    numeric = [bool(cells[h]) and all(v in ("", DASH) or _NUMERIC.match(v) for v in cells[h]) for h in heads]
    # the least a column can take: a number whole, a text cell's longest word (up to 30 characters: an id is not
    # cut while prose can wrap), and its header's longest word
    least = [max([len(w) for w in h.split()] + ([len(v) for v in cells[h]] if numeric[i] else
                                                [min(len(w), 30) for v in cells[h] for w in v.split()]) + [1])
             for i, h in enumerate(heads)]
    widths = list(natural)
    budget = width - indent - 2 * (len(heads) - 1)
    while sum(widths) > budget:
        shrinkable = [k for k in range(len(heads)) if widths[k] > least[k]]
        if not shrinkable:
            return _records(cells, width, indent, title_column)
        widths[max(shrinkable, key=lambda k: (widths[k], k))] -= 1  # the widest column wraps first
    lines = []
    head_lines = [_wrapped(h, w) for h, w in zip(heads, widths)]
    depth = max(len(x) for x in head_lines)
    for k in range(depth):  # headers sit on their last line, as a column's foot would
        parts = [(x[k - depth + len(x)] if k - depth + len(x) >= 0 else "") for x in head_lines]
        lines.append(pad + "  ".join(p.rjust(w) if num else p.ljust(w)
                                     for p, w, num in zip(parts, widths, numeric)).rstrip())
    for r in range(n):
        wrapped = [_wrapped(cells[h][r], w) for h, w in zip(heads, widths)]
        for k in range(max(len(x) for x in wrapped)):
            parts = [x[k] if k < len(x) else "" for x in wrapped]
            lines.append(pad + "  ".join(p.rjust(w) if num else p.ljust(w)
                                         for p, w, num in zip(parts, widths, numeric)).rstrip())
    return "\n".join(lines)


def _records(cells: dict[str, list[str]], width: int, indent: int, title_column: str | None) -> str:
    """One block per row: its first (or ``title_column``) cell, then each other "header: value", wrapped."""
    import textwrap

    heads = list(cells)
    title = title_column if title_column in cells else heads[0]
    pad = " " * indent
    blocks = []
    for r in range(len(cells[title])):
        lines = [pad + (cells[title][r] or "—")]
        for h in heads:
            if h == title or cells[h][r] == "":
                continue
            lines += textwrap.wrap(f"{h}: {cells[h][r]}", width=width, initial_indent=pad + "  ",
                                   subsequent_indent=pad + "      ", break_on_hyphens=False)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
