"""Fingerprints, symlink and special-file rules, copies and change sets."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
from pathlib import Path

import pytest

from pytest_skill_eval.workspace import (
    Changes,
    Entry,
    ResourceError,
    _tree,
    changes,
    copy_tree,
    fingerprint,
    fingerprint_digest,
    fingerprint_from_json,
    fingerprint_json,
    snapshot_tree,
)
from tests.support.files import write


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_fingerprint_format(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "a.txt", b"alpha\n")
    write(root / "dir" / "b.bin", b"\x00\x01")
    (root / "empty").mkdir()
    (root / "link").symlink_to("a.txt")

    assert fingerprint_json(fingerprint(root)) == [
        {"path": "a.txt", "type": "file", "sha256": sha(b"alpha\n")},
        {"path": "dir", "type": "directory", "sha256": sha(b"directory")},
        {"path": "dir/b.bin", "type": "file", "sha256": sha(b"\x00\x01")},
        {"path": "empty", "type": "directory", "sha256": sha(b"directory")},
        {"path": "link", "type": "symlink", "sha256": sha(b"symlink\0a.txt")},
    ]


def test_fingerprint_uses_utf16_code_unit_order(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for name in ["～", "😀", "é", "a-b", "B", "a"]:
        write(root / name, name)
    (root / "c").mkdir()
    write(root / "c" / "x", "x")
    write(root / "c-d", "y")

    paths = [entry.path for entry in fingerprint(root)]

    # U+1F600 is a surrogate pair (D83D DE00) and sorts before U+FF5E in JS order,
    # although Python's code-point order puts it after.
    assert paths == ["B", "a", "a-b", "c", "c-d", "c/x", "é", "😀", "～"]
    assert sorted(paths) != paths


def test_fingerprint_json_round_trip_and_digest(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "ä.txt", "umlaut")
    fp = fingerprint(root)

    assert fingerprint_from_json(fingerprint_json(fp)) == fp
    compact = json.dumps(fingerprint_json(fp), separators=(",", ":"), ensure_ascii=False)
    assert fingerprint_digest(fp) == sha(compact.encode("utf-8"))
    write(root / "ä.txt", "changed")
    assert fingerprint_digest(fingerprint(root)) != fingerprint_digest(fp)


def test_relative_symlink_inside_root_is_allowed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "docs" / "guide.md", "guide")
    (root / "sub").mkdir()
    (root / "sub" / "guide").symlink_to("../docs/guide.md")
    (root / "docs-link").symlink_to("docs")

    entries = {e.path: e for e in fingerprint(root)}

    assert entries["sub/guide"] == Entry("sub/guide", "symlink", sha(b"symlink\0../docs/guide.md"))
    assert entries["docs-link"] == Entry("docs-link", "symlink", sha(b"symlink\0docs"))
    assert "docs-link/guide.md" not in entries


def test_absolute_symlink_inside_root_is_allowed_as_its_relative_equivalent(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    write(root / "docs" / "guide.md", "guide")
    (root / "sub").mkdir()
    (root / "sub" / "guide").symlink_to(root / "docs" / "guide.md")

    entries = {e.path: e for e in fingerprint(root)}

    assert entries["sub/guide"].sha256 == sha(b"symlink\0../docs/guide.md")


@pytest.mark.parametrize("case", ["relative-escape", "absolute-escape", "dangling", "loop"])
def test_escaping_or_dangling_symlink_is_rejected(tmp_path: Path, case: str) -> None:
    root = tmp_path / "root"
    write(root / "ok.txt", "ok")
    outside = write(tmp_path / "outside.txt", "secret")
    (root / "sub").mkdir()
    link = root / "sub" / "link"
    if case == "relative-escape":
        link.symlink_to("../../outside.txt")
    elif case == "absolute-escape":
        link.symlink_to(outside)
    elif case == "dangling":
        link.symlink_to("missing.txt")
    else:
        link.symlink_to("other")
        (root / "sub" / "other").symlink_to("link")

    with pytest.raises(ResourceError, match=r"symlink escapes its declared root: sub/(link|other)"):
        fingerprint(root)


def test_record_mode_keeps_escaping_links_without_following_them(tmp_path: Path) -> None:
    root = tmp_path / "workspace"
    write(root / "a.txt", "a")
    outside = write(tmp_path / "secret.txt", "secret")
    (root / "planted").symlink_to(outside)
    (root / "dangling").symlink_to("nowhere")

    entries = {e.path: e for e in fingerprint(root, escaping="record")}

    assert entries["planted"] == Entry("planted", "symlink", sha(f"symlink\0{outside}".encode()))
    assert entries["dangling"] == Entry("dangling", "symlink", sha(b"symlink\0nowhere"))
    with pytest.raises(ResourceError, match=r"symlink escapes its declared root: dangling"):
        fingerprint(root)


def test_fifo_is_rejected_without_blocking(tmp_path: Path) -> None:
    # A declared resource may not hold one; a workspace records it (tests/trust).
    root = tmp_path / "root"
    root.mkdir()
    os.mkfifo(root / "pipe")

    with pytest.raises(ResourceError, match=r"unsupported entry: pipe"):
        fingerprint(root)


def test_socket_is_rejected(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(root / "sock"))
        with pytest.raises(ResourceError, match=r"unsupported entry: sock"):
            fingerprint(root)
    finally:
        server.close()


def test_missing_root_is_a_resource_error(tmp_path: Path) -> None:
    with pytest.raises(ResourceError, match=r"does not exist"):
        fingerprint(tmp_path / "nope")


def test_changes_ignore_directories_and_count_symlinks_as_files(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "keep.txt", "same")
    write(root / "edit.txt", "old")
    write(root / "gone.txt", "bye")
    (root / "olddir").mkdir()
    before = fingerprint(root)

    write(root / "edit.txt", "new")
    (root / "gone.txt").unlink()
    (root / "olddir").rmdir()
    write(root / "newdir" / "made.txt", "hi")
    (root / "link").symlink_to("keep.txt")
    diff = changes(before, fingerprint(root))

    assert diff == Changes(
        created=("link", "newdir/made.txt"), modified=("edit.txt",), deleted=("gone.txt",)
    )
    assert diff.paths() == ("edit.txt", "gone.txt", "link", "newdir/made.txt")
    assert diff.to_json() == {
        "created": ["link", "newdir/made.txt"],
        "modified": ["edit.txt"],
        "deleted": ["gone.txt"],
    }


def test_retargeted_symlink_is_modified(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "a", "a")
    write(root / "b", "b")
    (root / "link").symlink_to("a")
    before = fingerprint(root)
    (root / "link").unlink()
    (root / "link").symlink_to("b")

    assert changes(before, fingerprint(root)).modified == ("link",)


def test_copy_tree_copies_links_modes_and_returns_the_fingerprint(tmp_path: Path) -> None:
    source = tmp_path / "source"
    write(source / "run.sh", "#!/bin/sh\necho hi\n", mode=0o755)
    write(source / "data" / "plain.txt", "plain", mode=0o644)
    (source / "data" / "rel").symlink_to("plain.txt")
    (source / "abs").symlink_to(source / "data" / "plain.txt")
    destination = tmp_path / "deep" / "copy"

    copied = copy_tree(source, destination)

    assert copied == fingerprint(source) == fingerprint(destination)
    assert os.stat(destination / "run.sh").st_mode & 0o777 == 0o755
    assert os.stat(destination / "data" / "plain.txt").st_mode & 0o777 == 0o644
    assert os.readlink(destination / "data" / "rel") == "plain.txt"
    # The absolute link now names the copy's own file, not the source's.
    assert os.readlink(destination / "abs") == "data/plain.txt"
    assert (destination / "abs").resolve() == (destination / "data" / "plain.txt").resolve()


def test_copy_tree_refuses_to_overwrite(tmp_path: Path) -> None:
    source = tmp_path / "source"
    write(source / "a.txt", "new")
    destination = tmp_path / "dest"
    write(destination / "a.txt", "existing")

    with pytest.raises(ResourceError, match=r"refusing to overwrite existing a.txt"):
        copy_tree(source, destination)
    assert (destination / "a.txt").read_text() == "existing"


def test_copy_tree_refuses_to_copy_into_itself(tmp_path: Path) -> None:
    source = tmp_path / "source"
    write(source / "a.txt", "a")

    with pytest.raises(ResourceError, match=r"into its own subdirectory"):
        copy_tree(source, source / ".skill-eval" / "snap")


def test_copy_tree_rejects_escaping_link_and_record_mode_copies_it_verbatim(
    tmp_path: Path,
) -> None:
    source = tmp_path / "workspace"
    write(source / "a.txt", "a")
    (source / "out").symlink_to("../../etc/passwd")

    with pytest.raises(ResourceError, match=r"symlink escapes its declared root: out"):
        copy_tree(source, tmp_path / "strict")
    copied = copy_tree(source, tmp_path / "recorded", escaping="record")

    assert os.readlink(tmp_path / "recorded" / "out") == "../../etc/passwd"
    assert copied == fingerprint(tmp_path / "recorded", escaping="record")


def test_snapshot_tree_rejects_a_source_changed_during_the_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "fixture"
    write(source / "a.txt", "original")
    real_copy = _tree.copy_tree

    def copy_then_edit(src: Path, dst: Path, **kwargs: object) -> tuple[Entry, ...]:
        result = real_copy(src, dst)
        write(source / "a.txt", "edited by someone else")
        return result

    monkeypatch.setattr(_tree, "copy_tree", copy_then_edit)

    with pytest.raises(
        ResourceError,
        match=r"declared fixture fixtures/x changed while it was being snapshotted "
        r"\(modified: a.txt\)",
    ):
        snapshot_tree(source, tmp_path / "snap", "fixture fixtures/x")


def test_snapshot_tree_returns_the_fingerprint_of_an_unchanged_source(tmp_path: Path) -> None:
    source = tmp_path / "fixture"
    write(source / "x" / "y.txt", "y")

    result = snapshot_tree(source, tmp_path / "snap", "fixture f")

    assert result == fingerprint(source) == fingerprint(tmp_path / "snap")
    assert stat.S_ISDIR(os.lstat(tmp_path / "snap" / "x").st_mode)
