"""Which noise floor decides what never gates a run, recorded in the run's invocation.json.

Apart from `noise_floor.py` (what a floor measures) because choosing one verifies aggregates
(`admission.py`), which re-aggregates their trials (`trials.py`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..definitions import VARIANTS
from ..evidence import layout, read
from ..evidence.locate import aggregates
from ..evidence.records import FlakyGate, InvocationRecord
from .admission import (
    DUPLICATE,
    OTHER_INPUTS,
    UNVERIFIED,
    Sealed,
    SetAside,
    differences,
    run_identities,
)
from .noise_floor import flaky_keys

NOT_ONE_RUN = "not the trials of one invocation (a floor is all the trials of one run)"


@dataclass(slots=True)
class Recorder:
    """What each trial's invocation.json says of the noise floor, the floor chosen once."""

    results_dir: Path
    identical: bool  # a noise-floor run: its trials' arms are identical
    chosen: dict[str, FlakyGate | None] = field(default_factory=dict)  # by `fingerprint`

    def record(self, invocation: InvocationRecord) -> None:
        """A noise-floor trial says `identicalArms` (its baseline is no baseline); any other
        run names the floor that decides (`deciding`): its aggregate id, the checks that
        therefore never gate (`flakyGate`), its trials by id and seal root, and the floors it
        set aside."""
        if self.identical:
            invocation["identicalArms"] = True
            return
        inputs = fingerprint(invocation)
        if inputs not in self.chosen:
            self.chosen[inputs] = deciding(self.results_dir, inputs)
        floor = self.chosen[inputs]
        if floor is not None:
            invocation["flakyGate"] = floor.copy()


def fingerprint(record: Mapping[str, Any]) -> str:
    """What a floor must share with the run it decides for: its definitions' content (ids,
    groups and sha256s; not where they lie) and pinned Git commits, as an aggregate or an
    invocation records them (`inputs.fingerprints`)."""

    def content(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: content(v) for k, v in value.items() if k != "path"}
        return [content(v) for v in value] if isinstance(value, list) else value

    found = {"definitions": content(record.get("definitions")), "pins": record.get("pins")}
    return json.dumps(found, sort_keys=True)


def deciding(results_dir: Path, inputs: str) -> FlakyGate | None:
    """The `flakyGate` of a run of `inputs` (`fingerprint`) under `results_dir`, or None.

    The floor that decides is the newest aggregate with a noise floor whose trials and record
    verify, of the same inputs, over all the trials of one invocation (`_one_invocation`), and
    not a duplicate: its subject runs (`admission.py`) all among another floor's (a copy of an
    older floor under a newer id).
    Floors newer than it that were set aside are named, with why.
    """
    candidates = _floors(results_dir)
    aside = SetAside("noise floor", "aggregate")
    admitted: dict[str, frozenset[frozenset[str]]] = {}
    reasons: dict[str, tuple[str, str]] = {}
    for candidate, data in candidates:
        inputs_of = read.mapping(data.get("inputs"))
        found = inputs_of.get("fingerprints")
        first = found[0] if isinstance(found, list) and found else {}
        # Of other inputs by its own record, read before it is verified: that claim can keep a
        # floor out (it verifies and is of other inputs, or it does not verify), never let one in.
        if inputs_of.get("identical") is not True or fingerprint(read.mapping(first)) != inputs:
            reasons[candidate.name] = (OTHER_INPUTS, candidate.name)
        elif differences(candidate):
            reasons[candidate.name] = (UNVERIFIED, candidate.name)
        elif not _one_invocation(candidate):
            reasons[candidate.name] = (NOT_ONE_RUN, candidate.name)
        else:
            admitted[candidate.name] = _floor_runs(candidate)
    for name, runs in admitted.items():
        within = [
            other
            for other, theirs in admitted.items()
            if other != name and runs <= theirs and (runs != theirs or other < name)
        ]
        if within:
            reasons[name] = (DUPLICATE, f"{name} (of {min(within)})")
    chosen = max((n for n in admitted if n not in reasons), default=None)
    for name, (reason, label) in sorted(reasons.items()):
        if chosen is None or name > chosen:
            aside.add(reason, label)
    if chosen is None and not aside:
        return None
    floor = dict(candidates)[results_dir / chosen] if chosen is not None else {}
    trials = (
        [Sealed.of(t) for t in read.aggregate_trial_dirs(results_dir / chosen)] if chosen else []
    )
    return {
        "noiseFloor": chosen,
        "checks": flaky_keys(read.mapping(floor.get("noiseFloor"))),
        "trials": [{"id": t.id, "root": f"sha256:{t.root}"} for t in trials],
        "setAside": aside.lines(),
    }


def _one_invocation(aggregate_dir: Path) -> bool:
    """Whether a floor's trials are every trial of one invocation, in order: trial k of N for
    k = 1..N, all with the invocation's nonce (from before it, the trial numbers alone)."""
    trials = read.aggregate_trial_dirs(aggregate_dir)
    invocations = [read.mapping(read.load_invocation(trial)) for trial in trials]
    selections = [read.mapping(invocation.get("selection")) for invocation in invocations]
    numbers = [(selection.get("trial"), selection.get("trials")) for selection in selections]
    shared = {i.get("nonce") for i in invocations}
    return numbers == [(k, len(trials)) for k in range(1, len(trials) + 1)] and len(shared) == 1


def _floors(results_dir: Path) -> list[tuple[Path, Mapping[str, Any]]]:
    """Every aggregate under `results_dir` that records a noise floor (an unreadable one, with
    nothing), in id order (ids begin with their UTC creation time)."""
    found: list[tuple[Path, Mapping[str, Any]]] = []
    for candidate in reversed(aggregates(results_dir)):
        try:
            data: Mapping[str, Any] = read.load_aggregate(candidate)
        except read.ReadError:
            data = {"noiseFloor": None}
        if "noiseFloor" in data:
            found.append((candidate, data))
    return found


def _floor_runs(aggregate_dir: Path) -> frozenset[frozenset[str]]:
    """The subject runs of a floor's trials, each by what it is known by."""
    runs: set[frozenset[str]] = set()
    for trial in read.aggregate_trial_dirs(aggregate_dir):
        summary = read.summary_or_none(trial)
        for group in summary["groups"] if summary else []:
            group_dir = layout.record_dir(trial, group)
            runs.update(filter(None, (run_identities(trial, group_dir / v) for v in VARIANTS)))
    return frozenset(runs)
