"""`skill-eval lint PATH…`: the declared skills checked before any spend, as collection checks
them (`definitions/skill_lint.py`), usable as a pre-commit hook.

A PATH is a skill directory, its `SKILL.md`, or a definition file (every variant's skills, on
its declared host). Each finding is one line on stdout; the exit status is 0 when there is none,
1 when there are findings, 2 for a PATH that is none of these (or an unknown option).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..common.entries import FileTooLargeError, read_inside
from ..common.wording import counted
from ..definitions import VARIANTS, DefinitionError, load_definition
from ..definitions.skill_lint import lint_variant, parse_skill
from ..hosts.registry import names, registered, registration_for
from ..run.preflight import SKILL_FILE_LIMIT, check_skills
from ..workspace import ResourceError, SourceResolver

SKILL_FILE = "SKILL.md"
DEFINITION_SUFFIXES = (".json",)


class LintUsageError(ValueError):
    """A PATH `skill-eval lint` cannot check."""


def arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Declare `skill-eval lint` on its `parser`."""
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a skill directory, its SKILL.md, or a definition file (its variants' skills)",
    )
    parser.add_argument(
        "--host",
        action="append",
        choices=names(),
        dest="hosts",
        help="check this host's rules (repeatable; default: every host for a skill, the "
        "declared host for a definition)",
    )


def run(args: argparse.Namespace, root: Path) -> int:
    """Run `skill-eval lint`: findings on stdout, a count on stderr."""
    lines: list[str] = []
    try:
        for given in args.paths:
            lines += lint_path(Path(given), root, tuple(args.hosts or ()))
    except LintUsageError as error:
        print(f"skill-eval lint: {error}", file=sys.stderr)
        return 2
    for line in lines:
        print(line)
    if lines:
        print(f"skill-eval lint: {counted(len(lines), 'finding')}", file=sys.stderr)
        return 1
    return 0


def lint_path(path: Path, root: Path, hosts: tuple[str, ...]) -> list[str]:
    """One line per finding of the skill or definition at `path`."""
    if path.is_dir() and (path / SKILL_FILE).is_file():
        return _lint_skill(path, hosts)
    if path.name == SKILL_FILE and path.is_file():
        return _lint_skill(path.parent, hosts)
    if path.suffix in DEFINITION_SUFFIXES and path.is_file():
        return _lint_definition(path, root, hosts)
    raise LintUsageError(
        f"{path}: not a skill directory (with a {SKILL_FILE}), a {SKILL_FILE} or a definition "
        "file; pass one of those"
    )


def _lint_skill(directory: Path, hosts: tuple[str, ...]) -> list[str]:
    """The findings of one skill directory on `hosts` (default: every host)."""
    folder = directory.resolve().name
    try:
        text = read_inside(directory.resolve(), SKILL_FILE, limit=SKILL_FILE_LIMIT)
    except FileTooLargeError:
        text = None
    skill = parse_skill(str(directory), text, folder)
    chosen = [registration_for(h) for h in hosts] if hosts else list(registered())
    where = str(directory / SKILL_FILE)
    return [finding.line(where) for finding in lint_variant([skill], chosen)]


def _lint_definition(path: Path, root: Path, hosts: tuple[str, ...]) -> list[str]:
    """The findings of every group's variants in a definition, as collection finds them."""
    try:
        loaded = load_definition(path, root, registered())
    except DefinitionError as error:
        return [str(error)]
    resolver = SourceResolver(root)
    lines: list[str] = []
    for group in loaded.groups:
        chosen = hosts or (group.group.effective_runtime.host,)
        try:
            found = check_skills(
                group, VARIANTS, root, resolver, [registration_for(h) for h in chosen]
            )
        except ResourceError as error:
            lines.append(f"{path}: {error}")
            continue
        lines += found.problems
        lines += [f"{path}: cannot run on {host}: {why}" for host, why in found.refused.items()]
        lines += found.skills
    return lines
