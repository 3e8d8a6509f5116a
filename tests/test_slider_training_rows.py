"""The Training tab's step-time chart rows are the same however the candidates' records are read (issue 51 item 2).

A training slider move redraws the step-time chart from the layout candidates; reading their rows with pandas'
``to_dict("records")`` builds a Series per column, each deep-copying the frame's ``attrs`` (the model record), about
3 ms a move. Whatever reads them must give the rows ``to_dict("records")`` gives: the reference below is the long
way, checked for every training job of every preset. No timings are asserted here.
"""

from __future__ import annotations

import pandas as pd
import pytest

from aisize.charts import training as CT
from aisize.plan import layout_candidates
from aisize.scenario import preset, preset_names

# every training job with searched layouts (a job of a model that is no transformer has none)
JOBS = [(p, w.name) for p in preset_names() for w in preset(p).workloads
        if w.kind == "training" and len(layout_candidates(preset(p), w.name, 5))]


def _long_way(frame: pd.DataFrame) -> list[dict]:
    rows = []
    for rank, r in enumerate(frame.to_dict("records")):
        label = f"{rank + 1}. {CT.layout_label(r)}"
        total = sum(float(r[k]) for k in CT.STEP_PARTS)
        for order, (key, name) in enumerate(CT.STEP_PARTS.items()):
            seconds = float(r[key])
            if seconds > 0.0:
                rows.append({"layout": label, "rank": rank, "part": name, "order": order, "seconds": seconds,
                             "share": seconds / total, "mfu": float(r.get("mfu", float("nan")))})
    return pd.DataFrame(rows, columns=["layout", "rank", "part", "order", "seconds", "share", "mfu"]).to_dict("records")


def _same(a, b) -> bool:
    return type(a) is type(b) and (a == b or (a != a and b != b))  # NaN where the layout has no MFU


@pytest.mark.parametrize("name,job", JOBS)
def test_step_chart_rows_equal_the_long_way(name, job):
    frame = layout_candidates(preset(name), job, 5)
    assert len(frame) and frame.attrs  # the case the shortcut is for: rows of a frame that carries attrs
    got, want = CT.step_breakdown_rows(frame)[CT.STEP_DATA], _long_way(frame)
    assert len(got) == len(want) > 0
    for g, w in zip(got, want):
        assert list(g) == list(w) and all(_same(g[k], w[k]) for k in w), (g, w)
