"""Git-sourced resources: ref pinning, materialisation and rejections, on real repositories."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from pytest_skill_eval.workspace import (
    ResolvedSource,
    ResourceError,
    SourceResolver,
    fingerprint,
    snapshot_resource,
)
from tests.support.files import write
from tests.support.git import Git, run_git


@pytest.fixture
def root(repo: Path, git: Git) -> Path:
    """A definition root one level below the repository top, with a skill tagged v1."""
    defs = repo / "defs"
    skill = defs / "skills" / "review"
    write(skill / "SKILL.md", "---\nname: review\n---\nversion one\n")
    write(skill / "scripts" / "check.sh", "#!/bin/sh\nexit 0\n", mode=0o755)
    write(skill / "docs" / "notes.md", "notes\n")
    (skill / "guide.md").symlink_to("docs/notes.md")
    write(defs / "context" / "rules.md", "be kind\n")
    git("add", "-A")
    git("commit", "-q", "-m", "v1")
    git("tag", "v1")
    return defs


def commit_of(git: Git, ref: str) -> str:
    return git("rev-parse", f"{ref}^{{commit}}")


def test_git_tag_skill_and_working_tree_skill(root: Path, git: Git, tmp_path: Path) -> None:
    write(root / "skills" / "review" / "SKILL.md", "---\nname: review\n---\nversion two\n")
    resolver = SourceResolver(root)
    tagged = resolver.resolve("git", "v1")
    working = resolver.resolve("working-tree", None)

    old = snapshot_resource(root, tagged, "skills/review", tmp_path / "old", "skill")
    new = snapshot_resource(root, working, "skills/review", tmp_path / "new", "skill")

    assert (old.path / "SKILL.md").read_text().endswith("version one\n")
    assert (new.path / "SKILL.md").read_text().endswith("version two\n")
    commit = commit_of(git, "v1")
    assert tagged == ResolvedSource("git", "v1", commit, root.parent.resolve(), "defs", root)
    assert old.source_path == f"{commit}:skills/review"
    assert new.source_path == str((root / "skills" / "review").resolve())
    assert tagged.to_json() == {
        "kind": "git",
        "ref": "v1",
        "commit": commit,
        "topLevel": str(root.parent.resolve()),
        "rootPrefix": "defs",
    }
    assert working.to_json() == {"kind": "working-tree", "root": str(root.resolve())}


def test_git_materialises_trees_blobs_symlinks_and_exec_bits(root: Path, tmp_path: Path) -> None:
    source = SourceResolver(root).resolve("git", "v1")

    snap = snapshot_resource(root, source, "skills/review", tmp_path / "snap", "skill")

    assert [(e.path, e.type) for e in snap.files] == [
        ("SKILL.md", "file"),
        ("docs", "directory"),
        ("docs/notes.md", "file"),
        ("guide.md", "symlink"),
        ("scripts", "directory"),
        ("scripts/check.sh", "file"),
    ]
    assert os.readlink(snap.path / "guide.md") == "docs/notes.md"
    assert (snap.path / "guide.md").read_text() == "notes\n"
    assert stat.S_IMODE(os.stat(snap.path / "scripts" / "check.sh").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(snap.path / "SKILL.md").st_mode) == 0o644
    # The same tree from the working tree has the same fingerprint.
    assert snap.files == fingerprint(root / "skills" / "review")


def test_git_single_blob_context_goes_to_destination_basename(root: Path, tmp_path: Path) -> None:
    source = SourceResolver(root).resolve("git", "v1")

    snap = snapshot_resource(root, source, "context/rules.md", tmp_path / "ctx", "context")

    assert [e.path for e in snap.files] == ["rules.md"]
    assert (snap.path / "rules.md").read_text() == "be kind\n"


def test_moved_branch_keeps_the_first_resolution(root: Path, git: Git, tmp_path: Path) -> None:
    git("branch", "feature")
    resolver = SourceResolver(root)
    first = resolver.resolve("git", "feature")

    write(root / "skills" / "review" / "SKILL.md", "---\nname: review\n---\nmoved\n")
    git("commit", "-q", "-am", "move")
    git("branch", "-f", "feature", "HEAD")
    second = resolver.resolve("git", "feature")
    snap = snapshot_resource(root, second, "skills/review", tmp_path / "snap", "skill")

    assert second.commit == first.commit == commit_of(git, "v1")
    assert (snap.path / "SKILL.md").read_text().endswith("version one\n")
    assert resolver.pinned() == {"feature": commit_of(git, "v1")}
    # A new invocation sees the moved branch.
    assert SourceResolver(root).resolve("git", "feature").commit == commit_of(git, "HEAD")


def test_pinned_commits_are_reused_by_another_resolver(root: Path, git: Git) -> None:
    git("branch", "feature")
    pinned = SourceResolver(root)
    pinned.resolve("git", "feature")
    git("commit", "-q", "--allow-empty", "-m", "later")
    git("branch", "-f", "feature", "HEAD")

    worker = SourceResolver(root, pinned=pinned.pinned())

    assert worker.resolve("git", "feature").commit == commit_of(git, "v1")


def test_concurrent_resolves_share_one_commit(root: Path) -> None:
    resolver = SourceResolver(root)
    seen: list[str | None] = []

    def resolve() -> None:
        seen.append(resolver.resolve("git", "v1").commit)

    threads = [threading.Thread(target=resolve) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(seen) == 8
    assert len(set(seen)) == 1
    assert seen[0] is not None


def test_unknown_ref_is_rejected(root: Path) -> None:
    with pytest.raises(ResourceError, match=r"Git ref 'no-such-tag' does not resolve to a commit"):
        SourceResolver(root).resolve("git", "no-such-tag")


def test_root_outside_any_repository_is_rejected(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()

    with pytest.raises(ResourceError, match=r"is not inside a Git repository"):
        SourceResolver(plain).resolve("git", "main")


def test_missing_path_in_commit_is_rejected(root: Path, git: Git, tmp_path: Path) -> None:
    write(root / "skills" / "later" / "SKILL.md", "uncommitted")
    source = SourceResolver(root).resolve("git", "v1")

    with pytest.raises(
        ResourceError,
        match=rf"declared skill is missing from Git commit {commit_of(git, 'v1')}: skills/later",
    ):
        snapshot_resource(root, source, "skills/later", tmp_path / "snap", "skill")


def test_git_file_declared_as_skill_is_rejected(root: Path, tmp_path: Path) -> None:
    source = SourceResolver(root).resolve("git", "v1")

    with pytest.raises(ResourceError, match=r"declared skill must be a directory in Git commit"):
        snapshot_resource(root, source, "context/rules.md", tmp_path / "snap", "skill")


def test_submodule_inside_a_skill_is_rejected(root: Path, git: Git, tmp_path: Path) -> None:
    gitlink = "160000," + "1" * 40 + ",defs/skills/review/vendor"
    git("update-index", "--add", "--cacheinfo", gitlink)
    git("commit", "-q", "-m", "submodule")
    source = SourceResolver(root).resolve("git", "HEAD")

    with pytest.raises(
        ResourceError, match=r"contains an unsupported Git entry .*: skills/review/vendor"
    ):
        snapshot_resource(root, source, "skills/review", tmp_path / "snap", "skill")
    with pytest.raises(ResourceError, match=r"is a Git submodule"):
        snapshot_resource(root, source, "skills/review/vendor", tmp_path / "snap2", "context")


def test_escaping_git_entry_is_rejected(repo: Path, tmp_path: Path) -> None:
    blob = run_git(repo, "hash-object", "-w", "--stdin", stdin=b"x\n")
    skill = run_git(
        repo, "mktree", stdin=f"100644 blob {blob}\tSKILL.md\n100644 blob {blob}\t..\n".encode()
    )
    skills = run_git(repo, "mktree", stdin=f"040000 tree {skill}\tevil\n".encode())
    top = run_git(repo, "mktree", stdin=f"040000 tree {skills}\tskills\n".encode())
    commit = run_git(repo, "commit-tree", top, "-m", "crafted")
    run_git(repo, "tag", "crafted", commit)
    source = SourceResolver(repo).resolve("git", "crafted")

    with pytest.raises(ResourceError, match=r"Git entry escapes its declared resource: \.\."):
        snapshot_resource(repo, source, "skills/evil", tmp_path / "snap", "skill")
    assert not (tmp_path / "snap" / "..").resolve().joinpath("SKILL.md").exists()


def test_escaping_git_symlink_is_rejected(root: Path, git: Git, tmp_path: Path) -> None:
    (root / "skills" / "review" / "passwd").symlink_to("../../../../etc/passwd")
    git("add", "-A")
    git("commit", "-q", "-m", "link out")
    source = SourceResolver(root).resolve("git", "HEAD")

    with pytest.raises(ResourceError, match=r"symlink escapes its declared root: passwd"):
        snapshot_resource(root, source, "skills/review", tmp_path / "snap", "skill")


def test_non_utf8_git_context_is_rejected(root: Path, git: Git, tmp_path: Path) -> None:
    write(root / "context" / "latin1.md", b"caf\xe9\n")
    git("add", "-A")
    git("commit", "-q", "-m", "latin1")
    source = SourceResolver(root).resolve("git", "HEAD")

    with pytest.raises(
        ResourceError, match=r"declared context file is not valid UTF-8 text: context/latin1.md"
    ):
        snapshot_resource(root, source, "context", tmp_path / "snap", "context")
