"""`python -m bench hosts [HOST ...]`: which hosts it compares, and one line for a wrong name."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import __main__ as bench_main
from bench import hosts
from bench.common import REPLY, bare_runs, body_suite, item_times
from bench.stock import CONTINUE, STOCK, continuing
from pytest_skill_eval.hosts.registry import names
from pytest_skill_eval.hosts.startup import SLOTS_ENV
from pytest_skill_eval.modelserver.wire import OPENAI


def test_every_registered_host_has_a_stock_command_and_none_is_chosen_by_default() -> None:
    assert set(hosts.HOSTS) == set(names())
    assert hosts.selected([]) == hosts.HOSTS


def test_named_hosts_are_compared_in_the_order_named() -> None:
    assert hosts.selected(["opencode", "gemini-cli"]) == ("opencode", "gemini-cli")


def test_an_unknown_host_is_refused_in_one_line_before_anything_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert bench_main.main(["hosts", "gemini", "opencode"]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert "unknown host(s): gemini;" in out
    assert "gemini-cli" in out


def test_without_a_loopback_only_namespace_it_refuses_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(hosts.MARKER, raising=False)
    monkeypatch.setattr("tests.support.namespaces.shutil.which", lambda name: None)
    with pytest.raises(SystemExit) as refused:
        hosts.main(["pi"])
    message = str(refused.value)
    assert "\n" not in message
    assert "unshare -rn" in message


def test_warm_starts_share_one_home_after_an_untimed_first_run(tmp_path: Path) -> None:
    def command(route: object, base: Path) -> tuple[list[str], dict[str, str]]:
        (base / "home").mkdir(exist_ok=True)
        # Each run adds one mark to a file in the home it was given.
        append = "import sys; open(sys.argv[1], 'a').write('x')"
        return [sys.executable, "-c", append, str(base / "home" / "runs")], {}

    timed = bare_runs([{"response": REPLY}], 2, tmp_path, command, reuse=True)
    assert len(timed) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["bare0"]
    assert (tmp_path / "bare0" / "home" / "runs").read_text() == "xxx"


def test_the_spread_brackets_the_ratio_and_says_whether_the_goal_is_met() -> None:
    rounds = [
        hosts.Round(1.6, [0.9, 1.0], [(2.0, 4.0), (2.2, 4.4)], 1.1),
        hosts.Round(1.65, [0.95, 1.05], [(1.8, 4.2), (2.1, 4.1)], 1.2),
        hosts.Round(1.7, [1.0, 0.9], [(1.9, 4.3), (2.0, 4.0)], 1.0),
        hosts.Round(1.62, [0.92, 0.98], [(2.0, 4.1), (2.1, 4.2)], 1.1),
    ]
    bounds = hosts.spread(rounds)
    assert bounds["cpu"][0] <= 1.6425 / 4.15 <= bounds["cpu"][1] < 0.5
    assert bounds["wall"][0] <= 0.96 / 2.0 <= bounds["wall"][1]
    assert bounds["suite_wall"][0] <= 1.1 / 2.0 <= bounds["suite_wall"][1]
    assert bounds == hosts.spread(rounds)  # a fixed seed
    # A round is resampled whole: one round's figures alone give no spread at all.
    alone = hosts.spread(rounds[:1])
    assert alone["cpu"][0] == alone["cpu"][1]
    assert alone["wall"][0] == alone["wall"][1]
    assert alone["suite_wall"][0] == alone["suite_wall"][1]
    met = {"cpu": [0.38, 0.42], "wall": [0.45, 0.5]}
    assert hosts.goal_met(met, 0.5, rounds=6) is True
    assert hosts.goal_met(met, 0.5, rounds=3) is None  # too few rounds to tell
    assert hosts.goal_met({"cpu": [0.38, 0.42], "wall": [0.51, 0.6]}, 0.5, rounds=6) is False
    assert hosts.goal_met({"cpu": [0.45, 0.55], "wall": [0.4, 0.45]}, 0.5, rounds=6) is None
    assert hosts.goal_met({"cpu": [0.4, 0.5004], "wall": [0.4, 0.45]}, 0.5, rounds=6) is None
    assert hosts.goal_met({"cpu": [0.1, 0.2], "wall": [0.1, 0.2]}, None, rounds=6) is None
    shorter_items = {"cpu": [0.38, 0.42], "wall": [0.3, 0.4], "suite_wall": [0.52, 0.6]}
    assert hosts.goal_met(shorter_items, 0.5, rounds=6) is False  # the suite took longer


def test_rounds_reach_the_hosts_benchmark_and_a_bad_count_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[tuple[object, ...]] = []
    monkeypatch.setattr(hosts, "main", lambda *args, **kwargs: calls.append((args, kwargs)))
    assert bench_main.main(["hosts", "opencode", "--rounds", "6"]) == 0
    assert bench_main.main(["hosts"]) == 0
    assert bench_main.main(["hosts", "--turns", "3", "codex", "pi", "--rounds", "4"]) == 0
    assert calls == [
        ((["opencode"],), {"rounds": 6, "turns": 1}),
        ((list(hosts.HOSTS),), {"rounds": 3, "turns": 1}),
        ((["codex", "pi"],), {"rounds": 4, "turns": 3}),
    ]
    assert bench_main.main(["hosts", "--rounds", "0"]) == 2
    assert bench_main.main(["hosts", "--rounds", "\u00b2"]) == 2  # a digit, not a number
    assert "--rounds takes a number" in capsys.readouterr().out
    assert bench_main.main(["hosts", "pi", "--turns"]) == 2
    assert "--turns takes a number of turns, e.g. --turns 3" in capsys.readouterr().out
    assert len(calls) == 3


def test_every_stock_command_has_its_own_way_to_continue_the_latest_session() -> None:
    assert set(CONTINUE) == set(STOCK)
    pi = ["pi", "--model", "skill-eval/scripted", "-p", "Say done."]
    assert continuing("pi")(pi) == ["pi", "--model", "skill-eval/scripted", "--continue", "-p",
                                    "Say done."]  # fmt: skip
    codex = ["codex", "exec", "--skip-git-repo-check", "Say done."]
    assert continuing("codex")(codex) == [*codex[:3], "resume", "--last", "Say done."]


# A stand-in host: it keeps its conversation in its home's `history.json` and sends all of it to
# the route's chat endpoint; started with `--new` it forgets what was there.
_CHAT = """
import json, sys, urllib.request
from pathlib import Path
url, history, prompt = sys.argv[1], Path(sys.argv[2]), sys.argv[-1]
messages = [] if "--new" in sys.argv or not history.exists() else json.loads(history.read_text())
messages.append({"role": "user", "content": prompt})
body = json.dumps({"model": "scripted", "messages": messages}).encode()
request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
urllib.request.urlopen(request, timeout=10).read()
messages.append({"role": "assistant", "content": "done"})
history.write_text(json.dumps(messages))
"""


def _chat(route: Any, base: Path) -> tuple[list[str], dict[str, str]]:
    url = route.base_url(OPENAI) + "/chat/completions"
    return [sys.executable, "-c", _CHAT, url, str(base / "history.json"), "Say done."], {}


def test_a_stock_conversation_is_one_process_a_turn_and_must_carry_the_turns_before(
    tmp_path: Path,
) -> None:
    replies = [{"response": REPLY}] * 3
    timed = bare_runs(replies, 2, tmp_path / "kept", _chat, again=lambda argv: argv)
    assert len(timed) == 2
    assert all(wall > 0 and cpu > 0 for wall, cpu in timed)
    history = json.loads((tmp_path / "kept" / "bare1" / "history.json").read_text())
    assert [m["content"] for m in history if m["role"] == "user"] == ["Say done."] * 3
    # A later process that begins anew instead of continuing stops the benchmark.
    with pytest.raises(SystemExit, match=r"did not continue its session: prompts seen \[1, 1, 1\]"):
        bare_runs(replies, 1, tmp_path / "new", _chat, again=lambda argv: [*argv[:-1], "--new",
                                                                            argv[-1]])  # fmt: skip


def test_a_whole_run_notes_when_its_host_first_asked_the_model(tmp_path: Path) -> None:
    # The stand-in waits 0.3 s before its one request and 0.3 s after it.
    def command(route: Any, base: Path) -> tuple[list[str], dict[str, str]]:
        argv, env = _chat(route, base)
        ask = "import time; time.sleep(0.3); exec(sys.argv.pop(1)); time.sleep(0.3)"
        return [argv[0], "-c", "import sys; " + ask, _CHAT, *argv[3:]], env

    firsts: list[float] = []
    timed = bare_runs([{"response": REPLY}], 2, tmp_path / "asks", command, firsts=firsts)
    assert len(firsts) == len(timed) == 2
    # Looked for every 5 ms: never before the request, and the 0.3 s after it still to come.
    for (wall, _), first in zip(timed, firsts, strict=True):
        assert first >= 0.3
        assert wall - first >= 0.25
    # A host that never asks the model stops the benchmark.
    with pytest.raises(SystemExit, match=r"exited with 0 \(asked the model: None\)"):
        bare_runs(
            [{"response": REPLY}], 1, tmp_path / "silent",
            lambda route, base: ([sys.executable, "-c", "pass"], {}), firsts=[],
        )  # fmt: skip


def _spawned_before_baseline_ended(root: Path) -> bool:
    group = next(root.glob(".skill-eval/runs/*/groups/g00"))
    baseline = json.loads((group / "baseline" / "run.json").read_text(encoding="utf-8"))
    candidate = json.loads((group / "candidate" / "run.json").read_text(encoding="utf-8"))
    return bool(candidate["process"]["spawnedAt"] < baseline["completedAt"])


@pytest.mark.pi
def test_overhead_items_are_timed_without_pre_start_and_the_hosts_benchmark_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pre-started candidate's host is spawned during its baseline's run: its item's own time
    # would leave that out, so an overhead benchmark times items with pre-start off.
    monkeypatch.setenv(SLOTS_ENV, "2")  # a serial run pre-starts at once, with a core to spare
    # Start-up slots of its own (they live under TMPDIR): the machine's are shared with every
    # other run of the test suite, and a pre-start gives way to their urgent start-ups for as
    # long as this baseline, answered at once, takes.
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    alone = body_suite(tmp_path / "alone", 1, 1, 0)
    assert len(item_times()(alone)) == 2
    assert not _spawned_before_baseline_ended(alone)
    prestarted = body_suite(tmp_path / "prestarted", 1, 1, 0)
    assert len(item_times(prestart=True)(prestarted)) == 2
    assert _spawned_before_baseline_ended(prestarted)
