"""Which sealed results may move a decision of the noise floor or the significance gate.

A result counts only when `skill-eval verify` finds nothing changed in it (its seal, and for an
aggregate each trial's seal and its own record, verify), when it ran from the same inputs as the
run it decides, and once per subject run. A run is known by the `nonce` its record was sealed
with (a random id made when the record was first written; a reused run keeps its origin's), so a
copy of a result under another id is the same observation, counted once, whatever its id. A run
recorded before runs had a nonce is known by the sha256 of its sealed record (a byte copy is the
same run) and by where it ran, `<result>/<run>` (which a reuse of it names as its origin).

What is set aside is named, one line per reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..common.wording import counted
from ..definitions import VARIANTS
from ..errors import SkillEvalError
from ..evidence import layout, read, sealed_root, verified
from ..evidence.store import sha256_file

UNVERIFIED = "seal does not verify (skill-eval verify names what changed)"
OTHER_INPUTS = "other inputs (a changed definition or input is another test)"
DUPLICATE = "duplicate (the same subject runs, counted once)"


@read.read_fresh()
def differences(target: Path) -> list[str]:
    """What `skill-eval verify` finds changed in a result or an aggregate; empty: it verifies.

    Records this version cannot read count as a difference too. A result that verified
    before and has not changed since is not read again (`evidence/verified.py`).
    """
    from .trials import verify_aggregate  # which imports the noise floor, which reads evidence

    try:
        if read.is_aggregate(target):
            return verify_aggregate(target, verified.problems)[1]
        return verified.problems(target)
    except (SkillEvalError, OSError) as error:
        return [str(error)]


def run_identities(result_dir: Path, variant_dir: Path) -> frozenset[str]:
    """What a variant's subject run is known by, wherever a copy of it lies (empty: no run)."""
    try:
        found = read.read_run(variant_dir)
    except read.ReadError:
        return frozenset()
    if found is None:
        return frozenset()
    name, run = found
    nonce = run.get("nonce")
    if isinstance(nonce, str) and nonce:
        return frozenset({f"nonce:{nonce}"})
    # From before nonces: its sealed record's content, and where it ran.
    marker = read.mapping(run.get("reused"))
    origin = marker.get("origin")
    if not isinstance(origin, str):
        origin = (
            f"{result_dir.name}/{(variant_dir / layout.RUN).relative_to(result_dir).as_posix()}"
        )
    known = {f"sha256:{sha256_file(variant_dir / name)}", f"origin:{origin}"}
    if isinstance(marker.get("sha256"), str):
        known.add(f"sha256:{marker['sha256']}")
    return frozenset(known)


def group_runs(result_dir: Path, record: Mapping[str, object]) -> frozenset[str]:
    """The identities of both arms' runs of one summarised group of a result."""
    group_dir = layout.record_dir(result_dir, record)
    return frozenset().union(*(run_identities(result_dir, group_dir / v) for v in VARIANTS))


def result_runs(result_dir: Path) -> frozenset[str]:
    """The identities of every subject run a finished result holds."""
    summary = read.summary_or_none(result_dir)
    groups = summary["groups"] if summary else []
    return frozenset().union(*(group_runs(result_dir, g) for g in groups))


@dataclass(frozen=True, slots=True)
class Sealed:
    """A result that decided, by its id and its seal root (what CI printed for it)."""

    id: str
    root: str | None

    @classmethod
    def of(cls, result_dir: Path) -> Sealed:
        """The result at `result_dir` by its id and current seal root."""
        return cls(result_dir.name, sealed_root(result_dir))

    def label(self) -> str:
        """`<id> sha256:<root>` (`unsealed` without a seal)."""
        return f"{self.id} " + (f"sha256:{self.root}" if self.root else "unsealed")


def labels(results: Iterable[Sealed]) -> str:
    """Results as `<id> sha256:<root>`, comma-separated."""
    return ", ".join(result.label() for result in results)


@dataclass(slots=True)
class SetAside:
    """The results a decision left out, by reason, in the order they were met."""

    subject: str  # what decided without them: "noise floor", "significant-regression gate"
    noun: str = "result"
    reasons: dict[str, list[str]] = field(default_factory=dict)

    def add(self, reason: str, name: str) -> None:
        """Leave out `name` (an id, or `<id> (of <id>)` for a duplicate) for `reason`."""
        self.reasons.setdefault(reason, []).append(name)

    def __bool__(self) -> bool:
        return bool(self.reasons)

    def lines(self) -> list[str]:
        """One line per reason, naming each result left out for it."""
        return [
            f"{self.subject}: set aside {counted(len(names), self.noun)}: {reason}: "
            + ", ".join(names)
            for reason, names in self.reasons.items()
        ]
