"""The aisize Voila app: the page (:mod:`aisize.app.layout`), its sections, and the launcher (:mod:`aisize.app.serve`).

``build_app`` and ``App`` are imported on first use, so that the launcher
(``aisize app``) starts without importing Altair and ipywidgets.
"""

__all__ = ["App", "build_app"]


def __getattr__(name: str):
    if name in __all__:
        from aisize.app import layout

        return getattr(layout, name)
    raise AttributeError(f"module 'aisize.app' has no attribute {name!r}")
