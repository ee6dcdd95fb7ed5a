"""FIFOs, sockets and undecodable names planted in a workspace: recorded, never opened."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from pytest_skill_eval.common.entries import kind_sha256, path_from_b64, recorded_path
from pytest_skill_eval.evidence import verify_group, write_manifest
from pytest_skill_eval.workspace import (
    Entry,
    changes,
    fingerprint,
    fingerprint_from_json,
    fingerprint_json,
    snapshot_workspace_turn,
)

T = TypeVar("T")
HANG_GUARD_S = 30.0  # a regression blocks forever on open(); this only turns that into a failure
BAD = b"bad\xff.txt"


def finishes(function: Callable[[], T]) -> T:
    """Run `function` in a thread; fail (instead of hanging the suite) if it never returns."""
    __tracebackhide__ = True
    box: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            box.append(function())
        except BaseException as error:  # re-raised in the test thread
            errors.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HANG_GUARD_S)
    if thread.is_alive():
        pytest.fail(f"{function} never returned: it blocked on a planted entry")
    if errors:
        raise errors[0]
    return box[0]


def unblock(fifo: Path) -> None:
    """Open the FIFO's write end once, so a reader stuck on it (a regression) can go on."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return
    os.close(fd)


@pytest.fixture
def planted(tmp_path: Path) -> Iterator[Path]:
    """A workspace holding a file, a FIFO and a listening UNIX socket."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n", encoding="utf-8")
    os.mkfifo(root / "trap")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(root / "sock"))
    yield root
    server.close()
    unblock(root / "trap")


def test_a_planted_fifo_and_socket_are_recorded_by_kind_not_opened(planted: Path) -> None:
    before = (Entry("a.txt", "file", hashlib.sha256(b"alpha\n").hexdigest()),)

    after = finishes(lambda: fingerprint(planted, escaping="record"))

    kinds = {e.path: (e.type, e.sha256) for e in after}
    assert kinds["trap"] == ("fifo", kind_sha256("fifo"))
    assert kinds["sock"] == ("socket", kind_sha256("socket"))
    assert changes(before, after).created == ("sock", "trap")
    assert fingerprint_from_json(fingerprint_json(after)) == after


def test_a_turn_snapshot_lists_the_fifo_without_copying_or_opening_it(
    planted: Path, tmp_path: Path
) -> None:
    destination = tmp_path / "snapshot"

    record = finishes(lambda: snapshot_workspace_turn(planted, destination, (), None))

    assert {f["path"]: f["type"] for f in record["files"]} == {
        "a.txt": "file",
        "sock": "socket",
        "trap": "fifo",
    }
    assert record["changes"]["created"] == ["a.txt", "sock", "trap"]
    assert sorted(p.name for p in destination.iterdir()) == ["a.txt"]


def test_the_manifest_lists_a_planted_fifo_by_kind_and_verifies(planted: Path) -> None:
    group = planted.parent

    finishes(lambda: write_manifest(group))

    files = json.loads((group / "manifest.json").read_text(encoding="utf-8"))["files"]
    assert files["ws/trap"] == "fifo"
    assert files["ws/sock"] == "socket"
    assert finishes(lambda: verify_group(group)) == []


def test_a_fifo_swapped_in_for_a_regular_file_is_not_opened(tmp_path: Path) -> None:
    # The entry was a regular file when listed; what is opened must still be checked first.
    from pytest_skill_eval.common.entries import open_regular

    os.mkfifo(tmp_path / "late")
    try:
        result = finishes(lambda: open_regular(tmp_path / "late"))
        assert isinstance(result, os.stat_result)
    finally:
        unblock(tmp_path / "late")


def test_an_undecodable_name_is_recorded_losslessly_everywhere(tmp_path: Path) -> None:
    group = tmp_path / "group"
    workspace = group / "ws"
    workspace.mkdir(parents=True)
    raw = os.path.join(os.fsencode(workspace), BAD)
    with open(raw, "wb") as handle:
        handle.write(b"x")
    (workspace / "100%.txt").write_text("literal percent\n", encoding="utf-8")

    after = fingerprint(workspace, escaping="record")
    evidence = fingerprint_json(after)
    change_set = changes((), after).to_json()
    write_manifest(group)

    encoded = base64.b64encode(BAD).decode("ascii")
    assert evidence[1] == {
        "path": "bad%FF.txt",
        "type": "file",
        "sha256": after[1].sha256,
        "path_b64": encoded,
    }
    assert evidence[0]["path"] == "100%.txt"
    assert "path_b64" not in evidence[0]
    assert fingerprint_from_json(json.loads(json.dumps(evidence))) == after
    assert change_set["created"] == ["100%.txt", "bad%FF.txt"]
    assert change_set["path_b64"] == {"bad%FF.txt": encoded}
    manifest = json.loads((group / "manifest.json").read_bytes().decode("utf-8"))
    assert "ws/bad%FF.txt" in manifest["files"]
    assert os.fsencode(path_from_b64(manifest["path_b64"]["ws/bad%FF.txt"])) == b"ws/" + BAD
    assert verify_group(group) == []


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b"a%b", "a%b"),  # valid UTF-8 is never escaped, not even its percent signs
        (b"\xff%", "%FF%25"),
        ("é".encode() + b"\xc3", "é%C3"),
        (b"\xed\xa0\x80", "%ED%A0%80"),  # an encoded surrogate is not valid UTF-8
    ],
)
def test_recorded_path_escapes_only_names_that_are_not_utf8(raw: bytes, text: str) -> None:
    assert recorded_path(os.fsdecode(raw)) == text


def test_the_html_diff_never_opens_a_planted_fifo(planted: Path) -> None:
    from pytest_skill_eval.views.diff import read_side

    side = finishes(lambda: read_side(planted, "trap"))

    assert side.text is None
    assert side.note == "not shown: a FIFO, socket or device (never opened)"
