"""The host seam: the registry, and Pi's home, argv and environment for a neutral launch."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pytest_skill_eval.hosts import UnknownHostError, host_for
from pytest_skill_eval.hosts import launch as launching
from pytest_skill_eval.hosts.base import Endpoint, Launch, ServedModel
from pytest_skill_eval.hosts.launch import home_parent, isolated_home, launch_process
from pytest_skill_eval.hosts.pi import extensions
from pytest_skill_eval.hosts.pi.binary import PiBinary
from pytest_skill_eval.modelserver.scripted import SCRIPTED_API_KEY
from pytest_skill_eval.modelserver.server import ScriptedModelServer
from pytest_skill_eval.modelserver.wire import OPENAI


def test_runtime_host_selects_its_implementation() -> None:
    host = host_for("pi")
    assert host.registration.name == "pi"
    assert host_for("codex").registration.name == "codex"
    with pytest.raises(UnknownHostError, match="'cursor'"):
        host_for("cursor")


def test_a_registration_holds_no_key_the_run_record_no_longer_reads() -> None:
    # run.json names every host's binary `binary`: the old per-host key has no reader left.
    from pytest_skill_eval.hosts.registration import HostRegistration

    assert "record_key" not in {f.name for f in dataclasses.fields(HostRegistration)}


def test_a_served_model_becomes_pi_agent_files_and_the_home_is_deleted(tmp_path: Path) -> None:
    host = host_for("pi")
    with ScriptedModelServer() as server, server.open_route(None) as route:
        endpoint = Endpoint(
            mode="scripted",
            model={"model": "acme/m"},
            served=ServedModel(
                route,
                OPENAI,
                "acme",
                "m",
                {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
            ),
        )
        with isolated_home(host, endpoint, prefix="skill-eval-test-") as home:
            agent = home.config
            settings = json.loads((agent / "settings.json").read_text(encoding="utf-8"))
            models = json.loads((agent / "models.json").read_text(encoding="utf-8"))
            assert not (agent / "auth.json").exists()
            root = home.root
        assert (settings["defaultProvider"], settings["defaultModel"]) == ("acme", "m")
        entry = models["providers"]["acme"]
        assert entry["baseUrl"] == route.base_url(OPENAI)
        assert entry["apiKey"] == SCRIPTED_API_KEY
        assert entry["models"][0]["cost"]["output"] == 2
        assert not root.exists()


def test_a_live_endpoint_writes_the_operator_files_and_no_default_model(tmp_path: Path) -> None:
    host = host_for("pi")
    endpoint = Endpoint(
        mode="live", model=None, live_models={"providers": {}}, auth_json=b'{"k": 1}'
    )
    with isolated_home(host, endpoint, prefix="skill-eval-test-") as home:
        settings = json.loads((home.config / "settings.json").read_text(encoding="utf-8"))
        assert "defaultModel" not in settings
        assert json.loads((home.config / "models.json").read_text(encoding="utf-8")) == {
            "providers": {}
        }
        assert (home.config / "auth.json").read_bytes() == b'{"k": 1}'
        assert (home.config / "auth.json").stat().st_mode & 0o777 == 0o600


def test_a_guarded_turn_by_turn_launch_and_a_bare_one_shot_launch(tmp_path: Path) -> None:
    host = host_for("pi")
    pi = PiBinary(tmp_path / "pi", "0.73.1")
    plugin = tmp_path / "bundle.mjs"
    with isolated_home(host, Endpoint(mode="live", model=None), prefix="skill-eval-") as home:
        guarded = Launch(
            cwd=tmp_path,
            prompts=("one", "two"),
            one_shot=False,
            events_path=tmp_path / "events.jsonl",
            stderr_path=tmp_path / "stderr.log",
            tools=("read",),
            guard=True,
            command_tool=True,
            observe_context=True,
            plugins=(plugin,),
            environment={"PWD": "set-by-the-launch", "EXTRA": "1"},
        )
        argv, env, process = launch_process(host, pi, guarded, home)
        loaded = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--extension"]
        assert loaded == [
            str(p) for p in (extensions.GUARD, extensions.COMMAND_TOOL, plugin, extensions.OBSERVER)
        ]
        assert argv[1:3] == ["--mode", "rpc"]
        assert argv[-2:] == ["--tools", "read"]
        assert process.interactive
        # The launch's variables join the isolated baseline; PWD stays the launch's cwd.
        assert (env["HOME"], env["PI_CODING_AGENT_DIR"]) == (str(home.home), str(home.config))
        assert (env["PWD"], env["EXTRA"]) == (str(tmp_path), "1")

        bare = Launch(
            cwd=tmp_path,
            prompts=("judge",),
            one_shot=True,
            events_path=tmp_path / "events.jsonl",
            stderr_path=tmp_path / "stderr.log",
            model={"model": "acme/m", "thinking": "low"},
        )
        argv, env, process = launch_process(host, pi, bare, home)
        assert "--extension" not in argv
        assert argv[1:5] == ["--mode", "json", "-p", "--no-session"]
        assert argv[-5:] == ["--model", "acme/m", "--thinking", "low", "judge"]
        assert env["PWD"] == str(tmp_path)
        assert not process.interactive


def test_homes_go_to_memory_with_room_unless_the_operator_chose_a_temp_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = tmp_path / "shm"
    memory.mkdir()
    monkeypatch.setattr(launching, "_SHM", str(memory))
    monkeypatch.delenv("TMPDIR", raising=False)
    assert home_parent() == str(memory)
    endpoint = Endpoint(mode="scripted", model=None)
    with isolated_home(host_for("pi"), endpoint, prefix="skill-eval-test-") as home:
        assert home.root.parent == memory
    assert list(memory.iterdir()) == []  # deleted after the run
    # Not enough room there: the system's temp directory.
    monkeypatch.setattr(launching, "_SHM_ROOM", 1 << 62)
    assert home_parent() is None
    monkeypatch.setattr(launching, "_SHM_ROOM", 1)
    # The operator's TMPDIR wins, and a missing /dev/shm is no error.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert home_parent() is None
    monkeypatch.delenv("TMPDIR")
    monkeypatch.setattr(launching, "_SHM", str(tmp_path / "absent"))
    assert home_parent() is None


# Per host: names of its isolation it does not set in a scripted run, and a provider key a live
# run inherits (a name the host owns is withheld; the key passes unless the host sets its own).
NOT_SET = {
    "pi": {"PI_PACKAGE_DIR": False, "XDG_CONFIG_HOME": False, "ANTHROPIC_API_KEY": True},
    "claude-code": {
        "CLAUDE_CODE_USE_BEDROCK": False,
        "ANTHROPIC_AUTH_TOKEN": False,
        "BUN_OPTIONS": False,
        "NODE_OPTIONS": False,
    },
    "codex": {"CODEX_SQLITE_HOME": False, "OPENAI_BASE_URL": False, "CODEX_API_KEY": True},
}


@pytest.mark.parametrize("name", sorted(NOT_SET))
def test_declared_variables_never_replace_or_add_one_the_host_owns(
    tmp_path: Path, name: str
) -> None:
    host = host_for(name)
    binary = PiBinary(tmp_path / name, "0.0.1")

    def launch(environment: dict[str, str]) -> Launch:
        return Launch(
            cwd=tmp_path,
            prompts=("go",),
            one_shot=True,
            events_path=tmp_path / "events.jsonl",
            stderr_path=tmp_path / "stderr.log",
            environment=environment,
        )

    with ScriptedModelServer() as server, server.open_route(None) as route:
        served = ServedModel(route, OPENAI, "skill-eval", "scripted")
        endpoint = Endpoint(mode="scripted", model=None, served=served)
        with isolated_home(host, endpoint, prefix="skill-eval-test-") as home:
            _argv, own, _process = launch_process(host, binary, launch({}), home)
            # Every name the host sets is one it owns (collection refuses a group naming it),
            # or the provider key a live run inherits, which the scripted run's placeholder beats.
            owned = host.registration.owned_environment
            assert [k for k in own if not owned.owns(k) and k not in owned.allowed] == []
            attack = dict.fromkeys(own, "/root/.attacker") | dict.fromkeys(NOT_SET[name], "x")
            attack["EXTRA"] = "1"
            _argv, env, _process = launch_process(host, binary, launch(attack), home)
    assert {k: env[k] for k in own} == own
    passed = {k for k, allowed in NOT_SET[name].items() if allowed and k not in own}
    assert set(env) - set(own) == {"EXTRA", *passed}
