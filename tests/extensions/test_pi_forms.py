"""Stock Pi and its bundle side by side on the pinned Node: the guard blocks the same escape, a
`.ts` extension loads (through jiti, importing Pi's own package), rpc mode answers every prompt,
and the model receives the same requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts.pi.binary import PiBinary, pi_executable
from pytest_skill_eval.hosts.pi.extensions import GUARD
from tests.extensions.conftest import PiLauncher, PiRun
from tests.support.files import write
from tests.support.paths import REPO

pytestmark = pytest.mark.pi

ESCAPES = "path escapes the evaluation environment"
# A TypeScript extension as a variant might ship one: types, and an import of Pi's own package.
TS_EXTENSION = """
import { writeFileSync } from "node:fs";
import { VERSION } from "@mariozechner/pi-coding-agent";

interface Api { on(event: string, handler: (...args: unknown[]) => unknown): void }

export default function marker(pi: Api): void {
  const path: string = process.env.TS_MARKER ?? "";
  pi.on("session_start", () => undefined);
  writeFileSync(path, `loaded ${VERSION}`);
}
"""
SCRIPT = {
    "version": 1,
    "interactions": [
        {
            "response": {
                "text": "Writing.",
                "tool_calls": [
                    {"id": "in", "name": "write", "arguments": {"path": "a.txt", "content": "a"}},
                    {
                        "id": "out",
                        "name": "write",
                        "arguments": {"path": "../outside/escape.txt", "content": "x"},
                    },
                ],
            }
        },
        {"response": {"text": "done"}},
    ],
}


@pytest.fixture(scope="module")
def forms() -> dict[str, PiBinary]:
    bundled = pi_executable(None, REPO)
    assert bundled.bundle is not None
    return {"stock": pi_executable(None, REPO, bundle=False), "bundle": bundled}


def _launcher(pi_launcher: PiLauncher, binary: PiBinary) -> PiLauncher:
    return PiLauncher(pi_launcher.server, binary.command())


def _bodies(run: PiRun) -> list[str]:
    """The request bodies with the sandbox's root replaced (both sandboxes' names are as long)."""
    root = str(run.sandbox.root)
    return [json.dumps(r.body, sort_keys=True).replace(root, "<root>") for r in run.requests]


def _json_run(launcher: PiLauncher, base: Path) -> tuple[PiRun, Path]:
    sandbox = launcher.sandbox(base)
    extension = write(base / "marker.ts", TS_EXTENSION)
    marker = base / "marker"
    run = launcher.run_json(
        sandbox,
        SCRIPT,
        ["write the files"],
        extensions=[GUARD, extension],
        tools=["write"],
        env={"TS_MARKER": str(marker)},
    )
    return run, marker


def test_the_guard_and_a_ts_extension_work_alike_on_stock_pi_and_the_bundle(
    pi_launcher: PiLauncher, forms: dict[str, PiBinary], tmp_path: Path
) -> None:
    runs: dict[str, PiRun] = {}
    for name, binary in forms.items():
        run, marker = _json_run(_launcher(pi_launcher, binary), tmp_path / name[:1])
        assert run.returncode == 0, run.stderr
        assert run.argv[:2] == binary.command()
        outcomes = run.tool_outcomes()
        assert not outcomes["in"].is_error
        assert (run.sandbox.workspace / "a.txt").read_text() == "a"
        assert outcomes["out"].is_error
        assert ESCAPES in outcomes["out"].text
        assert not (run.sandbox.outside / "escape.txt").exists()
        assert marker.read_text() == "loaded 0.73.1"
        runs[name] = run
    assert _bodies(runs["stock"]) == _bodies(runs["bundle"])
    assert "bundle" in runs["bundle"].argv[1]


def test_rpc_mode_answers_every_prompt_alike_on_stock_pi_and_the_bundle(
    pi_launcher: PiLauncher, forms: dict[str, PiBinary], tmp_path: Path
) -> None:
    script = {"version": 1, "interactions": [{"response": {"text": t}} for t in ("one", "two")]}
    requests: dict[str, list[str]] = {}
    for name, binary in forms.items():
        launcher = _launcher(pi_launcher, binary)
        run = launcher.run_rpc(
            launcher.sandbox(tmp_path / name[:1]), script, ["first", "second"], extensions=[GUARD],
            tools=["read"],
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        answers: list[Any] = [e["messages"][-1]["content"] for e in run.of_type("agent_end")]
        assert answers == [[{"type": "text", "text": "one"}], [{"type": "text", "text": "two"}]]
        requests[name] = _bodies(run)
    assert len(requests["bundle"]) == 2
    assert requests["stock"] == requests["bundle"]
