"""What published all-flash file-system results say of one IO's latency and of one storage node's rate.

The catalog's AI storage units publish bandwidth (MLPerf Storage) but neither an IO latency nor a measured
IOPS. Where a row gives none, the planner uses figures typical of published all-flash file systems, read
from the SPECstorage Solution 2020 results in data/storage_published_results.csv (each row its result id
and URL), by two written rules:

- unloaded latency = the median over the results of each one's least published mean latency (the load
  points nearest no load; Little's law needs the time of one IO on an idle system);
- file-system rate of one storage node = the highest ops/s per storage node any result published at its
  rated (last) load point, over the results that name their storage node count: an upper bound of what
  one node's software path has been shown to serve, which the derived IOPS of a row must not exceed.

Both are typical of other systems, not the chosen system's: every surface must say so.

References
----------
.. [1] SPEC, SPECstorage Solution 2020 results (docs/storage.md, "The defaults typical of published
   all-flash file systems", lists every result with its URL).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from statistics import median

RESULTS_FILE = "storage_published_results.csv"


@dataclass(frozen=True)
class PublishedResult:
    """One SPECstorage Solution 2020 result as the table above keeps it (SI units)."""

    result: str  # SPEC result id, storage2020-YYYYMMDD-NNNNN
    system: str
    storage_nodes: int | None  # storage (controller) nodes of the solution; None for a cloud service
    least_latency_seconds: float  # least mean latency of its Performance table [s]
    rated_ops_per_s: float  # ops/s at its last (rated) load point [1/s]
    url: str


@lru_cache(maxsize=1)
def published_results() -> tuple[PublishedResult, ...]:
    """The rows of data/storage_published_results.csv (the catalog's data folder)."""
    from aisize.catalog import data_dir

    with open(data_dir() / RESULTS_FILE, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return tuple(PublishedResult(r["result"], r["system"], int(r["storage_nodes"]) if r["storage_nodes"] else None,
                                 float(r["least_latency_ms"]) * 1e-3, float(r["rated_ops_per_s"]), r["url"])
                 for r in rows)


def typical_unloaded_latency_seconds(results=None) -> float:
    """Median of the results' least mean latencies [s]: 0.3 ms over the six results kept (0.1 to 0.5 ms)."""
    rows = published_results() if results is None else tuple(results)
    if not rows:
        raise ValueError("results is empty: no published result to take a typical latency from")
    return float(median(r.least_latency_seconds for r in rows))


def node_ops_ceiling_per_s(results=None) -> float:
    """Highest rated ops/s per storage node among results that name their node count [1/s]: 562,525 (the 2-node
    Sangfor F8000, storage2020-20250929-00140); NetApp's AFF A90 and A900 nodes reached 455,609 and 474,987."""
    rows = [r for r in (published_results() if results is None else results) if r.storage_nodes]
    if not rows:
        raise ValueError("results has no result with a storage node count: no per-node rate to take")
    return max(r.rated_ops_per_s / r.storage_nodes for r in rows)
