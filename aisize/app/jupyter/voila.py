"""Voila configuration of the aisize app.

Read because ``aisize.app.serve.build_command`` passes
``--Voila.config_file_paths=<this folder>`` (so no voila.py or voila.json from
the working directory or ~/.jupyter is read). The headers are set here, not on
the command line: traitlets reads a nested dict from the command line only in
a deprecated form, and voila turns that DeprecationWarning back on at import.
"""

from voila.handler import VoilaHandler

from aisize.app.serve import HEADERS

c = get_config()  # noqa: F821 -- provided by traitlets when it runs this file
c.Voila.tornado_settings = {"headers": dict(HEADERS)}

# When a tab closes, voila's page asks the server to shut its kernel down with the
# `_xsrf` cookie's value, but voila 0.5 never sets that cookie: the request is refused
# (403) and the closed tab's kernel (~250 MiB) lives on until culled. Tornado sets the
# cookie the first time a handler reads `xsrf_token`, so read it before rendering. No
# hook of voila's runs for preheated kernels, hence the wrapper.
_render = VoilaHandler.get_generator


async def _render_with_xsrf_cookie(self, *args, **kwargs):
    self.xsrf_token  # noqa: B018 -- read for its side effect: Set-Cookie _xsrf
    async for chunk in _render(self, *args, **kwargs):
        yield chunk


VoilaHandler.get_generator = _render_with_xsrf_cookie
