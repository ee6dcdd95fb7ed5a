"""Launch the real Pi with the evaluator's extensions against the scripted model server."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest

from pytest_skill_eval.hosts.dialect import renderer
from pytest_skill_eval.hosts.pi.binary import pi_executable
from pytest_skill_eval.hosts.pi.config import write_pi_agent_dir
from pytest_skill_eval.modelserver.route import RecordedRequest, RouteFailure
from pytest_skill_eval.modelserver.scriptparse import parse_script
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from tests.support.paths import PI, REPO

# Generous ceiling so a hung Pi fails the test instead of the whole session; not a timing check.
RUN_CEILING_S = 120.0


@dataclass(frozen=True)
class ToolOutcome:
    """What Pi reported at `tool_execution_end` for one tool call."""

    name: str
    is_error: bool
    text: str
    details: Any


class Sandbox:
    """Private HOME, agent dir, workspace and an `outside` dir, all under one canonical root."""

    def __init__(self, base: Path) -> None:
        self.root = base.resolve()
        self.home = self.root / "home"
        self.agent = self.root / "agent"
        self.workspace = self.root / "work"
        self.outside = self.root / "outside"
        for directory in (self.home, self.agent, self.workspace, self.outside):
            directory.mkdir(parents=True, exist_ok=True)


@dataclass
class PiRun:
    """Everything one Pi process produced, plus the requests the model server received."""

    returncode: int
    events: list[dict[str, Any]]
    stderr: str
    requests: list[RecordedRequest]
    failures: list[RouteFailure]
    sandbox: Sandbox
    argv: list[str] = field(default_factory=list)

    def passed(self) -> PiRun:
        """This run, once Pi exited 0 and the scripted server answered every request."""
        __tracebackhide__ = True
        assert self.returncode == 0, self.stderr
        assert self.failures == []
        return self

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        """Events of one type, in order."""
        __tracebackhide__ = True
        return [event for event in self.events if event.get("type") == kind]

    def tool_outcomes(self) -> dict[str, ToolOutcome]:
        """Tool results keyed by tool call id."""
        __tracebackhide__ = True
        outcomes: dict[str, ToolOutcome] = {}
        for event in self.of_type("tool_execution_end"):
            result = event.get("result") or {}
            text = "".join(
                part.get("text", "")
                for part in result.get("content", [])
                if isinstance(part, dict) and part.get("type") == "text"
            )
            outcomes[event["toolCallId"]] = ToolOutcome(
                name=event["toolName"],
                is_error=bool(event["isError"]),
                text=text,
                details=result.get("details"),
            )
        return outcomes

    def system_prompts(self) -> list[str]:
        """The `system` message of every model request, in order."""
        __tracebackhide__ = True
        prompts: list[str] = []
        for request in self.requests:
            messages = request.body.get("messages", [])
            system = [m["content"] for m in messages if m.get("role") == "system"]
            assert len(system) == 1, f"request {request.index} has {len(system)} system messages"
            prompts.append(system[0])
        return prompts

    def last_stop_reason(self) -> str | None:
        """`stopReason` of the last message of the last `agent_end`."""
        __tracebackhide__ = True
        ends = self.of_type("agent_end")
        if not ends or not ends[-1]["messages"]:
            return None
        reason = ends[-1]["messages"][-1].get("stopReason")
        return None if reason is None else str(reason)


class PiLauncher:
    """Starts Pi hermetically: isolated HOME and agent dir, offline, only the given extensions."""

    def __init__(self, server: ScriptedModelServer, command: Sequence[str]) -> None:
        self.server = server
        self.command = list(command)  # `<node> <entry>`: how the evaluator starts Pi

    def sandbox(self, base: Path) -> Sandbox:
        """A fresh sandbox under `base`."""
        return Sandbox(base)

    def environment(
        self, sandbox: Sandbox, tools: Sequence[str], overrides: Mapping[str, str | None]
    ) -> dict[str, str]:
        """The child environment: the minimum Pi needs plus the SKILL_EVAL_* contract."""
        __tracebackhide__ = True
        env: dict[str, str | None] = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(sandbox.home),
            "PI_CODING_AGENT_DIR": str(sandbox.agent),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
            "SKILL_EVAL_ALLOWED_ROOTS": json.dumps([str(sandbox.workspace)]),
            "SKILL_EVAL_WRITABLE_ROOT": str(sandbox.workspace),
            "SKILL_EVAL_ALLOWED_TOOLS": json.dumps(list(tools)),
            "SKILL_EVAL_PROMPT_MODE": "isolated",
            "SKILL_EVAL_CONTEXT_MANIFEST": "",
        }
        env.update(overrides)
        return {key: value for key, value in env.items() if value is not None}

    def argv(
        self,
        mode: str,
        extensions: Sequence[Path],
        tools: Sequence[str],
        skills: Sequence[Path],
        prompts: Sequence[str],
    ) -> list[str]:
        """Pi's command line in the order the evaluator uses."""
        __tracebackhide__ = True
        args = [*self.command, "--mode", mode, "--no-session", "--no-extensions"]
        for extension in extensions:
            args += ["-e", str(extension)]
        args += ["--no-skills", "--no-prompt-templates", "--no-themes", "--no-context-files"]
        args += ["--tools", ",".join(tools)] if tools else ["--no-tools"]
        for skill in skills:
            args += ["--skill", str(skill)]
        return args + list(prompts)

    def run_json(
        self,
        sandbox: Sandbox,
        script: Mapping[str, Any],
        prompts: Sequence[str],
        *,
        extensions: Sequence[Path],
        tools: Sequence[str],
        env: Mapping[str, str | None] | None = None,
        skills: Sequence[Path] = (),
    ) -> PiRun:
        """Run `pi --mode json` with every prompt as a positional argument."""
        __tracebackhide__ = True
        route = self.server.open_route(parse_script(dict(script)), render=renderer("pi"))
        write_pi_agent_dir(sandbox.agent, route)
        argv = self.argv("json", extensions, tools, skills, prompts)
        try:
            done = subprocess.run(
                argv,
                cwd=sandbox.workspace,
                env=self.environment(sandbox, tools, env or {}),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=RUN_CEILING_S,
                check=False,
            )
        finally:
            route.close()
        events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        return PiRun(
            done.returncode,
            events,
            done.stderr,
            list(route.requests),
            list(route.failures),
            sandbox,
            argv,
        )

    def run_rpc(
        self,
        sandbox: Sandbox,
        script: Mapping[str, Any],
        prompts: Sequence[str],
        *,
        extensions: Sequence[Path],
        tools: Sequence[str],
        env: Mapping[str, str | None] | None = None,
        before_prompt: Callable[[int], None] = lambda _turn: None,
    ) -> PiRun:
        """Run `pi --mode rpc`, sending each prompt after the previous one's `agent_end`.

        `before_prompt(turn)` runs before prompt `turn` (1-based) is sent, as the runner would.
        """
        __tracebackhide__ = True
        route = self.server.open_route(parse_script(dict(script)), render=renderer("pi"))
        write_pi_agent_dir(sandbox.agent, route)
        argv = self.argv("rpc", extensions, tools, (), ())
        events: list[dict[str, Any]] = []
        process = subprocess.Popen(
            argv,
            cwd=sandbox.workspace,
            env=self.environment(sandbox, tools, env or {}),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        lines = _line_reader(process.stdout)
        stderr_chunks: list[bytes] = []
        stderr_thread = threading.Thread(
            target=lambda: stderr_chunks.append(process.stderr.read() if process.stderr else b""),
            daemon=True,
        )
        stderr_thread.start()
        try:
            for turn, prompt in enumerate(prompts, start=1):
                before_prompt(turn)
                command = {"id": f"prompt-{turn}", "type": "prompt", "message": prompt}
                process.stdin.write((json.dumps(command) + "\n").encode("utf-8"))
                process.stdin.flush()
                while True:
                    line = lines.get(timeout=RUN_CEILING_S)
                    if line is None:
                        raise AssertionError(f"Pi exited before agent_end of turn {turn}")
                    event = json.loads(line)
                    events.append(event)
                    if event.get("type") == "agent_end":
                        break
            process.stdin.close()
            returncode = process.wait(timeout=RUN_CEILING_S)
            while (line := lines.get(timeout=RUN_CEILING_S)) is not None:
                events.append(json.loads(line))
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            route.close()
        stderr_thread.join(timeout=RUN_CEILING_S)
        stderr = b"".join(stderr_chunks).decode("utf-8", "replace")
        return PiRun(
            returncode, events, stderr, list(route.requests), list(route.failures), sandbox, argv
        )


def _line_reader(stream: IO[bytes]) -> queue.Queue[str | None]:
    """Feed stdout lines into a queue from a thread; None marks end of stream."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for raw in stream:
            text = raw.decode("utf-8").rstrip("\n")
            if text.strip():
                lines.put(text)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


@pytest.fixture(scope="session")
def pi_launcher() -> Iterator[PiLauncher]:
    """One scripted model server for the session and a launcher bound to it, starting Pi as
    subjects start it: its bundle on the pinned Node."""
    if not PI.exists():
        pytest.fail(f"Pi is not installed at {PI}; run `npm ci` in the project root")
    with ScriptedModelServer() as server:
        yield PiLauncher(server, pi_executable(None, REPO).command())
