"""The report's sections by name, in report order, with their headings.

What ``aisize report`` checks before it starts a kernel: this module imports no chart or planning
code, so checking a request costs no second of Altair's import in the calling process. The
renderers are registered in :data:`aisize.report.sections.SECTIONS`, under these names.
"""

from __future__ import annotations

from collections.abc import Iterable

DEFAULT_TITLE = "AI cluster sizing report"

HEADINGS: dict[str, str] = {
    "executive": "Executive summary",
    "compare": "Comparison",
    "summary": "Scenario summary",
    "bom": "Bill of materials",
    "training": "Training: memory and time",
    "inference": "Inference",
    "kv-tiers": "KV-cache tiers",
    "placement": "Placement and timeline",
    "jobqueue": "Job queue",
    "fleet": "Fleet over the day",
    "storage": "Data path and storage",
    "network": "Network",
    "queueing": "Queueing and latency",
    "blender": "IO blender",
    "cost": "Cost",
    "assumptions": "Assumptions",
    "sources": "Sources",
    "accuracy": "Appendix: accuracy",
}


def check_sections(names: Iterable[str]) -> list[str]:
    """The chosen sections in report order, or a ValueError naming unknown ones and the allowed."""
    names = list(names)
    unknown = [n for n in names if n not in HEADINGS]
    if unknown or not names:
        what = f"unknown {unknown}" if unknown else "none chosen"
        raise ValueError(f"sections: {what}; choose from {list(HEADINGS)}")
    return [n for n in HEADINGS if n in names]
