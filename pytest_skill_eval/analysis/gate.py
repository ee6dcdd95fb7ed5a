"""`--skill-eval-fail-on significant-regression`: the suite's comparisons, gated together.

Reads the sealed grades of an invocation's trials (never writes evidence), gives every
comparison (per host) a p-value for "pass-to-fail beats fail-to-pass" — the exact one-sided
always-valid sequential one, whatever the trials, so that no re-run can lower it — and
rejects with Holm's procedure across all of them at alpha (`significance.py`).

Each comparison pools this invocation's trials with every earlier sealed trial in the same
results directory whose group definition and recorded inputs (`run/inputs.py`) are the same
(`pooled`): re-running a failing suite only adds data to the same test, so re-running until
green cannot manufacture a pass. Only results whose seal verifies are pooled, and each subject
run counts once however many copies of it lie there (`admission.py`); the gate names the results
it pooled, by id and seal root, and the ones it set aside.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..common.wording import counted
from ..definitions import VARIANTS
from ..evidence import layout, read, verified
from ..evidence.layout import INPUT_NAMES
from ..evidence.locate import results
from .admission import (
    DUPLICATE,
    OTHER_INPUTS,
    UNVERIFIED,
    Sealed,
    SetAside,
    differences,
    group_runs,
    labels,
    run_identities,
)
from .significance import holm, sequential_regression_p

SUBJECT = "significant-regression gate"


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
    selection = invocation.get("selection")
    first = not isinstance(selection, Mapping) or selection.get("trial") in (None, 1)
    return _recorded(invocation), first


def _recorded(invocation: Mapping[str, Any]) -> dict[str, str]:
    """Per group id, its definition's sha256 as an invocation record holds it."""
    out: dict[str, str] = {}
    for definition in invocation.get("definitions", []):
        for group in definition.get("groups", []):
            out[str(group["id"])] = str(group["sha256"])
    return out


@dataclass(frozen=True, slots=True)
class Pool:
    """The trials the gate tests: earlier admitted ones of the same inputs, then these."""

    trials: list[Path]
    set_aside: SetAside = field(default_factory=lambda: SetAside(SUBJECT))

    def lines(self) -> list[str]:
        """The terminal lines naming what was pooled (ids and seal roots) and what was not."""
        pooled_line = (
            f"{self.set_aside.subject}: pooled {counted(len(self.trials), 'result')}: "
            f"{labels(map(Sealed.of, self.trials))}"
        )
        return [pooled_line, *self.set_aside.lines()]


@read.read_fresh()
def pooled(
    results_dir: Path,
    trial_dirs: Sequence[Path],
    subject: str = SUBJECT,
    *,
    earlier_only: bool = False,
) -> Pool:
    """Every earlier admitted trial under `results_dir` (`admission.py`), then ours.

    Results are taken in the order they ran (`_in_order`). Results
    still running or never finished (no seal) are not evidence yet and are passed over, as are
    noise-floor trials; a sealed result is set aside and named when its seal does not verify,
    when none of its groups ran from this invocation's definitions and inputs (`identity`), and
    when every run of those groups was already counted (a copy under another id).
    `earlier_only` leaves out results that ran after these trials (a view deciding again what
    the run decided).
    """
    current = {path.resolve() for path in trial_dirs}
    before = min(map(_in_order, trial_dirs), default=None) if earlier_only else None
    same = identities(trial_dirs)
    earlier: list[Path] = []
    aside = SetAside(subject)
    counted_in: dict[str, str] = {}  # a run's identity → the result that first counted it
    candidates = [
        candidate
        for candidate in reversed(results(results_dir, sealed=True))
        if candidate.resolve() not in current and (before is None or _in_order(candidate) < before)
    ]
    admitted: list[tuple[Path, _Read]] = []
    ours = _definitions_of(trial_dirs, same)
    for candidate in candidates:
        found = _ruled_out(candidate, ours) or _admitted(candidate)
        if found is None:
            aside.add(UNVERIFIED, candidate.name)
        else:
            admitted.append((candidate, found))
    for candidate, found in sorted(admitted, key=lambda pair: pair[1].order):
        if found.identical_arms:
            continue
        runs = _same_runs(found, same)
        if runs is None:
            aside.add(OTHER_INPUTS, candidate.name)
            continue
        first = {counted_in[i] for run in runs for i in run if i in counted_in}
        if runs and all(run & counted_in.keys() for run in runs):
            aside.add(DUPLICATE, f"{candidate.name} (of {', '.join(sorted(first))})")
            continue
        for known in runs:
            counted_in.update(dict.fromkeys(known - counted_in.keys(), candidate.name))
        earlier.append(candidate)
    return Pool([*earlier, *trial_dirs], aside)


def _definitions_of(
    trial_dirs: Sequence[Path], same: Mapping[tuple[str, str], set[str]]
) -> dict[str, set[str | None]]:
    """Per group id this invocation gates, the definition sha256s its trials recorded."""
    ours: dict[str, set[str | None]] = {group_id: set() for group_id, _ in same}
    for trial_dir in trial_dirs:
        recorded, _ = definitions(trial_dir)
        for group_id, found in ours.items():
            found.add(recorded.get(group_id))
    return ours


def _ruled_out(candidate: Path, ours: Mapping[str, set[str | None]]) -> _Read | None:
    """An earlier result that no group of this invocation may pool with, by its
    `invocation.json` alone (read before the result is verified), as a `_Read` holding no
    group; None: it may match, and is verified before anything of it counts.

    A group pools only when its `identity`, which covers the definition sha256 recorded
    there, is one of this invocation's. What the unverified file claims can only keep a result
    out, never let one in: ruled out, it is of other inputs if it verifies, and counts for
    nothing if it does not (that file is sealed). A file that cannot be read rules out nothing.
    """
    try:
        invocation = read.load_invocation(candidate)
        recorded = _recorded(invocation) if invocation is not None else None
    except (read.ReadError, KeyError):
        return None  # verified, and named for what is wrong with it
    if invocation is None or recorded is None:
        return None
    if any(recorded.get(group_id) in found for group_id, found in ours.items()):
        return None
    return _Read(_ran_at(candidate, invocation), invocation.get("identicalArms") is True, ())


def _in_order(result: Path) -> tuple[str, int, str]:
    """The order results ran in: their ids begin with their UTC creation second, and the trials
    of one invocation (created in the same second or the next) follow their trial numbers."""
    return _ran_at(result, read.mapping(read.load_invocation(result)))


def _ran_at(result: Path, invocation: Mapping[str, Any]) -> tuple[str, int, str]:
    """`_in_order` from the result's invocation record."""
    trial = read.mapping(invocation.get("selection")).get("trial")
    return result.name[: len("YYYYmmddHHMMSS")], trial if isinstance(trial, int) else 0, result.name


def _identical_arms(result: Path) -> bool:
    """Whether a result is a noise-floor trial (its baseline is no baseline): never pooled."""
    invocation = read.load_invocation(result)
    return invocation is not None and invocation.get("identicalArms") is True


def _same_runs(
    found: _Read, same: Mapping[tuple[str, str], set[str]]
) -> list[frozenset[str]] | None:
    """What each run of a result's groups that ran from the definitions and inputs of `same`
    is known by (`admission.run_identities`), or None when none of its groups did."""
    runs: list[frozenset[str]] | None = None
    for group_id, host, ran_from, known in found.groups:
        if ran_from in same.get((group_id, host), set()):
            runs = [*(runs or []), *(frozenset(run) for run in known if run)]
    return runs


@dataclass(frozen=True, slots=True)
class _Read:
    """What the gate reads of a verified earlier result: when it ran (`_in_order`), whether it
    is a noise-floor trial, and per summarised group its id, host, `identity` and what each of
    its variants' runs is known by (`admission.run_identities`)."""

    order: tuple[str, int, str]
    identical_arms: bool
    groups: tuple[tuple[str, str, str, tuple[tuple[str, ...], ...]], ...]

    def text(self) -> str:
        """One line of JSON, remembered with the result's verification."""
        return json.dumps([self.order, self.identical_arms, self.groups])

    @classmethod
    def parse(cls, text: str) -> _Read | None:
        """What `text` remembered, or None when it is not what `text()` writes."""
        try:
            (name, trial, identity_), arms, groups = json.loads(text)
            return cls(
                (str(name), int(trial), str(identity_)),
                bool(arms),
                tuple(
                    (str(g), str(h), str(i), tuple(tuple(map(str, run)) for run in runs))
                    for g, h, i, runs in groups
                ),
            )
        except (ValueError, TypeError):
            return None


def _read(result: Path) -> _Read:
    """What the gate reads of a result (`_Read`), from its files."""
    recorded, _ = definitions(result)
    summary = read.summary_or_none(result)
    groups = []
    for group in summary["groups"] if summary else []:
        group_id, group_dir = str(group["id"]), layout.record_dir(result, group)
        ran_from = identity(result, group, recorded.get(group_id))
        known = tuple(tuple(sorted(run_identities(result, group_dir / v))) for v in VARIANTS)
        groups.append((group_id, layout.record_host(group), ran_from, known))
    return _Read(_in_order(result), _identical_arms(result), tuple(groups))


@read.read_fresh()
def _admitted(result: Path) -> _Read | None:
    """What the gate reads of an earlier result when it verifies (`admission.differences`),
    else None. It is remembered with the result's verification (`evidence/verified.py`), so a
    result unchanged since is neither verified nor read again."""
    stats = verified.stat_digest(result)
    kept = verified.remembered(result, stats)
    found = _Read.parse(kept) if kept else None
    if found is not None:
        return found
    if kept is None and differences(result):
        return None
    found = _read(result)
    verified.remember(result, stats, found.text())
    return found


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
    seen: dict[Key, set[str]] = {}  # the runs each comparison's pairs were made of
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
            grade = read.read_grade(layout.record_dir(result_dir, group), group)
            arms = group_runs(result_dir, group)
            for comparison in grade.get("comparisons", []) if grade is not None else []:
                key = (group_id, host, str(comparison["id"]))
                if arms & seen.setdefault(key, set()):
                    continue  # a run already counted in a pair (reused, copied): not new
                seen[key] |= arms
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
