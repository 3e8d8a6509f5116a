"""The download link's YAML is built only when the scenario's fields changed (issue 51), and is ``dumps``'s text."""

from __future__ import annotations

import base64

from aisize.app import build_app
from aisize.scenario import dumps


def test_the_download_link_is_rebuilt_only_for_a_new_scenario(monkeypatch):
    from aisize.app.scenario_yaml import ScenarioYaml

    dumped = []
    real = ScenarioYaml.text
    monkeypatch.setattr(ScenarioYaml, "text", lambda self, fields: dumped.append(1) or real(self, fields))
    app = build_app(display=False)
    assert len(dumped) == 1
    link = app.download.value
    app.state.load(app.state.data)  # the same scenario again: the same text, no YAML built
    assert len(dumped) == 1 and app.download.value == link
    inference = app.open_tab("Inference")
    inference.rate.value = 200.0
    assert len(dumped) == 2 and app.download.value != link
    assert base64.b64decode(app.download.value.split("base64,")[1].split("'")[0]) == dumps(
        app.state.plan.scenario).encode()
