"""Every request a real host sends the scripted model server is one it serves: a run whose
model reads a 100 KB workspace file (Claude Code then asks for a token count) on each
registered host leaves no request the server could not route, and no infrastructure failure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.evidence import layout
from pytest_skill_eval.hosts.registration import HostRegistration
from pytest_skill_eval.modelserver.paths import served
from tests.support import roots, runs
from tests.support.files import read_json, write
from tests.support.registry import host_params, run_on_host

pytestmark = pytest.mark.pi

# About 100 KB of plain lines: past the size at which Claude Code counts a read's tokens.
LINE = "The quick brown fox jumps over the lazy dog; line {:05d} of a large notes file.\n"
LARGE = "".join(LINE.format(i) for i in range(1280))


def _large_read_root(root: Path) -> Path:
    write(root / "fixture" / "notes.txt", LARGE)
    reads: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}], "stop": "tool_use"},
        {"text": "Read the notes."},
    ]
    group = roots.Group(
        id="large-read",
        type="body",
        turns=["Read notes.txt."],
        tools=["read"],
        fixture="fixture",
        candidate=roots.variant(),
        expectations=[
            {
                "id": f"{name}-reply",
                "kind": "response-text",
                "variant": name,
                "value": "Read the notes.",
                "expect": "equals",
            }
            for name in roots.VARIANTS
        ],
        scripts=dict.fromkeys(roots.VARIANTS, reads),
    )
    return roots.build(root, [group])


@pytest.mark.parametrize("registration", host_params())
def test_a_large_read_sends_only_requests_the_server_serves(
    registration: HostRegistration, pytester: pytest.Pytester, tmp_path: Path
) -> None:
    assert len(LARGE.encode("utf-8")) >= 100_000
    host = registration.name
    root = tmp_path / "suite"
    _large_read_root(root)
    result = run_on_host(pytester, root, host, "-v")
    group_dir = layout.group_dir(runs.result_dir(root), "large-read", host)
    for variant in roots.VARIANTS:
        run = read_json(group_dir / variant / "run.json")
        paths = [request["path"] for request in runs.model_requests(group_dir / variant)]
        assert [p for p in paths if not served(p)] == [], (variant, paths)
        errors = run["process"]["protocolErrors"]
        assert errors == [], (variant, errors)
        assert run["state"] == "complete", (variant, run["state"])
    assert result.ret == 0, result.stdout.str()
