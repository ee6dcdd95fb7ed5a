"""Every file a result leaves, its fallback name, and the `<result>/groups/<id>/<variant>` shape.

A group run on a host other than Pi lives in `<result>/groups/<id>@<host>/`, so one invocation
can hold the same group on several hosts; Pi's layout is the one every older result has.

A fallback name is where a record goes when its canonical file could not be written; readers
look for both (see `evidence.read`), so a name exists here once and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..nodeids import DEFAULT_HOST as DEFAULT_HOST  # the host a group directory leaves unnamed

# A result directory (one trial).
INVOCATION = "invocation.json"
SUMMARY = "summary.json"
SEAL = "seal.json"  # written last: the hash tree over the result (`evidence.seal.write_seal`)
GROUPS = "groups"
# An aggregate directory (beside the trials it aggregates).
AGGREGATE = "aggregate.json"

# Beyond one machine: a shard directory holds its record and one directory per planned result.
SHARD = "shard.json"
SHARD_SEAL = "shard-seal.json"  # written last: the hash tree over the shard's output
SHARDS_SUFFIX = ".shards"

# A group directory.
DEFINITION = "definition.json"
GRADE = "deterministic-grade.json"
GRADE_FALLBACK = "deterministic-grade-error.json"
GROUP = "group.json"
GROUP_FALLBACK = "group-error.json"
MANIFEST = "manifest.json"
RESOURCES = "resources"
SEMANTIC_GRADE = "semantic-grade.json"  # advisory, replaceable, never in a manifest
REVIEW = "review"  # advisory, replaceable, never in a manifest
# The only names below a group directory that are not canonical evidence (`skill-eval verify`).
ADVISORY = frozenset({REVIEW, SEMANTIC_GRADE})

# A variant directory.
RUN = "run.json"
RUN_FALLBACK = "run-error.json"
TRANSCRIPT = "transcript.json"
FINAL = "final.md"
EVENTS = "events.jsonl"
STDERR = "stderr.log"
MODEL_REQUESTS = "model-requests.jsonl"
CONTEXT_OBSERVATIONS = "context-observations.jsonl"
CONTEXT_DELIVERY = "context-delivery.json"  # under the variant's resources/
# The skills the host listed to the model, each against its declared SKILL.md.
OFFERED_SKILLS = "offered-skills.json"
# What the host's own skill loader warned of the declared skills (a host that reports them).
SKILL_WARNINGS = "skill-warnings.json"
# `--skill-eval-retries`: each earlier attempt of a variant, whole, in `<variant>/attempts/<n>/`.
ATTEMPTS = "attempts"
# A streamed file (events, stderr) whose writing failed (a full disk) is renamed to this, so
# that what was cut short never lies under the name of a whole file.
PARTIAL_SUFFIX = ".partial"
EVENTS_PARTIAL = EVENTS + PARTIAL_SUFFIX
STDERR_PARTIAL = STDERR + PARTIAL_SUFFIX

# The files a result directory holds beside `groups/`.
RESULT_FILES = (INVOCATION, SUMMARY, SEAL)
# The name of the seal leaf that lists the groups the invocation planned.
PLANNED_GROUPS = "planned-groups"
# The name of the merged seal's leaf over the roots of the shards it merged.
SHARD_ROOTS = "shard-roots"
# Where a run record may be, the fallback first: it records why the canonical file is not it.
RUN_FILES = (RUN_FALLBACK, RUN)
# Where a group record may be, canonical first.
GROUP_FILES = (GROUP, GROUP_FALLBACK)


def groups_dir(result: Path) -> Path:
    """`<result>/groups`."""
    return result / GROUPS


def group_dir_name(group_id: str, host: str = DEFAULT_HOST) -> str:
    """`<id>` on Pi, `<id>@<host>` on any other host."""
    return group_id if host == DEFAULT_HOST else f"{group_id}@{host}"


def split_group_dir_name(name: str) -> tuple[str, str]:
    """`<id>[@<host>]` → (id, host); the inverse of `group_dir_name`."""
    group_id, at, host = name.rpartition("@")
    return (group_id, host) if at and group_id and host else (name, DEFAULT_HOST)


def group_dir(result: Path, group_id: str, host: str = DEFAULT_HOST) -> Path:
    """`<result>/groups/<id>` (Pi) or `<result>/groups/<id>@<host>`."""
    return result / GROUPS / group_dir_name(group_id, host)


def record_host(record: Mapping[str, Any]) -> str:
    """The host a group record ran on: its `host` field, which only a non-Pi group carries."""
    host = record.get("host")
    return host if isinstance(host, str) and host else DEFAULT_HOST


def record_dir(result: Path, record: Mapping[str, Any]) -> Path:
    """The directory of the group a summarised group record describes."""
    return group_dir(result, str(record.get("id")), record_host(record))


def variant_dir(result: Path, group_id: str, variant: str, host: str = DEFAULT_HOST) -> Path:
    """`<result>/groups/<id>[@<host>]/<variant>`."""
    return group_dir(result, group_id, host) / variant


def attempt_dir(variant: Path, attempt: int) -> Path:
    """`<variant>/attempts/<n>`: the evidence of the variant's n-th (earlier) attempt."""
    return variant / ATTEMPTS / str(attempt)


def run_file(group: Path, variant: str) -> Path:
    """The canonical run record of a variant of the group directory `group`."""
    return group / variant / RUN


def summary_file(result: Path) -> Path:
    """`<result>/summary.json`."""
    return result / SUMMARY


def seal_file(result: Path) -> Path:
    """`<result>/seal.json`."""
    return result / SEAL


def invocation_file(result: Path) -> Path:
    """`<result>/invocation.json`."""
    return result / INVOCATION


def aggregate_file(aggregate: Path) -> Path:
    """`<aggregate>/aggregate.json`."""
    return aggregate / AGGREGATE


def shard_dir(runs: Path, plan_id: str, index: int, count: int, run_id: str) -> Path:
    """`<runs>/<plan id>.shards/<K>-of-<N>.<run id>`: one run of shard K (a re-run is a sibling)."""
    return runs / f"{plan_id}{SHARDS_SUFFIX}" / f"{index}-of-{count}.{run_id}"


def shard_file(shard: Path) -> Path:
    """`<shard>/shard.json`, written last: a shard directory without it is incomplete."""
    return shard / SHARD


def shard_seal_file(shard: Path) -> Path:
    """`<shard>/shard-seal.json`, written after `shard.json`: the shard's root hash."""
    return shard / SHARD_SEAL


def is_safe_id(identity: str) -> bool:
    """Whether a group or trial id read from evidence stays one directory level down."""
    return identity not in ("", ".", "..") and "/" not in identity and "\\" not in identity


def is_safe_host(host: str) -> bool:
    """Whether a host name read from evidence keeps `<id>@<host>` one directory level down."""
    return is_safe_id(host) and "@" not in host


# Where a definition root keeps its results by default: `<root>/.skill-eval/runs/<id>`.
STATE_DIR = ".skill-eval"
RUNS = "runs"


def runs_dir(root: Path) -> Path:
    """The default results directory of a definition root."""
    return root / STATE_DIR / RUNS


# Every input a run is determined by (a run record's `inputs`), in the order a refusal names them.
INPUT_NAMES = (
    "definition",
    "fixture",
    "skills",
    "context",
    "commits",
    "host",
    "host-version",
    "model",
    "provider",
    "script",
    "runtime",
)
