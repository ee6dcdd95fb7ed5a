"""Reading group and suite files: containment, JSON parsing, validation, suite resolution."""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import ValidationError

from .conversion import pointer_of, to_definition_error
from .errors import DefinitionError
from .fields import DefinitionModel
from .models import HOSTS, Group, HostFacts, Suite

M = TypeVar("M", bound=DefinitionModel)


@dataclass(frozen=True, slots=True)
class LoadedGroup:
    """One validated group file."""

    path: Path  # canonical path of the group file
    position: int  # one-based position in the suite (1 for a direct group)
    group: Group
    raw: dict[str, Any]  # the JSON object exactly as parsed
    sha256: str  # of the file bytes


@dataclass(frozen=True, slots=True)
class LoadedDefinition:
    """A loaded suite or direct group, with its groups in order."""

    path: Path  # canonical path of the file given
    kind: Literal["group", "suite"]
    id: str
    groups: tuple[LoadedGroup, ...]


@dataclass(frozen=True, slots=True)
class _Root:
    lexical: Path
    canonical: Path

    def lexically_contains(self, path: Path) -> bool:
        # A path spelled under either form of the root is lexically inside it.
        return path.is_relative_to(self.lexical) or path.is_relative_to(self.canonical)


class _Object(dict[str, Any]):
    """A parsed JSON object that remembers its first repeated key."""

    duplicate: str | None = None


class _NonStandardConstant(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    result = _Object()
    for key, value in pairs:
        if key in result and result.duplicate is None:
            result.duplicate = key
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise _NonStandardConstant(name)


def _absolute(path: Path) -> Path:
    return Path(os.path.normpath(os.path.abspath(path)))


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= char <= "\udfff" for char in text)


def _plain(value: Any, tokens: list[str | int], path: Path) -> Any:
    """Plain dicts and lists; reject duplicate keys, overflowing numbers, lone surrogates."""
    if isinstance(value, dict):
        if isinstance(value, _Object) and value.duplicate is not None:
            raise DefinitionError(
                path,
                pointer_of([*tokens, value.duplicate]),
                f"duplicate key '{value.duplicate}' in one object; JSON keys must be unique",
            )
        result = {}
        for key, item in value.items():
            if _has_surrogate(key):
                raise DefinitionError(
                    path, pointer_of(tokens), "an object key contains an unpaired surrogate"
                )
            result[key] = _plain(item, [*tokens, key], path)
        return result
    if isinstance(value, list):
        return [_plain(item, [*tokens, index], path) for index, item in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        raise DefinitionError(path, pointer_of(tokens), "number is too large to represent")
    if isinstance(value, str) and _has_surrogate(value):
        raise DefinitionError(
            path, pointer_of(tokens), "string contains an unpaired UTF-16 surrogate escape"
        )
    return value


def _read_json(canonical: Path, path: Path) -> tuple[Any, str]:
    """Parse a definition file; errors name `path` and, for syntax, line and column."""
    try:
        data = canonical.read_bytes()
    except OSError as error:
        raise DefinitionError(path, "", f"cannot read the file: {error.strerror}") from None
    digest = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise DefinitionError(
            path, "", f"is not UTF-8 text (invalid byte at offset {error.start}); save it as UTF-8"
        ) from None
    try:
        document = json.loads(text, object_pairs_hook=_pairs, parse_constant=_reject_constant)
        return _plain(document, [], path), digest
    except json.JSONDecodeError as error:
        message = (
            f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}; "
            "fix the JSON there"
        )
        raise DefinitionError(path, "", message) from None
    except _NonStandardConstant as error:
        message = f"invalid JSON: {error} is not a JSON value; use a number or null"
        raise DefinitionError(path, "", message) from None
    except RecursionError:
        raise DefinitionError(path, "", "invalid JSON: nested too deeply") from None


def _validate(model: type[M], document: Any, path: Path, hosts: Sequence[HostFacts]) -> M:
    try:
        return model.model_validate_json(json.dumps(document), context={HOSTS: tuple(hosts)})
    except ValidationError as error:
        raise to_definition_error(error, path, document, model) from None
    except (TypeError, ValueError, RecursionError) as error:
        raise DefinitionError(path, "", f"is not a JSON document: {error}") from None


def parse_group(document: Any, path: Path, hosts: Sequence[HostFacts]) -> Group:
    """Validate one parsed group document against the registered `hosts`; `path` is only used
    in error messages."""
    return _validate(Group, document, path, hosts)


def parse_suite(document: Any, path: Path, hosts: Sequence[HostFacts]) -> Suite:
    """Validate one parsed suite document against the registered `hosts`; `path` is only used
    in error messages."""
    return _validate(Suite, document, path, hosts)


def _contained_file(lexical: Path, root: _Root, report: Path, pointer: str) -> Path:
    """The canonical path of a definition file after lexical and canonical containment."""
    if not root.lexically_contains(lexical):
        raise DefinitionError(
            report,
            pointer,
            f"{lexical} is outside the definition root {root.lexical}; keep definition files "
            "inside the root or choose another root",
        )
    try:
        canonical = lexical.resolve(strict=True)
    except FileNotFoundError:
        raise DefinitionError(
            report,
            pointer,
            f"definition file {lexical} does not exist; correct the path or create the file",
        ) from None
    except (OSError, RuntimeError) as error:
        raise DefinitionError(report, pointer, f"cannot resolve {lexical}: {error}") from None
    if not canonical.is_relative_to(root.canonical):
        raise DefinitionError(
            report,
            pointer,
            f"{lexical} resolves through a symlink to {canonical}, outside the definition root "
            f"{root.canonical}",
        )
    if not canonical.is_file():
        raise DefinitionError(report, pointer, f"{lexical} is not a regular file")
    return canonical


def _check_fixture(group: Group, path: Path, root: _Root) -> None:
    """Refuse at load time a fixture that could only fail when its group runs.

    The fixture is resolved against the definition root (not the group file), like the
    snapshot that copies it; it must be a directory whose canonical path stays inside the root.
    """
    declared = group.fixture
    if declared is None:
        return
    lexical = Path(os.path.normpath(root.lexical / declared))
    if not root.lexically_contains(lexical):
        raise DefinitionError(
            path,
            "/fixture",
            f"fixture {declared} is outside the definition root {root.canonical}; declare a "
            "directory inside the root",
        )
    try:
        canonical = lexical.resolve(strict=True)
    except FileNotFoundError:
        raise DefinitionError(
            path,
            "/fixture",
            f"fixture {declared} does not exist (resolved against the definition root "
            f"{root.canonical}); create it, correct the path, or pass the root it is relative "
            "to with --skill-eval-root",
        ) from None
    except (OSError, RuntimeError) as error:
        raise DefinitionError(
            path, "/fixture", f"cannot resolve fixture {declared}: {error}"
        ) from None
    if not canonical.is_relative_to(root.canonical):
        raise DefinitionError(
            path,
            "/fixture",
            f"fixture {declared} resolves through a symlink to {canonical}, outside the "
            f"definition root {root.canonical}; copy the fixture into the root instead of "
            "linking to it",
        )
    if canonical.is_file():
        raise DefinitionError(
            path,
            "/fixture",
            f"fixture {declared} is a file, not a directory; declare the directory that "
            "contains it",
        )
    if not canonical.is_dir():
        raise DefinitionError(
            path,
            "/fixture",
            f"fixture {declared} is not a directory (FIFOs, sockets and devices cannot be "
            "snapshotted); declare a directory",
        )


def _root(root: Path) -> _Root:
    lexical = _absolute(root)
    try:
        canonical = lexical.resolve(strict=True)
    except (OSError, RuntimeError):
        raise DefinitionError(lexical, "", "the definition root does not exist") from None
    if not canonical.is_dir():
        raise DefinitionError(lexical, "", "the definition root is not a directory")
    return _Root(lexical, canonical)


def _kind(document: Any, path: Path) -> str:
    if not isinstance(document, dict):
        raise DefinitionError(
            path, "", 'must be a JSON object with "kind": "group" or "kind": "suite"'
        )
    if "kind" not in document:
        raise DefinitionError(path, "/kind", "missing required field 'kind'; use group or suite")
    kind = document["kind"]
    if kind not in ("group", "suite") or not isinstance(kind, str):
        raise DefinitionError(path, "/kind", f"must be 'group' or 'suite' (got {json.dumps(kind)})")
    return kind


def load_definition(path: Path, root: Path, hosts: Sequence[HostFacts]) -> LoadedDefinition:
    """Load and validate a suite or group file inside `root` (relative paths are from the cwd)
    against the registered `hosts` (`hosts.registry.registered()`)."""
    definition_root = _root(root)
    lexical = _absolute(path)
    canonical = _contained_file(lexical, definition_root, lexical, "")
    document, digest = _read_json(canonical, lexical)
    if _kind(document, lexical) == "group":
        group = parse_group(document, lexical, hosts)
        _check_fixture(group, lexical, definition_root)
        loaded = LoadedGroup(canonical, 1, group, document, digest)
        return LoadedDefinition(canonical, "group", group.id, (loaded,))
    suite = parse_suite(document, lexical, hosts)
    return LoadedDefinition(
        canonical,
        "suite",
        suite.id,
        _load_suite_groups(suite, canonical, lexical, definition_root, hosts),
    )


def _load_suite_groups(
    suite: Suite, canonical: Path, report: Path, root: _Root, hosts: Sequence[HostFacts]
) -> tuple[LoadedGroup, ...]:
    groups: list[LoadedGroup] = []
    first: dict[str, int] = {}
    for index, reference in enumerate(suite.groups):
        pointer = f"/groups/{index}"
        # Resolved from the suite file's (canonical) directory, like the reference.
        lexical = Path(os.path.normpath(canonical.parent / reference))
        group_path = _contained_file(lexical, root, report, pointer)
        document, digest = _read_json(group_path, lexical)
        if isinstance(document, dict) and document.get("kind") == "suite":
            raise DefinitionError(
                lexical, "/kind", "a suite entry must be a group file; suites cannot nest"
            )
        group = parse_group(document, lexical, hosts)
        _check_fixture(group, lexical, root)
        if group.id in first:
            earlier = groups[first[group.id]].path
            raise DefinitionError(
                report,
                pointer,
                f"group id '{group.id}' of {lexical} is already used by /groups/"
                f"{first[group.id]} ({earlier}); group ids must be unique in a suite",
            )
        first[group.id] = index
        groups.append(LoadedGroup(group_path, index + 1, group, document, digest))
    return tuple(groups)
