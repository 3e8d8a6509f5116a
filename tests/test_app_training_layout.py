"""The Training tab's greyed layout knobs show the layout the search chose (screenshot review 09:15, Training, S3).

With "Parallelism: auto (search)" the knobs are greyed, and they read their defaults ("TP 1, PP 1, ZeRO 1, CP 1,
recomp. selective, μbatch 1") beside a Layout card of xe9680-genai's LoRA 70B job reading "TP2 PP1 CP2 DP2 ZeRO-3
mb1": two layouts on one tab.
"""

from __future__ import annotations

import pytest

from aisize.app import build_app
from aisize.scenario import preset, to_dict

KNOBS = {"tp": "tensor_parallel", "pp": "pipeline_parallel", "zero": "zero_stage", "micro": "micro_batch",
         "recompute": "recompute", "cp": "context_parallel", "schedule": "schedule"}


def _shown(section) -> dict:
    return {key: getattr(section, knob).value for knob, key in KNOBS.items()}


# strict: once the patch is in, this passes and the marker must go
def test_greyed_layout_knobs_show_the_searched_layout_and_fixing_keeps_it():
    app = build_app(display=False, data=to_dict(preset("xe9680-genai")))
    training = app.open_tab("Training")
    t = next(x for x in app.state.plan.training if x.name == app.state.data["workloads"][training.job.value]["name"])
    assert training.parallel.value == "auto" and all(getattr(training, k).disabled for k in KNOBS)
    searched = {key: getattr(t.layout, key) for key in KNOBS.values()}
    assert (searched["tensor_parallel"], searched["context_parallel"], searched["zero_stage"]) == (2, 2, 3)
    assert _shown(training) == searched
    assert app.state.data["workloads"][training.job.value]["layout"] == "auto"  # showing it fixed nothing
    training.parallel.value = "fixed"  # fixing starts from the layout in use
    fixed = app.state.data["workloads"][training.job.value]["layout"]
    assert {key: fixed[key] for key in KNOBS.values()} == searched
