"""Validation suite: aisize's estimates against published figures, and ranges from observed spread.

``validate()`` compares every case of ``data/validation/cases.csv`` with aisize's
prediction (error in %, tolerance, status, assumptions); ``summary()`` gives the
median and maximum error per family; ``mfu_range()`` and ``time_range()`` turn
one time-to-train into low / expected / high from the MFUs of published runs.

The names below are imported on first use (PEP 562), so the command line can offer ``aisize validate
--family`` (:mod:`aisize.validation.families`) without importing the estimates.
"""

from aisize import lazy

_WHERE = {"CasesError": "cases", "load_cases": "cases", "MfuRange": "ranges", "mfu_observations": "ranges",
          "mfu_range": "ranges", "mfu_range_table": "ranges", "time_range": "ranges", "error_chart": "report",
          "left_out": "report", "summary": "report", "validate": "report"}

__all__ = ["validate", "summary", "load_cases", "CasesError", "mfu_range", "time_range", "MfuRange",
           "mfu_observations", "mfu_range_table", "error_chart", "left_out"]

__getattr__, __dir__ = lazy.exports(__name__, _WHERE)
