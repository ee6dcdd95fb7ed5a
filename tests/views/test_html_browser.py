"""The HTML report of a real result, opened in headless Chromium: rendered, pictured, offline."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.commands import cli
from tests.support.shared import SharedRun

# Chromium's own traffic (update checks, sign-in probes) never carries a page origin; whatever
# the page asks for does. External names are also made unresolvable, so nothing leaves anyway.
BROWSER_INITIATED = "not an origin"
LOCAL_SCHEMES = ("file:", "about:", "data:")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; CI must install Debian's chromium package")
        pytest.skip("chromium is not installed (in CI this is a failure)")
    return found


def _browse(tmp: Path, page: Path, *action: str) -> tuple[str, list[str]]:
    """Run headless Chromium on `page`; return stdout and the URLs the page requested."""
    tmp.mkdir(parents=True, exist_ok=True)
    net_log = tmp / "net.json"
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    argv = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={tmp / 'profile'}",
        f"--log-net-log={net_log}",
        *action,
        page.as_uri(),
    ]
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home), "LANG": "C.UTF-8"}
    done = subprocess.run(
        argv, capture_output=True, text=True, env=env, timeout=180, check=False, cwd=tmp
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, page_requests(json.loads(net_log.read_text(encoding="utf-8")))


def page_requests(log: dict[str, Any]) -> list[str]:
    """URLs of every request a page initiated, from a Chromium net log."""
    names = {number: name for name, number in log["constants"]["logEventTypes"].items()}
    found = []
    for event in log["events"]:
        params = event.get("params") or {}
        if names.get(event["type"]) != "URL_REQUEST_START_JOB" or "url" not in params:
            continue
        if params.get("initiator") != BROWSER_INITIATED:
            found.append(str(params["url"]))
    return found


def _remote(urls: list[str]) -> list[str]:
    return [url for url in urls if not url.startswith(LOCAL_SCHEMES)]


class _Dom(HTMLParser):
    """Text of the rendered page, group headings, and the added lines of every diff."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.headings: list[str] = []
        self.added: list[str] = []
        self._heading: list[str] | None = None
        self._classes: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("meta", "link", "br", "img", "col", "input", "hr", "wbr"):
            return
        self._classes.append(dict(attrs).get("class") or "")
        if tag == "h2":
            self._heading = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2" and self._heading is not None:
            self.headings.append(" ".join("".join(self._heading).split()))
            self._heading = None
        if self._classes:
            self._classes.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._heading is not None:
            self._heading.append(data)
        if self._classes[-2:] == ["diff", "add"]:
            self.added.append(data)


def _pixels(path: Path) -> bytes:
    """The decoded (still filtered) pixel rows of a PNG: equal images give equal bytes."""
    data, idat, offset = path.read_bytes(), b"", 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        if data[offset + 4 : offset + 8] == b"IDAT":
            idat += data[offset + 8 : offset + 8 + length]
        offset += 12 + length
    return zlib.decompress(idat)


def _png_facts(path: Path) -> tuple[int, int, int]:
    """Width, height and the number of distinct byte values in the decoded pixel rows."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    width, height = struct.unpack(">II", data[16:24])
    return width, height, len(set(_pixels(path)))


@pytest.mark.pi
def test_report_of_a_real_result_renders_in_chromium_without_network(
    example_run: SharedRun, tmp_path: Path
) -> None:
    _chromium()
    (result,) = (example_run.root / ".skill-eval" / "runs").iterdir()
    report = tmp_path / "out" / "report.html"
    assert cli.main(["report", str(result), "--html", str(report)]) == 0

    dom_text, requests = _browse(tmp_path / "dom", report, "--dump-dom")
    assert _remote(requests) == []
    dom = _Dom()
    dom.feed(dom_text)
    dom.close()
    assert dom.headings == [
        "Bottom line",
        "At a glance",
        "Groups",
        "Trigger rates",
        "Group natural-activation complete description grade complete",
        "Group changelog-entry complete body grade complete",
    ]
    text = " ".join("".join(dom.text).split())
    for fact in ("Baseline complete", "Candidate complete", "fail-to-pass", "pass-to-pass"):
        assert fact in text
    # The candidate's edit, as a diff against the fixture, and the baseline's stray line.
    assert "+- Handle semicolons in CSV export (#42)\n" in dom.added
    assert "+- CSV export now handles semicolons (issue #42)\n" in dom.added

    shot = tmp_path / "shot" / "report.png"
    _, requests = _browse(
        tmp_path / "shot", report, f"--screenshot={shot}", "--window-size=1400,2000"
    )
    assert _remote(requests) == []
    assert shot.stat().st_size > 20_000
    width, height, distinct = _png_facts(shot)
    assert (width, height) == (1400, 2000)
    assert distinct > 16  # text and badges, not a blank page
    _bottom_line_above_the_fold(report, tmp_path / "fold")


def _bottom_line_above_the_fold(report: Path, tmp: Path) -> None:
    """In a laptop's first screen (1280×720) the bottom line is seen: hiding it changes the
    picture there, as it would not if it lay below the fold."""
    document = report.read_text(encoding="utf-8")
    marker = '<section class="bottom-line" id="bottom-line">'
    assert document.count(marker) == 1
    hidden = report.with_name("hidden.html")
    hidden.write_text(
        document.replace(
            marker, marker.replace("<section ", '<section style="visibility:hidden" ')
        ),
        encoding="utf-8",
    )
    shots = []
    for page in (report, hidden):
        shot = tmp / f"{page.stem}.png"
        _, requests = _browse(tmp, page, f"--screenshot={shot}", "--window-size=1280,720")
        assert _remote(requests) == []
        assert _png_facts(shot)[:2] == (1280, 720)
        shots.append(_pixels(shot))
    assert shots[0] != shots[1]


def test_aggregate_rate_bars_render_as_svg_in_chromium(
    unresolved_aggregate: Path, tmp_path: Path
) -> None:
    """The bars are drawn: the page differs from the same page with the bars' shapes removed."""
    _chromium()
    report = tmp_path / "out" / "report.html"
    assert cli.main(["report", str(unresolved_aggregate), "--html", str(report)]) == 0
    dom_text, requests = _browse(tmp_path / "dom", report, "--dump-dom")
    assert _remote(requests) == []
    # Parsed by the browser as SVG: eight bars of three shapes each, none lost.
    assert dom_text.count('<svg class="rate-bar"') == 8
    assert dom_text.count('<rect class="ci"') == 8
    document = report.read_text(encoding="utf-8")
    bare = tmp_path / "out" / "bare.html"
    # Same layout (the <svg> boxes stay), no shapes inside them.
    bare.write_text(document.replace("<rect ", '<rect visibility="hidden" '), encoding="utf-8")
    shots = []
    for page in (report, bare):
        shot = tmp_path / "shot" / f"{page.stem}.png"
        _, requests = _browse(
            tmp_path / "shot", page, f"--screenshot={shot}", "--window-size=1200,900"
        )
        assert _remote(requests) == []
        shots.append(_pixels(shot))
    assert shots[0] != shots[1]


def test_net_log_reading_sees_what_a_page_requests(tmp_path: Path) -> None:
    """The offline assertion above is only as good as this detector: show it detects requests."""
    page = tmp_path / "page.html"
    page.write_text(
        '<!DOCTYPE html><html><head><link rel="stylesheet" href="http://127.0.0.1:9/a.css">'
        '</head><body><img src="https://example.invalid/b.png"><img src="data:,x">'
        '<script>fetch("http://127.0.0.1:9/c")</script></body></html>',
        encoding="utf-8",
    )
    _, requests = _browse(tmp_path / "browse", page, "--dump-dom")
    assert sorted(_remote(requests)) == [
        "http://127.0.0.1:9/a.css",
        "http://127.0.0.1:9/c",
        "https://example.invalid/b.png",
    ]
