"""Hardware, model and dataset catalogs, loaded from ``data/`` once and validated.

Each table is a :class:`Table` of typed records::

    from aisize import catalog
    gpu = catalog.accelerators["h100-sxm"]
    gpu.memory_bytes, gpu.bf16_flops_per_s, gpu.source
    catalog.servers.filter(accelerator="h100-sxm")
    catalog.links.frame()          # a pandas DataFrame view

Figures are in base units (bytes, bytes/s, FLOP/s, W, s); every row has a source.

A site keeps its own rows in overlay folders (``$AISIZE_CATALOG``, several joined by
the path separator, or :func:`use_overlay`): a CSV there named like one of ours, with
our columns, adds rows or replaces ours with the same id, checked by the same loader.
"""

from __future__ import annotations

import csv
import dataclasses
import os
from collections.abc import Callable, Iterator
from functools import cached_property
from pathlib import Path
from typing import Generic, TypeVar

from aisize.catalog.loader import CatalogError, load_table, parse_row
from aisize.catalog.records import (Accelerator, Dataset, Link, OtherModel, Server, ServingEngine,
                                    SpeculativeAcceptance, StorageSystem, Throughput, Transformer)

__all__ = ["Table", "CatalogError", "data_dir", "overlay_dirs", "use_overlay", "parse_row", "accelerators", "servers", "links", "storage",
           "transformers", "other_models", "datasets", "throughput", "engines", "speculative", "Accelerator", "Server", "Link",
           "StorageSystem", "Transformer", "OtherModel", "Dataset", "Throughput", "ServingEngine", "SpeculativeAcceptance"]

R = TypeVar("R")


def data_dir() -> Path:
    """The folder holding the catalog CSVs: ``$AISIZE_DATA_DIR``, the checkout's
    ``data/``, or the copy packaged inside an installed wheel."""
    if os.environ.get("AISIZE_DATA_DIR"):
        return Path(os.environ["AISIZE_DATA_DIR"])
    here = Path(__file__).resolve().parent
    checkout = here.parents[1] / "data"
    return checkout if checkout.is_dir() else here.parent / "_data"


_OVERLAYS: list[Path] = []


def overlay_dirs() -> list[Path]:
    """Overlay folders in the order they apply: ``$AISIZE_CATALOG``, then :func:`use_overlay`'s."""
    env = [Path(p) for p in os.environ.get("AISIZE_CATALOG", "").split(os.pathsep) if p.strip()]
    return env + _OVERLAYS


def use_overlay(path) -> None:
    """Add a user catalog folder whose CSVs add to or replace our rows (checked on next use)."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise CatalogError(folder, "catalog overlay must be a folder holding CSV files named like "
                           f"ours ({', '.join(TABLES)} .csv)")
    for table in TABLES.values():  # its rows are checked now, so a bad one is named before any plan
        if (folder / table.filename).is_file():
            load_table(folder / table.filename, table.record_type)
    _OVERLAYS.append(folder)
    for table in TABLES.values():
        table.__dict__.pop("_rows", None)


class Table(Generic[R]):
    """One catalog table, read on first use: lookup by id, iterate, filter, DataFrame."""

    def __init__(self, filename: str, record_type: type[R], path: Path | None = None):
        self.filename = filename
        self.record_type = record_type
        self._path = path

    @property
    def path(self) -> Path:
        return self._path or data_dir() / self.filename

    @cached_property
    def _rows(self) -> dict[str, R]:
        rows = {r.id: r for r in load_table(self.path, self.record_type)}
        if self._path is None:
            for folder in overlay_dirs():
                if not folder.is_dir():
                    raise CatalogError(folder, "AISIZE_CATALOG names a folder that does not exist")
                if (folder / self.filename).is_file():
                    rows.update({r.id: r for r in load_table(folder / self.filename, self.record_type)})
        return rows

    def parse_rows(self, rows, where: str) -> dict[str, R]:
        """Records from rows written inline like this table's CSV rows (a scenario's custom hardware).

        Each row is a mapping of column names (without units) to values in our CSV's units;
        errors name ``where``, the row's index and the field.
        """
        rows = list(rows)
        if not rows:  # a scenario without custom hardware (every plan asks)
            return {}
        headers = self.headers()
        return {r.id: r for r in (parse_row(f"{where}[{i}]", self.record_type, headers, dict(row))
                                  for i, row in enumerate(rows))}

    def headers(self) -> list[str]:
        """Our CSV's column headers (names with units), for rows written inline."""
        with self.path.open(newline="", encoding="utf-8") as handle:
            return next(csv.reader(handle))

    def __getitem__(self, id: str) -> R:
        try:
            return self._rows[id]
        except (KeyError, TypeError):
            raise ValueError(f"{self.filename[:-4]} id {id!r} is not in the catalog; "
                             f"known: {', '.join(self._rows)}") from None

    def get(self, id: str, default=None):
        return self._rows.get(id, default)

    def __contains__(self, id) -> bool:
        return id in self._rows

    def __iter__(self) -> Iterator[R]:
        return iter(self._rows.values())

    def __len__(self) -> int:
        return len(self._rows)

    def ids(self) -> list[str]:
        return list(self._rows)

    def filter(self, predicate: Callable[[R], bool] | None = None, **equals) -> list[R]:
        """Records for which ``predicate`` holds and every ``field=value`` matches."""
        return [r for r in self if (predicate is None or predicate(r))
                and all(getattr(r, k) == v for k, v in equals.items())]

    def frame(self):
        """The table as a pandas DataFrame indexed by id, in base units."""
        import pandas as pd

        return pd.DataFrame([dataclasses.asdict(r) for r in self]).set_index("id")


accelerators: Table[Accelerator] = Table("accelerators.csv", Accelerator)
servers: Table[Server] = Table("servers.csv", Server)
links: Table[Link] = Table("links.csv", Link)
storage: Table[StorageSystem] = Table("storage.csv", StorageSystem)
transformers: Table[Transformer] = Table("transformers.csv", Transformer)
other_models: Table[OtherModel] = Table("other_models.csv", OtherModel)
datasets: Table[Dataset] = Table("datasets.csv", Dataset)
throughput: Table[Throughput] = Table("throughput.csv", Throughput)
engines: Table[ServingEngine] = Table("engines.csv", ServingEngine)
speculative: Table[SpeculativeAcceptance] = Table("speculative.csv", SpeculativeAcceptance)

TABLES: dict[str, Table] = {t.filename[:-4]: t for t in
                            (accelerators, servers, links, storage, transformers, other_models, datasets,
                             throughput, engines, speculative)}


def model(id: str) -> Transformer | OtherModel:
    """A model by id from either model table."""
    if id in transformers:
        return transformers[id]
    if id in other_models:
        return other_models[id]
    raise ValueError(f"model id {id!r} is not in the catalog; known: "
                     f"{', '.join(transformers.ids() + other_models.ids())}")
