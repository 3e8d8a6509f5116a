"""How every number reaches a reader: the one formatter of cards, tables, charts, the CLI and the report.

A quantity is shown in the unit its magnitude reads best in (kWh/MWh/GWh; kB/MB/GB/TB,
decimal, for storage, files and transfers; MiB/GiB for GPU memory, which is binary as
``nvidia-smi`` shows it), to three significant figures (:func:`sig`) unless the quantity
says otherwise: counts are whole numbers, money is to the cent under $100, whole dollars
under $10,000 and in k/M/B above, shares are percentages. A range is printed with the
precision of its upper end on both ends ("0.45–1.28 days"). Thousands are separated by
commas. Nothing here computes a sizing figure: values arrive in base units (bytes,
seconds, joules, watts, ratios) and leave as text.

A formatted quantity is a :class:`Shown`: a ``str`` ("5.53 GiB") that also carries its
number and unit apart (``.value`` "5.53", ``.unit`` "GiB"), which is what a card shows.
Table columns get human headers with units from their field names (:func:`header`,
:func:`table`), so no surface prints ``peak_host_ram_gb``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

import pandas as pd

from aisize.units import DAY, GB, HOUR, KB, MINUTE, PB, TB, GiB, KiB, MiB

DASH = "—"
UNBOUNDED = "unbounded"
JOULES_PER_KWH = 3.6e6


class Shown(str):
    """Formatted text ``"value unit"`` that keeps ``value`` and ``unit`` apart for a card."""

    value: str
    unit: str

    def __new__(cls, value: str, unit: str = "") -> Shown:
        sep = "" if unit.startswith("/") else " "
        self = super().__new__(cls, f"{value}{sep}{unit}" if unit and value not in (DASH, UNBOUNDED) else value)
        self.value, self.unit = value, unit if value not in (DASH, UNBOUNDED) else ""
        return self


def _missing(x) -> str | None:
    """The text of a value that is not a finite number (None, NaN: "—"; infinite: "unbounded")."""
    if x is None:
        return DASH
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(f):
        return DASH
    if math.isinf(f):
        return UNBOUNDED
    return None


def decimals_for(x: float, digits: int = 3) -> int:
    """Decimals that show ``x`` to ``digits`` significant figures (0 for whole parts that need none)."""
    if x == 0:
        return 0
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    rounded = round(x, decimals)
    if rounded != 0 and math.floor(math.log10(abs(rounded))) != math.floor(math.log10(abs(x))):
        decimals = max(0, decimals - 1)  # 9.996 -> 10.0 has one decimal too many
    return decimals


def sig(x, digits: int = 3) -> str:
    """``x`` to ``digits`` significant figures, thousands separated, never an exponent: 210.96 -> "211",
    0.4476 -> "0.448", 1017.3 -> "1,017", 1e-5 -> "0.0000100"."""
    missing = _missing(x)
    if missing is not None:
        return missing
    x = float(x)
    if x == 0:
        return "0"
    return f"{x:,.{decimals_for(x, digits)}f}"


def num(x, digits: int = 3) -> str:
    """A plain number: whole numbers in full ("1,440"), others to ``digits`` significant figures."""
    missing = _missing(x)
    if missing is not None:
        return missing
    if isinstance(x, bool):
        return "yes" if x else "no"
    f = float(x)
    if f.is_integer() and abs(f) < 1e15:
        return f"{int(f):,}"
    return sig(f, digits)


def count(x) -> str:
    """A whole count: "1,024"."""
    missing = _missing(x)
    return missing if missing is not None else f"{int(round(float(x))):,}"


def large(x, digits: int = 3) -> str:
    """A large count in words: "70.6 B", "25.6 M", "4,096"."""
    missing = _missing(x)
    if missing is not None:
        return missing
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if abs(x) >= scale:
            return f"{sig(x / scale, digits)} {suffix}"
    return num(x, digits)


def pct(share, *, signed: bool = False) -> Shown:
    """A share as a percentage, at most one decimal: 0.1394 -> "13.9 %", 1.0 -> "100 %", tiny -> "< 0.1 %"."""
    missing = _missing(share)
    if missing is not None:
        return Shown(missing)
    p = float(share) * 100.0
    sign = "+" if signed and p > 0 else ""
    if p == 0:
        return Shown("0", "%")
    if abs(p) < 0.05:
        return Shown("< 0.1", "%")
    return Shown(f"{sign}{p:,.0f}" if abs(p) >= 99.95 else f"{sign}{p:,.1f}", "%")


def points(p) -> str:
    """A figure already in percent, at most one decimal, for a column headed [%]: 0.00117 -> "< 0.1",
    -10.24 -> "-10.2", 378.4 -> "378"."""
    missing = _missing(p)
    if missing is not None:
        return missing
    text = str(pct(float(p) / 100.0, signed=False))
    return text[:-2]  # without " %"


def usd(x) -> Shown:
    """Money: to the cent under $100 ("$2.22"), whole dollars under $10,000 ("$8,000"), then "$733 k",
    "$6.19 M", "$1.20 B"."""
    missing = _missing(x)
    if missing is not None:
        return Shown(missing)
    x = float(x)
    sign, a = ("-" if x < 0 else ""), abs(x)
    if round(a, 2) < 100:
        return Shown(f"{sign}${a:,.2f}")
    if round(a) < 10_000:
        return Shown(f"{sign}${a:,.0f}")
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if a >= scale * 0.9995:
            return Shown(f"{sign}${sig(a / scale)} {suffix}")
    return Shown(f"{sign}${a:,.0f}")  # pragma: no cover - covered by the branches above


def _scaled(x, scales, digits: int = 3) -> Shown:
    missing = _missing(x)
    if missing is not None:
        return Shown(missing)
    x = float(x)
    for scale, unit in scales:
        # the unit whose value, once rounded, is at least 1 (999.96 MB reads "1.00 GB")
        if abs(x) / scale >= 1 - 0.5 * 10 ** (1 - digits):
            return Shown(sig(x / scale, digits), unit)
    return Shown(sig(x / scales[-1][0], digits), scales[-1][1])


def bytes_si(b) -> Shown:
    """Decimal bytes (storage, files, transfers, host RAM): "131 kB", "168 MB", "2.90 GB", "465 TB"."""
    return _scaled(b, ((PB, "PB"), (TB, "TB"), (GB, "GB"), (1e6, "MB"), (KB, "kB"), (1.0, "B")))


def bytes_gpu(b) -> Shown:
    """Binary bytes (GPU and host memory, as nvidia-smi and free show them): "5.53 GiB", "128 MiB", and
    "2,048 GiB" for a 2 TiB server, never TiB: one unit for every memory figure (issue 47)."""
    return _scaled(b, ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB"), (1.0, "B")))


def rate(bytes_per_s) -> Shown:
    """A data rate: "1.23 GB/s", "456 MB/s", "12.3 kB/s"."""
    return _scaled(bytes_per_s, ((TB, "TB/s"), (GB, "GB/s"), (1e6, "MB/s"), (KB, "kB/s"), (1.0, "B/s")))


def energy(joules) -> Shown:
    """Energy: "77.3 kWh", "1.24 MWh", "3.10 GWh"."""
    missing = _missing(joules)
    if missing is not None:
        return Shown(missing)
    kwh = float(joules) / JOULES_PER_KWH
    return _scaled(kwh, ((1e6, "GWh"), (1e3, "MWh"), (1.0, "kWh"), (1e-3, "Wh")))


def power(watts) -> Shown:
    """Power: "23.0 kW", "1.20 MW", "700 W"."""
    return _scaled(watts, ((1e6, "MW"), (1e3, "kW"), (1.0, "W")))


def duration(seconds) -> Shown:
    """A duration in the unit that reads best: "850 ms", "56.0 s", "10.4 min", "12.5 h", "211 days"."""
    missing = _missing(seconds)
    if missing is not None:
        return Shown(missing)
    if float(seconds) == 0:
        return Shown("0", "s")
    return _scaled(seconds, ((DAY, "days"), (HOUR, "h"), (MINUTE, "min"), (1.0, "s"), (1e-3, "ms"),
                             (1e-6, "µs")))


def days(d) -> Shown:
    """Days, as training times are stated: "0.575 days", "211 days"."""
    return Shown(sig(d), "days") if _missing(d) is None else Shown(_missing(d))


def hours(h) -> Shown:
    return Shown(sig(h), "h") if _missing(h) is None else Shown(_missing(h))


def ms(seconds) -> Shown:
    """Milliseconds, for latencies compared with millisecond targets: 0.0447 -> "44.7 ms"."""
    return Shown(sig(float(seconds) * 1e3), "ms") if _missing(seconds) is None else Shown(_missing(seconds))


def per_s(x, unit: str = "/s") -> Shown:
    """A rate of events: "11,400 /s", "26.5 requests/s"."""
    missing = _missing(x)
    return Shown(missing) if missing is not None else Shown(sig(x), unit.lstrip())


def quantity(x, unit: str = "") -> Shown:
    """A number to three significant figures with a fixed unit ("15.0 ms/token")."""
    return Shown(num(x), unit)


def span(low, high, unit: str = "") -> Shown:
    """A range with the precision of its upper end on both ends: (0.4474, 1.278, "days") -> "0.45–1.28 days"."""
    for x in (low, high):
        if _missing(x) is not None:
            return Shown(f"{sig(low)}–{sig(high)}", unit)
    d = decimals_for(float(high))
    return Shown(f"{float(low):,.{d}f}–{float(high):,.{d}f}", unit)


def availability(share) -> Shown:
    """A share of time up, as its downtime reads: 0.9998 -> "99.98 % (down 8.64 min a month)"."""
    missing = _missing(share)
    if missing is not None:
        return Shown(missing)
    a = float(share)
    return Shown(f"{sig(a * 100, 4)} % (down {duration((1 - a) * 30 * DAY)} a month)")


def yes_no(flag) -> str:
    return "yes" if flag else "no"


def parallelism(tensor_parallel: int, pipeline_parallel: int = 1, attention_dp: int = 1) -> str:
    """One replica's split: "TP 4", "TP 1 × PP 2", "TP 8 (attention DP 8)"; its GPUs are TP × PP."""
    text = f"TP {tensor_parallel}" + (f" × PP {pipeline_parallel}" if pipeline_parallel > 1 else "")
    return text + (f" (attention DP {attention_dp})" if attention_dp > 1 else "")


def pool_shapes(service) -> tuple[str, str] | None:
    """A disaggregated service's pools, short: ("10 × TP 1 × PP 2", "3 × TP 4"); None when it is not one."""
    p = service.pools
    if service.serving_mode != "disaggregated" or p is None or not p.feasible:
        return None
    prefill = p.prefill_shape
    return (f"{count(p.prefill_replicas)} × " + parallelism(p.prefill_tensor_parallel, p.prefill_pipeline_parallel,
                                                           prefill.attention_dp if prefill is not None else 1),
            f"{count(p.decode_replicas)} × " + parallelism(p.decode_tensor_parallel, p.decode_pipeline_parallel,
                                                          p.decode_attention_dp))


def layout(lay, *, recompute: bool = True) -> str:
    """A training layout in one wording on every surface, its parts multiplying to its GPUs:
    "TP2 PP1 CP2 DP2 ZeRO-3 mb1" (EP where experts spread, the schedule's chunks where stages interleave),
    then "recompute none" (a :class:`~aisize.plan.training` layout: tensor_parallel, pipeline_parallel,
    context_parallel, data_parallel, expert_parallel, zero_stage, micro_batch, recompute)."""
    cp = getattr(lay, "context_parallel", 1)
    ep = getattr(lay, "expert_parallel", 1)
    vs = getattr(lay, "virtual_stages", 1)
    text = (f"TP{lay.tensor_parallel} PP{lay.pipeline_parallel}" + (f"x{vs}" if lay.pipeline_parallel > 1 and vs > 1
                                                                   else "")
            + f" CP{cp} DP{lay.data_parallel}" + (f" EP{ep}" if ep > 1 else "")
            + f" ZeRO-{lay.zero_stage} mb{lay.micro_batch}")
    return text + (f" recompute {lay.recompute}" if recompute else "")


def serving_shape(service) -> str:
    """How a service's GPUs are laid out, adding up to its GPUs: "13 replicas × TP 4", or, disaggregated,
    "10 prefill replicas × TP 1 × PP 2 + 3 decode replicas × TP 4" (an :class:`aisize.plan.InferencePlan`)."""
    pools = pool_shapes(service)
    if pools is not None:
        (n_p, split_p), (n_d, split_d) = (text.split(" × ", 1) for text in pools)
        return (f"{n_p} prefill replica{'' if n_p == '1' else 's'} × {split_p} + "
                f"{n_d} decode replica{'' if n_d == '1' else 's'} × {split_d}")
    n = service.replicas
    return f"{count(n)} replica{'' if n == 1 else 's'} × " + parallelism(
        service.tensor_parallel, service.pipeline_parallel, service.attention_dp)


# ---------------------------------------------------------------------------------------------
# Table headers from field names

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
    """One table cell: money by :func:`usd`, shares as %, booleans as yes/no, numbers by :func:`num`."""
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
        return num(value)
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


# ---------------------------------------------------------------------------------------------
# Counts in words, engineering notation, and text that fits a terminal

def plural(n, noun: str, plural_form: str | None = None) -> str:
    """A count with its noun agreeing: (1, "GPU") -> "1 GPU", (16, "GPU") -> "16 GPUs", (2, "replica") ->
    "2 replicas"; ``plural_form`` for an irregular noun."""
    text = count(n) if _missing(n) is None else _missing(n)
    return f"{text} {noun_for(n, noun, plural_form)}"


def noun_for(n, noun: str, plural_form: str | None = None) -> str:
    """The noun agreeing with count ``n``, for a card whose unit sits apart from its number: (1, "server") ->
    "server", (2, "server") -> "servers"."""
    one = _missing(n) is None and int(round(float(n))) == 1
    return noun if one else (plural_form or noun + "s")


SI_PREFIXES = ((1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"),
               (1e3, "k"))
# Units a prefix attaches to ("314 ZFLOP", "3.2 MB/s"); other units take a word ("6.74 billion parameters").
SI_UNITS = frozenset({"FLOP", "FLOP/s", "B", "B/s", "W", "Wh", "J", "Hz", "bit/s"})
SCALE_WORDS = ((1e12, "trillion"), (1e9, "billion"), (1e6, "million"))


def engineering(x, unit: str = "", digits: int = 4) -> Shown:
    """A published or predicted figure in engineering notation, never a 25-digit integer:
    (3.14e23, "FLOP") -> "314.0 ZFLOP", (6.738e9, "count") -> "6.738 billion", (3552000, "GPU-h") ->
    "3.552 million GPU-h", (46.2, "%") -> "46.20 %". Below a million a figure is written in full
    ("1,017 tokens/s"); ``digits`` significant figures (four: a 0.1 % difference shows)."""
    missing = _missing(x)
    if missing is not None:
        return Shown(missing)
    x = float(x)
    shown_unit = "" if unit == "count" else unit
    if abs(x) >= 1e6:
        if unit in SI_UNITS:
            for scale, prefix in SI_PREFIXES:
                if abs(x) >= scale * (1 - 0.5 * 10 ** (1 - digits)):
                    return Shown(sig(x / scale, digits), prefix + unit)
        for scale, word in SCALE_WORDS:
            if abs(x) >= scale * (1 - 0.5 * 10 ** (1 - digits)):
                if abs(x) / scale >= 1e4:  # beyond a word: a power of ten
                    exponent = math.floor(math.log10(abs(x)))
                    return Shown(f"{sig(x / 10 ** exponent, digits)}e{exponent}", shown_unit)
                return Shown(f"{sig(x / scale, digits)} {word}", shown_unit)
    if float(x).is_integer() and abs(x) >= 10 ** (digits - 1):
        return Shown(f"{int(x):,}", shown_unit)
    return Shown(sig(x, digits), shown_unit)


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
