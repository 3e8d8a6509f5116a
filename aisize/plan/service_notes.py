"""A service's typed remarks: what the planner states beside its figures, as a code and the figures, with no words.

Their sentences are :func:`aisize.present.service_text.service_note_text`'s and
:func:`aisize.present.service_text.model_source_text`'s (issue 47 item 4: formulas -> planner, no text ->
presentation), read by every surface (the JSON export words them)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ServiceNote:
    """A remark on an inference service's plan: a stable ``code`` and the figures it states (``facts``; names
    carry units).

    Codes: ``concurrency`` (users, requests_per_s, latency_mean_seconds: the rate users in flight send by Little's
    law, which the fleet is planned for), ``autoscaler_peak`` (peak_replicas, static_replicas: the replicas the
    autoscaler holds at the day's peak, and what the peak rate alone sizes)."""

    code: str
    facts: dict = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class ModelSource:
    """Where a service's model architecture came from: ``kind`` catalog | hf-config | inline, and ``detail``, the
    catalog row's source, the config.json path, or the inline model's own source (None when it names none)."""

    kind: str
    detail: str | None


__all__ = ["ModelSource", "ServiceNote"]
