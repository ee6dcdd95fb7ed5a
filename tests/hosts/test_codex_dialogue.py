"""The Codex dialogue's own decisions, against a small JSON-RPC peer that answers as the
app-server does (the real app-server's behaviour is `test_codex_e2e.py`'s)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pytest_skill_eval.hosts.base import Launch, Talk
from pytest_skill_eval.hosts.codex.host import CodexDialogue, CodexHost
from pytest_skill_eval.hosts.observation import Turn
from pytest_skill_eval.hosts.process import CancelToken, HostProcess
from tests.support.files import write

# Answers every request, completes each turn at once, and logs every method it received.
PEER = """
import json, sys
log = open(sys.argv[1], "a")
for line in sys.stdin:
    message = json.loads(line)
    log.write(message.get("method", "") + "\\n"); log.flush()
    if "id" not in message:
        continue
    result = {"thread": {"id": "t-1"}} if message["method"] == "thread/start" else {}
    print(json.dumps({"id": message["id"], "result": result}), flush=True)
    if message["method"] == "turn/start":
        turn = {"id": "u", "status": "completed", "error": None}
        print(json.dumps({"method": "turn/completed", "params": {"turn": turn}}), flush=True)
"""


def _dialogue(tmp_path: Path, cancel: CancelToken, after_turn: Any) -> CodexDialogue:
    peer = write(tmp_path / "peer.py", PEER)
    (tmp_path / "ws").mkdir()
    process = HostProcess(
        argv=[sys.executable, str(peer), str(tmp_path / "received.log")],
        env={},
        cwd=tmp_path / "ws",
        events_path=tmp_path / "run" / "events.jsonl",
        stderr_path=tmp_path / "run" / "stderr.log",
        interactive=True,
    )
    process.start()
    launch = Launch(
        cwd=tmp_path / "ws",
        prompts=("One.", "Two.", "Three."),
        one_shot=False,
        events_path=process.events_path,
        stderr_path=process.stderr_path,
    )
    host: Any = SimpleNamespace(
        aliases={}, prices=None, first_prompt="One.", registration=CodexHost.registration
    )
    return CodexDialogue(Talk(process, cancel, launch, after_turn), host)


def test_every_turn_goes_to_the_one_process_in_one_thread(tmp_path: Path) -> None:
    dialogue = _dialogue(tmp_path, CancelToken(), lambda turn: None)
    obs, outcome = dialogue.run()
    assert [t.settled for t in obs.turns] == [True, True, True]
    assert (outcome.exit_code, outcome.signal) == (0, None)
    received = (tmp_path / "received.log").read_text(encoding="utf-8").split()
    assert received == ["initialize", "initialized", "thread/start", *["turn/start"] * 3]
    sent = [json.loads(line) for line in dialogue.process.events_path.read_text().splitlines()]
    assert len(sent) == 2 + 3 * 2  # the answers and each turn's completion, all in one stream


def test_a_run_cancelled_between_turns_never_sends_the_next_prompt(tmp_path: Path) -> None:
    cancel = CancelToken()

    def after_turn(turn: Turn) -> None:
        cancel.cancel()  # Ctrl-C while the evaluator snapshots the workspace after turn one

    obs, _ = _dialogue(tmp_path, cancel, after_turn).run()
    received = (tmp_path / "received.log").read_text(encoding="utf-8").split()
    assert received.count("turn/start") == 1
    assert [t.turn for t in obs.turns] == [1]
