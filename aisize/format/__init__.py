"""How every number reaches a reader: the one formatter of cards, tables, charts, the CLI and the report.

A quantity is shown in the unit its magnitude reads best in (kWh/MWh/GWh; kB/MB/GB/TB,
decimal, for storage, files and transfers; MiB/GiB for GPU memory, which is binary as
``nvidia-smi`` shows it), to three significant figures (:func:`sig`) unless the quantity
says otherwise: counts are whole numbers, money is to the cent under $100, whole dollars
under $10,000 and in k/M/B above, shares are percentages. A figure below 0.001 of the unit its
column promises reads in a smaller unit of its kind, shown in the cell ("41.8 kB/s" under GB/s), not as
"0.0000418" (:func:`small`). A range is printed with the
precision of its upper end on both ends ("0.45–1.28 days"). Thousands are separated by
commas. Nothing here computes a sizing figure: values arrive in base units (bytes,
seconds, joules, watts, ratios) and leave as text.

A formatted quantity is a :class:`Shown`: a ``str`` ("5.53 GiB") that also carries its
number and unit apart (``.value`` "5.53", ``.unit`` "GiB"), which is what a card shows.
Table columns get human headers with units from their field names (:func:`header`,
:func:`table`), so no surface prints ``peak_host_ram_gb``.

The formatter is split by subject: :mod:`~aisize.format.quantities` (numbers, units, counts),
:mod:`~aisize.format.shapes` (replica splits and training layouts) and :mod:`~aisize.format.tables`
(headers, cells, text tables); every public name is read from here, ``aisize.format``.
"""

from aisize.format.quantities import (DASH, JOULES_PER_KWH, SCALE_WORDS, SI_PREFIXES, SI_UNITS, SMALLEST, UNBOUNDED,
                                      Shown, availability, bytes_gpu, bytes_si, count, days, decimals_for, duration,
                                      energy, engineering, hours, in_unit, large, ms, noun_for, num, pct, per_s,
                                      plural, points, power, quantity, rate, sig, small, span, usd, yes_no)
from aisize.format.shapes import layout, parallelism, pool_shapes, serving_shape
from aisize.format.tables import (HEADERS, MS_COLUMNS, SHARES, SUFFIXES, WIDTH, WORDS, cell, fit_lines, header,
                                  table, table_cells, text_table, unit_of)

__all__ = ["DASH", "HEADERS", "JOULES_PER_KWH", "MS_COLUMNS", "SCALE_WORDS", "SHARES", "SI_PREFIXES", "SI_UNITS",
           "SMALLEST", "SUFFIXES", "Shown", "UNBOUNDED", "WIDTH", "WORDS", "availability", "bytes_gpu", "bytes_si",
           "cell", "count", "days", "decimals_for", "duration", "energy", "engineering", "fit_lines", "header", "hours",
           "in_unit", "large", "layout", "ms", "noun_for", "num", "parallelism", "pct", "per_s", "plural", "points",
           "pool_shapes", "power", "quantity", "rate", "serving_shape", "sig", "small", "span", "table", "table_cells",
           "text_table", "unit_of", "usd", "yes_no"]
