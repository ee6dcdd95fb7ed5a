"""Node's compile cache: warmed once by the evaluator, a private copy for each subject."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from pytest_skill_eval.hosts import compile_cache, host_for
from pytest_skill_eval.hosts.base import Endpoint, Launch
from pytest_skill_eval.hosts.compile_cache import ENV, subject_cache, warm_cache
from pytest_skill_eval.hosts.gemini_cli.binary import NODE_FLAGS, GeminiBinary
from pytest_skill_eval.hosts.launch import isolated_home, launch_process
from pytest_skill_eval.hosts.pi.binary import PiBinary
from pytest_skill_eval.hosts.runtime import NodeRuntime, node_prefix, node_runtime
from tests.support.files import write
from tests.support.paths import REPO

# A host that counts its starts and compiles a module, as a Node CLI's `--version` would.
HOST = """
import { appendFileSync } from "node:fs";
appendFileSync(new URL("./starts", import.meta.url), "start\\n");
const answer = (x) => x * 2;
console.log(answer(21));
"""
# A subject that tries to plant an entry in, and wipe, the cache it was handed.
SUBJECT = """
import { readdirSync, rmSync, writeFileSync } from "node:fs";
const dir = process.env.NODE_COMPILE_CACHE;
for (const name of readdirSync(dir)) rmSync(`${dir}/${name}`, { recursive: true, force: true });
writeFileSync(`${dir}/planted`, "crafted code");
"""


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def pinned() -> NodeRuntime:
    return node_runtime(None, REPO)


def test_the_cache_is_warmed_once_per_runtime_and_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pinned: NodeRuntime
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    entry = write(tmp_path / "host.mjs", HOST)
    warm = warm_cache("host-1.0", pinned, [str(pinned.path), str(entry)])
    assert warm is not None
    assert warm.is_relative_to(tmp_path / "cache" / "pytest-skill-eval")
    assert _tree(warm), "Node wrote compiled code into the warm cache"
    month_ago = time.time() - 40 * 86400
    os.utime(warm, (month_ago, month_ago))
    assert warm_cache("host-1.0", pinned, [str(pinned.path), str(entry)]) == warm
    assert (tmp_path / "starts").read_text() == "start\n"  # warmed by one start, not two
    assert time.time() - warm.stat().st_mtime < 3600  # its use marked: pruning keeps it
    other = write(tmp_path / "other.mjs", HOST)
    assert warm_cache("host-1.0", pinned, [str(pinned.path), str(other)]) not in (None, warm)


def test_a_subject_cannot_change_the_cache_other_subjects_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pinned: NodeRuntime
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    entry = write(tmp_path / "host.mjs", HOST)
    warm = warm_cache("host-1.0", pinned, [str(pinned.path), str(entry)])
    assert warm is not None
    before = _tree(warm)
    first = tmp_path / "first-home"
    first.mkdir()
    env = subject_cache(warm, first)
    assert Path(env[ENV]).is_relative_to(first)
    script = write(tmp_path / "subject.mjs", SUBJECT)
    subprocess.run([str(pinned.path), str(script)], env=env, check=True, timeout=60)
    assert (Path(env[ENV]) / "planted").is_file()  # it did write what it was handed
    assert _tree(warm) == before
    second = tmp_path / "second-home"
    second.mkdir()
    assert _tree(Path(subject_cache(warm, second)[ENV])) == before


def test_a_node_without_a_compile_cache_gets_none(tmp_path: Path) -> None:
    old = NodeRuntime(write(tmp_path / "node", "#!/bin/sh\n", mode=0o755), "20.20.2", "option")
    assert warm_cache("host-1.0", old, [str(old.path), "cli.js"]) is None
    assert subject_cache(None, tmp_path) == {}


@pytest.mark.parametrize(
    ("name", "version", "binary", "flags"),
    [("pi", "0.73.1", PiBinary, ()), ("gemini-cli", "0.61.0", GeminiBinary, NODE_FLAGS)],
)
def test_a_node_hosts_launch_starts_node_its_flags_and_entry_with_a_copy_of_the_cache_they_warmed(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    pinned: NodeRuntime,
    name: str,
    version: str,
    binary: type[PiBinary | GeminiBinary],
    flags: tuple[str, ...],
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    entry = write(tmp_path / f"{name}.mjs", HOST)
    launch = Launch(
        cwd=tmp_path, prompts=("hi",), one_shot=True, events_path=tmp_path / "events.jsonl",
        stderr_path=tmp_path / "stderr.log",
    )  # fmt: skip
    host = host_for(name)
    with isolated_home(host, Endpoint(mode="live", model=None), prefix="skill-eval-") as home:
        argv, env, _ = launch_process(
            host, binary(tmp_path / name, version, pinned, entry), launch, home
        )
        started = [str(pinned.path), *flags, str(entry)]  # Gemini CLI's flags: its own
        assert argv[: len(started)] == started
        assert node_prefix(argv) == started
        private = Path(env[ENV])
        assert private.is_relative_to(home.root)
        warm = warm_cache(f"{name}-{version}", pinned, started)
        assert warm is not None
        assert _tree(private) == _tree(warm)
    assert (tmp_path / "starts").read_text() == "start\n"  # warmed once, by that command


def test_a_node_that_makes_no_cache_is_tried_once_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    script = f'#!/bin/sh\necho start >> "{tmp_path / "starts"}"\n'
    node = NodeRuntime(write(tmp_path / "node", script, mode=0o755), "24.0.0", "option")
    for _ in range(3):  # each subject asks; without a cache each would start it again
        assert warm_cache("host-1.0", node, [str(node.path), "cli.js"]) is None
    assert (tmp_path / "starts").read_text() == "start\n"
    assert [p.name for p in compile_cache.cache_root().iterdir()] == [".lock"]
