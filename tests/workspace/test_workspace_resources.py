"""Working-tree resource snapshots, the context manifest, verification and turn snapshots."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pytest_skill_eval.workspace import (
    Entry,
    ResolvedSource,
    ResourceError,
    SourceResolver,
    _tree,
    context_manifest,
    fingerprint,
    fingerprint_digest,
    fingerprint_from_json,
    fingerprint_json,
    snapshot_resource,
    snapshot_workspace_turn,
    verify_unchanged,
)
from tests.support.files import write

WORKING = ResolvedSource("working-tree", None, None, None, "")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A definition root with a skill, a fixture and context files."""
    defs = tmp_path / "defs"
    write(defs / "skills" / "review" / "SKILL.md", "---\nname: review\n---\nbody\n")
    write(defs / "fixtures" / "basic" / "app.py", "print('hi')\n")
    write(defs / "context" / "rules.md", "rule one\n")
    write(defs / "context" / "more" / "style.md", "style\n")
    return defs


def test_working_tree_skill_snapshot_and_evidence(root: Path, tmp_path: Path) -> None:
    snap = snapshot_resource(root, WORKING, "skills/review", tmp_path / "out" / "0", "skill")

    assert snap.path == (tmp_path / "out" / "0").resolve()
    assert (snap.path / "SKILL.md").read_text() == "---\nname: review\n---\nbody\n"
    assert snap.to_json() == {
        "declaredPath": "skills/review",
        "sourcePath": str((root / "skills" / "review").resolve()),
        "path": str(snap.path),
        "files": fingerprint_json(fingerprint(root / "skills" / "review")),
        "sha256": fingerprint_digest(snap.files),
    }


def test_working_tree_source_from_resolver(root: Path, tmp_path: Path) -> None:
    source = SourceResolver(root).resolve("working-tree", None)

    snap = snapshot_resource(root, source, "fixtures/basic", tmp_path / "fixture", "fixture")

    assert [e.path for e in snap.files] == ["app.py"]


@pytest.mark.parametrize("declared", ["skills/missing", "../outside"])
def test_missing_or_escaping_path_is_rejected(root: Path, tmp_path: Path, declared: str) -> None:
    write(tmp_path / "outside" / "SKILL.md", "outside")

    with pytest.raises(
        ResourceError, match=f"declared skill is missing or escapes the definition root: {declared}"
    ):
        snapshot_resource(root, WORKING, declared, tmp_path / "snap", "skill")


def test_declared_path_through_escaping_symlink_is_rejected(root: Path, tmp_path: Path) -> None:
    write(tmp_path / "elsewhere" / "SKILL.md", "outside")
    (root / "skills" / "linked").symlink_to(tmp_path / "elsewhere")

    with pytest.raises(
        ResourceError, match=r"missing or escapes the definition root: skills/linked"
    ):
        snapshot_resource(root, WORKING, "skills/linked", tmp_path / "snap", "skill")


def test_escaping_symlink_inside_a_skill_is_rejected(root: Path, tmp_path: Path) -> None:
    (root / "skills" / "review" / "leak").symlink_to("../../../secret")
    write(tmp_path / "secret", "secret")

    with pytest.raises(
        ResourceError,
        match=r"declared skill skills/review: symlink escapes its declared root: leak",
    ):
        snapshot_resource(root, WORKING, "skills/review", tmp_path / "snap", "skill")


def test_fixture_that_is_a_file_is_rejected(root: Path, tmp_path: Path) -> None:
    with pytest.raises(
        ResourceError, match=r"declared fixture must be a directory, not a file: context/rules.md"
    ):
        snapshot_resource(root, WORKING, "context/rules.md", tmp_path / "snap", "fixture")


def test_skill_without_skill_md_is_rejected(root: Path, tmp_path: Path) -> None:
    with pytest.raises(
        ResourceError, match=r"declared skill has no contained SKILL.md: fixtures/basic"
    ):
        snapshot_resource(root, WORKING, "fixtures/basic", tmp_path / "snap", "skill")


def test_resource_changed_during_snapshot_is_rejected(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_copy = _tree.copy_tree

    def copy_then_append(src: Path, dst: Path, **kwargs: object) -> tuple[Entry, ...]:
        result = real_copy(src, dst)
        write(root / "skills" / "review" / "SKILL.md", "rewritten during the copy")
        return result

    monkeypatch.setattr(_tree, "copy_tree", copy_then_append)

    with pytest.raises(
        ResourceError,
        match=r"declared skill skills/review changed while it was being snapshotted "
        r"\(modified: SKILL.md\)",
    ):
        snapshot_resource(root, WORKING, "skills/review", tmp_path / "snap", "skill")


def test_single_context_file_changed_during_snapshot_is_rejected(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_copy = _tree.copy_file

    def copy_then_edit(src: Path, dst: Path, label: str) -> str:
        digest = real_copy(src, dst, label)
        write(root / "context" / "rules.md", "edited")
        return digest

    monkeypatch.setattr(_tree, "copy_file", copy_then_edit)

    with pytest.raises(ResourceError, match=r"declared context context/rules.md changed while"):
        snapshot_resource(root, WORKING, "context/rules.md", tmp_path / "snap", "context")


def test_context_file_and_directory_snapshots(root: Path, tmp_path: Path) -> None:
    single = snapshot_resource(root, WORKING, "context/rules.md", tmp_path / "c0", "context")
    folder = snapshot_resource(root, WORKING, "context/more", tmp_path / "c1", "context")

    assert single.files == (Entry("rules.md", "file", sha(b"rule one\n")),)
    assert (tmp_path / "c0" / "rules.md").read_text() == "rule one\n"
    assert [e.path for e in folder.files] == ["style.md"]


def test_non_utf8_context_is_rejected(root: Path, tmp_path: Path) -> None:
    write(root / "context" / "more" / "bad.md", b"\xff\xfe not utf-8")

    with pytest.raises(
        ResourceError, match=r"declared context file is not valid UTF-8 text: context/more/bad.md"
    ):
        snapshot_resource(root, WORKING, "context/more", tmp_path / "snap", "context")


def test_context_manifest_hashes_bytes_and_exposes_text(root: Path, tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbfwith bom\n"
    write(root / "context" / "bom.md", bom)
    (root / "context" / "more" / "alias.md").symlink_to("style.md")
    first = snapshot_resource(root, WORKING, "context/bom.md", tmp_path / "c0", "context")
    second = snapshot_resource(root, WORKING, "context/more", tmp_path / "c1", "context")

    manifest = context_manifest([first, second])

    assert (first.path / "bom.md").read_bytes() == bom
    assert manifest == {
        "schema_version": 1,
        "entries": [
            {
                "declaredPath": "context/bom.md",
                "files": [
                    {
                        "path": str(first.path / "bom.md"),
                        "sha256": sha(bom),
                        "content": "with bom\n",
                    }
                ],
            },
            {
                "declaredPath": "context/more",
                "files": [
                    {
                        "path": str(second.path / "alias.md"),
                        "sha256": sha(b"style\n"),
                        "content": "style\n",
                    },
                    {
                        "path": str(second.path / "style.md"),
                        "sha256": sha(b"style\n"),
                        "content": "style\n",
                    },
                ],
            },
        ],
    }
    assert context_manifest([]) == {"schema_version": 1, "entries": []}


def test_verify_unchanged_catches_a_one_byte_change(root: Path, tmp_path: Path) -> None:
    snap = snapshot_resource(root, WORKING, "skills/review", tmp_path / "snap", "skill")
    assert verify_unchanged(snap) is None

    data = bytearray((snap.path / "SKILL.md").read_bytes())
    data[-2] ^= 0x01
    (snap.path / "SKILL.md").write_bytes(bytes(data))

    message = verify_unchanged(snap)
    assert message is not None
    assert "skills/review" in message
    assert "modified: SKILL.md" in message


def test_verify_unchanged_reports_an_added_file(root: Path, tmp_path: Path) -> None:
    snap = snapshot_resource(root, WORKING, "skills/review", tmp_path / "snap", "skill")
    write(snap.path / "extra.md", "planted")

    assert "created: extra.md" in (verify_unchanged(snap) or "")


def test_turn_snapshots_report_cumulative_and_per_turn_changes(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    write(workspace / "a.txt", "a")
    write(workspace / "b.txt", "b")
    before = fingerprint(workspace)

    write(workspace / "a.txt", "a2")
    turn1 = snapshot_workspace_turn(workspace, tmp_path / "turns" / "1", before, None)
    write(workspace / "c.txt", "c")
    (workspace / "b.txt").unlink()
    previous = fingerprint_from_json(turn1["files"])
    turn2 = snapshot_workspace_turn(workspace, tmp_path / "turns" / "2", before, previous)

    assert turn1["path"] == str((tmp_path / "turns" / "1").resolve())
    assert turn1["changes"] == {"created": [], "modified": ["a.txt"], "deleted": []}
    assert turn1["changesSincePrevious"] == turn1["changes"]
    assert turn2["changes"] == {"created": ["c.txt"], "modified": ["a.txt"], "deleted": ["b.txt"]}
    assert turn2["changesSincePrevious"] == {
        "created": ["c.txt"],
        "modified": [],
        "deleted": ["b.txt"],
    }
    # The turn-1 copy is immutable evidence of that moment.
    assert (tmp_path / "turns" / "1" / "a.txt").read_text() == "a2"
    assert (tmp_path / "turns" / "1" / "b.txt").read_text() == "b"
    assert turn2["files"] == fingerprint_json(fingerprint(tmp_path / "turns" / "2"))


def test_turn_snapshot_records_a_planted_escaping_symlink(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    write(workspace / "a.txt", "a")
    before = fingerprint(workspace)
    (workspace / "escape").symlink_to("/etc/passwd")

    turn = snapshot_workspace_turn(workspace, tmp_path / "turn", before, None)

    assert turn["changes"]["created"] == ["escape"]
    assert {"path": "escape", "type": "symlink", "sha256": sha(b"symlink\0/etc/passwd")} in turn[
        "files"
    ]


def test_turn_snapshot_rejects_a_workspace_changing_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "workspace"
    write(workspace / "a.txt", "a")
    before = fingerprint(workspace)
    real_copy = _tree.copy_tree

    def copy_then_write(src: Path, dst: Path, **kwargs: str) -> tuple[Entry, ...]:
        result = real_copy(src, dst, escaping="record")
        write(workspace / "late.txt", "late")
        return result

    monkeypatch.setattr(_tree, "copy_tree", copy_then_write)

    with pytest.raises(ResourceError, match=r"workspace changed while capturing turn .*late.txt"):
        snapshot_workspace_turn(workspace, tmp_path / "turn", before, None)
