"""HTML report -> PDF with headless Chromium through Playwright, offline.

Playwright cannot download its own browser here, so Debian's ``/usr/bin/chromium``
is launched with the flags that stop it reaching the internet at start, and
every request the page makes other than the report file itself is aborted.
Print CSS sets A4 pages with margins and keeps tables, figures and output
cells whole across page breaks. Called from a running asyncio loop (the app's
button, in the kernel), it prints from a worker thread: Playwright's sync API
refuses to run inside a loop.
"""

from __future__ import annotations

import asyncio
import html
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from aisize.report.execute import ReportError

DEFAULT_CHROMIUM = "/usr/bin/chromium"  # Debian's chromium package
CHROMIUM_ENV = "AISIZE_CHROMIUM"  # another browser, or a path that does not exist to hide it
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-default-apps", "--disable-extensions"]
MARGIN = {"top": "18mm", "bottom": "18mm", "left": "16mm", "right": "16mm"}
TIMEOUT_MS = 60_000

PRINT_CSS = """
@page { size: A4; }
html { font-size: 10pt; }
body.aisize-report { max-width: none; padding: 0; }
table, figure, svg, .aisize-facts, .aisize-keep, ul.aisize-list,
.jp-OutputArea-output:not(:has(section)) { break-inside: avoid; }
tr, .aisize-fact { break-inside: avoid; }
thead { display: table-header-group; }
h1, h2, h3, caption { break-after: avoid; }
.aisize-title { break-after: page; padding-top: 35mm; }
.aisize-section { break-before: page; }
"""

# Chromium's header/footer templates are separate documents: they need their own font size.
_FOOTER = ('<div style="font: 8px Liberation Sans, Arial, sans-serif; color: #5b6773; width: 100%; '
           'padding: 0 16mm; display: flex; justify-content: space-between;">'
           '<span>{left}</span><span>Page <span class="pageNumber"></span> of '
           '<span class="totalPages"></span></span></div>')


def chromium_path() -> Path | None:
    """The Chromium that prints PDFs (``$AISIZE_CHROMIUM``, else Debian's), or None if it is missing."""
    path = Path(os.environ.get(CHROMIUM_ENV) or DEFAULT_CHROMIUM)
    return path if path.is_file() and os.access(path, os.X_OK) else None


def missing_chromium_message() -> str:
    shown = os.environ.get(CHROMIUM_ENV) or DEFAULT_CHROMIUM
    return (f"PDF needs Chromium, not found at {shown} (install Debian's chromium package or set "
            f"{CHROMIUM_ENV}); --format html needs no browser")


def to_pdf(html_path: Path, pdf_path: Path, *, footer: str = "") -> Path:
    """Print the HTML report at ``html_path`` to an A4 PDF at ``pdf_path``.

    Parameters
    ----------
    html_path : a self-contained .html report.
    pdf_path : where the .pdf goes.
    footer : text at the bottom left of every page (e.g. title and customer).
    """
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        raise ReportError("PDF", "needs the playwright package (pip install playwright); "
                          "the HTML report was written") from None

    chromium = chromium_path()
    if chromium is None:
        raise ReportError("PDF", missing_chromium_message())
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop here (the CLI, papermill): print in this thread
        _print(chromium, html_path, pdf_path, footer)
    else:  # an app callback in the kernel's loop, where the sync API refuses to run: a thread without one
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="aisize-pdf") as worker:
            worker.submit(_print, chromium, html_path, pdf_path, footer).result()
    return pdf_path


def _print(chromium: Path, html_path: Path, pdf_path: Path, footer: str) -> None:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    url = Path(html_path).resolve().as_uri()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page()
                # Only the report itself may load; anything else (there should be nothing) is refused.
                page.route("**/*", lambda route: route.continue_() if route.request.url == url
                           or route.request.url.startswith("data:") else route.abort())
                page.goto(url, wait_until="load", timeout=TIMEOUT_MS)
                page.add_style_tag(content=PRINT_CSS)
                page.emulate_media(media="print")
                page.pdf(path=str(pdf_path), format="A4", margin=MARGIN, print_background=True,
                         display_header_footer=True, header_template="<span></span>",
                         footer_template=_FOOTER.format(left=html.escape(footer)))
            finally:
                browser.close()
    except PlaywrightError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ReportError("PDF", f"Chromium failed: {first}") from exc
