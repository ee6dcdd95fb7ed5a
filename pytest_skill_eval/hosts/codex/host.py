"""Codex as a subject host: isolated CODEX_HOME, a hardened config, one process for all turns.

The operator's `~/.codex`, `~/.agents/skills`, AGENTS.md files above the workspace and bundled
skills never reach it: HOME, `CODEX_HOME` and TMPDIR are ours, `config.toml` is generated for the
run (`config.py`) and loaded with `--strict-config`, and the declared skills, linked to their
snapshots, are the only ones in `$CODEX_HOME/skills`, so nothing is added to the workspace. One
`codex app-server` on stdio runs every turn of the subject, in one thread (`app_server.py`).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ...common.entries import files_inside
from ...modelserver.route import Route
from ...modelserver.scripted import DEFAULT_MODEL as SCRIPTED_MODEL
from ...modelserver.scripted import DEFAULT_PROVIDER as SCRIPTED_PROVIDER
from .. import command_server as command_server_module
from .. import setup
from ..base import Command, Endpoint, Executable, Home, Launch, Talk
from ..command_server import DEFAULT_TIMEOUT_MS, KILL_GRACE_S
from ..context import declared_context_block, load_context
from ..dialogue import StreamDialogue
from ..observation import Observation
from ..process import EndOfStream, Frame, ProcessOutcome
from ..registry import Registered
from .app_server import OPTED_OUT, AppServerTranslator
from .config import (
    DEFAULT_MODEL,
    EFFORT,
    LOOPBACK_KEY,
    CodexConfig,
    McpTable,
    command_server_table,
    sandbox_mode,
)
from .registration import CODEX, KEY_ENV
from .sandbox import software_roots, wrap

# Codex 0.171 keeps each rollout at sessions/YYYY/MM/DD/rollout-*.jsonl; a run's is far below
# the limit, which keeps a file the subject inflated from filling the evaluator's memory.
ROLLOUT_DEPTH = 3
ROLLOUT_LIMIT = 64 * 1024 * 1024
COMMAND_SERVER = Path(command_server_module.__file__)
# Codex stops waiting for a tool call after `tool_timeout_sec`: well after the server has.
TOOL_TIMEOUT_MARGIN_S = 30

# Who the app-server's client is: it goes into Codex's user agent, never a request body (a
# release of the plugin changes no cassette).
CLIENT = {"name": "pytest-skill-eval", "version": "1"}

ISOLATED_INSTRUCTIONS = (
    "You are a coding assistant operating inside Codex for a skill evaluation. Work only in the "
    "current working directory and with the skills listed to you. When a task matches a skill's "
    "description, read its SKILL.md before acting, and resolve relative paths in a skill "
    "against that skill's directory. Be concise in your responses.\n"
)


def responses_base_url(route: Route) -> str:
    """The route's base URL for the OpenAI Responses API (Codex appends `/responses`)."""
    from ...modelserver import wire

    api = wire.OPENAI_RESPONSES
    return route.base_url(api)


def install_skills(config: Path, skills: Sequence[Path]) -> tuple[dict[str, Path], dict[str, str]]:
    """Link each declared skill into `$CODEX_HOME/skills` (`.system` is Codex's own).

    Returns name → snapshotted SKILL.md, and every path a SKILL.md is known by → the snapshot
    path its reads are recorded under.
    """
    names = setup.install_skills(
        config, skills, CODEX.display_name, reserved=CODEX.skill_limits.reserved
    )
    aliases = setup.link_paths(config, skills, names)
    for snapshot in names.values():
        aliases[str(snapshot)] = str(snapshot)
    return names, aliases


def codex_config(
    launch: Launch,
    base_url: str | None,
    instructions: Path | None,
    developer: str | None = None,
) -> CodexConfig:
    """The run's configuration: the declared model, thinking level and tools."""
    model = DEFAULT_MODEL
    effort = None
    if launch.model is not None:
        provider, _, declared = launch.model["model"].rpartition("/")
        if declared and (provider, declared) != (SCRIPTED_PROVIDER, SCRIPTED_MODEL):
            model = declared  # the scripted default gets a slug Codex knows instead
        thinking = launch.model.get("thinking")
        effort = EFFORT.get(thinking) if thinking else None
    return CodexConfig(
        base_url=base_url,
        model=model,
        effort=effort,
        sandbox=sandbox_mode(launch.tools),
        instructions_file=str(instructions) if instructions is not None else None,
        developer_instructions=developer,
    )


def command_server(launch: Launch, forwarded: Sequence[str]) -> McpTable:
    """The `[mcp_servers]` table offering the declared commands (`hosts/command_server.py`)."""
    declared = json.loads(launch.environment.get("SKILL_EVAL_COMMANDS") or "[]")
    longest = max(
        (c.get("timeout_ms") or DEFAULT_TIMEOUT_MS for c in declared if isinstance(c, dict)),
        default=DEFAULT_TIMEOUT_MS,
    )
    return command_server_table(
        python=str(Path(sys.executable).resolve()),
        script=str(COMMAND_SERVER),
        workspace=str(launch.cwd),
        forwarded=[*forwarded, *launch.environment],
        timeout_s=longest / 1000 + KILL_GRACE_S + TOOL_TIMEOUT_MARGIN_S,
    )


def confinement_prefix(bwrap: Path, codex: Path, launch: Launch, home: Home) -> list[str]:
    """The bwrap command line that leaves Codex only the workspace, resources and skills (and,
    with declared commands, the Python that runs the command server, read-only)."""
    allowed = json.loads(launch.environment.get("SKILL_EVAL_ALLOWED_ROOTS") or "[]")
    readable = [Path(p) for p in allowed if isinstance(p, str)] + list(launch.skills)
    software = software_roots(codex)
    if launch.command_tool:
        software += [Path(sys.base_prefix), Path(sys.executable).resolve(), COMMAND_SERVER]
    return wrap(
        bwrap,
        [],
        software=software,
        writable=[launch.cwd, home.root],
        readable=readable,
        cwd=launch.cwd,
    )


def rollout_mentions(home: Path, sessions: Path) -> list[tuple[str, str]]:
    """Each `<skill>` message Codex injected into a session: (name, SKILL.md path).

    The subject can write in Codex's home, down to replacing `sessions` by a link: it is walked
    only inside `home` (the run's home root, which the subject cannot replace), through no link,
    and only its regular files of at most `ROLLOUT_LIMIT` bytes are read.
    """
    found: list[tuple[str, str]] = []
    for path, data in files_inside(home, sessions, ROLLOUT_DEPTH, ROLLOUT_LIMIT):
        if not fnmatch.fnmatchcase(os.path.basename(path), "rollout-*.jsonl"):
            continue
        lines = data.decode("utf-8", errors="replace").splitlines()
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            payload = record.get("payload") if isinstance(record, dict) else None
            if not isinstance(payload, dict) or record.get("type") != "response_item":
                continue
            if payload.get("type") != "message" or payload.get("role") != "user":
                continue
            for block in payload.get("content") or []:
                text = block.get("text") if isinstance(block, dict) else None
                if isinstance(text, str) and text.startswith("<skill>"):
                    name = text.partition("<name>")[2].partition("</name>")[0]
                    path = text.partition("<path>")[2].partition("</path>")[0]
                    found.append((name, path))
    return found


class CodexDialogue(StreamDialogue[AppServerTranslator]):
    """One `codex app-server` for every turn: a thread, then one `turn/start` per prompt, each
    sent once the turn before has completed (the target skill mentioned explicitly on turn
    one)."""

    def __init__(self, talk: Talk, host: CodexHost) -> None:
        super().__init__(talk)
        self._host = host
        self._translator = AppServerTranslator.of(self._observation, host.aliases, host.prices)
        self._next_id = 0
        self._thread: object = None  # the id `thread/start` answered with

    def run(self) -> tuple[Observation, ProcessOutcome]:
        """Every prompt in turn, in one thread; a turn that fails or does not settle ends the
        conversation (later turns would build on it)."""
        launch, obs = self._launch, self._observation
        registration = self._host.registration
        obs.delivery_unavailable(launch.target)
        # A pre-started Codex opens its thread, then waits at the gate, unprompted: its start-up
        # is over by then, so its slot is freed at once (the settling reads its outer bubblewrap,
        # idle from the start, not Codex).
        opened = self._opened()
        if not self._until_gate():  # the run was called off before its first prompt
            return obs, self._outcome
        if opened:
            for number, prompt in enumerate(launch.prompts, start=1):
                if number > 1 and (
                    self._cancel.cancelled or not self._layers_kept(number, registration)
                ):
                    break  # cancelled between turns: the next prompt is never sent
                if not self._take_turn(number, prompt):
                    break
        self._process.close_stdin()  # the app-server exits at the end of its input
        if obs.current is not None or not obs.protocol_errors:
            self._pump(lambda: self._ended)
        # Else the evaluator stopped it between turns (a layer check): idle, it ends by itself
        # as `finish` waits, and is stopped only if it does not.
        return self._finish()

    def _opened(self) -> bool:
        """The connection initialised and the thread started; False when either failed."""
        capabilities = {"optOutNotificationMethods": list(OPTED_OUT)}
        if self._call("initialize", {"clientInfo": CLIENT, "capabilities": capabilities}) is None:
            return False
        self._send({"method": "initialized"})
        started = self._call("thread/start", {"cwd": str(self._launch.cwd)})
        if started is None:
            return False
        thread = started.get("thread")
        self._thread = thread.get("id") if isinstance(thread, dict) else None
        if not isinstance(self._thread, str):
            message = "Codex started no thread: thread/start answered without its id"
            self._observation.protocol_error("process-error", message=message)
            return False
        return True

    def _take_turn(self, number: int, prompt: str) -> bool:
        """Turn `number`, sent and followed until it completes; False when the conversation
        cannot go on."""
        launch = self._launch
        delivered = self._host.first_prompt if number == 1 else prompt
        turn = self._begin_turn(number, prompt, delivered)
        if number == 1:
            launch.gate.prompting()
        text = {"type": "text", "text": delivered, "text_elements": []}
        if self._call("turn/start", {"threadId": self._thread, "input": [text]}) is None:
            return False
        turn.prompt_accepted = True
        settled = self._pump(lambda: turn.settled)
        if number == 1 and launch.target is not None:
            self._confirm_delivery()
        if not settled:
            return False
        self._after_turn(turn)
        return turn.assistant_error is None  # later turns would build on a failed one

    def _send(self, message: dict[str, object]) -> bool:
        try:
            self._process.send(message)
        except (OSError, ValueError) as error:  # ValueError: its stdin already closed here
            self._observation.protocol_error("process-error", message=f"stdin closed: {error}")
            return False
        return True

    def _call(self, method: str, params: dict[str, object]) -> dict[str, object] | None:
        """`method` sent and its response awaited: the result, or None (a protocol error
        recorded, or the conversation otherwise unable to go on)."""
        self._next_id += 1
        key = self._next_id
        if not self._send({"id": key, "method": method, "params": params}):
            return None
        responses = self._translator.responses
        if not self._pump(lambda: key in responses):
            return None
        response = responses.pop(key)
        result = response.get("result")
        if "error" in response or not isinstance(result, dict):
            error = response.get("error")
            reason = error.get("message") if isinstance(error, dict) else error
            message = f"Codex refused {method}: {reason}"
            self._observation.protocol_error("process-error", message=message)
            return None
        return result

    def _apply(self, frame: Frame | EndOfStream) -> None:
        super()._apply(frame)
        for request in self._translator.requests:
            # Approvals are never asked for (`approval_policy = "never"`), and nothing else it
            # may ask has an answer here: each is refused, and kept in the transcript.
            self._observation.message({"role": "host", "request": request.get("method")})
            refusal = {"code": -32601, "message": "not supported by the evaluator"}
            self._send({"id": request.get("id"), "error": refusal})
        self._translator.requests.clear()

    def _confirm_delivery(self) -> None:
        """Codex injected the target's SKILL.md for the mention: its rollout says so."""
        target = self._launch.target
        name = self._host.target_name
        if target is None or name is None:
            return
        for mentioned, path in rollout_mentions(self._host.home_root, self._host.sessions):
            if mentioned == name and self._host.aliases.get(path) == str(target.resolve()):
                self._observation.delivery = {
                    "kind": "explicit-skill-mention",
                    "turn": 1,
                    "targetPath": str(target),
                    "mention": f"${name}",
                    "confirmedBy": "rollout",
                }
                return


class CodexHost:
    """The OpenAI Codex CLI (`@openai/codex`, pinned)."""

    registration = Registered(CODEX.name)

    def __init__(self) -> None:
        self._base_url: str | None = None
        self.prices: Mapping[str, float] | None = None  # the served model's, per million tokens
        self._config: CodexConfig | None = None
        self.aliases: dict[str, str] = {}
        self.first_prompt = ""
        self.target_name: str | None = None
        self.home_root = self.sessions = Path(os.devnull)
        self._command = "codex"
        self._confine: list[str] | None = None  # the bwrap prefix; None: reads unconfined

    @property
    def enforced(self) -> dict[str, str | bool] | None:
        """What this run's configuration enforced, for the run record."""
        if self._config is None:
            return None
        return self._config.enforced(confined=self._confine is not None)

    def prepare(self, root: Path, endpoint: Endpoint) -> Home:
        """HOME, its `.codex` (CODEX_HOME) and TMPDIR under `root`; nothing of the operator's."""
        home = setup.make_home(root, root / "home" / ".codex")
        if endpoint.served is not None:
            self._base_url = responses_base_url(endpoint.served.route)
            self.prices = endpoint.served.cost
        return home

    def command(self, binary: Executable, launch: Launch, home: Home) -> Command:
        """Writes the run's config and skills; the command line of turn one and its
        environment: operator PATH and locale, our home dirs, the loopback key, what the npm
        launcher would have set; no operator credential."""
        env = setup.isolated_environment(home, CODEX_HOME=str(home.config))
        if self._base_url is not None:
            env[KEY_ENV] = LOOPBACK_KEY
        env |= dict(getattr(binary, "launcher_env", ()))
        return Command(self._argv(binary, launch, home, env), env)

    def _argv(
        self, binary: Executable, launch: Launch, home: Home, env: Mapping[str, str]
    ) -> list[str]:
        names, self.aliases = install_skills(home.config, launch.skills)
        self.home_root, self.sessions = home.root, home.config / "sessions"
        instructions, developer = None, None
        entries = load_context(launch.environment.get("SKILL_EVAL_CONTEXT_MANIFEST", ""))
        context = declared_context_block(entries) if entries else None
        if launch.environment.get("SKILL_EVAL_PROMPT_MODE", "isolated") == "isolated":
            # The evaluator's instructions replace Codex's, the declared context after them.
            instructions = home.root / "instructions.md"
            text = ISOLATED_INSTRUCTIONS + (f"\n{context}\n" if context else "")
            instructions.write_text(text, encoding="utf-8")
        else:
            developer = context  # Codex's own instructions, the declared context added
        self._config = codex_config(launch, self._base_url, instructions, developer)
        if launch.command_tool:
            forwarded = [k for k in env if k != KEY_ENV]
            server = command_server(launch, forwarded)
            self._config = dataclasses.replace(self._config, command_server=server)
        (home.config / "config.toml").write_text(self._config.toml(), encoding="utf-8")
        self.first_prompt = launch.prompts[0]
        if launch.target is not None:
            target = str(launch.target.resolve())
            self.target_name = next((n for n, p in names.items() if str(p) == target), None)
            if self.target_name is not None:
                self.first_prompt = f"${self.target_name} {launch.prompts[0]}"
        executable = getattr(binary, "executable", None)
        self._command = str(executable or binary.path)
        bwrap = getattr(binary, "bwrap", None)
        if isinstance(bwrap, Path):
            self._confine = confinement_prefix(bwrap, binary.path, launch, home)
        return self._wrapped(["app-server", "--listen", "stdio://", "--strict-config"])

    def _wrapped(self, args: list[str]) -> list[str]:
        command = [self._command, *args]
        return [*self._confine, *command] if self._confine is not None else command

    def converse(self, talk: Talk) -> CodexDialogue:
        """The app-server's messages pumped into the observation, with cancellation and the
        watchdog."""
        return CodexDialogue(talk, self)

    def cleanup(self, home: Home) -> None:
        """Codex keeps its state under CODEX_HOME and TMPDIR, both deleted with the home."""
