"""`--skill-eval-resume RESULT`: complete an interrupted result into a new one.

The groups RESULT finished (a group record and a manifest its files match, no variant
`infrastructure-failed` or `cancelled`) are copied byte for byte into the new result, each named
in its `invocation.json` by the sha256 of its manifest (and RESULT's seal root, when it has one);
the new result then runs only the rest. Nothing of RESULT is written, and nothing it finished is
run or graded again: the copied group records are the new result's, under its own seal.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..definitions import VARIANTS, LoadedGroup
from ..errors import SkillEvalError
from ..evidence import layout, read, sealed_root, verified
from ..evidence.copy import copy_group_tree
from ..evidence.iteration import RESUMED_FROM, attempts_of, carried_groups
from ..evidence.locate import is_result, results
from ..evidence.records import CarriedGroup, InvocationRecord
from ..evidence.seal import planned_groups
from ..evidence.store import sha256_file, verify_group
from .inputs import changed_inputs

# Run states that say a group's run did not finish: the group runs again when resumed.
UNFINISHED_RUNS = frozenset({"infrastructure-failed", "cancelled"})
# The invocation.json field naming what a resumed result carried over.
FIELD = RESUMED_FROM


class ResumeError(SkillEvalError):
    """--skill-eval-resume names no result, or one that cannot be completed as asked."""


def locate(given: str, results_dir: Path, new_result: Path) -> Path:
    """The result `given` names: a directory, a result id in `results_dir`, or `latest` (the
    newest result there other than `new_result`, finished or not)."""
    if given == "latest":
        found = [p for p in reversed(results(results_dir)) if p != new_result and _is_result(p)]
        if not found:
            raise ResumeError(
                f"--skill-eval-resume latest: no result in {results_dir} to resume; pass the "
                "result's directory or id"
            )
        return found[-1]
    path = Path(given).expanduser()
    for candidate in (path, results_dir / given):
        if _is_result(candidate):
            return candidate.resolve()
    raise ResumeError(
        f"--skill-eval-resume {given}: not a result (no {layout.INVOCATION} in {path} nor in "
        f"{results_dir / given}); pass a result directory, its id, or latest"
    )


def _is_result(path: Path) -> bool:
    """A result that can be resumed: one with its groups."""
    return is_result(path) and layout.groups_dir(path).is_dir()


# (group id, host, variant) → the inputs that variant would run from now (`variant_inputs`).
CurrentInputs = Callable[[str, str, str], Mapping[str, str]]


def current_inputs(
    inputs: Callable[[LoadedGroup, str, int], dict[str, str]] | None,
    groups: Mapping[str, LoadedGroup],
) -> CurrentInputs | None:
    """Per group id, host and variant, the inputs it runs from in this invocation (its
    `variant_inputs` on that host); None when this invocation records none."""
    if inputs is None:
        return None
    found = inputs

    def now(group_id: str, host: str, variant: str) -> dict[str, str]:
        loaded = groups[group_id]
        return found(replace(loaded, group=loaded.group.on_host(host)), variant, 1)

    return now


def carry_over(
    given: str | None,
    results_dir: Path,
    new_result: Path,
    invocation: InvocationRecord,
    inputs: CurrentInputs | None = None,
) -> None:
    """Copy what the result `given` finished into `new_result`, and say so in `invocation`
    (before it is written). Nothing happens without `given`."""
    if given is None:
        return
    try:
        _carry_over(given, results_dir, new_result, invocation, inputs)
    except SkillEvalError:
        # Refused before the new result was recorded: it holds nothing of its own yet.
        shutil.rmtree(new_result, ignore_errors=True)
        raise


def _carry_over(
    given: str,
    results_dir: Path,
    new_result: Path,
    invocation: InvocationRecord,
    inputs: CurrentInputs | None,
) -> None:
    source = locate(given, results_dir, new_result)
    earlier = read.load_invocation(source)
    if earlier is None:
        raise ResumeError(f"--skill-eval-resume: {source / layout.INVOCATION} cannot be read")
    _same_invocation(source, earlier, invocation)
    root = sealed_root(source)
    if (source / layout.SEAL).exists():
        problems = verified.seal_problems(source)
        if problems:
            raise ResumeError(
                f"--skill-eval-resume: {source} does not match its seal ({problems[0]}); only "
                "evidence that verifies is carried over: run without --skill-eval-resume"
            )
    planned = _planned(invocation)
    selected = set(planned_groups(invocation))
    carried: list[CarriedGroup] = []
    groups = layout.groups_dir(source).iterdir()
    # A link among the groups is no evidence of this result: never followed, never carried.
    for group_dir in sorted(p for p in groups if p.is_dir() and not p.is_symlink()):
        if not _finished(group_dir):
            continue
        name = group_dir.name
        group_id, host = layout.split_group_dir_name(name)
        if group_id not in selected:
            continue  # not selected this time: neither run nor carried over
        if _planned(earlier).get(group_id) != planned.get(group_id):
            raise ResumeError(
                f"--skill-eval-resume: group {group_id}'s definition is not the one {source} "
                "ran; a resumed result holds one invocation's groups: run without "
                "--skill-eval-resume"
            )
        for variant in VARIANTS:
            found = read.read_run(group_dir / variant)
            now = inputs(group_id, host, variant) if inputs is not None else None
            changed = _changed_input(now, found[1]) if found and now is not None else None
            if changed is not None:
                raise ResumeError(
                    f"--skill-eval-resume: group {group_id}'s {variant} in {source} ran from "
                    f"{changed} other than now; a resumed result holds one invocation's "
                    "inputs: restore them, or run without --skill-eval-resume"
                )
        manifest = sha256_file(group_dir / layout.MANIFEST)
        target = layout.groups_dir(new_result) / name
        try:
            copy_group_tree(group_dir, target, fifos=True)
        except SkillEvalError as error:
            raise ResumeError(
                f"--skill-eval-resume: {error}; run without --skill-eval-resume"
            ) from None
        copied = sha256_file(target / layout.MANIFEST)
        if copied != manifest or verify_group(target):
            raise ResumeError(
                f"--skill-eval-resume: {group_dir} changed while it was being copied; resume again"
            )
        carried.append({"group": name, "manifest": manifest})
    invocation["resumedFrom"] = {
        "id": source.name,
        "path": str(source),
        "root": root,
        "groups": carried,
    }


def _changed_input(now: Mapping[str, str], run: Mapping[str, Any]) -> str | None:
    """The inputs a run recorded that are not the same now (`run/inputs.py`, as reuse and the
    gate decide it), named for the user; None when none changed."""
    if "inputs" not in run:
        return "inputs it did not record (a run from before runs recorded their inputs)"
    changed = changed_inputs(now, run.get("inputs"))
    return ", ".join(changed) if changed else None


def _finished(group_dir: Path) -> bool:
    """Whether a group directory is finished: its record, its manifest, files that match it,
    and every run one that ended (a group that does not verify is a refusal, not a re-run)."""
    record = read.group_record(group_dir)
    if record is None or not (group_dir / layout.GROUP).is_file():
        return False
    if not (group_dir / layout.MANIFEST).is_file():
        return False
    problems = verify_group(group_dir)
    if problems:
        raise ResumeError(
            f"--skill-eval-resume: {group_dir} does not match its manifest ({problems[0]}); "
            "only evidence that verifies is carried over: run without --skill-eval-resume"
        )
    return not UNFINISHED_RUNS & set(record.get("variants", {}).values())


def _planned(invocation: Mapping[str, Any]) -> dict[str, str]:
    """Each group id of an invocation record and the sha256 of its definition."""
    found: dict[str, str] = {}
    for definition in invocation.get("definitions") or []:
        for group in definition.get("groups") or []:
            found[str(group.get("id"))] = str(group.get("sha256"))
    return found


def _same_invocation(
    source: Path, earlier: Mapping[str, Any], invocation: Mapping[str, Any]
) -> None:
    """Refuse to complete a result from an invocation that would not run its groups alike."""
    was, now = earlier.get("selection") or {}, invocation.get("selection") or {}
    if int(now.get("trials") or 1) != 1:
        raise ResumeError(
            "--skill-eval-resume completes one result: drop --skill-eval-trials (resume each "
            "trial's result on its own)"
        )
    differs = [
        what
        for what, before, after in (
            (
                "the provider (--skill-eval-cassettes, --skill-eval-record)",
                earlier.get("provider"),
                invocation.get("provider"),
            ),
            ("the hosts (--skill-eval-host)", earlier.get("hosts"), invocation.get("hosts")),
            ("the variant (--skill-eval-variant)", was.get("variant"), now.get("variant")),
        )
        if before != after
    ]
    pins_before, pins_now = earlier.get("pins") or {}, invocation.get("pins") or {}
    if any(pins_before[ref] != pins_now[ref] for ref in set(pins_before) & set(pins_now)):
        differs.append("the Git commits its sources resolve to")
    if differs:
        raise ResumeError(
            f"--skill-eval-resume: this invocation differs from the one that ran {source} in "
            f"{differs[0]}; resume with the same options, or run without --skill-eval-resume"
        )


def item_properties(group_dir: Path, record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """JUnit properties of a variant's item: its attempts when retried, its source result
    when carried over."""
    found: list[tuple[str, str]] = []
    attempts = attempts_of(record)
    if attempts > 1:
        found.append(("attempts", str(attempts)))
    try:
        invocation = read.load_invocation(group_dir.parent.parent)
    except SkillEvalError:
        invocation = None  # a shard's results have none; a damaged one is verify's to say
    source = carried_groups(invocation).get(group_dir.name)
    if source is not None:
        found.append(("resumed-from", source))
    return found
