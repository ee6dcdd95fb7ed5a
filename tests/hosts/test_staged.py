"""Building a directory of the operator's cache once: one builder at a time, machine-wide, in
staging renamed into place; a killed build leaves nothing the next one keeps; what no run has
used for a month goes when its family builds another; what a run reads of a tree by hashing it
is read again once anything below the tree changed, never trusted blindly."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.errors import HostError
from pytest_skill_eval.evidence import verified
from pytest_skill_eval.hosts import staged
from pytest_skill_eval.hosts.staged import (
    build_once,
    prune,
    read_once_per_change,
    used,
    version_failure,
)


def _writes(marker: str) -> tuple[list[Path], Callable[[Path], None]]:
    calls: list[Path] = []

    def build(staging: Path) -> None:
        calls.append(staging)
        (staging / "built").write_text(marker)

    return calls, build


def test_a_build_lands_whole_and_is_not_done_again(tmp_path: Path) -> None:
    home = tmp_path / "cache" / "thing-1"
    calls, build = _writes("first")
    build_once(home, build)
    build_once(home, build)
    assert len(calls) == 1
    assert (home / "built").read_text() == "first"
    assert sorted(p.name for p in home.parent.iterdir()) == [".lock", "thing-1"]


def test_a_killed_builds_staging_is_removed_before_the_next_build(tmp_path: Path) -> None:
    home = tmp_path / "thing-1"
    left = tmp_path / ".thing-1.k1ll3d"  # what `staged` leaves when its process is killed
    (left / "half").mkdir(parents=True)
    other = tmp_path / ".thing-10.k1ll3d"  # another key's: not this build's to remove
    other.mkdir()
    _calls, build = _writes("whole")
    build_once(home, build)
    assert not left.exists()
    assert other.is_dir()
    assert (home / "built").read_text() == "whole"


def test_a_failed_build_keeps_nothing_and_the_next_one_builds(tmp_path: Path) -> None:
    home = tmp_path / "thing-1"

    def fails(staging: Path) -> None:
        (staging / "half").write_text("")
        raise RuntimeError("esbuild failed")

    with pytest.raises(RuntimeError, match="esbuild failed"):
        build_once(home, fails)
    assert [p.name for p in tmp_path.iterdir()] == [".lock"]
    calls, build = _writes("again")
    build_once(home, build)
    assert len(calls) == 1
    assert (home / "built").read_text() == "again"


def test_a_builder_waiting_on_the_lock_uses_what_the_holder_built(tmp_path: Path) -> None:
    home = tmp_path / "thing-1"
    calls, build = _writes("waiter's")
    with (tmp_path / ".lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another process is building (this entry or another)
        waiter = threading.Thread(target=build_once, args=(home, build))
        waiter.start()
        time.sleep(0.2)
        assert waiter.is_alive()
        assert not home.exists()
        (home / "built").parent.mkdir()
        (home / "built").write_text("holder's")
    waiter.join(timeout=10)
    assert not waiter.is_alive()
    assert calls == []
    assert (home / "built").read_text() == "holder's"


def test_a_start_that_does_not_answer_is_one_line_of_why(tmp_path: Path) -> None:
    python = sys.executable
    answers = version_failure([python, "-c", "print('1.2.3')"], tmp_path, {}, _says("1.2.3"))
    assert answers is None
    assert not (tmp_path / "home").exists()  # removed once it answered
    (tmp_path / "b").mkdir()
    wrong = version_failure([python, "-c", "print('0.9')"], tmp_path / "b", {}, _says("1.2.3"))
    assert wrong == "0.9"
    (tmp_path / "c").mkdir()
    argv = [python, "-c", "import sys; sys.exit('Error: no such module\\nat line 2')"]
    assert version_failure(argv, tmp_path / "c", {}, _says("1.2.3")) == "Error: no such module"
    (tmp_path / "d").mkdir()
    missing = version_failure([str(tmp_path / "nowhere")], tmp_path / "d", {}, _says("1.2.3"))
    assert missing is not None
    assert "No such file" in missing


def test_a_start_runs_in_its_own_home_with_what_it_is_given(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "import os; print(os.environ['HOME'], os.environ['PI_X'])"]
    seen: list[str] = []

    def answered(out: str, err: str) -> bool:
        seen.append(out.strip())
        return True

    assert version_failure(argv, tmp_path, {"PI_X": "1"}, answered) is None
    assert seen == [f"{tmp_path / 'home'} 1"]


def _says(version: str) -> Callable[[str, str], bool]:
    return lambda out, err: out.strip() == version


DAY = 86400.0


def _entry(family: Path, name: str, age_days: float) -> Path:
    entry = family / name
    (entry / "inside").mkdir(parents=True)
    then = time.time() - age_days * DAY
    os.utime(entry, (then, then))
    return entry


def test_entries_unused_for_a_month_are_pruned_and_nothing_else(tmp_path: Path) -> None:
    old = _entry(tmp_path, "pi-0.70.0-aaaa", 45)
    recent = _entry(tmp_path, "pi-0.73.1-bbbb", 3)
    kept = _entry(tmp_path, "pi-0.73.1-cccc", 45)  # the one this run uses
    (tmp_path / "notes.txt").write_text("")
    os.utime(tmp_path / "notes.txt", (0, 0))  # not a directory: not an entry
    target = _entry(tmp_path / "elsewhere", "target", 45)
    (tmp_path / "pi-linked").symlink_to(target)  # an operator's link: never followed or pruned
    os.utime(tmp_path / "pi-linked", (0, 0), follow_symlinks=False)
    assert prune(tmp_path, keep=kept) == [old]
    assert not old.exists()
    assert all(path.exists() for path in (recent, kept, tmp_path / "notes.txt", target))
    assert (tmp_path / "pi-linked").is_symlink()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".pi-0.70.0-aaaa")]


def test_leftovers_older_than_a_day_are_swept_younger_ones_kept(tmp_path: Path) -> None:
    kept = _entry(tmp_path, "pi-0.73.1-cccc", 0)
    staging = _entry(tmp_path, ".pi-0.72.0-eeee.x1y2", 2)  # a killed build's
    removal = _entry(tmp_path, ".pi-0.70.0-aaaa.k9z8", 2)  # a killed removal's
    (tmp_path / ".pi-0.70.0-aaaa.lock").write_text("")  # an entry's lock of an earlier version
    os.utime(tmp_path / ".pi-0.70.0-aaaa.lock", (0, 0))
    building = _entry(tmp_path, ".pi-0.74.0-ffff.q1w2", 0.01)  # too young to tell: left
    (tmp_path / ".lock").write_text("")
    os.utime(tmp_path / ".lock", (0, 0))  # the family's lock stays however old
    assert prune(tmp_path, keep=kept) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".lock",
        building.name,
        "pi-0.73.1-cccc",
    ]
    assert not staging.exists()
    assert not removal.exists()


def test_an_entry_marked_used_after_it_was_looked_at_is_kept(tmp_path: Path) -> None:
    entry = _entry(tmp_path, "pi-0.70.0-aaaa", 45)
    cutoff = time.time() - 30 * DAY
    used(entry)  # a run marks it between prune's look and its removal
    assert not staged._remove(entry, cutoff)
    assert entry.is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pi-0.70.0-aaaa"]


def test_a_use_keeps_an_entry_and_a_new_build_prunes_the_unused(tmp_path: Path) -> None:
    family = tmp_path / "pi-bundle"
    stale = _entry(family, "pi-0.70.0-aaaa", 40)
    still = _entry(family, "pi-0.71.0-bbbb", 40)
    used(still)
    assert time.time() - still.stat().st_mtime < DAY
    _, build = _writes("new")
    build_once(family / "pi-0.73.1-cccc", build)
    assert not stale.exists()
    assert still.is_dir()
    assert (family / "pi-0.73.1-cccc" / "built").read_text() == "new"


def test_beyond_the_eight_used_last_an_entry_goes_after_a_day(tmp_path: Path) -> None:
    kept = _entry(tmp_path, "pi-keep", 0)
    # Eleven others, used 2.0 to 3.0 days ago (newest first), then two used hours ago.
    older = [_entry(tmp_path, f"pi-{k:02d}", 2 + k / 10) for k in range(11)]
    hours = [_entry(tmp_path, f"pi-h{k}", 0.1 + k / 100) for k in range(2)]
    removed = prune(tmp_path, keep=kept)
    # `kept` and the seven used last stay; of the rest, those unused for a day go.
    assert removed == older[5:]
    assert all(path.is_dir() for path in (kept, *hours, *older[:5]))
    assert not any(path.exists() for path in older[5:])


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tree of two files, and a cache of its own for what is remembered of it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(verified, "_pruned_trees", set())
    monkeypatch.setattr(verified, "_SETTLED_S", 0.0)  # made just now: remembered at once
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    (root / "a.js").write_text("one")
    (root / "sub" / "b.js").write_text("two")
    return root


def _hashing(root: Path) -> tuple[list[Path], Callable[[], str]]:
    reads: list[Path] = []

    def read() -> str:
        reads.append(root)
        files = sorted(p for p in root.rglob("*") if p.is_file())
        return hashlib.sha256(b"".join(p.read_bytes() for p in files)).hexdigest()

    return reads, read


def _rewrite_keeping_times(path: Path, text: str) -> None:
    """Write `text` over `path` (the same size, or not) and set its access and modification
    times back: only its change time, which no user sets, can tell."""
    before = path.stat()
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_a_tree_is_hashed_again_only_once_an_entry_below_it_changed(tree: Path) -> None:
    reads, read = _hashing(tree)
    first = read_once_per_change(tree, "kind", read)
    assert read_once_per_change(tree, "kind", read) == first
    assert len(reads) == 1  # remembered
    read_once_per_change(tree, "another-kind", read)
    assert len(reads) == 2  # what is remembered is each kind's own
    _rewrite_keeping_times(tree / "a.js", "ONE")  # the same size, other bytes
    assert read_once_per_change(tree, "kind", read) != first
    assert len(reads) == 3
    (tree / "sub" / "c.js").write_text("")  # a file added deep below
    read_once_per_change(tree, "kind", read)
    assert len(reads) == 4


def test_a_file_a_link_names_is_read_again_once_it_changed(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.js"
    outside.write_text("one")
    (tree / "linked.js").symlink_to(outside)
    reads, read = _hashing(tree)
    first = read_once_per_change(tree, "kind", read)
    _rewrite_keeping_times(outside, "two")  # through no entry of the tree
    assert read_once_per_change(tree, "kind", read) != first
    assert len(reads) == 2


def test_a_tree_that_is_a_link_is_compared_where_it_really_is(tree: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked-tree"
    linked.symlink_to(tree)
    reads, read = _hashing(linked)
    first = read_once_per_change(linked, "kind", read)
    _rewrite_keeping_times(tree / "a.js", "ONE")  # the same size, other bytes
    assert read_once_per_change(linked, "kind", read) != first
    assert len(reads) == 2


def test_a_tree_changed_a_moment_ago_is_read_again_until_it_settles(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A change within the clock's tick that stamps change times could leave them unchanged.
    monkeypatch.setattr(verified, "_SETTLED_S", 3600.0)
    reads, read = _hashing(tree)
    read_once_per_change(tree, "kind", read)
    read_once_per_change(tree, "kind", read)
    assert len(reads) == 2
    monkeypatch.setattr(verified, "_SETTLED_S", 0.0)
    read_once_per_change(tree, "kind", read)
    read_once_per_change(tree, "kind", read)
    assert len(reads) == 3


def test_another_version_of_the_reading_code_reads_again(tree: Path, tmp_path: Path) -> None:
    module = tmp_path / "reader.py"
    source = "calls = []\ndef read():\n    calls.append(1)\n    return 'digest'\n"
    module.write_text(source)
    namespace: dict[str, Any] = {}
    exec(compile(source, str(module), "exec"), namespace)
    for _ in range(2):
        read_once_per_change(tree, "kind", namespace["read"])
    assert len(namespace["calls"]) == 1  # remembered
    module.write_text(source + "# upgraded\n")  # the reader's module, another version
    read_once_per_change(tree, "kind", namespace["read"])
    assert len(namespace["calls"]) == 2


def test_a_read_that_fails_is_never_remembered(tree: Path) -> None:
    reads: list[Path] = []

    def refuse() -> str:
        reads.append(tree)
        raise HostError("does not match its manifest")

    for _ in range(2):
        with pytest.raises(HostError, match="does not match"):
            read_once_per_change(tree, "kind", refuse)
    assert len(reads) == 2


def test_an_entry_made_without_the_key_is_never_taken(tree: Path) -> None:
    reads, read = _hashing(tree)
    first = read_once_per_change(tree, "kind", read)
    (entry,) = (verified.cache_dir() / verified.TREES).iterdir()
    # The tree changed, and its entry rewritten for the change by one who cannot read the key:
    # the token an unkeyed digest of the new entries, the facts its own.
    (tree / "a.js").write_text("planted")
    stats = verified.tree_digest(tree)
    _, kind, path, _ = entry.read_text(encoding="utf-8").split("\n")
    unkeyed = hashlib.sha256(f"{stats}{first}".encode()).hexdigest()
    entry.write_text(f"{unkeyed}\n{kind}\n{path}\n{first}", encoding="utf-8")
    assert read_once_per_change(tree, "kind", read) != first
    assert len(reads) == 2


def test_the_entries_of_trees_that_are_gone_are_dropped(tree: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.js").write_text("x")
    for root in (tree, other):
        read_once_per_change(root, "kind", _hashing(root)[1])
    entries = verified.cache_dir() / verified.TREES
    assert len(list(entries.iterdir())) == 2
    shutil.rmtree(other)
    verified._pruned_trees.clear()  # a later process, which prunes once as it remembers
    (tree / "a.js").write_text("changed")
    read_once_per_change(tree, "kind", _hashing(tree)[1])
    assert len(list(entries.iterdir())) == 1
