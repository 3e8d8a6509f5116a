"""Validation suite: aisize's estimates against published figures, and ranges from observed spread.

``validate()`` compares every case of ``data/validation/cases.csv`` with aisize's
prediction (error in %, tolerance, status, assumptions); ``summary()`` gives the
median and maximum error per family; ``mfu_range()`` and ``time_range()`` turn
one time-to-train into low / expected / high from the MFUs of published runs.
"""

from aisize.validation.cases import CasesError, load_cases
from aisize.validation.ranges import MfuRange, mfu_observations, mfu_range, mfu_range_table, time_range
from aisize.validation.report import error_chart, left_out, summary, validate

__all__ = ["validate", "summary", "load_cases", "CasesError", "mfu_range", "time_range", "MfuRange",
           "mfu_observations", "mfu_range_table", "error_chart", "left_out"]
