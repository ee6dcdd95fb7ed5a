"""Building a directory of the operator's cache once: one builder at a time, machine-wide, in
staging renamed into place; a killed build leaves nothing the next one keeps; what no run has
used for a month goes when its family builds another."""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_skill_eval.hosts import staged
from pytest_skill_eval.hosts.staged import build_once, prune, used, version_failure


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
