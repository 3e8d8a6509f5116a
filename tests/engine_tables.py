"""The shipped engine table (data/engines.csv) and a site's overlay of it, for the engine-catalog tests."""

from __future__ import annotations

import csv
import io

import pytest

from aisize import catalog


@pytest.fixture
def fresh_engines():
    """The catalog's engine rows read again before and after a test (a site's overlay must not leak)."""
    catalog.engines.__dict__.pop("_rows", None)
    yield
    catalog.engines.__dict__.pop("_rows", None)


def shipped_rows() -> list[dict]:
    with (catalog.data_dir() / "engines.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def site_table(tmp_path, key: str, drop=(), **changes):
    """Our engines.csv with row ``key``'s cells changed (and columns ``drop`` left out), as a site's overlay folder."""
    rows = [{k: v for k, v in r.items() if k not in drop} for r in shipped_rows()]
    for r in rows:
        if r["id"] == key:
            r.update(changes)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    (tmp_path / "engines.csv").write_text(out.getvalue(), encoding="utf-8")
    return tmp_path
