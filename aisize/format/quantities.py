"""Quantities as text: a number in the unit its magnitude reads best in, to three significant figures, as a
:class:`Shown` (text that keeps its value and unit apart for a card); counts with their nouns agreeing
(:func:`plural`); published figures in engineering notation. The rules are in :mod:`aisize.format`."""

from __future__ import annotations

import math

from aisize.units import DAY, GB, HOUR, KB, MB, MINUTE, PB, TB, GiB, KiB, MiB

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


# A figure below SMALLEST of its column's unit needs three zeros after the point ("0.0000418" GB/s): it reads
# in the unit of its kind that suits it instead, shown in the cell ("41.8 kB/s"), or "< 0.001" where its unit
# has no smaller one (issue 49: a hand-out, not a log). Each kind: its units' sizes in base units, and the
# formatter that picks the unit.
SMALLEST = 1e-3
_KINDS = (
    ({"TB/s": TB, "GB/s": GB, "MB/s": MB, "kB/s": KB, "B/s": 1.0}, rate),
    ({"PB": PB, "TB": TB, "GB": GB, "MB": MB, "kB": KB, "B": 1.0}, bytes_si),
    ({"GiB": GiB, "MiB": MiB, "KiB": KiB}, bytes_gpu),
    ({"days": DAY, "h": HOUR, "min": MINUTE, "s": 1.0, "ms": 1e-3}, duration),
    ({"MW": 1e6, "kW": 1e3, "W": 1.0}, power),
)


def small(x, unit: str) -> str | None:
    """How a figure ``x`` stated in ``unit`` reads where it is below :data:`SMALLEST` of that unit (not zero):
    in the unit of its kind that suits it, that unit shown (0.0000418 "GB/s" -> "41.8 kB/s"; 0.0004 "s" ->
    "400 µs"), else "< 0.001" (0.0004 "IO/s"). None for a figure that is not that small, zero or missing, or
    with no unit: the caller's own rule shows it."""
    if not unit or _missing(x) is not None or not 0 < abs(float(x)) < SMALLEST:
        return None
    below = f"> -{SMALLEST:g}" if float(x) < 0 else f"< {SMALLEST:g}"
    for sizes, formatter in _KINDS:
        if unit in sizes:
            shown = formatter(float(x) * sizes[unit])
            # still tiny in the kind's smallest unit (1e-12 B/s): bounded, not a row of zeros
            return str(shown) if abs(float(shown.value.replace(",", ""))) >= SMALLEST else f"{below} {shown.unit}"
    return below


def in_unit(x, unit: str, digits: int = 3) -> str:
    """A figure already in ``unit``, for a table cell under that unit: ``digits`` significant figures each
    (2.9 beside 112 reads "2.90" and "112", never "3" nor "112.00"), zero "0", a figure too small for the unit
    as :func:`small` says ("41.8 kB/s" under GB/s), missing "" (an empty cell)."""
    if x is None or (_missing(x) == DASH):
        return ""
    return small(x, unit) or sig(x, digits)


def yes_no(flag) -> str:
    return "yes" if flag else "no"


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
