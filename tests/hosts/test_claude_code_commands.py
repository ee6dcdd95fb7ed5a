"""Declared commands on Claude Code: the evaluator's MCP server, the guard, the neutral names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts import command_server
from pytest_skill_eval.hosts import hook_guard as guard
from pytest_skill_eval.hosts.base import Endpoint, Launch
from pytest_skill_eval.hosts.claude_code.binary import ClaudeCodeBinary
from pytest_skill_eval.hosts.claude_code.events import NEUTRAL_TOOLS, StreamTranslator
from pytest_skill_eval.hosts.claude_code.host import COMMAND_SERVER, ClaudeCodeHost, mcp_config
from pytest_skill_eval.hosts.claude_code.registration import RUN_COMMAND as CLAUDE_CODE_RUN_COMMAND
from pytest_skill_eval.hosts.dialect import render_for_host
from pytest_skill_eval.hosts.observation import Observation
from pytest_skill_eval.modelserver.script import ScriptedResponse, ToolCall

CLAUDE_CODE = "claude-code"

COMMANDS: list[dict[str, Any]] = [
    {"id": "hello", "argv": ["sh", "-c", "echo hello; echo oops >&2; exit 2"]},
    {"id": "flood", "argv": [sys.executable, "-c", "print('é' * 40000, end='')"]},
    {"id": "hangs", "argv": ["sleep", "30"], "timeout_ms": 200},
]


class McpClient:
    """Talks JSON-RPC to the server over its stdio, the way Claude Code does."""

    def __init__(self, workspace: Path, commands: list[dict[str, Any]]) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SKILL_EVAL_")}
        env |= {
            "SKILL_EVAL_COMMANDS": json.dumps(commands),
            "SKILL_EVAL_WRITABLE_ROOT": str(workspace),
            "SKILL_EVAL_ALLOWED_TOOLS": "[]",
            "KEPT_FOR_COMMANDS": "yes",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(COMMAND_SERVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self._next = 0

    def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        self._next += 1
        self.send({"id": self._next, "method": method, "params": dict(params or {})})
        assert self.process.stdout is not None
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        assert answer["jsonrpc"] == "2.0"
        assert answer["id"] == self._next
        return answer

    def send(self, message: Mapping[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        self.process.stdin.flush()

    def call(self, command: object) -> dict[str, Any]:
        arguments = {"command": command}
        answer = self.request("tools/call", {"name": "run_command", "arguments": arguments})
        result: dict[str, Any] = answer["result"]
        return result

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(30)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[McpClient]:
    mcp = McpClient(tmp_path, COMMANDS)
    init = mcp.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    assert init["result"]["protocolVersion"] == "2025-06-18"
    assert init["result"]["capabilities"] == {"tools": {}}
    mcp.send({"method": "notifications/initialized"})
    yield mcp
    if mcp.process.poll() is None:
        mcp.process.kill()
        mcp.process.wait()


def text_of(result: Mapping[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"])


def test_offers_one_tool_whose_argument_names_a_declared_command(client: McpClient) -> None:
    (tool,) = client.request("tools/list")["result"]["tools"]
    assert tool["name"] == "run_command"
    assert tool["inputSchema"]["properties"]["command"]["enum"] == ["hello", "flood", "hangs"]
    assert tool["inputSchema"]["required"] == ["command"]
    assert "hello (sh -c echo hello; echo oops >&2; exit 2)" in tool["description"]
    assert client.request("ping")["result"] == {}
    assert client.request("resources/list")["error"]["code"] == -32601
    assert client.close() == 0


def test_runs_the_command_and_answers_with_pis_text(client: McpClient) -> None:
    result = client.call("hello")
    assert result["isError"] is False
    assert text_of(result) == "\n".join(
        [
            "$ sh -c echo hello; echo oops >&2; exit 2",
            "exit code: 2",
            "--- stdout ---",
            "hello\n",
            "--- stderr ---",
            "oops\n",
        ]
    )


def test_output_is_capped_without_splitting_a_character(client: McpClient) -> None:
    text = text_of(client.call("flood"))
    header = text.splitlines()[2]
    assert header == "--- stdout (truncated: showing 32768 of 80000 bytes) ---"
    stdout = text.split(header + "\n", 1)[1].split("\n--- stderr ---")[0]
    assert stdout == "é" * 16384


def test_a_timeout_stops_the_command_and_says_so(client: McpClient) -> None:
    result = client.call("hangs")
    assert result["isError"] is False
    assert text_of(result).splitlines()[1] == "timed out after 200 ms"


@pytest.mark.parametrize("command", ["rm-rf", None, 7])
def test_an_undeclared_command_is_refused(client: McpClient, command: object) -> None:
    result = client.call(command)
    assert result["isError"] is True
    assert text_of(result) == (
        f"Unknown command id: {json.dumps(command)}. Declared: hello, flood, hangs"
    )


def test_commands_run_in_the_workspace_without_the_evaluators_variables(
    tmp_path: Path,
) -> None:
    script = "pwd; echo $KEPT_FOR_COMMANDS; env | grep -c ^SKILL_EVAL_; true"
    mcp = McpClient(tmp_path, [{"id": "env", "argv": ["sh", "-c", script]}])
    lines = text_of(mcp.call("env")).splitlines()
    assert lines[3:6] == [str(tmp_path.resolve()), "yes", "0"]
    assert mcp.close() == 0


def test_a_bad_configuration_refuses_to_start(tmp_path: Path) -> None:
    mcp = McpClient(tmp_path, [])
    assert mcp.close() == 1
    assert mcp.process.stderr is not None
    assert "must be a non-empty JSON array" in mcp.process.stderr.read()


def test_the_guard_lets_the_tool_through_only_when_declared(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    call = {"tool_name": CLAUDE_CODE_RUN_COMMAND, "tool_input": {"command": "x"}}
    monkeypatch.setenv("SKILL_EVAL_ALLOWED_TOOLS", json.dumps(["read", "run_command"]))
    guard.check(call)
    monkeypatch.setenv("SKILL_EVAL_ALLOWED_TOOLS", json.dumps(["read"]))
    with pytest.raises(guard.Refused, match="not declared"):
        guard.check(call)


def test_one_name_everywhere() -> None:
    name = f"mcp__{command_server.SERVER_NAME}__{command_server.TOOL}"
    assert name == CLAUDE_CODE_RUN_COMMAND
    assert guard.NEUTRAL[CLAUDE_CODE_RUN_COMMAND] == "run_command"
    assert NEUTRAL_TOOLS[CLAUDE_CODE_RUN_COMMAND] == "run_command"
    server = mcp_config()["mcpServers"]
    assert isinstance(server, dict)
    assert server[command_server.SERVER_NAME]["args"] == ["-I", str(COMMAND_SERVER)]


def test_a_neutral_script_call_renders_as_the_mcp_tool_and_is_reported_neutrally() -> None:
    neutral = ScriptedResponse(tool_calls=(ToolCall("run_command", {"command": "hello"}),))
    (call,) = render_for_host(neutral, CLAUDE_CODE, {}, None).tool_calls
    assert (call.name, dict(call.arguments)) == (CLAUDE_CODE_RUN_COMMAND, {"command": "hello"})

    obs = Observation()
    obs.begin_turn(1, "p", "p")
    translator = StreamTranslator(obs, {})
    use = {
        "type": "tool_use",
        "id": "t1",
        "name": CLAUDE_CODE_RUN_COMMAND,
        "input": {"command": "hello"},
    }
    translator.apply({"type": "assistant", "message": {"role": "assistant", "content": [use]}})
    done = {"type": "tool_result", "tool_use_id": "t1", "content": "$ echo"}
    translator.apply({"type": "user", "message": {"role": "user", "content": [done]}})
    (activity,) = obs.turns[0].tool_activity
    assert activity["toolName"] == "run_command"
    assert activity["args"] == {"command": "hello"}


def argv_for(root: Path, **launch: Any) -> list[str]:
    """Claude Code's argv for a launch in a fresh isolated home under `root`."""
    host = ClaudeCodeHost()
    root.mkdir()
    home = host.prepare(root, Endpoint(mode="scripted", model=None))
    fields = {"cwd": root, "prompts": ("p",), "one_shot": False, **launch}
    run = Launch(events_path=root / "e", stderr_path=root / "s", **fields)
    return host.command(ClaudeCodeBinary(Path("claude"), "2.1.332"), run, home).argv


def test_the_server_is_passed_only_when_commands_are_declared(tmp_path: Path) -> None:
    with_commands = argv_for(tmp_path / "a", command_tool=True, tools=("read", "run_command"))
    allowed = with_commands[with_commands.index("--allowedTools") + 1]
    assert allowed.split(",") == ["Read", CLAUDE_CODE_RUN_COMMAND]
    config = json.loads(with_commands[with_commands.index("--mcp-config") + 1])
    assert list(config["mcpServers"]) == [command_server.SERVER_NAME]
    assert "--strict-mcp-config" in with_commands
    without = argv_for(tmp_path / "b", command_tool=False, tools=("read",))
    assert "--mcp-config" not in without


@pytest.mark.parametrize(
    ("servers", "problem"),
    [
        ([{"name": "skill-eval", "status": "connected"}], None),
        ([{"name": "skill-eval", "status": "failed"}], "server is failed"),
        ([], "server is missing"),
    ],
)
def test_a_command_server_that_did_not_start_fails_the_run(
    servers: list[dict[str, str]], problem: str | None
) -> None:
    obs = Observation()
    obs.begin_turn(1, "p", "p")
    translator = StreamTranslator(obs, {}, command_server=command_server.SERVER_NAME)
    translator.apply({"type": "system", "subtype": "init", "mcp_servers": servers})
    messages = [e["message"] for e in obs.protocol_errors]
    assert messages == ([] if problem is None else [f"the evaluator's command tool {problem}"])
