"""`--skill-eval-reuse RESULT`: a variant's run taken from an earlier sealed result.

A run is reused only when every input that determines it (`run.inputs`) hashes the same as the
run recorded there, that run completed, and the earlier result's seal verifies; otherwise the
variant runs. A reused run is copied (never linked) into the new result, its `run.json` marked
`reused` with the source result's id and seal root, and sealed with the rest of the new result.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..definitions import VARIANTS, LoadedGroup
from ..errors import SkillEvalError
from ..evidence import layout, read, shapes
from ..evidence.read import parse_evidence_json
from ..evidence.seal import sealed_root, verify_result
from ..evidence.store import entry_digest, evidence_files, read_json, sha256_bytes
from ..workspace.entries import open_regular
from .inputs import changed_inputs

# Advisory files a result may gain after its seal (a review), never evidence.
_ADVISORY = (layout.SEMANTIC_GRADE, layout.REVIEW)
# Read and written again by the new result when it persists the reused run (a fallback record
# is never reused: only a run whose run.json is its record).
_READ = (layout.RUN, layout.TRANSCRIPT, layout.FINAL)
_REWRITTEN = (*_READ, layout.RUN_FALLBACK)


class ReuseError(SkillEvalError):
    """A run chosen for reuse could not be copied into the new result."""


@dataclass(frozen=True, slots=True)
class Source:
    """An earlier result offered for reuse: its id, and its seal root or why it has none."""

    path: Path
    root: str | None
    problem: str | None

    @property
    def id(self) -> str:
        """The result id (its directory name)."""
        return self.path.name


@dataclass(frozen=True, slots=True)
class Found:
    """A run that may be reused: where it lies and what the new run.json says of it."""

    source: Source
    variant_dir: Path

    def marker(self, sha256: str, earlier: Any = None) -> dict[str, Any]:
        """`run.json`'s `reused`: the source result, its seal root, the run record's hash, and
        the run's `origin` (`<result>/<run>` where its subject ran, through any earlier reuse)."""
        run = (self.variant_dir / layout.RUN).relative_to(self.source.path).as_posix()
        origin = earlier.get("origin") if isinstance(earlier, Mapping) else None
        return {
            "result": self.source.id,
            "root": f"sha256:{self.source.root}",
            "run": run,
            "sha256": sha256,
            "origin": origin if isinstance(origin, str) else f"{self.source.id}/{run}",
        }


def open_source(path: Path) -> list[Source]:
    """The results `path` names (an aggregate names its trials), each verified against its seal."""
    trials = [path]
    if layout.aggregate_file(path).is_file():
        try:
            trials = read.aggregate_trial_dirs(path)
        except SkillEvalError as error:
            return [Source(path, None, str(error))]
    return [_verified(trial) for trial in trials]


def _verified(result: Path) -> Source:
    if not layout.seal_file(result).is_file():
        return Source(result, None, f"{result} has no {layout.SEAL}: it was never sealed")
    try:
        problems = verify_result(result, _ADVISORY)
    except (SkillEvalError, OSError) as error:
        problems = [str(error)]
    root = sealed_root(result)
    if problems or root is None:
        first = problems[0] if problems else f"{layout.seal_file(result)} is unreadable"
        return Source(result, None, f"its seal does not verify ({first})")
    return Source(result, root, None)


@dataclass(frozen=True, slots=True)
class Reuse:
    """The earlier results of `--skill-eval-reuse`, in the order given."""

    sources: tuple[Source, ...]

    def refused_sources(self) -> list[str]:
        """One line per source that can never be reused (its seal fails)."""
        return [
            f"nothing reused from {s.id}: {s.problem}"
            for s in self.sources
            if s.problem is not None
        ]

    def find(
        self, group_id: str, host: str, variant: str, trial: int, inputs: Mapping[str, str]
    ) -> Found | str:
        """The run trial `trial` of this variant reuses, or why none may be.

        Matching runs are taken in order (sources as given, each once), trial k the k-th, so
        that every process of an invocation picks the same and no run stands in twice.
        """
        matches: list[Found] = []
        reasons: list[str] = []
        for source in self.sources:
            if source.problem is not None:
                reasons.append(f"{source.id}: {source.problem}")
                continue
            variant_dir = layout.variant_dir(source.path, group_id, variant, host)
            try:
                found = read.read_run(variant_dir)
            except SkillEvalError as error:
                reasons.append(f"{source.id}: {error}")
                continue
            if found is None or found[0] != layout.RUN:
                reasons.append(f"{source.id}: no run of {group_id}[{variant}] on {host}")
            elif found[1].get("state") != "complete":
                reasons.append(f"{source.id}: its run there is {found[1].get('state')}")
            elif changed := changed_inputs(inputs, found[1].get("inputs")):
                reasons.append(f"{source.id}: changed since: {', '.join(changed)}")
            else:
                matches.append(Found(source, variant_dir))
        if len(matches) >= trial:
            return matches[trial - 1]
        if matches:
            reasons.append(f"trial {trial}: only {len(matches)} matching run(s) to reuse")
        return "not reused: " + "; ".join(reasons)


@dataclass
class VariantInputs:
    """One group run's variants: the inputs of each, and the run it reuses or why none."""

    inputs: dict[str, dict[str, str]] = field(default_factory=dict)
    chosen: dict[str, Found | str] = field(default_factory=dict)

    def decide(
        self,
        inputs: Callable[[LoadedGroup, str, int], dict[str, str]] | None,
        reuse: Reuse | None,
        loaded: LoadedGroup,
        host: str,
        trial: int,
    ) -> None:
        """Once per group run: each variant's inputs and, with reuse asked, its earlier run."""
        if inputs is None or self.inputs:
            return
        try:
            self.inputs = {v: inputs(loaded, v, trial) for v in VARIANTS}
        except (SkillEvalError, OSError):
            return  # an input that cannot be read: the run that reads it records why
        if reuse is not None:
            for variant in VARIANTS:
                found = reuse.find(loaded.group.id, host, variant, trial, self.inputs[variant])
                self.chosen[variant] = found

    def reuses(self, variant: str) -> bool:
        """Whether `variant` is to be copied from an earlier result rather than run."""
        return isinstance(self.chosen.get(variant), Found)

    def take(self, variant: str, group_dir: Path) -> tuple[Any, list[Any], str] | None:
        """The reused run copied into `group_dir`: (run, transcript, response); None: it runs."""
        found = self.chosen.get(variant)
        if not isinstance(found, Found):
            return None
        target = group_dir / variant
        try:
            return copy_run(found, target, group_dir)
        except (SkillEvalError, OSError) as error:
            shutil.rmtree(target, ignore_errors=True)  # a partial copy, never evidence
            self.chosen[variant] = f"not reused: copying {found.variant_dir} failed: {error}"
            return None

    def note(self, variant: str, run: Any) -> None:
        """Record in a run's record the inputs it ran from and, when asked to reuse, why not."""
        if variant in self.inputs:
            run.setdefault("inputs", self.inputs[variant])
        refused = self.chosen.get(variant)
        if isinstance(refused, str) and "reused" not in run:
            run["notReused"] = refused


def copy_run(
    found: Found, variant_dir: Path, group_dir: Path
) -> tuple[dict[str, Any], list[Any], str]:
    """Copy a reused run's evidence into `variant_dir`; its run record, transcript and response.

    Every byte copied or read is proved against the source group's sealed manifest, so a file
    changed after its seal was verified is never reused. Paths the run recorded inside its own
    group now name the copy's, so grading reads the copy; `reused` says where it came from.
    """
    source = found.variant_dir
    expected = _manifest(source)
    read_bytes = {name: _proved(source / name, expected) for name in _READ}
    _copy_tree(source, variant_dir)
    copied = evidence_files(variant_dir)
    for rel, path in copied:
        if entry_digest(path) != expected.get(rel):
            raise ReuseError(f"{source / rel} changed since its result's seal was verified")
    if {rel for rel, _ in copied} | set(read_bytes) != set(expected):
        raise ReuseError(f"{source} differs from its sealed manifest")
    run = parse_evidence_json(source / layout.RUN, read_bytes[layout.RUN], shapes.RUN)
    transcript = parse_evidence_json(source / layout.TRANSCRIPT, read_bytes[layout.TRANSCRIPT])
    response = read_bytes[layout.FINAL].decode("utf-8").removesuffix("\n")
    if not isinstance(run, dict) or not isinstance(transcript, list):
        raise ReuseError(f"{source} holds no run record and transcript to reuse")
    pairs = {str(source.parent): str(group_dir)}
    pairs[str(source.parent.resolve())] = str(group_dir.resolve())
    recorded = Path(str(run.get("workspace") or ""))
    if recorded.parts[-2:] == (source.name, "workspace"):
        # Where the run was made, when its result has moved since (copied, merged).
        pairs.setdefault(str(recorded.parent.parent), str(group_dir.resolve()))
    moved = _moved(run, sorted(pairs.items(), key=lambda p: -len(p[0])))
    moved["reused"] = found.marker(sha256_bytes(read_bytes[layout.RUN]), run.get("reused"))
    return moved, transcript, response


def _manifest(variant_dir: Path) -> dict[str, str]:
    """The sealed manifest's entries for one variant, relative to its directory."""
    manifest = read_json(variant_dir.parent / layout.MANIFEST, shapes.MANIFEST)["files"]
    prefix = f"{variant_dir.name}/"
    return {rel.removeprefix(prefix): d for rel, d in manifest.items() if rel.startswith(prefix)}


def _proved(path: Path, expected: Mapping[str, str]) -> bytes:
    """A file's bytes, read once, when they are the bytes its sealed manifest lists."""
    opened = open_regular(path)
    if not isinstance(opened, int):
        raise ReuseError(f"{path} is not a regular file")
    with open(opened, "rb") as handle:
        data = handle.read()
    if sha256_bytes(data) != expected.get(path.name):
        raise ReuseError(f"{path} changed since its result's seal was verified")
    return data


def _moved(value: Any, pairs: Sequence[tuple[str, str]]) -> Any:
    """`value` with every string that begins with an old group directory beginning with the new."""
    if isinstance(value, str):
        for old, new in pairs:
            if value == old or value.startswith(old + os.sep):
                return new + value[len(old) :]
        return value
    if isinstance(value, list):
        return [_moved(item, pairs) for item in value]
    if isinstance(value, dict):
        return {key: _moved(item, pairs) for key, item in value.items()}
    return value


def _copy_tree(source: Path, target: Path) -> None:
    """Copy a variant directory byte for byte, never following or making a link outside its
    subject's workspace (where a planted link is evidence, copied as the link it is)."""
    for directory, dirnames, filenames in os.walk(source):
        base = Path(directory)
        destination = target / base.relative_to(source)
        destination.mkdir(parents=True, exist_ok=destination != target)
        links = [d for d in dirnames if (base / d).is_symlink()]
        dirnames[:] = sorted(d for d in dirnames if d not in links)
        # A subject's workspace (final, or after a turn) keeps what the subject left there.
        in_workspace = "workspace" in base.relative_to(source).parts
        for name in (*filenames, *links):
            if base == source and name in _REWRITTEN:
                continue
            _copy_entry(base / name, destination / name, in_workspace)


def _copy_entry(source: Path, target: Path, in_workspace: bool) -> None:
    mode = os.lstat(source).st_mode
    if stat.S_ISLNK(mode) and in_workspace:
        os.symlink(os.readlink(source), target)
    elif stat.S_ISFIFO(mode) and in_workspace:
        os.mkfifo(target, stat.S_IMODE(mode))  # never opened: a FIFO would block
    elif stat.S_ISREG(mode):
        opened = open_regular(source)
        if not isinstance(opened, int):
            raise ReuseError(f"{source} changed while it was being reused")
        with open(opened, "rb") as reading, open(target, "xb") as writing:
            shutil.copyfileobj(reading, writing)
        os.chmod(target, stat.S_IMODE(mode))
    else:
        raise ReuseError(f"{source} is not a regular file; a reused run is copied only from files")
