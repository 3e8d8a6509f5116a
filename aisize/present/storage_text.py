"""The storage queue's latency basis in words, once for every surface (issue 47 item 4: the planner states it
typed, :attr:`aisize.plan.queues.StorageQueueBasis.latency_source` and ``.system``; the Queueing and Data path
tabs and the findings word it here)."""

from __future__ import annotations

from aisize.plan.queues import LATENCY_PUBLISHED, LATENCY_TYPICAL
from aisize.present.words import worded

# No purchasable unit publishes a latency, so the median least latency of SPECstorage Solution 2020 results stands
# in (aisize.storage.published.typical_unloaded_latency_seconds; docs/storage.md, "The defaults typical of
# published all-flash file systems").
TYPICAL_WORDS = "typical of published all-flash file systems (SPECstorage Solution 2020), not this system's"

_BASIS = {
    LATENCY_PUBLISHED: lambda system: f"published by {system}",
    LATENCY_TYPICAL: lambda system: TYPICAL_WORDS,
}


def latency_basis(source: str, system: str) -> str:
    """Where a storage system's unloaded IO latency comes from: (``"published"``, ``"netapp-aff-a90-8node"``) ->
    "published by netapp-aff-a90-8node"; (``"typical"``, any) -> :data:`TYPICAL_WORDS`. An unknown source is an
    error that names it."""
    return worded(_BASIS, source, "storage latency source", "aisize.present.storage_text._BASIS", system)


def basis_text(b) -> str:
    """:func:`latency_basis` of a :class:`~aisize.plan.queues.StorageQueueBasis`."""
    return latency_basis(b.latency_source, b.system)


__all__ = ["TYPICAL_WORDS", "basis_text", "latency_basis"]
