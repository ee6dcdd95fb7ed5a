"""`--skill-eval-fail-on significant-regression`: the suite's comparisons, gated together.

Reads the sealed grades of an invocation's trials (never writes evidence), gives every
comparison (per host) a p-value for "pass-to-fail beats fail-to-pass" — the exact one-sided
always-valid sequential one, whatever the trials, so that no re-run can lower it — and
rejects with Holm's procedure across all of them at alpha (`significance.py`).

Each comparison pools this invocation's trials with every earlier sealed trial in the same
results directory whose group definition and recorded inputs (`run/inputs.py`) are the same
(`pooled`): re-running a failing suite only adds data to the same test, so re-running until
green cannot manufacture a pass.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SkillEvalError
from ..evidence import layout, read
from ..evidence.seal import verify_result
from ..run.inputs import INPUT_NAMES
from .significance import holm, sequential_regression_p


@dataclass(frozen=True, slots=True)
class Tested:
    """One comparison of the suite with its raw and Holm-adjusted p-values."""

    name: str  # group/comparison, with "on <host>" where the suite ran on several hosts
    fail_to_pass: int
    pass_to_fail: int
    p: float
    adjusted: float
    rejected: bool
    trials: int = 0  # the trials that graded it, pooled across invocations
    invocations: int = 0  # how many invocations those trials came from

    def line(self) -> str:
        """The one line naming a rejected comparison."""
        return (
            f"significant regression: {self.name}: pass-to-fail {self.pass_to_fail}, "
            f"fail-to-pass {self.fail_to_pass}, Holm-adjusted p={self.adjusted:.4g} "
            f"(pooled over {self.trials} trial(s) of {self.invocations} invocation(s))"
        )


def definitions(trial_dir: Path) -> tuple[dict[str, str], bool]:
    """Per group id, its definition's sha256 as the trial's invocation.json recorded it, and
    whether the trial is the first of its invocation (`selection.trial` restarts at 1)."""
    try:
        invocation = read.load_invocation(trial_dir)
    except read.ReadError:
        return {}, True
    if invocation is None:
        return {}, True
    out: dict[str, str] = {}
    for definition in invocation.get("definitions", []):
        for group in definition.get("groups", []):
            out[str(group["id"])] = str(group["sha256"])
    selection = invocation.get("selection")
    first = not isinstance(selection, Mapping) or selection.get("trial") in (None, 1)
    return out, first


@dataclass(frozen=True, slots=True)
class Pool:
    """The trials the gate tests: earlier sealed ones of the same definitions, then these."""

    trials: list[Path]
    skipped: list[str]  # earlier results whose seal does not verify, by id

    def note(self) -> str | None:
        """The one terminal line naming the earlier results left out, or None."""
        if not self.skipped:
            return None
        return (
            f"significant-regression gate: {len(self.skipped)} earlier result(s) not pooled: "
            f"their seal does not verify (skill-eval verify names what changed): "
            f"{', '.join(self.skipped)}"
        )


def pooled(results_dir: Path, trial_dirs: Sequence[Path]) -> Pool:
    """Every earlier sealed, verifying, non-noise-floor trial under `results_dir`, then ours.

    Which of their groups count is `sequences`' choice (same definition and inputs).

    Result ids begin with their UTC creation time, so sorting by name is time order. Results
    still running or never finished (no seal) are not evidence yet and are passed over; a
    sealed result that does not verify is skipped and named.
    """
    current = {path.resolve() for path in trial_dirs}
    earlier: list[Path] = []
    skipped: list[str] = []
    candidates = sorted(results_dir.iterdir()) if results_dir.is_dir() else []
    for candidate in candidates:
        if candidate.resolve() in current or not (candidate / layout.INVOCATION).is_file():
            continue
        if not (candidate / layout.SEAL).is_file():
            continue
        invocation = _verified_invocation(candidate)
        if invocation is None:
            skipped.append(candidate.name)
            continue
        if invocation.get("identicalArms") is True:
            continue
        earlier.append(candidate)
    return Pool([*earlier, *trial_dirs], skipped)


def _verified_invocation(result: Path) -> Mapping[str, Any] | None:
    """A sealed result's invocation record when `verify` finds nothing changed, else None.

    A damaged seal, or records this version cannot read, count as not verifying.
    """
    try:
        if verify_result(result):
            return None
        read.load_summary(result)
        return read.load_invocation(result)
    except (SkillEvalError, OSError):
        return None


Key = tuple[str, str, str]


def _ran_from(run: Mapping[str, Any]) -> dict[str, Any]:
    """What a variant ran from: every input it recorded (`run/inputs.py`, by the names reuse
    and resume compare, so all three agree on what determines a run).

    A run from before runs recorded their inputs falls back to its resources, marked so that it
    never pools with a run that recorded them.
    """
    recorded = run.get("inputs")
    if isinstance(recorded, Mapping):
        return {"inputs": {name: recorded.get(name) for name in INPUT_NAMES}}
    return {"unrecorded": _resources(run)}


def _resources(run: Mapping[str, Any]) -> dict[str, Any]:
    """What a variant ran from, by content: its fixture, skills, context, source and runtime.

    Paths are left out (each trial materialises into its own directory); git sources keep
    their commit, working-tree ones the content hashes of what they copied.
    """
    resources = read.mapping(run.get("resources"))
    fixture = read.mapping(resources.get("fixture"))
    source = {k: v for k, v in read.mapping(resources.get("source")).items() if k != "root"}
    return {
        "fixture": fixture.get("sha256"),
        "skills": [read.mapping(s).get("sha256") for s in resources.get("skills") or []],
        "context": [read.mapping(c).get("sha256") for c in resources.get("context") or []],
        "source": source,
        "runtime": resources.get("runtime"),
        "delivery": read.mapping(resources.get("contextDelivery")).get("sha256"),
    }


def run_origins(result_dir: Path, group_dir: Path) -> set[str]:
    """Where each arm's subject ran (`<result>/<run>`): a reused run names its origin."""
    origins = set()
    for variant in ("baseline", "candidate"):
        try:
            found = read.read_run(group_dir / variant)
        except read.ReadError:
            found = None
        marker = read.mapping(found[1].get("reused")) if found is not None else {}
        here = group_dir.relative_to(result_dir) / variant / layout.RUN
        origins.add(str(marker.get("origin") or f"{result_dir.name}/{here.as_posix()}"))
    return origins


def identity(result_dir: Path, group: Mapping[str, Any], definition: str | None) -> str:
    """A group's definition sha256 and what its variants ran from (`_ran_from`), as one sha256.

    Two trials of a group pool only when this is equal: an edited definition, a changed
    skill, fixture, host version, model or any other input starts a new test.
    """
    variants: dict[str, Any] = {}
    for variant in sorted(read.mapping(group.get("variants"))):
        try:
            found = read.read_run(layout.record_dir(result_dir, group) / variant)
        except read.ReadError:
            found = None
        variants[variant] = _ran_from(found[1]) if found is not None else None
    text = json.dumps({"definition": definition, "variants": variants}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def identities(trial_dirs: Sequence[Path]) -> dict[tuple[str, str], set[str]]:
    """Per (group, host) of this invocation, the identities its trials ran with (`identity`):
    one per trial at most, as a trial may replay its own script (`<variant>-trial<k>`)."""
    out: dict[tuple[str, str], set[str]] = {}
    for result_dir in trial_dirs:
        recorded, _ = definitions(result_dir)
        summary = read.summary_or_none(result_dir)
        for group in summary["groups"] if summary else []:
            key = (str(group["id"]), layout.record_host(group))
            out.setdefault(key, set()).add(identity(result_dir, group, recorded.get(key[0])))
    return out


def sequences(
    trial_dirs: Sequence[Path], same: Mapping[tuple[str, str], set[str]] | None = None
) -> tuple[dict[Key, list[str | None]], dict[Key, set[int]]]:
    """Per (group, host, comparison), its transition in each trial that graded it, in order.

    With `same` (per group and host, its `identity`s), a trial's group counts only when it ran
    from one of those same definitions and inputs; the second mapping names, per comparison, the
    invocations (numbered in order) its transitions came from.
    """
    out: dict[Key, list[str | None]] = {}
    sources: dict[Key, set[int]] = {}
    counted: dict[Key, set[str]] = {}  # the runs each comparison's pairs were made of
    invocation = 0
    for result_dir in trial_dirs:
        recorded, first = definitions(result_dir)
        invocation += 1 if first else 0
        summary = read.summary_or_none(result_dir)
        for group in summary["groups"] if summary else []:
            group_id, host = str(group["id"]), layout.record_host(group)
            if same is not None and identity(
                result_dir, group, recorded.get(group_id)
            ) not in same.get((group_id, host), set()):
                continue
            group_dir = layout.record_dir(result_dir, group)
            grade = read.read_grade(group_dir, group)
            arms = run_origins(result_dir, group_dir)
            for comparison in grade.get("comparisons", []) if grade is not None else []:
                key = (group_id, host, str(comparison["id"]))
                if arms & counted.setdefault(key, set()):
                    continue  # a reused run already counted in a pair: no new observation
                counted[key] |= arms
                out.setdefault(key, []).append(comparison.get("transition"))
                sources.setdefault(key, set()).add(invocation)
    return out, sources


def evaluate(trial_dirs: Sequence[Path], *, alpha: float, pool: Pool | None = None) -> list[Tested]:
    """Every comparison of the trials, tested and Holm-adjusted together.

    With `pool` (`pooled`), each comparison pools the earlier trials of the same group
    definition before this invocation's, in time order.
    """
    same = identities(trial_dirs) if pool is not None else None
    trials = pool.trials if pool is not None else list(trial_dirs)
    found, sources = sequences(trials, same)
    several_hosts = len({host for _, host, _ in found}) > 1
    names, counts, p_values = [], [], []
    for key, seen in found.items():
        group, host, comparison = key
        b, c = seen.count("fail-to-pass"), seen.count("pass-to-fail")
        names.append(f"{group}/{comparison}" + (f" on {host}" if several_hosts else ""))
        counts.append((b, c, len(seen), len(sources[key])))
        # Always the always-valid test: any gated run may be re-run and pooled, and the exact
        # test of one look could fail a run its own re-run would then pass (2^-6 alone, but
        # 0.069 once a green trial joins): only a p-value valid over every look never rises.
        p_values.append(sequential_regression_p(seen))
    adjusted, rejected = holm(p_values, alpha)
    return [
        Tested(name, b, c, p, q, r, n, k)
        for name, (b, c, n, k), p, q, r in zip(
            names, counts, p_values, adjusted, rejected, strict=True
        )
    ]


def rejected(trial_dirs: Sequence[Path], *, alpha: float, pool: Pool | None = None) -> list[str]:
    """One line per comparison the gate rejects (empty: the gate passes)."""
    tested = evaluate(trial_dirs, alpha=alpha, pool=pool)
    return [t.line() for t in tested if t.rejected]
