"""What a selected item needs that is known before anything runs, checked at collection.

Every resource a selected variant declares (skills, context, runtime bundles, the Git ref of its
source) and every script its subject will be answered from: a problem found here is a
collection error naming the file, where in it, and the fix, before any subject spends anything.
Scripted tool calls to neutral tools with arguments the tool does not take, or to tools the
group does not offer, are warnings (a recorded cassette may hold one on purpose).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..common.entries import FileTooLargeError, read_inside
from ..definitions import DefinitionError, LoadedGroup
from ..definitions.skill_lint import SkillFile, SkillHost, lint_variant, parse_skill
from ..modelserver.script import ScriptError, undeclared_tool_calls
from ..modelserver.scriptparse import load_script
from ..modelserver.scriptpaths import cassette_file, script_path
from ..modelserver.tools import tool_argument_problems
from ..workspace import ResolvedSource, ResourceError, SourceResolver, git_entry_kind, git_file

# The neutral call that activates a skill: every host offers its own way to, whatever `tools`.
SKILL_CALL = "skill"
# A SKILL.md is read for its front matter: at most this many bytes.
SKILL_FILE_LIMIT = 1024 * 1024
_ROOT_FIX = "create it, correct the path, or pass the root it is relative to with --skill-eval-root"


@dataclass(slots=True)
class Findings:
    """Collection errors (one line each) and warnings of the selected items."""

    problems: list[str] = field(default_factory=list)
    undeclared: list[str] = field(default_factory=list)  # calls to tools the group lacks
    arguments: list[str] = field(default_factory=list)  # neutral calls with wrong arguments
    skills: list[str] = field(default_factory=list)  # what a host would cut, or the spec says
    # host → why it cannot run the group (a skill it would refuse or drop)
    refused: dict[str, str] = field(default_factory=dict)


def check_skills(
    loaded: LoadedGroup,
    variants: Iterable[str],
    root: Path,
    resolver: SourceResolver,
    hosts: Sequence[SkillHost],
) -> Findings:
    """The declared skills of the selected variants linted on `hosts` (`skill_lint`): what no
    host can run is a problem, what a host refuses its refusal, the rest warnings."""
    group, path = loaded.group, loaded.path
    findings = Findings()
    for variant in variants:
        environment = group.variants[variant]
        source = resolver.resolve(environment.source.kind, getattr(environment.source, "ref", None))
        skills = [read_skill(root, source, declared) for declared in environment.skills]
        pointers = {
            skill.skill: f"/variants/{variant}/skills/{i}" for i, skill in enumerate(skills)
        }
        for finding in lint_variant(skills, hosts):
            where = f"{path}: {pointers.get(finding.skill, f'/variants/{variant}/skills')}"
            line = finding.line(where)
            if finding.level == "error":
                findings.problems.append(line)
            elif finding.level == "refused" and finding.host is not None:
                reason = f"{finding.message} ({finding.skill}); {finding.fix}"
                findings.refused.setdefault(finding.host, reason)
            else:
                findings.skills.append(line)
    return findings


def read_skill(root: Path, source: ResolvedSource, declared: str) -> SkillFile:
    """The declared skill's SKILL.md as it will be snapshotted from `source`."""
    if source.kind == "git":
        return parse_skill(declared, git_file(source, f"{declared}/SKILL.md"))
    directory = os.path.realpath(Path(root) / declared)
    try:
        text = read_inside(directory, "SKILL.md", limit=SKILL_FILE_LIMIT)
    except FileTooLargeError:
        text = None
    return parse_skill(declared, text)


def check_resources(
    loaded: LoadedGroup, variants: Iterable[str], root: Path, resolver: SourceResolver
) -> list[str]:
    """One line per declared resource of the selected variants that a run could not snapshot."""
    group, path = loaded.group, loaded.path
    problems: list[str] = []
    for variant in variants:
        environment = group.variants[variant]
        at = f"/variants/{variant}"
        ref = getattr(environment.source, "ref", None)
        try:
            source = resolver.resolve(environment.source.kind, ref)
        except ResourceError as error:
            problems.append(str(DefinitionError(path, f"{at}/source/ref", str(error))))
            continue
        for i, declared in enumerate(environment.skills):
            problem = _resource(root, source, declared, "skill")
            if problem:
                problems.append(str(DefinitionError(path, f"{at}/skills/{i}", problem)))
        for i, declared in enumerate(environment.context):
            problem = _resource(root, source, declared, "context")
            if problem:
                problems.append(str(DefinitionError(path, f"{at}/context/{i}", problem)))
    # Bundles come from the working tree, whatever the variants' source.
    here = resolver.resolve("working-tree", None)
    for b, bundle in enumerate(group.runtime.extensions if group.runtime else ()):
        found = [
            (r, problem)
            for r, declared in enumerate(bundle.resources)
            if (problem := _resource(root, here, declared, "bundle"))
        ]
        for r, problem in found:
            pointer = f"/runtime/extensions/{b}/resources/{r}"
            problems.append(str(DefinitionError(path, pointer, problem)))
        entry = os.path.realpath(Path(root) / bundle.entry)
        if not found and not os.path.isfile(entry):
            message = f"runtime bundle entry {bundle.entry} is not a file; {_ROOT_FIX}"
            problems.append(str(DefinitionError(path, f"/runtime/extensions/{b}/entry", message)))
    return problems


def _resource(root: Path, source: ResolvedSource, declared: str, kind: str) -> str | None:
    """Why `declared` cannot be snapshotted from `source` (None: it can)."""
    if source.kind == "git":
        try:
            found = git_entry_kind(source, declared)
        except ResourceError as error:
            return str(error)
        where = f"Git commit {source.commit} (ref {source.ref!r})"
        if found is None:
            return f"declared {kind} {declared} is missing from {where}; commit it there"
        if found == "blob" and kind == "context":
            return None
        if found != "tree":
            return f"declared {kind} {declared} must be a directory in {where}"
        if kind == "skill" and git_entry_kind(source, f"{declared}/SKILL.md") != "blob":
            return f"declared skill {declared} has no SKILL.md in {where}; commit one there"
        return None
    canonical_root = os.path.realpath(root)
    try:
        real = os.path.realpath(Path(canonical_root) / declared, strict=True)
    except OSError:
        return f"declared {kind} {declared} does not exist under the definition root " + (
            f"{canonical_root}; {_ROOT_FIX}"
        )
    if os.path.commonpath([real, canonical_root]) != canonical_root:
        return (
            f"declared {kind} {declared} resolves to {real}, outside the definition root "
            f"{canonical_root}; copy it into the root instead of linking to it"
        )
    if os.path.isfile(real) and kind != "context":
        return f"declared {kind} {declared} is a file; declare the directory that contains it"
    if not os.path.isfile(real) and not os.path.isdir(real):
        return f"declared {kind} {declared} is not a regular file or directory"
    if kind == "skill" and not os.path.isfile(os.path.join(real, "SKILL.md")):
        return f"declared skill {declared} has no SKILL.md; add one at the top of the directory"
    return None


def check_scripts(
    loaded: LoadedGroup,
    units: Iterable[tuple[str, int, str]],
    cassettes: Path,
    record: str,
) -> Findings:
    """Validate the script each (variant, trial, host) unit's subject will be answered from.

    Replaying (`record` none), a missing script is an error; recording `once` keeps an existing
    cassette and appends to it, so that one must be valid; recording `all` replaces them all.
    """
    findings = Findings()
    group = loaded.group
    paths: dict[Path, None] = {}
    for variant, trial, host in units:
        if record == "all":
            continue
        if record == "once":
            exact = cassette_file(cassettes, group.id, variant, trial, host)
            if exact.is_file():
                paths[exact] = None
            continue
        found = script_path(cassettes, group.id, variant, trial, host)
        if found is None:
            expected = cassette_file(cassettes, group.id, variant, 1, host)
            findings.problems.append(
                f"{expected}: no script for group '{group.id}' {variant} trial {trial} "
                f"(host {host}) under --skill-eval-cassettes {cassettes}; write it, or record "
                "it with --skill-eval-record once"
            )
        else:
            paths[found] = None
    for path in paths:
        try:
            script = load_script(path)
        except ScriptError as error:
            findings.problems.append(f"{error} (group '{group.id}')")
            continue
        # `skill` is offered wherever skills are: each host's own way to activate one.
        for number, tool in undeclared_tool_calls(script, (*group.tools, SKILL_CALL)):
            findings.undeclared.append(
                f"{path}: interaction {number} calls the tool '{tool}', which group "
                f"'{group.id}' does not declare (tools: {', '.join(group.tools)}); "
                "the subject is not offered it, so that call will fail"
            )
        for number, tool, problem in tool_argument_problems(script):
            findings.arguments.append(
                f"{path}: interaction {number} calls '{tool}' with {problem} "
                "(docs/definitions.md, Neutral tools); the host will refuse the call"
            )
    return findings
