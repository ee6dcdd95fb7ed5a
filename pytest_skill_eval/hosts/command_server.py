"""The evaluator's `run_command` tool for Claude Code and Codex: a stdio MCP server (a script,
stdlib only).

Claude Code and Codex reach tools beyond their own only through MCP, so declared commands are
offered by this server, started by the host as `python -I command_server.py` (Claude Code
from `--mcp-config`, Codex from its `config.toml`, inside its read confinement). It has
the semantics of Pi's command tool (`hosts/pi/extensions/command_tool.mjs`): the subject only
chooses which declared command runs (argument `command`, one of the declared ids); the argv and
timeout come from the definition (`SKILL_EVAL_COMMANDS`), the working directory is the workspace
(`SKILL_EVAL_WRITABLE_ROOT`), the environment is the host's minus the evaluator's `SKILL_EVAL_*`
variables, each command runs in a process group of its own, killed on timeout or cancellation,
and the model sees the same text: the command line, its exit status, then stdout and stderr,
each capped at 32 KiB.

The wire is JSON-RPC 2.0, one message per line on stdin/stdout. Calls run on worker threads so
a `notifications/cancelled` (or the end of stdin) can stop a command that is still running.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import IO, Any

SERVER_NAME = "skill-eval"
TOOL = "run_command"
DEFAULT_TIMEOUT_MS = 120_000
KILL_GRACE_S = 2.0
OUTPUT_CAP_BYTES = 32_768
PROTOCOL_VERSION = "2025-06-18"
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


class ConfigError(Exception):
    """The evaluator's configuration of the tool is unusable (the server refuses to start)."""


@dataclass(frozen=True)
class Declared:
    """One declared command: the id the model names, the argv and timeout the definition fixes."""

    id: str
    argv: tuple[str, ...]
    timeout_ms: int


def load_commands(raw: str | None) -> dict[str, Declared]:
    """The declared commands from `SKILL_EVAL_COMMANDS`, checked like Pi's command tool does."""
    if not raw:
        raise ConfigError("SKILL_EVAL_COMMANDS is not set")
    try:
        commands = json.loads(raw)
    except ValueError as error:
        raise ConfigError(f"SKILL_EVAL_COMMANDS is not valid JSON: {error}") from error
    if not isinstance(commands, list) or not commands:
        raise ConfigError("SKILL_EVAL_COMMANDS must be a non-empty JSON array")
    declared: dict[str, Declared] = {}
    for index, command in enumerate(commands):
        where = f"SKILL_EVAL_COMMANDS[{index}]"
        if not isinstance(command, dict) or not isinstance(command.get("id"), str):
            raise ConfigError(f"{where}.id must be a string")
        argv = command.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise ConfigError(f"{where}.argv must be a non-empty array of strings")
        timeout = command.get("timeout_ms", DEFAULT_TIMEOUT_MS)
        if not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 1:
            raise ConfigError(f"{where}.timeout_ms must be a positive integer")
        if command["id"] in declared:
            raise ConfigError(f"{where}.id duplicates {command['id']}")
        declared[command["id"]] = Declared(command["id"], tuple(argv), timeout)
    return declared


def load_workspace(raw: str | None) -> str:
    """The canonical workspace every command runs in."""
    if not raw:
        raise ConfigError("SKILL_EVAL_WRITABLE_ROOT is not set")
    try:
        return os.path.realpath(raw, strict=True)
    except OSError as error:
        raise ConfigError(
            f"SKILL_EVAL_WRITABLE_ROOT cannot be resolved: {raw} ({error})"
        ) from error


def command_environment() -> dict[str, str]:
    """The host's environment without the evaluator's own configuration."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SKILL_EVAL_")}


@dataclass
class Capped:
    """The first OUTPUT_CAP_BYTES bytes of a stream, and how many there were in all."""

    kept: bytearray = field(default_factory=bytearray)
    total: int = 0

    def push(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = OUTPUT_CAP_BYTES - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.kept)

    def data(self) -> bytes:
        """The kept bytes, cut back so that a multibyte UTF-8 character is never split."""
        kept = bytes(self.kept)
        return kept[: utf8_boundary(kept)] if self.truncated else kept


def utf8_boundary(data: bytes) -> int:
    """Length of the longest prefix of `data` that does not end inside a UTF-8 character."""
    start = len(data)
    while start > 0 and len(data) - start < 3 and data[start - 1] & 0xC0 == 0x80:
        start -= 1
    if start == 0:
        return len(data)
    lead = data[start - 1]
    need = 4 if lead >= 0xF0 else 3 if lead >= 0xE0 else 2 if lead >= 0xC0 else 1
    return start - 1 if len(data) - (start - 1) < need else len(data)


def _section(name: str, output: Capped) -> str:
    data = output.data()
    header = (
        f"--- {name} (truncated: showing {len(data)} of {output.total} bytes) ---"
        if output.truncated
        else f"--- {name} ---"
    )
    return f"{header}\n{data.decode('utf-8', errors='replace')}"


def _kill_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(OSError):  # the group is already gone
        os.killpg(pid, sig)


def _drain(stream: IO[bytes], sink: Capped) -> None:
    while chunk := stream.read1(65536):  # type: ignore[attr-defined]
        sink.push(chunk)


@dataclass
class Outcome:
    """How a declared command ended, and what it printed."""

    returncode: int | None
    timed_out: bool
    stdout: Capped
    stderr: Capped


def run_declared(command: Declared, workspace: str, stop: threading.Event) -> Outcome:
    """Run one declared command in its own process group; SIGTERM, then SIGKILL, when stopped."""
    process = subprocess.Popen(
        command.argv,
        cwd=workspace,
        env=command_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    stdout, stderr = Capped(), Capped()
    assert process.stdout is not None
    assert process.stderr is not None
    readers = [
        threading.Thread(target=_drain, args=(process.stdout, stdout), daemon=True),
        threading.Thread(target=_drain, args=(process.stderr, stderr), daemon=True),
    ]
    for reader in readers:
        reader.start()
    timed_out = _wait_or_stop(process, command, stop)
    # Sweep descendants left in the group so they cannot hold the pipes open.
    _kill_group(process.pid, signal.SIGKILL)
    for reader in readers:
        reader.join()
    process.stdout.close()
    process.stderr.close()
    return Outcome(process.returncode, timed_out, stdout, stderr)


def _wait_or_stop(
    process: subprocess.Popen[bytes], command: Declared, stop: threading.Event
) -> bool:
    """Wait for the command; True when its timeout stopped it."""
    deadline = command.timeout_ms / 1000
    waited = 0.0
    step = 0.05
    while process.poll() is None:
        if stop.is_set() or waited >= deadline:
            _kill_group(process.pid, signal.SIGTERM)
            try:
                process.wait(KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                _kill_group(process.pid, signal.SIGKILL)
                process.wait()
            return not stop.is_set()
        try:
            process.wait(step)
        except subprocess.TimeoutExpired:
            waited += step
    return False


def result_text(command: Declared, outcome: Outcome) -> str:
    """What the model sees, word for word as on Pi."""
    code = outcome.returncode
    if outcome.timed_out:
        status = f"timed out after {command.timeout_ms} ms"
    elif code is not None and code < 0:
        status = f"exit code: signal {signal.Signals(-code).name}"
    else:
        status = f"exit code: {code}"
    return "\n".join(
        [
            f"$ {' '.join(command.argv)}",
            status,
            _section("stdout", outcome.stdout),
            _section("stderr", outcome.stderr),
        ]
    )


def tool_listing(commands: dict[str, Declared]) -> dict[str, Any]:
    """The one tool, described and constrained like Pi's."""
    listing = "; ".join(f"{c.id} ({' '.join(c.argv)})" for c in commands.values())
    return {
        "name": TOOL,
        "description": f"Run one declared command in the workspace. Declared commands: {listing}",
        "inputSchema": {
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "enum": list(commands),
                    "description": "ID of the declared command to run",
                }
            },
            "required": ["command"],
            "additionalProperties": False,
        },
    }


class Server:
    """JSON-RPC over newline-delimited stdio; one worker thread per tool call."""

    def __init__(self, commands: dict[str, Declared], workspace: str, out: IO[str]) -> None:
        self.commands = commands
        self.workspace = workspace
        self._out = out
        self._lock = threading.Lock()
        self._running: dict[Any, threading.Event] = {}
        self._workers: list[threading.Thread] = []
        # Pi runs declared commands one at a time (executionMode "sequential").
        self._sequential = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps({"jsonrpc": "2.0", **message}, ensure_ascii=False)
        with self._lock:
            try:
                self._out.write(line + "\n")
                self._out.flush()
            except (BrokenPipeError, ValueError):
                pass  # the host is gone; nobody is left to answer

    def handle(self, message: Any) -> None:
        """Answer one request, act on one notification; ignore what is neither."""
        if not isinstance(message, dict):
            return
        method, ident, params = message.get("method"), message.get("id"), message.get("params")
        params = params if isinstance(params, dict) else {}
        if ident is None:
            if method == "notifications/cancelled":
                stop = self._running.get(params.get("requestId"))
                if stop is not None:
                    stop.set()
            return
        if method == "initialize":
            version = params.get("protocolVersion")
            self.send(
                {
                    "id": ident,
                    "result": {
                        "protocolVersion": version
                        if isinstance(version, str)
                        else PROTOCOL_VERSION,
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": SERVER_NAME, "version": "1"},
                    },
                }
            )
        elif method == "ping":
            self.send({"id": ident, "result": {}})
        elif method == "tools/list":
            self.send({"id": ident, "result": {"tools": [tool_listing(self.commands)]}})
        elif method == "tools/call":
            stop = threading.Event()
            self._running[ident] = stop
            worker = threading.Thread(target=self._call, args=(ident, params, stop))
            self._workers.append(worker)
            worker.start()
        else:
            error = {"code": METHOD_NOT_FOUND, "message": f"method not found: {method}"}
            self.send({"id": ident, "error": error})

    def _call(self, ident: Any, params: dict[str, Any], stop: threading.Event) -> None:
        try:
            self.send({"id": ident, "result": self.call(params, stop)})
        finally:
            self._running.pop(ident, None)

    def call(self, params: dict[str, Any], stop: threading.Event) -> dict[str, Any]:
        """A `tools/call` result: the command's text, or an error the model sees."""
        if params.get("name") != TOOL:
            return _error(f"Unknown tool: {params.get('name')}")
        arguments = params.get("arguments")
        chosen = arguments.get("command") if isinstance(arguments, dict) else None
        command = self.commands.get(chosen) if isinstance(chosen, str) else None
        if command is None:
            declared = ", ".join(self.commands)
            return _error(f"Unknown command id: {json.dumps(chosen)}. Declared: {declared}")
        with self._sequential:
            try:
                outcome = run_declared(command, self.workspace, stop)
            except OSError as error:
                return _error(f"cannot start command {command.id} ({command.argv[0]}): {error}")
        return {
            "content": [{"type": "text", "text": result_text(command, outcome)}],
            "isError": False,
        }

    def stop_all(self) -> None:
        """The host went away: stop every command still running and wait until each is reaped."""
        for stop in list(self._running.values()):
            stop.set()
        for worker in self._workers:
            worker.join()


def _error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def main() -> int:
    """Serve until stdin ends; a bad configuration is refused before anything is offered."""
    try:
        commands = load_commands(os.environ.get("SKILL_EVAL_COMMANDS"))
        workspace = load_workspace(os.environ.get("SKILL_EVAL_WRITABLE_ROOT"))
    except ConfigError as error:
        print(f"skill-eval command tool: {error}", file=sys.stderr)
        return 1
    server = Server(commands, workspace, sys.stdout)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            continue
        server.handle(message)
    server.stop_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
