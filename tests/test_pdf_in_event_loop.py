"""PDF from inside a running asyncio loop (issue 22): the app's button callbacks run in the kernel's
loop, where Playwright's sync API refuses to start ("Sync API inside the asyncio loop"), so every PDF
report from the app failed. ``to_pdf`` prints from a worker thread there; the PDF is a real one."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest

from aisize.report import pdf as report_pdf

pytestmark = pytest.mark.skipif(report_pdf.chromium_path() is None,
                                reason="Chromium not installed (or hidden by AISIZE_CHROMIUM)")


def test_to_pdf_works_inside_a_running_event_loop(tmp_path):
    page = tmp_path / "r.html"
    page.write_text("<html><body><h1>Sizing for ACME</h1><p>48 GPUs</p></body></html>", encoding="utf-8")

    async def from_a_callback():  # what a widget's on_click does in the Voila kernel
        asyncio.get_running_loop()
        return report_pdf.to_pdf(page, tmp_path / "r.pdf", footer="ACME")

    pdf = asyncio.run(from_a_callback())
    assert pdf.read_bytes()[:5] == b"%PDF-"
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
        assert "Sizing for ACME" in text and "48 GPUs" in text
