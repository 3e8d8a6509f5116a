"""One calibration for aisize: the serving model's constants and the training step's, loaded and saved together.

A file is a JSON object with a ``serving`` section (:class:`aisize.serving.calibration.Calibration`), a
``training`` section (:class:`aisize.training.calibration.TrainingCalibration`), or both; a section left
out keeps the shipped values. A file written before the sections existed (the serving constants at the
top level, as ``aisize calibrate`` wrote them) still loads as the serving section. Every value is checked
by its section's reader: an unknown key or a value outside its physical range is refused naming the
section, the constant, the value and the range. docs/training-calibration.md describes the format.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from aisize import checks
from aisize.serving import calibration as serving_calibration
from aisize.training import calibration as training_calibration

SECTIONS = ("serving", "training")


@dataclass(frozen=True)
class Calibration:
    """The serving and training calibrations an estimate or a plan uses (each the shipped one by default)."""

    serving: serving_calibration.Calibration = field(default_factory=lambda: serving_calibration.CALIBRATION)
    training: training_calibration.TrainingCalibration = field(
        default_factory=lambda: training_calibration.CALIBRATION)

    def __post_init__(self):
        if not isinstance(self.serving, serving_calibration.Calibration):
            raise ValueError(f"serving={str(self.serving)[:60]!r} is not allowed: give an "
                             "aisize.serving.calibration.Calibration")
        if not isinstance(self.training, training_calibration.TrainingCalibration):
            raise ValueError(f"training={str(self.training)[:60]!r} is not allowed: give an "
                             "aisize.training.calibration.TrainingCalibration")

    def as_table(self) -> list[dict]:
        """Every constant of both sections with its value, unit and origin, each row naming its section."""
        return ([{"section": "serving", **row} for row in self.serving.as_table()]
                + [{"section": "training", **row} for row in self.training.as_table()])

    def to_dict(self) -> dict:
        return {"serving": json.loads(self.serving.to_json()), "training": self.training.to_dict()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def save(self, path) -> Path:
        """Write both sections to ``path`` (JSON) and return it."""
        path = Path(path)
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path


CALIBRATION = Calibration()


def from_dict(d, *, where: str = "calibration") -> Calibration:
    """A :class:`Calibration` from a parsed calibration file: sections ``serving`` and/or ``training``, or
    (a file of the serving constants alone, as written before sections existed) serving keys at the top."""
    if not isinstance(d, dict):
        raise ValueError(f"{where} must hold a JSON object: sections {' and/or '.join(SECTIONS)}")
    if not set(SECTIONS) & set(d):  # the serving constants at the top level
        return Calibration(serving=serving_calibration.from_dict(d, where=where))
    unknown = set(d) - set(SECTIONS)
    if unknown:
        raise ValueError(f"{where} has unknown sections {sorted(map(str, unknown))[:5]!r}; allowed: "
                         f"{', '.join(SECTIONS)}")
    serving = (serving_calibration.from_dict(d["serving"], where=f"{where} section 'serving'")
               if "serving" in d else serving_calibration.CALIBRATION)
    training = (training_calibration.from_dict(d["training"], where=f"{where} section 'training'")
                if "training" in d else training_calibration.CALIBRATION)
    return Calibration(serving=serving, training=training)


def from_json(text: str, *, where: str = "calibration") -> Calibration:
    """A :class:`Calibration` from JSON text (see :func:`from_dict`)."""
    return from_dict(checks.json_value(text, where), where=where)


def load(path) -> Calibration:
    """A calibration file (a regular file of at most 1 MB of UTF-8 JSON; see :func:`from_dict`)."""
    return from_json(serving_calibration.read_text(path), where=f"calibration file {Path(path).name[:100]!r}")


def save(calibration: Calibration, path) -> Path:
    """Write ``calibration`` (both sections) to ``path``."""
    return calibration.save(path)
