"""The app's Summary tab says the assumptions in the sentences the CLI, the report and the findings say."""

from __future__ import annotations

import re
from html import unescape

from aisize.app import build_app
from aisize.present.assumption_text import assumption_sentences


def test_summary_tab_says_the_assumptions_in_sentences():
    app = build_app(display=False)
    summary = app.open_tab("Summary")
    p = app.state.plan
    shown = unescape(summary.assumptions.value)
    for line in assumption_sentences(p.scenario, p.assumptions, p):
        assert f"<li>{line}</li>" in shown
    assert "OS and application RAM: 32 GiB. Per server: kernel, drivers, framework." in shown
    # every job of the default is timed by the step-time model: the MFU policy says it is unused
    assert "Model FLOPs utilisation (MFU): 40 %. Unused: every training job is timed by the step-time model" in shown
    assert not re.search(r"\b[a-z_]+\.[a-z_]+ = ", shown)  # was `host.os_and_application_bytes = 34,359,738,368`
