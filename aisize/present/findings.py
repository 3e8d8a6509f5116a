"""A finding in words: the sentence every surface (CLI, app, report, JSON, CSV) shows for a plan's finding."""

from __future__ import annotations


def finding_text(finding) -> str:
    """The sentence that says ``finding`` (an :class:`aisize.plan.findings.Finding`)."""
    return finding.text


__all__ = ["finding_text"]
