"""Read a figure back from the app's HTML (a card's ``data-key`` span and its unit), in base units,
so tests compare it with the API's value whatever unit the formatter chose (aisize.format)."""

from __future__ import annotations

import re

# the units aisize.format writes, in base units (bytes, seconds, B/s, W, J, ratio)
FACTORS = {"B": 1.0, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15, "KiB": 2.0**10, "MiB": 2.0**20,
           "GiB": 2.0**30, "TiB": 2.0**40, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0,
           "days": 86400.0, "B/s": 1.0, "kB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12, "W": 1.0, "kW": 1e3,
           "MW": 1e6, "Wh": 3600.0, "kWh": 3.6e6, "MWh": 3.6e9, "GWh": 3.6e12, "%": 0.01}
MONEY = {"": 1.0, "k": 1e3, "M": 1e6, "B": 1e9}


def number(text: str) -> float | str:
    """A shown number ("1,440", "$733 k", "$2.22") as a float, or the text when it is not one."""
    text = text.strip()
    money = re.fullmatch(r"([+-]?)-?\$([\d,.]+)(?: ([kMB]))?", text)
    if money:
        sign = -1.0 if "-" in text.split("$")[0] else 1.0
        return sign * float(money[2].replace(",", "")) * MONEY[money[3] or ""]
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return text


def shown(section_html: str, key: str, *, base: bool = True):
    """The figure with data-key ``key``: a float (in base units when its unit is one the formatter
    writes and ``base``), else the text."""
    match = re.search(rf"data-key='{re.escape(key)}'>([^<]*)</span>\s*<span class='aisize-unit'>([^<]*)<",
                      section_html)
    assert match, f"{key} not shown in {section_html[:200]}"
    value = number(match[1])
    unit = match[2].split(" ")[0] if match[2] else ""
    if base and isinstance(value, float) and unit in FACTORS:
        return value * FACTORS[unit]
    return value
