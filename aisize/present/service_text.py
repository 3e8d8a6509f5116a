"""An inference service's remarks in words: the one sentence each surface shows for a
:class:`aisize.plan.service_notes.ServiceNote` and a :class:`aisize.plan.service_notes.ModelSource`, from their
facts alone."""

from __future__ import annotations

from aisize.present.words import worded

# Each code's sentence (figures to 3-4 significant digits, as the planner stated them before it wrote no text).
WORDS = {
    "concurrency": lambda x: (f"{x['users']:g} users in flight send {x['requests_per_s']:.4g} requests/s at a mean "
                              f"request latency of {x['latency_mean_seconds']:.3g} s (Little's law); the fleet is "
                              "planned for that rate"),
    "autoscaler_peak": lambda x: (f"replicas: {x['peak_replicas']}, the most the autoscaler holds through the day "
                                  f"(the peak rate alone sizes {x['static_replicas']}; the autoscaler adds the meter's "
                                  "noise and its tolerance)"),
}

SOURCES = {"catalog": lambda d: f"catalog: {d}",
           "hf-config": lambda d: f"Hugging Face config.json ({d})",
           "inline": lambda d: f"inline fields ({d if d is not None else 'no source'})"}


def service_note_text(note) -> str:
    """The sentence of one service note (its ``code`` worded from its ``facts``)."""
    return worded(WORDS, note.code, "service note code", "aisize.present.service_text.WORDS", note.facts)


def model_source_text(source) -> str:
    """Where a service's model came from, in words ("catalog: <source>", "Hugging Face config.json (<path>)")."""
    return worded(SOURCES, source.kind, "model source kind", "aisize.present.service_text.SOURCES", source.detail)


__all__ = ["SOURCES", "WORDS", "model_source_text", "service_note_text"]
