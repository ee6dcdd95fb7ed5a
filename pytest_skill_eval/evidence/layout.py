"""Every file a result leaves, its fallback name, and the `<result>/groups/<id>/<variant>` shape.

A fallback name is where a record goes when its canonical file could not be written; readers
look for both (see `evidence.read`), so a name exists here once and nowhere else.
"""

from __future__ import annotations

from pathlib import Path

# A result directory (one trial).
INVOCATION = "invocation.json"
SUMMARY = "summary.json"
SEAL = "seal.json"  # written last: the hash tree over the result (`evidence.store.write_seal`)
GROUPS = "groups"
# An aggregate directory (beside the trials it aggregates).
AGGREGATE = "aggregate.json"

# Beyond one machine: a shard directory holds its record and one directory per planned result.
SHARD = "shard.json"
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

# The files a result directory holds beside `groups/`.
RESULT_FILES = (INVOCATION, SUMMARY, SEAL)
# The name of the seal leaf that lists the groups the invocation planned.
PLANNED_GROUPS = "planned-groups"
# Where a run record may be, the fallback first: it records why the canonical file is not it.
RUN_FILES = (RUN_FALLBACK, RUN)
# Where a group record may be, canonical first.
GROUP_FILES = (GROUP, GROUP_FALLBACK)


def groups_dir(result: Path) -> Path:
    """`<result>/groups`."""
    return result / GROUPS


def group_dir(result: Path, group_id: str) -> Path:
    """`<result>/groups/<id>`."""
    return result / GROUPS / group_id


def variant_dir(result: Path, group_id: str, variant: str) -> Path:
    """`<result>/groups/<id>/<variant>`."""
    return result / GROUPS / group_id / variant


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


def is_safe_id(identity: str) -> bool:
    """Whether a group or trial id read from evidence stays one directory level down."""
    return identity not in ("", ".", "..") and "/" not in identity and "\\" not in identity
