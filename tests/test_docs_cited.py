"""What the code cites as its design lives in the checkout (issue 47): every ``docs/NAME`` a module names exists,
and no module cites a DESIGN.md outside it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_cited_document_is_in_the_checkout():
    cited, bare = set(), []
    for path in (ROOT / "aisize").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        cited |= set(re.findall(r"\bdocs/[\w.-]+\.md\b", text))
        bare += [f"{path.relative_to(ROOT)}" for m in re.finditer(r"(?<![/\w])DESIGN\.md", text)]
    assert cited, "no module cites docs/ (the test would pass vacuously)"
    assert not [c for c in cited if not (ROOT / c).is_file()]
    assert not bare, f"DESIGN.md cited without its folder: {bare}"
