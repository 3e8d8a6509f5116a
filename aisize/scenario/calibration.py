"""The scenario's calibration: ``policies.serving_calibration``, a file from ``aisize calibrate``.

The serving model's achieved shares of peak and fixed costs (:mod:`aisize.serving.calibration`) and the
training step's fitted constants (:mod:`aisize.training.calibration`) are assumptions like the other
policies: a scenario may replace aisize's with a file fitted on the customer's own runs (one file, with a
``serving`` and/or a ``training`` section, :mod:`aisize.calibration`; a file of serving constants alone, as
written before sections existed, still loads). Every serving figure of its plan (services, fleets through
the day, KV tiers) then uses its serving section, and every training step time its training section. Like a model's ``hf_config``, the file's path is read only for a scenario file given to
the command line, and its content is embedded, so that a saved scenario stands alone; a scenario from
the app or any dict must carry the content (the app's Accuracy tab loads a file and embeds it).
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import Field, PrivateAttr, model_validator

from aisize.scenario.base import _Strict
from aisize.scenario.paths import MAX_CALIBRATION_BYTES, ScenarioPath
from aisize import calibration as combined_calibration
from aisize.serving import calibration as serving_calibration

__all__ = ["ServingCalibration"]

CALIBRATION_FILE = ScenarioPath("file", MAX_CALIBRATION_BYTES, "embed its content here ({file: NAME, content: "
                                "{...}}) or load the file in the Accuracy tab of the app")


class ServingCalibration(_Strict):
    """A serving calibration file (``aisize calibrate --out FILE``) the plan uses instead of the default.

    ``file`` is its path (a relative one from the scenario file's folder, else the working directory) or,
    from the app, the uploaded file's name;
    ``content`` is the file's JSON object, embedded when a scenario file given to the command line is read.
    Anywhere else ``content`` is required: no path is read. ``serving_calibration: FILE`` is short for
    ``{file: FILE}``.
    """

    file: Annotated[str, Field(min_length=1, max_length=1000), CALIBRATION_FILE]
    content: dict | None = None
    _calibration: object = PrivateAttr(default=None)
    _key: int = PrivateAttr(default=0)

    @model_validator(mode="before")
    @classmethod
    def _embed(cls, data):
        if isinstance(data, str):
            data = {"file": data}
        if isinstance(data, dict) and data.get("content") is None and isinstance(data.get("file"), str):
            text = CALIBRATION_FILE.read(data["file"])
            combined_calibration.from_json(text, where=f"calibration file {data['file'][:200]!r}")
            data = {**data, "content": json.loads(text)}
        return data

    @model_validator(mode="after")
    def _valid(self):
        self._calibration = combined_calibration.from_dict(self.content, where=f"calibration {self.file[:80]!r}")
        self._key = hash((self.file, json.dumps(self.content, sort_keys=True)))
        return self

    def __hash__(self):  # plans are cached by their inputs; the content is hashed once
        return self._key

    @property
    def calibration(self) -> serving_calibration.Calibration:
        """The checked :class:`aisize.serving.Calibration` (the file's serving section)."""
        return self._calibration.serving

    @property
    def training(self):
        """The file's training section (:class:`aisize.training.calibration.TrainingCalibration`; the shipped
        one where the file has none)."""
        return self._calibration.training

