"""The scenario's base types: strict frozen models, bounded names and numbers, catalog-id checks.

Every scenario module (model, fleet, reuse, calibration) builds on these, so they live apart from the
scenario's own fields.
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from aisize import catalog

Name = Annotated[str, Field(min_length=1, max_length=80, pattern=r"^[\w .,:'()/+-]+$")]
Positive = Annotated[float, Field(gt=0, le=1e15, allow_inf_nan=False)]
Share = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1, le=1_000_000)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, data):
        # pydantic reads true as 1.0 for a float field; in a file that is a typo, not a number
        if isinstance(data, dict):
            for key, value in data.items():
                field = cls.model_fields.get(key) if isinstance(key, str) else None
                if isinstance(value, bool) and field is not None and field.annotation is not bool:
                    raise ValueError(f"{key}={value!r} is not allowed: must be a number or text, not true/false")
        return data


def _short(value) -> str:
    """A value's repr cut to a readable length (a typo may be megabytes long)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _in_table(table: catalog.Table, field: str, value: str | None) -> str | None:
    if value is not None and value not in table:
        raise ValueError(f"{field} {_short(value)} is not in the catalog; allowed: {', '.join(table.ids())}")
    return value


def _in_ids(field: str, value: str, table: catalog.Table, custom: dict) -> None:
    if value not in table and value not in custom:
        raise ValueError(f"{field} {_short(value)} is neither in the catalog nor among the scenario's own rows; "
                         f"allowed: {', '.join(list(custom) + table.ids())}")


class _Hashable(_Strict):
    # free-form mappings (a config.json, an inline catalog row) still hash: plans are cached by input
    def __hash__(self):
        return hash(json.dumps(self.model_dump(mode="json"), sort_keys=True))
