"""The host set-up that lives once (`hosts/setup.py`): isolated homes, skill linking, the
environment a host starts from; and no host keeping its own copy of them."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_skill_eval.hosts import setup
from pytest_skill_eval.hosts.base import Endpoint, Talk
from pytest_skill_eval.hosts.registry import REGISTERED

HOSTS = Path(setup.__file__).parent


def _skill(path: Path, name: str) -> Path:
    path.mkdir(parents=True)
    (path / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n---\n", "utf-8")
    return path


def test_every_host_prepares_its_home_through_the_shared_set_up(tmp_path: Path) -> None:
    from pytest_skill_eval.hosts import host_for

    for registration in REGISTERED:
        root = tmp_path / registration.name
        root.mkdir()
        home = host_for(registration.name).prepare(root, Endpoint(mode="live", model=None))
        assert (home.home, home.tmp) == (root / "home", root / "tmp")
        assert all(d.is_dir() for d in (home.home, home.tmp, home.config))
        assert home.config.is_relative_to(root)


def test_a_home_is_made_under_a_root_not_made_yet(tmp_path: Path) -> None:
    root = tmp_path / "not-yet"
    home = setup.make_home(root, root / "home" / ".config" / "host", root / "home" / ".cache")
    assert all(d.is_dir() for d in (home.home, home.tmp, home.config, root / "home" / ".cache"))


def test_skills_are_linked_by_name_and_a_taken_or_reserved_name_is_refused(
    tmp_path: Path,
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    greet = _skill(tmp_path / "snap" / "greet", "greet")
    installed = setup.install_skills(config, [greet], "Some Host")
    assert installed == {"greet": greet / "SKILL.md"}
    assert (config / "skills" / "greet").resolve() == greet
    assert setup.link_paths(config, [greet], installed) == {
        str(config / "skills" / "greet" / "SKILL.md"): str(greet / "SKILL.md"),
        str(greet / "SKILL.md"): str(greet / "SKILL.md"),
    }
    again = _skill(tmp_path / "other" / "greet", "greet")
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    with pytest.raises(ValueError, match="for Some Host as 'greet'"):
        setup.install_skills(tmp_path / "x", [greet, again], "Some Host")
    with pytest.raises(ValueError, match="'greet'"):
        setup.install_skills(tmp_path / "y", [greet], "Some Host", reserved=("greet",))


def test_the_environment_is_the_operators_path_and_locale_and_the_isolated_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PATH", raising=False)
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("SOME_OPERATOR_SECRET", "x")
    home = setup.make_home(tmp_path, tmp_path / "home" / ".host")
    env = setup.isolated_environment(home, HOST_HOME=str(home.config))
    assert list(env) == ["LANG", "PATH", "HOME", "HOST_HOME", "TMPDIR"]
    assert env["PATH"] == os.defpath
    assert (env["HOME"], env["TMPDIR"]) == (str(home.home), str(home.tmp))


def test_no_host_subpackage_links_skills_or_builds_its_home_itself() -> None:
    for path in sorted(HOSTS.glob("*/host.py")) + sorted(HOSTS.glob("*/config.py")):
        text = path.read_text(encoding="utf-8")
        assert "symlink_to(skill" not in text, path
        assert "baseline_environment()" not in text, path
        assert 'root / "tmp"' not in text, path


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("gemini-cli", "turn 1 left no Gemini CLI session to resume"),
        ("opencode", "turn 1 left no opencode session to continue"),
    ],
)
def test_every_process_per_turn_host_continues_through_one_dialogue(
    tmp_path: Path, host: str, expected: str
) -> None:
    # Gemini CLI and opencode start a process per turn through the one shared dialogue,
    # each naming what it continues in its own words.
    from pytest_skill_eval.hosts.dialogue import ProcessPerTurnDialogue
    from pytest_skill_eval.hosts.gemini_cli.host import GeminiDialogue
    from pytest_skill_eval.hosts.opencode.dialogue import OpencodeDialogue
    from pytest_skill_eval.hosts.process import CancelToken

    kinds: dict[str, Any] = {
        "gemini-cli": GeminiDialogue,
        "opencode": OpencodeDialogue,
    }
    assert issubclass(kinds[host], ProcessPerTurnDialogue)
    launch: Any = SimpleNamespace(events_path=tmp_path / "e", stderr_path=tmp_path / "s")
    process: Any = SimpleNamespace()

    class Untranslated(ProcessPerTurnDialogue[Any, None]):
        def _translate(self) -> Any:
            return None  # no event reaches it: only the next turn's start is exercised

    dialogue: Any = Untranslated(Talk(process, CancelToken(), launch, lambda turn: None), None)
    dialogue._session, dialogue._resume = kinds[host]._session, kinds[host]._resume
    registration = next(r for r in REGISTERED if r.name == host)
    assert not dialogue._next_process(2, None, registration)
    assert [e.get("message") for e in dialogue.observation.protocol_errors] == [expected]


def test_the_hook_guard_is_shared_and_no_host_borrows_from_another_ones_subpackage() -> None:
    # Claude Code and Gemini CLI both run the one hook guard; it lives beside the other shared
    # set-up, so neither host reaches into the other's subpackage for it.
    from pytest_skill_eval.hosts import hook_guard

    assert Path(hook_guard.__file__).parent == HOSTS
    for path in sorted(HOSTS.glob("*/*.py")):
        if path.parent.name != "claude_code":
            assert "claude_code" not in path.read_text(encoding="utf-8"), path


def test_a_log_a_full_disk_cut_in_an_earlier_turn_stays_cut(tmp_path: Path) -> None:
    # Each Gemini CLI or opencode turn is a process of its own, appended to the run's logs: the
    # events.jsonl turn one could not finish writing must still reach the run record as cut
    # short.
    launch: Any = SimpleNamespace(
        events_path=tmp_path / "events.jsonl", stderr_path=tmp_path / "stderr.log"
    )
    full = OSError(errno.ENOSPC, "No space left on device")

    def process(suffix: str, events_error: OSError | None) -> Any:
        events, stderr = tmp_path / f"events{suffix}.jsonl", tmp_path / f"stderr{suffix}.log"
        events.write_bytes(b"")
        stderr.write_bytes(b"")
        return SimpleNamespace(
            events_path=events,
            stderr_path=stderr,
            redactions={},
            events_error=events_error,
            stderr_error=None,
        )

    first, second = process("", full), process(".turn2", None)
    from pytest_skill_eval.hosts.dialogue import ProcessPerTurnDialogue
    from pytest_skill_eval.hosts.process import CancelToken

    class Untranslated(ProcessPerTurnDialogue[Any, None]):
        def _translate(self) -> Any:
            return None  # no event reaches it: only the logs of each turn are kept

    dialogue = Untranslated(Talk(first, CancelToken(), launch, lambda turn: None), None)
    dialogue._collect(1)
    dialogue._process = second
    dialogue._collect(2)
    assert second.events_error is full
    assert second.stderr_error is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.jsonl", "stderr.log"]
