"""The Inference tab's latency curve after a move of the prompts' spread is the plan's, not the one kept from
before the move (the kept curve's key lacked what its solve reads of the lengths: ``curves.curve_reads``)."""

import numpy as np
import pytest
from dataclasses import replace

from aisize.app import build_app
from aisize.plan import latency_curve, plan
from aisize.scenario import DEFAULT_PRESET, from_dict, preset, to_dict


@pytest.mark.parametrize("values", [(0.15, 0.3), (0.5, 1.0)])
def test_a_prompt_cv_move_redraws_the_curve(values):
    data = to_dict(preset(DEFAULT_PRESET))
    app = build_app(display=False, data=data)
    inference = app.open_tab("Inference")
    j = next(k for k, w in enumerate(data["workloads"]) if w["kind"] == "inference")
    for cv in values:
        inference.prompt_cv.value = cv
        data["workloads"][j]["prompt_cv"] = cv
        want = latency_curve(replace(plan(from_dict(data)).inference[0], replicas=1))
        shown = inference._curve_at[1]
        np.testing.assert_array_equal(shown["ttft_p95_seconds"].to_numpy(), want["ttft_p95_seconds"].to_numpy())
