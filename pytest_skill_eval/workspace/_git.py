"""Variant sources: the working tree, or a Git ref pinned once per invocation."""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from ..evidence.inputs import SourceRecord
from ._entry import inside
from ._tree import ResourceError

_COMMIT = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_FILE_MODES = {"100644": 0o644, "100755": 0o755}
_SYMLINK_MODE = "120000"


@dataclass(frozen=True, slots=True)
class ResolvedSource:
    """Where a variant's skills and context come from; one per (root, ref) per invocation."""

    kind: Literal["working-tree", "git"]
    ref: str | None
    commit: str | None
    top_level: Path | None
    root_prefix: str
    root: Path | None = None

    def to_json(self) -> SourceRecord:
        """The evidence form (`resources.source` in run.json)."""
        if self.kind == "working-tree":
            data: SourceRecord = {"kind": "working-tree"}
            if self.root is not None:
                data["root"] = str(self.root)
            return data
        return {
            "kind": "git",
            "ref": self.ref,
            "commit": self.commit,
            "topLevel": str(self.top_level) if self.top_level is not None else None,
            "rootPrefix": self.root_prefix,
        }


class SourceResolver:
    """Resolves variant sources once per invocation; thread-safe, caches every ref."""

    def __init__(self, root: Path, *, pinned: Mapping[str, str] | None = None) -> None:
        self.root = Path(os.path.realpath(root))
        self._lock = threading.Lock()
        self._preset = dict(pinned or {})
        self._cache: dict[str, ResolvedSource] = {}
        self._top: tuple[Path, str] | None = None

    def resolve(self, source_kind: str, ref: str | None) -> ResolvedSource:
        """The source for a variant; a Git ref is resolved to a commit only the first time."""
        if source_kind == "working-tree":
            return ResolvedSource("working-tree", None, None, None, "", self.root)
        if source_kind != "git" or not ref:
            raise ValueError(f"unknown variant source: {source_kind!r} (ref {ref!r})")
        with self._lock:
            cached = self._cache.get(ref)
            if cached is None:
                top, prefix = self._top_level()
                commit = self._commit(top, ref)
                cached = ResolvedSource("git", ref, commit, top, prefix, self.root)
                self._cache[ref] = cached
            return cached

    def pinned(self) -> dict[str, str]:
        """{ref: commit} for every ref resolved so far."""
        with self._lock:
            return {ref: s.commit for ref, s in self._cache.items() if s.commit is not None}

    def _top_level(self) -> tuple[Path, str]:
        if self._top is None:
            result = run_git(self.root, "rev-parse", "--show-toplevel")
            if result.returncode != 0:
                raise ResourceError(
                    f"a variant uses a Git source, but the definition root {self.root} is not "
                    f"inside a Git repository ({_stderr(result)}); run `git init` and commit, or "
                    "use a working-tree source"
                )
            top = os.path.realpath(result.stdout.decode("utf-8", "replace").rstrip("\n"))
            if not inside(str(self.root), top):
                raise ResourceError(
                    f"the definition root {self.root} is not inside its Git top level {top}"
                )
            prefix = Path(os.path.relpath(self.root, top)).as_posix()
            self._top = (Path(top), "" if prefix == "." else prefix)
        return self._top

    def _commit(self, top: Path, ref: str) -> str:
        wanted = self._preset.get(ref)
        spec = wanted if wanted is not None else ref
        result = run_git(top, "rev-parse", "--verify", "--end-of-options", f"{spec}^{{commit}}")
        commit = result.stdout.decode("utf-8", "replace").strip()
        if result.returncode != 0 or not _COMMIT.match(commit):
            raise ResourceError(
                f"Git ref {ref!r} does not resolve to a commit in {top} ({_stderr(result)}); "
                "fix the variant's source.ref or create the ref"
            )
        if wanted is not None and commit != wanted:
            raise ResourceError(f"pinned commit {wanted} for Git ref {ref!r} is not a commit")
        return commit


def git_environment() -> dict[str, str]:
    """The caller's environment without GIT_* variables that redirect repository discovery."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def _git_binary() -> str:
    found = shutil.which("git")
    if found is None:
        raise ResourceError("a Git source needs the `git` command on PATH; install Git")
    return found


def run_git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run git in `cwd` and capture its output (never raises for a non-zero exit)."""
    return subprocess.run(
        [_git_binary(), "-C", str(cwd), *args],
        capture_output=True,
        env=git_environment(),
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _stderr(result: subprocess.CompletedProcess[bytes]) -> str:
    text = result.stderr.decode("utf-8", "replace").strip()
    return text.splitlines()[-1] if text else f"git exited with {result.returncode}"


@dataclass(frozen=True, slots=True)
class _GitEntry:
    mode: str
    type: str
    oid: str
    path: str


def _ls_tree(source: ResolvedSource, git_path: str, *, recursive: bool) -> list[_GitEntry]:
    assert source.top_level is not None
    assert source.commit is not None
    args = ["ls-tree", "-z", "--full-tree"]
    if recursive:
        args.append("-r")
    result = run_git(source.top_level, *args, source.commit, "--", f":(literal){git_path}")
    if result.returncode != 0:
        raise ResourceError(f"git ls-tree failed for {git_path}: {_stderr(result)}")
    entries = []
    for record in result.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, oid = meta.decode("ascii").split(" ")
        try:
            path = raw_path.decode("utf-8")
        except UnicodeDecodeError:
            raise ResourceError(f"Git path is not valid UTF-8: {raw_path!r}") from None
        entries.append(_GitEntry(mode, kind, oid, path))
    return entries


def git_entry_kind(source: ResolvedSource, declared: str) -> str | None:
    """The Git type ("tree", "blob", "commit") of `declared` in the source's commit, or None
    when the commit does not hold it (or it would leave the definition root)."""
    normal = posixpath.normpath(declared)
    if normal.startswith("/") or normal in (".", "..") or normal.startswith("../"):
        return None
    git_path = f"{source.root_prefix}/{normal}" if source.root_prefix else normal
    found = [e for e in _ls_tree(source, git_path, recursive=False) if e.path == git_path]
    return found[0].type if found else None


def git_file(source: ResolvedSource, declared: str) -> bytes | None:
    """The bytes of the file `declared` in the source's commit (None: no such file there)."""
    if git_entry_kind(source, declared) != "blob":
        return None
    assert source.top_level is not None
    normal = posixpath.normpath(declared)
    git_path = f"{source.root_prefix}/{normal}" if source.root_prefix else normal
    result = run_git(source.top_level, "cat-file", "blob", f"{source.commit}:{git_path}")
    return result.stdout if result.returncode == 0 else None


def materialise_git(
    source: ResolvedSource, declared: str, destination: Path, kind: str
) -> tuple[str, bool]:
    """Write `declared` from the pinned commit into `destination`; (sourcePath, is_single_file)."""
    assert source.commit is not None
    commit = source.commit
    label = f"declared {kind}"
    normal = posixpath.normpath(declared)
    if normal.startswith("/") or normal in (".", "..") or normal.startswith("../"):
        raise ResourceError(f"{label} is missing or escapes the definition root: {declared}")
    git_path = f"{source.root_prefix}/{normal}" if source.root_prefix else normal
    found = [e for e in _ls_tree(source, git_path, recursive=False) if e.path == git_path]
    if not found:
        raise ResourceError(
            f"{label} is missing from Git commit {commit}: {declared} "
            f"(ref {source.ref!r}; commit it there or use a working-tree source)"
        )
    top = found[0]
    if top.type == "commit":
        raise ResourceError(
            f"{label} is a Git submodule (unsupported Git type commit): {declared}; "
            "declare a directory that is part of the repository itself"
        )
    if top.type != "tree" and (kind != "context" or top.type != "blob"):
        raise ResourceError(f"{label} must be a directory in Git commit {commit}: {declared}")
    destination.mkdir(parents=True, exist_ok=True)
    source_path = f"{commit}:{declared}"
    if top.type == "blob":
        with _CatFile(source.top_level) as reader:
            _write_blob(reader, top, destination / posixpath.basename(normal), label, declared)
        return source_path, True
    entries = _ls_tree(source, git_path, recursive=True)
    planned: list[tuple[_GitEntry, str]] = []
    for entry in entries:
        if not entry.path.startswith(git_path + "/"):
            continue
        rel = entry.path[len(git_path) + 1 :]
        if entry.type != "blob":
            raise ResourceError(
                f"{label} contains an unsupported Git entry ({entry.type}, e.g. a submodule): "
                f"{declared}/{rel}"
            )
        parts = rel.split("/")
        if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise ResourceError(f"{label}: Git entry escapes its declared resource: {rel}")
        planned.append((entry, rel))
    with _CatFile(source.top_level) as reader:
        for entry, rel in planned:
            target = destination.joinpath(*rel.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_blob(reader, entry, target, label, f"{declared}/{rel}")
    return source_path, False


def _write_blob(reader: _CatFile, entry: _GitEntry, target: Path, label: str, shown: str) -> None:
    data = reader.read(entry.oid)
    if entry.mode == _SYMLINK_MODE:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ResourceError(
                f"{label}: Git symlink target is not valid UTF-8: {shown}"
            ) from None
        try:
            os.symlink(text, target)
        except FileExistsError as error:
            raise ResourceError(f"refusing to overwrite existing {target}") from error
        return
    mode = _FILE_MODES.get(entry.mode)
    if mode is None:
        raise ResourceError(f"{label}: unsupported Git blob mode {entry.mode}: {shown}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(target, flags, 0o600)
    except FileExistsError as error:
        raise ResourceError(f"refusing to overwrite existing {target}") from error
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


class _CatFile:
    """One `git cat-file --batch` process reading many blobs over a pipe."""

    def __init__(self, top: Path | None) -> None:
        assert top is not None
        self._process = subprocess.Popen(
            [_git_binary(), "-C", str(top), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=git_environment(),
        )

    def __enter__(self) -> _CatFile:
        return self

    def __exit__(self, *exc: object) -> None:
        stdin: IO[bytes] | None = self._process.stdin
        if stdin is not None:
            stdin.close()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._process.wait()

    def read(self, oid: str) -> bytes:
        """The content of blob `oid`."""
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None
        assert stdout is not None
        stdin.write(oid.encode("ascii") + b"\n")
        stdin.flush()
        header = stdout.readline().decode("ascii", "replace").split()
        if len(header) != 3 or header[1] != "blob":
            raise ResourceError(f"Git object {oid} cannot be read as a blob ({' '.join(header)})")
        size = int(header[2])
        data = stdout.read(size)
        stdout.read(1)  # the newline git writes after every object
        if len(data) != size:
            raise ResourceError(f"Git object {oid} was truncated while reading")
        return data
