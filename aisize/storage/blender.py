"""The IO blender: several workloads sharing one storage system.

Each :class:`Workload` states average and peak read/write bandwidth, its IO
sizes and metadata rate. :func:`blend` adds them: aggregate bandwidth (average,
and peak assuming bursts coincide, the worst case), IOPS, read/write ratio, the
IO-size mix, and which workload dominates. A checkpoint of C bytes written in w
seconds every T seconds averages C/T and peaks at C/w.

References
----------
.. [1] WEKA, "The Challenge of IO for Generative AI", parts 3 and 4 (2023): mixed
   pipelines on one file system; NLP (voice-to-text) read/write 47/53 with large
   reads and small (sub-100 KB) writes; bursty writes at 80-100 % of the system
   while the average is ~5 %; metadata-heavy small-file pre-processing.
.. [2] mlcommons/storage Submission_guidelines.md v2.0 (checkpoint bursts).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import pandas as pd

from aisize import checks
from aisize.units import GB, KiB, MiB

KINDS = ("training", "data-preparation", "inference", "checkpoint", "mixed")
# Assumed IO sizes where a source gives none [B]
STREAMING_IO_BYTES = 1 * MiB  # large sequential reads
SMALL_IO_BYTES = 64 * KiB  # "sub-100k" samples written one by one [1]
METADATA_IO_BYTES = 4 * KiB  # metadata-sized writes (one page)


@dataclass(frozen=True)
class Workload:
    """One workload's IO on the shared storage system (averages and peaks)."""

    name: str
    kind: str
    read_bytes_per_s: float
    write_bytes_per_s: float
    read_peak_bytes_per_s: float
    write_peak_bytes_per_s: float
    read_io_bytes: float
    write_io_bytes: float
    metadata_ops_per_s: float

    @property
    def read_iops(self) -> float:
        return self.read_bytes_per_s / self.read_io_bytes

    @property
    def write_iops(self) -> float:
        return self.write_bytes_per_s / self.write_io_bytes


def workload(name: str, kind: str, *, read_bytes_per_s=0.0, write_bytes_per_s=0.0,
             read_peak_bytes_per_s=None, write_peak_bytes_per_s=None,
             read_io_bytes=STREAMING_IO_BYTES, write_io_bytes=STREAMING_IO_BYTES,
             metadata_ops_per_s=0.0) -> Workload:
    """A checked :class:`Workload` (peaks default to the averages).

    References
    ----------
    .. [1] WEKA 2023, part 4 (average vs peak utilisation of a shared system).
    """
    checks.choice("kind", kind, KINDS)
    r = checks.scalar("read_bytes_per_s", checks.non_negative("read_bytes_per_s", read_bytes_per_s))
    w = checks.scalar("write_bytes_per_s", checks.non_negative("write_bytes_per_s", write_bytes_per_s))
    rp = r if read_peak_bytes_per_s is None else checks.scalar(
        "read_peak_bytes_per_s", checks.non_negative("read_peak_bytes_per_s", read_peak_bytes_per_s))
    wp = w if write_peak_bytes_per_s is None else checks.scalar(
        "write_peak_bytes_per_s", checks.non_negative("write_peak_bytes_per_s", write_peak_bytes_per_s))
    if rp < r:
        raise ValueError(f"read_peak_bytes_per_s={rp!r} is not allowed: must be >= read_bytes_per_s={r!r}")
    if wp < w:
        raise ValueError(f"write_peak_bytes_per_s={wp!r} is not allowed: must be >= write_bytes_per_s={w!r}")
    return Workload(name, kind, r, w, rp, wp,
                    checks.scalar("read_io_bytes", checks.positive("read_io_bytes", read_io_bytes)),
                    checks.scalar("write_io_bytes", checks.positive("write_io_bytes", write_io_bytes)),
                    checks.scalar("metadata_ops_per_s",
                                  checks.non_negative("metadata_ops_per_s", metadata_ops_per_s)))


def training_reads(name: str, read_bytes_per_s, *, io_bytes=STREAMING_IO_BYTES,
                   metadata_ops_per_s=0.0) -> Workload:
    """A training job streaming its dataset (read demand from :mod:`aisize.storage.demand`)."""
    return workload(name, "training", read_bytes_per_s=read_bytes_per_s, read_io_bytes=io_bytes,
                    metadata_ops_per_s=metadata_ops_per_s)


def data_preparation(name: str, read_bytes_per_s, write_bytes_per_s, *, io_bytes=SMALL_IO_BYTES,
                     metadata_ops_per_s=0.0) -> Workload:
    """Data preparation: random reads and writes of small IOs, often metadata-heavy."""
    return workload(name, "data-preparation", read_bytes_per_s=read_bytes_per_s,
                    write_bytes_per_s=write_bytes_per_s, read_io_bytes=io_bytes,
                    write_io_bytes=io_bytes, metadata_ops_per_s=metadata_ops_per_s)


def inference_model_loading(name: str, model_bytes, replicas, load_seconds, reload_interval_seconds, *,
                            io_bytes=STREAMING_IO_BYTES) -> Workload:
    """An inference fleet (re)loading model weights: replicas x model bytes within
    ``load_seconds`` (peak), once per ``reload_interval_seconds`` (average).

    Parameters
    ----------
    model_bytes : weights one replica loads [B]
    replicas : replicas loading together [count]
    load_seconds : target time to load [s]
    reload_interval_seconds : mean time between fleet (re)loads [s], >= load_seconds
    """
    size = (checks.scalar("model_bytes", checks.positive("model_bytes", model_bytes))
            * checks.scalar("replicas", checks.integer("replicas", replicas, high=10**7)))
    load = checks.scalar("load_seconds", checks.positive("load_seconds", load_seconds))
    period = checks.scalar("reload_interval_seconds",
                           checks.number("reload_interval_seconds", reload_interval_seconds, low=load))
    return workload(name, "inference", read_bytes_per_s=size / period,
                    read_peak_bytes_per_s=size / load, read_io_bytes=io_bytes)


def kv_cache_tier(name: str, read_bytes_per_s, write_bytes_per_s, *, io_bytes) -> Workload:
    """An inference fleet's KV-cache tier on the shared storage: it writes through the KV its GPUs compute
    and reads back the KV of the prompts it reuses, one chunk of KV per IO.

    Parameters
    ----------
    read_bytes_per_s, write_bytes_per_s : the fleet's reloads and stores (aisize.plan.kvtiers) [B/s]
    io_bytes : one chunk's KV (LMCache stores 256-token chunks) [B]

    References
    ----------
    .. [1] LMCache docs (remote backends store and fetch whole chunks, ``chunk_size`` 256 tokens);
       Qin et al. 2025 (Mooncake), FAST'25 (a KV pool read back over RDMA).
    """
    io = checks.scalar("io_bytes", checks.positive("io_bytes", io_bytes))
    return workload(name, "inference", read_bytes_per_s=read_bytes_per_s, write_bytes_per_s=write_bytes_per_s,
                    read_io_bytes=io, write_io_bytes=io)


def checkpoint_bursts(name: str, checkpoint_bytes, write_seconds, interval_seconds, *,
                      io_bytes=STREAMING_IO_BYTES) -> Workload:
    """Checkpoint writes: C bytes in ``write_seconds`` every ``interval_seconds``:
    average C/T, peak C/w.

    References
    ----------
    .. [1] mlcommons/storage v2.0 checkpointing workload (bursts of large writes).
    """
    c = checks.scalar("checkpoint_bytes", checks.positive("checkpoint_bytes", checkpoint_bytes))
    w = checks.scalar("write_seconds", checks.positive("write_seconds", write_seconds))
    t = checks.scalar("interval_seconds", checks.number("interval_seconds", interval_seconds, low=w))
    return workload(name, "checkpoint", write_bytes_per_s=c / t, write_peak_bytes_per_s=c / w,
                    write_io_bytes=io_bytes)


def mixed(name: str, total_bytes_per_s, read_share, *, read_io_bytes=STREAMING_IO_BYTES,
          write_io_bytes=SMALL_IO_BYTES, peak_to_average=1.0, metadata_ops_per_s=0.0) -> Workload:
    """A workload known by its total bandwidth and read share of bytes (e.g. 47/53)."""
    total = checks.scalar("total_bytes_per_s", checks.non_negative("total_bytes_per_s", total_bytes_per_s))
    share = checks.scalar("read_share", checks.fraction("read_share", read_share, allow_zero=True))
    peak = checks.scalar("peak_to_average", checks.number("peak_to_average", peak_to_average, low=1.0, high=1e6))
    return workload(name, "mixed", read_bytes_per_s=total * share,
                    write_bytes_per_s=total * (1 - share),
                    read_peak_bytes_per_s=peak * total * share,
                    write_peak_bytes_per_s=peak * total * (1 - share),
                    read_io_bytes=read_io_bytes, write_io_bytes=write_io_bytes,
                    metadata_ops_per_s=metadata_ops_per_s)


def seed_workloads(total_bytes_per_s=1 * GB) -> dict[str, Workload]:
    """The seed documents' example pipelines, each scaled to ``total_bytes_per_s``.

    * ``nlp-audio-text``: read/write 47/53 by bytes, large reads, small (sub-100 KB) writes [1].
    * ``ml-development``: read/write 48/52 [1] (IO sizes assumed as for NLP).
    * ``vision-training``: narrow read sizes (one ImageNet JPEG, ~110 KB) and
      metadata-heavy small writes [1]; its read share (0.8) and metadata rate
      (two operations per written IO) are assumptions.

    References
    ----------
    .. [1] WEKA, "The Challenge of IO for Generative AI", part 4 (2023).
    """
    t = checks.non_negative("total_bytes_per_s", total_bytes_per_s)
    vision_write_iops = t * 0.2 / METADATA_IO_BYTES
    return {
        "nlp-audio-text": mixed("nlp-audio-text", t, 0.47),
        "ml-development": mixed("ml-development", t, 0.48),
        "vision-training": mixed("vision-training", t, 0.8, read_io_bytes=110 * KiB,
                                 write_io_bytes=METADATA_IO_BYTES,
                                 metadata_ops_per_s=2 * vision_write_iops),
    }


@dataclass(frozen=True)
class Blend:
    """Aggregate IO of several workloads on one storage system."""

    read_bytes_per_s: float  # average [B/s]
    write_bytes_per_s: float
    read_peak_bytes_per_s: float  # bursts coinciding [B/s]
    write_peak_bytes_per_s: float
    read_iops: float  # average [1/s]
    write_iops: float
    metadata_ops_per_s: float
    read_share: float  # of average bytes [-]
    read_ops_share: float  # of average data operations [-]
    dominant_bandwidth: str  # workload with the most average bytes/s
    dominant_peak: str  # workload with the highest peak bytes/s
    dominant_iops: str  # workload with the most operations/s
    workloads: tuple  # the Workloads blended

    @cached_property
    def table(self) -> pd.DataFrame:
        """One row per workload, with its share of the blend's average bytes."""
        t = pd.DataFrame([{"name": w.name, "kind": w.kind, "read_bytes_per_s": w.read_bytes_per_s,
                           "write_bytes_per_s": w.write_bytes_per_s,
                           "read_peak_bytes_per_s": w.read_peak_bytes_per_s,
                           "write_peak_bytes_per_s": w.write_peak_bytes_per_s,
                           "read_iops": w.read_iops, "write_iops": w.write_iops,
                           "read_io_bytes": w.read_io_bytes, "write_io_bytes": w.write_io_bytes,
                           "metadata_ops_per_s": w.metadata_ops_per_s} for w in self.workloads])
        total = self.read_bytes_per_s + self.write_bytes_per_s
        t["bytes_share"] = (t.read_bytes_per_s + t.write_bytes_per_s) / total if total else 0.0
        return t

    @cached_property
    def io_sizes(self) -> pd.DataFrame:
        """IO-size mix: io_bytes, direction, ops and bytes per second and their shares."""
        t, cols = self.table, ["io_bytes", "ops_per_s", "bytes_per_s"]
        sizes = pd.concat([
            t[[f"{d}_io_bytes", f"{d}_iops", f"{d}_bytes_per_s"]].set_axis(cols, axis=1).assign(direction=d)
            for d in ("read", "write")]).groupby(["direction", "io_bytes"], as_index=False).sum()
        sizes = sizes[sizes.ops_per_s > 0].reset_index(drop=True)
        ops, total = self.read_iops + self.write_iops, self.read_bytes_per_s + self.write_bytes_per_s
        sizes["ops_share"] = sizes.ops_per_s / ops if ops else 0.0
        sizes["bytes_share"] = sizes.bytes_per_s / total if total else 0.0
        return sizes


def blend(workloads) -> Blend:
    """Combine workloads sharing one storage system.

    Averages and IOPS add up; peaks add up as if every burst coincided (the
    worst case a storage system must absorb). The per-workload table and the
    IO-size mix are built on first use, so a plan that only needs the totals
    stays fast.

    Parameters
    ----------
    workloads : iterable of :class:`Workload` (at least one)

    References
    ----------
    .. [1] WEKA 2023, parts 3-4 (the IO blender).
    """
    items = tuple(workloads)
    if not items or not all(isinstance(w, Workload) for w in items):
        raise ValueError(f"workloads={workloads!r} is not allowed: must be a non-empty list of Workload")
    r = sum(w.read_bytes_per_s for w in items)
    wr = sum(w.write_bytes_per_s for w in items)
    ri, wi = sum(w.read_iops for w in items), sum(w.write_iops for w in items)
    total, ops = r + wr, ri + wi

    def busiest(key):
        return max(items, key=key).name  # first of equals, as pandas' idxmax

    return Blend(float(r), float(wr), float(sum(w.read_peak_bytes_per_s for w in items)),
                 float(sum(w.write_peak_bytes_per_s for w in items)), float(ri), float(wi),
                 float(sum(w.metadata_ops_per_s for w in items)), float(r / total) if total else 0.0,
                 float(ri / ops) if ops else 0.0,
                 busiest(lambda w: w.read_bytes_per_s + w.write_bytes_per_s),
                 busiest(lambda w: w.read_peak_bytes_per_s + w.write_peak_bytes_per_s),
                 busiest(lambda w: w.read_iops + w.write_iops + w.metadata_ops_per_s), items)
