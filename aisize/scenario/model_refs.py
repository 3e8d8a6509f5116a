"""How a scenario names a model or a catalog row of its own: a catalog id, a Hugging Face config.json, or the
architecture fields inline (``ModelRef``); a custom accelerator, server or storage system (``CatalogRow``)."""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import ConfigDict, Discriminator, Field, Tag, model_validator

from aisize import models
from aisize.models.hf_reader import parse_config
from aisize.scenario.base import Name, _Hashable
from aisize.scenario.paths import MAX_CONFIG_BYTES, ScenarioPath

HF_CONFIG_FILE = ScenarioPath("hf_config", MAX_CONFIG_BYTES, "embed the config here ({hf_config: NAME, "
                              "config: {...}}) or upload the config.json in the app", inside="config.json",
                              note="aisize reads local files only: download config.json from the model page first")


class HfConfigModel(_Hashable):
    """A model read from a Hugging Face ``config.json`` (never the Hub).

    ``hf_config`` is the file's path (or a folder holding it); the file's content is
    embedded in ``config`` when a scenario file given to the command line is read, so a saved
    scenario stands alone (the app fills ``config`` from an uploaded file and names the upload
    in ``hf_config``). Anywhere else ``config`` is required: no path is read.
    """

    hf_config: Annotated[str, Field(min_length=1, max_length=1000), HF_CONFIG_FILE]
    id: Name | None = None
    config: dict | None = None

    @model_validator(mode="before")
    @classmethod
    def _embed(cls, data):
        if isinstance(data, dict) and data.get("config") is None and isinstance(data.get("hf_config"), str):
            text = HF_CONFIG_FILE.read(data["hf_config"])
            data = {**data, "config": parse_config(text, f"hf_config {data['hf_config'][:200]!r}")}
        return data

    @model_validator(mode="after")
    def _builds(self):
        models.resolve(self)
        return self


class InlineModel(_Hashable):
    """A model given by its architecture fields (those of a catalog transformers.csv row;
    see :func:`aisize.models.from_fields` for the defaults), ``id`` and ``source`` required."""

    model_config = ConfigDict(extra="allow", frozen=True, validate_default=True)
    id: Name
    source: Annotated[str, Field(min_length=1, max_length=1000)]

    @model_validator(mode="after")
    def _builds(self):
        models.resolve(self)
        return self


def _model_kind(value) -> str:
    if isinstance(value, dict):
        return "hf_config" if "hf_config" in value else "fields"
    return "fields" if isinstance(value, InlineModel) else ("hf_config" if isinstance(value, HfConfigModel) else "id")


# a catalog id, {hf_config: path}, or the architecture fields inline
ModelRef = Annotated[Union[Annotated[str, Tag("id")], Annotated[HfConfigModel, Tag("hf_config")],
                           Annotated[InlineModel, Tag("fields")]], Discriminator(_model_kind)]


class CatalogRow(_Hashable):
    """A custom accelerator, server or storage system written like a row of our CSV
    (column names without units, values in the CSV's units); ``source`` is required."""

    model_config = ConfigDict(extra="allow", frozen=True, validate_default=True)
    id: Name
    source: Annotated[str, Field(min_length=1, max_length=1000)]
