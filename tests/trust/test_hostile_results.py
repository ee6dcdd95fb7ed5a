"""A hostile result directory crashes no reader: every `skill-eval` command that reads a result
or a shard ends with exit 0, 1 or 2, never a traceback and never a hang, and every failure is
a `skill-eval:` line naming the file.

One real sealed result (a Codex shard merged as one machine would) is damaged in one place per
example: nesting past the bound, a wrong type at any field, a file past the size bound, bytes
that are not UTF-8, a path longer than PATH_MAX, a symlink loop, a directory or a FIFO where a
file was, a file cut short or missing. Then every reader runs on it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_skill_eval.commands.cli import main as skill_eval
from pytest_skill_eval.evidence import sealed_root
from pytest_skill_eval.evidence.read import MAX_JSON_BYTES, MAX_JSON_DEPTH
from tests.support.roots import FAST_HOST, improving_root
from tests.support.runs import run_detached
from tests.support.shared import once, shared_setup

pytestmark = [pytest.mark.pi, pytest.mark.codex]

STRUCTURAL = ["deep", "huge", "utf8", "long-name", "loop", "directory", "fifo", "truncated"]
STRUCTURAL += ["missing"]
REPO = Path(__file__).resolve().parents[2]
PI = REPO / "node_modules" / ".bin" / "pi"
WRONG = [None, 0, -1.5, True, "x", "../../x", [], [1], {}, {"a": 1}]
# Lines with which `verify` and `merge` report what they found (exit 1), each naming its path.
REPORT_LINES = ("changed: ", "missing: ", "extra: ", "unreadable: ", "root mismatch: ", "merged: ")


@dataclass(frozen=True)
class Built:
    """The plan, the runs directory holding its one shard, and the merged sealed result."""

    plan: Path
    shards: Path
    result: Path


def _build(directory: Path) -> None:
    source = improving_root(directory / "source", 1, FAST_HOST)
    plan = directory / "plan.json"
    argv = ["plan", str(source / "suite.json"), "--root", str(source), "-o", str(plan)]
    assert skill_eval([*argv, "--cassettes", str(source / "scripts")]) == 0
    done = run_detached(source, "--skill-eval-plan", str(plan), "--skill-eval-shard", "1/1")
    assert done.returncode == 0, done.stdout + done.stderr
    shards = source / ".skill-eval" / "runs"
    assert skill_eval(["merge", str(plan), str(shards), "-o", str(directory / "merged")]) == 0


@pytest.fixture(scope="module")
@shared_setup
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """One Codex shard of one group, and its merge: built once for the whole test run."""
    directory = once(tmp_path_factory, "hostile-results", _build)
    (result,) = (directory / "merged").iterdir()
    return Built(directory / "plan.json", directory / "source" / ".skill-eval" / "runs", result)


def _copy(built: Built, base: Path) -> tuple[Path, Path]:
    """A private copy of the shards and of the result, side by side under `base`."""
    shards, result = base / "shards", base / "runs" / built.result.name
    shutil.copytree(built.shards, shards, symlinks=True)
    shutil.copytree(built.result, result, symlinks=True)
    return shards, result


def _entries(top: Path) -> list[Path]:
    return sorted(p for p in top.rglob("*"))


def _json_paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [at]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _json_paths(inner, (*at, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _json_paths(inner, (*at, index))
    return found


def _replace(value: Any, at: tuple[Any, ...], new: Any) -> Any:
    if not at:
        return new
    holder = value
    for key in at[:-1]:
        holder = holder[key]
    holder[at[-1]] = new
    return value


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _long_path(directory: Path) -> None:
    """Directories below `directory` whose full path is longer than PATH_MAX (4096)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(20):
            name = "d" * 250
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("answer.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


@st.composite
def damages(draw: st.DrawFn, tops: tuple[Path, Path], kind: str) -> str:
    """Damage one entry of the copied shards or result in the way `kind` names; returns what
    was done."""
    entries = [p for top in tops for p in _entries(top)]
    files = [p for p in entries if p.is_file() and not p.is_symlink()]
    json_files = [p for p in files if p.suffix == ".json"]
    if kind == "wrong-type":
        path = draw(st.sampled_from(json_files))
        value = json.loads(path.read_text(encoding="utf-8"))
        at = draw(st.sampled_from(_json_paths(value)))
        new = draw(st.sampled_from(WRONG))
        path.write_text(json.dumps(_replace(value, at, new)), encoding="utf-8")
        return f"{kind} {path} at {list(at)} = {new!r}"
    if kind == "deep":
        path = draw(st.sampled_from(json_files))
        depth = draw(st.sampled_from([MAX_JSON_DEPTH + 1, 5_000, 200_000]))
        opener = draw(st.sampled_from(["[", '{"a":']))
        closer = "]" if opener == "[" else "}"
        path.write_text(opener * depth + "1" + closer * depth, encoding="utf-8")
        return f"{kind} {path} {depth}"
    if kind == "huge":
        path = draw(st.sampled_from(json_files))
        with path.open("wb") as handle:
            handle.truncate(MAX_JSON_BYTES + 1)  # NUL bytes, sparse: cheap to make
        return f"{kind} {path}"
    if kind == "utf8":
        path = draw(st.sampled_from(json_files))
        data = path.read_bytes()
        cut = draw(st.integers(0, len(data)))
        path.write_bytes(data[:cut] + b"\xff\xfe\xc3" + data[cut:])
        return f"{kind} {path} at {cut}"
    if kind == "truncated":
        path = draw(st.sampled_from(files))
        data = path.read_bytes()
        path.write_bytes(data[: draw(st.integers(0, max(len(data) - 1, 0)))])
        return f"{kind} {path}"
    if kind == "long-name":
        directory = draw(st.sampled_from([p for p in entries if p.is_dir()] + list(tops)))
        _long_path(directory)
        return f"{kind} below {directory}"
    path = draw(st.sampled_from(entries))
    _remove(path)
    if kind == "loop":
        path.symlink_to(path.name)
    elif kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    return f"{kind} {path}"


def _commands(built: Built, base: Path, shards: Path, result: Path) -> list[list[str]]:
    cassettes = base / "cassettes"
    cassettes.mkdir()
    root = sealed_root(built.result)
    return [
        ["view", str(result)],
        ["view", str(result), "--group", "1", "--variant", "candidate"],
        ["report", str(result), "--html", str(base / "report.html")],
        ["verify", str(result)],
        ["verify", str(result), "--seal", f"sha256:{root}"],
        ["compare", str(built.result), str(result)],
        ["merge", str(built.plan), str(shards), "-o", str(base / "merged")],
        [
            "review",
            str(result),
            "--model",
            "acme/reviewer",
            "--cassettes",
            str(cassettes),
            "--pi",
            str(PI),
        ],
    ]


def run_commands(commands: list[list[str]], base: Path) -> list[dict[str, Any]]:
    """Every command in one child process (tests.support.cli_batch); the timeout is a hang
    guard, generous on a loaded machine, not a measure of speed."""
    listing = base / "commands.json"
    listing.write_text(json.dumps(commands), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.cli_batch", str(listing)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outcomes: list[dict[str, Any]] = json.loads(done.stdout)
    return outcomes


def assert_no_crash(outcome: dict[str, Any], base: Path, damage: str) -> None:
    """Exit 0, 1 or 2; no traceback; a failure is a `skill-eval:` line naming a file."""
    __tracebackhide__ = True
    context = f"{damage}\n{outcome['argv']}\n{outcome['stderr']}"
    assert outcome["traceback"] is None, f"{context}\n{outcome['traceback']}"
    assert outcome["code"] in (0, 1, 2), context
    printed = outcome["stdout"] + outcome["stderr"]
    assert "Traceback" not in printed, context
    if outcome["code"] == 0:
        return
    errors = [line for line in outcome["stderr"].splitlines() if line.startswith("skill-eval: ")]
    reports = [line for line in outcome["stdout"].splitlines() if line.startswith(REPORT_LINES)]
    named = [line for line in errors + reports if str(base) in line]
    assert named, context


def _damage_and_read(built: Built, tmp_path: Path, data: st.DataObject, kind: str) -> None:
    base = tmp_path / f"example-{len(list(tmp_path.iterdir()))}"
    base.mkdir()
    shards, result = _copy(built, base)
    damage = data.draw(damages((shards, result), kind), label="damage")
    for outcome in run_commands(_commands(built, base, shards, result), base):
        assert_no_crash(outcome, base, damage)
    shutil.rmtree(base)


EXAMPLES = settings(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize("kind", STRUCTURAL)
@settings(EXAMPLES, max_examples=3)
@given(data=st.data())
def test_no_damage_crashes_a_reader(
    built: Built, tmp_path: Path, kind: str, data: st.DataObject
) -> None:
    _damage_and_read(built, tmp_path, data, kind)


@settings(EXAMPLES, max_examples=10)
@given(data=st.data())
def test_no_wrong_type_crashes_a_reader(built: Built, tmp_path: Path, data: st.DataObject) -> None:
    _damage_and_read(built, tmp_path, data, "wrong-type")
