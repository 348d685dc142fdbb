"""The headless-Chromium check used on the burn-in report can fail: it sees console errors, uncaught
exceptions and failed loads (no lab needed, only Chromium)."""

from __future__ import annotations

from pathlib import Path

import cdp
import pytest

pytestmark = pytest.mark.skipif(
    cdp.chromium() is None, reason="chromium is not installed (apt-get install chromium)"
)

PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"></head>
<body><p id="x">hello</p>{extra}<script>console.log("page-ready");{script}</script></body></html>"""


def test_clean_page_has_no_errors(tmp_path: Path) -> None:
    f = tmp_path / "ok.html"
    f.write_text(PAGE.format(extra="", script=""))
    page = cdp.load(f.as_uri(), ["document.getElementById('x').textContent"], ready_text="page-ready")
    assert page.errors == [] and page.console == [("log", "page-ready")]
    assert page.values == {"document.getElementById('x').textContent": "hello"}


def test_errors_are_seen(tmp_path: Path) -> None:
    f = tmp_path / "bad.html"
    f.write_text(
        PAGE.format(extra='<img src="missing.png">', script='console.error("oops"); throw new Error("boom");')
    )
    page = cdp.load(f.as_uri(), [], ready_text="page-ready")
    assert "oops" in page.errors
    assert any("Error: boom" in e for e in page.errors)
    assert any("ERR_FILE_NOT_FOUND" in e and "missing.png" in e for e in page.errors)
