"""The aisize Voila app: the page (:mod:`aisize.app.layout`), its sections, and the launcher (:mod:`aisize.app.serve`).

``build_app`` and ``App`` are imported on first use, so that the launcher
(``aisize app``) starts without importing Altair and ipywidgets.
"""

from aisize import lazy

__all__ = ["App", "build_app"]

__getattr__, __dir__ = lazy.exports(__name__, dict.fromkeys(__all__, "layout"))
