"""Storage capacity: what must be kept, and the raw capacity data protection needs for it.

usable = raw dataset + preprocessed copies + checkpoints x retention + scratch;
raw = usable / protection efficiency / maximum fill. Protection efficiency
(usable / raw) is 1/r for r-way replication and k/(k+m) for k+m erasure coding.

References
----------
.. [1] Apache Hadoop 3 documentation, "HDFS Erasure Coding": 3-way replication has
   200 % storage overhead, RS(6,3) 50 % (efficiency 1/3 and 2/3).
.. [2] J. S. Plank, "Erasure Codes for Storage Systems: A Brief Primer", ;login: 38(6), 2013.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from aisize import checks

DEFAULT_MAX_FILL = 1.0  # assumption: plan to fill the system completely; pass e.g. 0.8 for headroom


def protection_efficiency(*, replicas=None, data_fragments=None, parity_fragments=None):
    """Usable / raw capacity of a data-protection scheme [-].

    Give either ``replicas`` (r-way replication: 1/r) or ``data_fragments`` k and
    ``parity_fragments`` m (erasure coding k+m: k/(k+m)); nothing means no protection (1).

    References
    ----------
    .. [1] Apache Hadoop "HDFS Erasure Coding" (RS(6,3): 1.5x raw, 3x replication: 3x raw).
    """
    if replicas is not None and (data_fragments is not None or parity_fragments is not None):
        raise ValueError("replicas is not allowed together with data_fragments/parity_fragments: "
                         "choose replication or erasure coding")
    if replicas is not None:
        return 1.0 / checks.integer("replicas", replicas, high=100)
    if data_fragments is None and parity_fragments is None:
        return 1.0
    if data_fragments is None or parity_fragments is None:
        raise ValueError("data_fragments and parity_fragments are not allowed alone: give both (k and m)")
    k = checks.integer("data_fragments", data_fragments, high=1000)
    m = checks.integer("parity_fragments", parity_fragments, low=0, high=1000)
    return k / (k + m)


@dataclass(frozen=True)
class CapacityPlan:
    """Capacity by line item, usable and raw [B]."""

    dataset_bytes: float
    preprocessed_bytes: float
    checkpoint_bytes: float
    scratch_bytes: float
    usable_bytes: float  # what users store
    protection_efficiency: float  # usable / raw of the protection scheme [-]
    raw_bytes: float  # raw capacity to buy

    def items(self) -> dict[str, float]:
        """Stored line items, for tables and charts."""
        d = asdict(self)
        for k in ("usable_bytes", "protection_efficiency", "raw_bytes"):
            d.pop(k)
        return d


def capacity_plan(dataset_bytes, *, preprocessed_copies=0, preprocessed_ratio=1.0,
             checkpoint_bytes=0.0, checkpoints_retained=1, scratch_bytes=0.0,
             protection=1.0, max_fill=DEFAULT_MAX_FILL) -> CapacityPlan:
    """Usable and raw capacity for a training project.

    Parameters
    ----------
    dataset_bytes : raw dataset as ingested [B]
    preprocessed_copies : preprocessed versions kept (e.g. record format, resized) [count]
    preprocessed_ratio : one preprocessed copy's size / raw dataset size [-]
    checkpoint_bytes : one checkpoint [B] (:func:`aisize.storage.checkpoint.checkpoint_bytes`)
    checkpoints_retained : checkpoints kept [count]
    scratch_bytes : scratch, spill and logs [B]
    protection : usable/raw efficiency, (0, 1] (:func:`protection_efficiency`)
    max_fill : highest fill level to plan for, (0, 1]

    References
    ----------
    .. [1] Apache Hadoop "HDFS Erasure Coding" (protection overhead).
    """
    data = checks.non_negative("dataset_bytes", dataset_bytes)
    copies = checks.non_negative("preprocessed_copies", preprocessed_copies, high=1e4)
    ratio = checks.non_negative("preprocessed_ratio", preprocessed_ratio, high=1e4)
    ckpt = checks.non_negative("checkpoint_bytes", checkpoint_bytes)
    kept = checks.non_negative("checkpoints_retained", checkpoints_retained, high=1e6)
    scratch = checks.non_negative("scratch_bytes", scratch_bytes)
    eff = checks.fraction("protection", protection)
    fill = checks.fraction("max_fill", max_fill)
    pre = data * copies * ratio
    ckpts = ckpt * kept
    usable = data + pre + ckpts + scratch
    return CapacityPlan(data, pre, ckpts, scratch, usable, eff, usable / eff / fill)
