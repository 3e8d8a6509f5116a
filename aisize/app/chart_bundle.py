"""Altair's offline chart widget code, built once and served once.

``alt.JupyterChart.enable_offline()`` bundles vega, vega-lite and vega-embed with the widget's
code (about 0.9 MB) by running vl-convert's bundler, which takes seconds, in every kernel that
calls it; and every chart widget then carries the whole bundle in its state, so a page with
three charts receives and parses it three times. Here the bundle is built once per Altair and
vl-convert version into a cache folder (:func:`bundle_file`), the app server serves that folder
as a static labextension path, and a kernel started by the server gives its chart widgets a
few-line module that imports the served bundle (:func:`use_offline_charts`): one download per
browser (cached after), one parse per page, no bundling in the kernel. A kernel not started by
the server (plain Jupyter, tests) gets the whole bundle inline, read from the cache.
"""

from __future__ import annotations

import os
from pathlib import Path

from aisize.cache import cache_dir

# what serve.server_env puts in the server's (and so its kernels') environment: the bundle's URL
# path below <base_url>voila/labextensions/
ENV = "AISIZE_CHART_BUNDLE"
FOLDER = "aisize-charts"

# The module each chart widget loads: it imports the served bundle (the page's jupyter-config-data
# holds the server's base URL) and hands over its widget definition.
LOADER = """const base = JSON.parse(document.getElementById("jupyter-config-data").textContent).baseUrl;
const bundle = await import(new URL(base + "voila/labextensions/%s", window.location.href).href);
export default bundle.default;
"""


def labextensions_dir(environ=None) -> Path:
    """The folder the server adds to voila's labextension paths (it holds :data:`FOLDER`), in the cache
    folder of ``environ`` (default: this process's environment)."""
    return cache_dir(environ) / "labextensions"


def bundle_name() -> str:
    """The bundle's path below :func:`labextensions_dir`, named for the versions that built it (read from
    the installed packages' metadata: the launcher does not import Altair)."""
    from importlib.metadata import version

    return f"{FOLDER}/jupyter-chart-altair-{version('altair')}-vl-convert-{version('vl-convert-python')}.js"


def bundle_file(environ=None) -> Path:
    """The offline bundle on disk (in the cache folder of ``environ``, default this process's environment),
    built (seconds, once per version) if it is not there yet."""
    path = labextensions_dir(environ) / bundle_name()
    if not path.is_file():
        import altair as alt

        alt.JupyterChart.enable_offline()
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(alt.JupyterChart._esm, encoding="utf-8")
        partial.replace(path)  # atomic: a concurrent reader sees all of it or nothing
    return path


def use_offline_charts() -> None:
    """Make every ``alt.JupyterChart`` render offline: importing the served bundle in a kernel the app
    server started, else with the bundle inline (from the cache, built there once)."""
    import altair as alt

    if alt.JupyterChart._is_offline:
        return
    served = os.environ.get(ENV)
    if served and (labextensions_dir() / served).is_file():
        alt.JupyterChart._esm = LOADER % served
    else:
        alt.JupyterChart._esm = bundle_file().read_text(encoding="utf-8")
    alt.JupyterChart._is_offline = True
