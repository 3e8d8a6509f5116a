"""Where a scenario's models and hardware rows come from: our catalog, a config.json, or the scenario.

A workload's model is a catalog id, a Hugging Face ``config.json`` (embedded in the
scenario) or architecture fields written inline; the scenario may also bring its own
accelerator, server and storage rows. The report names the origin of each, with its
source, so a reader can tell a datasheet figure from one the customer typed in.
"""

from __future__ import annotations

from dataclasses import dataclass

from aisize import catalog, models
from aisize.scenario import Scenario
from aisize.scenario.model_refs import HfConfigModel

# Tables a scenario may bring rows of: its Hardware field -> our catalog table.
OWN_TABLES = {"accelerators": "accelerators", "servers": "servers", "storage_systems": "storage"}
OWN_LABEL = "scenario's own row"


@dataclass(frozen=True)
class ModelOrigin:
    """A workload's model record and where it came from (``origin``), with its ``source``."""

    record: catalog.Transformer | catalog.OtherModel
    kind: str  # catalog | config.json | inline
    origin: str
    source: str

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def params(self) -> float:
        """The model card's parameter count (a config's architecture count; non-LLMs: their total)."""
        r = self.record
        return r.published_params if isinstance(r, catalog.Transformer) else r.params


def _model_types(config: dict) -> str:
    outer = config.get("model_type")
    text = config.get("text_config")
    inner = text.get("model_type") if isinstance(text, dict) else None
    return f"{outer} (language model: {inner})" if inner else f"{outer}"


def model_origin(model) -> ModelOrigin:
    """Where a workload's ``model`` (catalog id, config.json or inline fields) came from."""
    if isinstance(model, str):
        record = catalog.model(model)
        table = "transformers" if isinstance(record, catalog.Transformer) else "other_models"
        return ModelOrigin(record, "catalog", f"catalog row {model} ({table}.csv)", record.source)
    record = models.resolve(model)
    if isinstance(model, HfConfigModel):
        return ModelOrigin(record, "config.json", f"Hugging Face config.json '{model.hf_config}', "
                           f"model_type {_model_types(model.config or {})}", record.source)
    return ModelOrigin(record, "inline", "architecture fields written in the scenario", model.source)


def own_rows(scenario: Scenario) -> dict[str, dict]:
    """The scenario's own rows as catalog records: {catalog table name: {id: record}}."""
    accs, servers, stores = scenario.hardware.custom_records()
    return {"accelerators": accs, "servers": servers, "storage": stores}


def hardware_record(scenario: Scenario, table: str, id_: str | None, own: dict | None = None):
    """(record, from the scenario?) of ``id_`` in catalog table ``table`` (any of ours): the
    scenario's own row first, as the planner resolves it; (None, False) when ``id_`` is None or
    in neither. ``own`` is :func:`own_rows` when the caller has it already."""
    own = own_rows(scenario) if own is None else own
    if id_ in own.get(table, {}):
        return own[table][id_], True
    return (catalog.TABLES[table].get(id_) if id_ else None), False


def own_row_figures(scenario: Scenario) -> list[tuple[str, str, str, str]]:
    """(table, id, figures as written with our CSV's units, source) of each row the scenario brings."""
    out = []
    for field, table in OWN_TABLES.items():
        units = {h.split(" [")[0]: h for h in catalog.TABLES[table].headers()}
        for row in getattr(scenario.hardware, field):
            values = row.model_dump()
            shown = [f"{units.get(k, k)} {v}" for k, v in values.items()
                     if k not in ("id", "name", "source", "note") and v not in (None, "")]
            out.append((table, row.id, ", ".join(shown), row.source))
    return out
