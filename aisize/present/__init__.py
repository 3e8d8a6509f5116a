"""The plan in words: the text every surface prints (CLI, app, report) about a plan the planner built.

The layers (the rule is tests/test_layering.py): formulas compute (no text) -> the planner
(:mod:`aisize.plan`) composes them into a plan (no text) -> presentation turns numbers into text
(:mod:`aisize.format`, this package, charts, report, app, CLI). It reads, labels and formats the plan's
figures; the one place it derives any is the comparison (B - A, the change, the worst SLO headroom of
each plan), which is a view of two plans.

- :mod:`~aisize.present.summary`: ``aisize size``'s text (BOM, findings, tables, assumptions).
- :mod:`~aisize.present.fleet_summary`: ``aisize fleet``'s text (the fleet through the day).
- :mod:`~aisize.present.assumption_text`: every assumption as a sentence with its unit and why.
- :mod:`~aisize.present.cost_text`: the buy-or-rent verdict, its payback, the operating basis.
- :mod:`~aisize.present.comparison`: two plans side by side (``aisize compare``, the app, the report).
- :mod:`~aisize.present.sweep`: ``aisize sweep``'s text (one input varied).
- :mod:`~aisize.present.figures`: figures more than one surface shows, with the one label each carries.

Submodules import on use, so that ``import aisize.present`` costs nothing.
"""
