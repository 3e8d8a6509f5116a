"""Tables written for spreadsheets (CSV, Excel) with no cell a spreadsheet would run as a formula.

Text in a plan can come from strangers: a config.json's ``_name_or_path``, a workload's name. A cell
that begins with ``=``, ``+``, ``-`` or ``@`` is a formula to Excel, LibreOffice and Google Sheets
(``=HYPERLINK(...)`` becomes a live link; a tab or carriage return before it is skipped), so such
text is written with a leading apostrophe, as OWASP's "CSV Injection" page advises. Numbers are
left alone: a negative number is data, not a formula.
"""

from __future__ import annotations

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def defuse_text(value):
    """``value`` with a leading apostrophe if it is text a spreadsheet would read as a formula."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def defuse(table: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``table`` whose text cells and column names cannot start a formula."""
    out = table.copy()
    for column in out.columns:
        if not pd.api.types.is_numeric_dtype(out[column]):  # text (str or object) columns
            out[column] = out[column].map(defuse_text)
    out.columns = [defuse_text(c) for c in out.columns]
    return out
