"""Fixtures for the model server tests: a shared server, a real-Pi launcher, fake providers."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts.dialect import renderer
from pytest_skill_eval.hosts.pi.config import write_pi_agent_dir
from pytest_skill_eval.modelserver.route import Route
from pytest_skill_eval.modelserver.script import Script
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from tests.support.http import FakeUpstream, Scripted
from tests.support.paths import PI


@pytest.fixture(scope="session")
def model_server() -> Iterator[ScriptedModelServer]:
    """One scripted model server for the whole session, as a pytest worker would use it."""
    with ScriptedModelServer() as server:
        yield server


@dataclass
class PiRun:
    """What one real Pi run produced."""

    returncode: int
    events: list[dict[str, Any]]
    stderr: str
    route: Route
    workspace: Path

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        """Events of one type, in order."""
        __tracebackhide__ = True
        return [e for e in self.events if e.get("type") == kind]

    def assistant_messages(self) -> list[dict[str, Any]]:
        """The assistant messages from `message_end` events."""
        __tracebackhide__ = True
        return [
            e["message"] for e in self.of_type("message_end") if e["message"]["role"] == "assistant"
        ]


RunPi = Callable[..., PiRun]


def launch_pi(
    route: Route,
    prompt: str,
    *,
    api: str,
    provider: str,
    model_id: str,
    workspace: Path,
    home: Path,
    agent: Path,
    cost: Mapping[str, float] | None = None,
) -> PiRun:
    """Run the real Pi once in --mode json in `workspace`, talking to `route`."""
    __tracebackhide__ = True
    home.mkdir(parents=True, exist_ok=True)
    write_pi_agent_dir(agent, route, api=api, provider=provider, model_id=model_id, cost=cost)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "PI_CODING_AGENT_DIR": str(agent),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
    }
    argv = [
        str(PI),
        "--mode",
        "json",
        "--no-session",
        "--no-extensions",
        "--no-skills",
        "--no-prompt-templates",
        "--no-themes",
        "--no-context-files",
        "--tools",
        "read",
        "--model",
        f"{provider}/{model_id}",
        prompt,
    ]
    try:
        done = subprocess.run(
            argv,
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        route.close()
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return PiRun(done.returncode, events, done.stderr, route, workspace)


LaunchPi = Callable[..., PiRun]


@pytest.fixture
def pi_launcher() -> LaunchPi:
    """`launch_pi` for tests that open their own routes (skipped when Pi is not installed)."""
    if not PI.exists():
        pytest.skip(f"Pi is not installed at {PI}; run `npm ci` in the project root")
    return launch_pi


@pytest.fixture
def run_pi(model_server: ScriptedModelServer, tmp_path: Path) -> RunPi:
    """Run the real Pi once in --mode json against a fresh route of the shared server."""
    if not PI.exists():
        pytest.skip(f"Pi is not installed at {PI}; run `npm ci` in the project root")

    def run(
        script: Script,
        prompt: str,
        *,
        api: str,
        provider: str,
        model_id: str,
        cost: Mapping[str, float] | None = None,
        files: Mapping[str, str] | None = None,
    ) -> PiRun:
        __tracebackhide__ = True
        workspace = tmp_path / "work"
        workspace.mkdir()
        for name, text in (files or {}).items():
            (workspace / name).write_text(text, encoding="utf-8")
        route = model_server.open_route(
            script,
            source=script.source,
            placeholders={"workspace": str(workspace)},
            render=renderer("pi"),
        )
        return launch_pi(
            route,
            prompt,
            api=api,
            provider=provider,
            model_id=model_id,
            workspace=workspace,
            home=tmp_path / "home",
            agent=tmp_path / "agent",
            cost=cost,
        )

    return run


@pytest.fixture
def fake_upstream() -> Iterator[Callable[[list[Scripted]], FakeUpstream]]:
    """Start fake providers with scripted answers; all are stopped after the test."""
    started: list[FakeUpstream] = []

    def start(answers: list[Scripted]) -> FakeUpstream:
        upstream = FakeUpstream(answers)
        started.append(upstream)
        return upstream

    yield start
    for upstream in started:
        with contextlib.suppress(OSError):
            upstream.stop()
