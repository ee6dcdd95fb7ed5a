"""The node-id grammar of items and sub-results, in one place for collection, JUnit and scheduling.

path::group-id[variant]                  one variant of one group (one trial) on Pi
path::group-id[variant-trialK]           the same when several trials run
path::group-id[variant@host-trialK]      the same on a host other than Pi
path::group-id::check-id[variant…]       a check of that item (one JUnit row each)
path::group-id::comparison-id[comparison…]
"""

from __future__ import annotations

import re

# The host node ids, evidence directories and cassettes leave unnamed: the first registered host
# (`hosts/registry.py`; a test keeps the two equal).
DEFAULT_HOST = "pi"

VARIANT_ITEM = re.compile(
    r"^(?P<group>.+)\[(?P<variant>baseline|candidate)"
    r"(?:@(?P<host>[a-z][a-z0-9]*(?:-[a-z0-9]+)*?))?"
    r"(?P<trial>-trial(?P<number>\d+))?\]$"
)


def item_name(
    group_id: str, variant: str, trial: int, trials: int, host: str = DEFAULT_HOST
) -> str:
    """`group-id[variant]`, `[variant-trialK]` when several trials run, `@host` off Pi."""
    on = f"@{host}" if host != DEFAULT_HOST else ""
    suffix = f"-trial{trial}" if trials > 1 else ""
    return f"{group_id}[{variant}{on}{suffix}]"


def parse_item_id(nodeid: str) -> tuple[str, str, int, str] | None:
    """`path::group[variant@host-trialK]` → (group id, variant, trial, host), None otherwise."""
    match = VARIANT_ITEM.match(nodeid)
    if match is None or "::" not in match["group"]:
        return None
    return (
        match["group"].rsplit("::", 1)[1],
        match["variant"],
        int(match["number"] or 1),
        match["host"] or DEFAULT_HOST,
    )


def scope_of(nodeid: str) -> str:
    """`file::group[variant@host-trialK]` → `file::group@host-trialK`; one group on one host
    in one trial is one scope, and any other item is its own scope."""
    match = VARIANT_ITEM.match(nodeid)
    if match is None:
        return nodeid
    on = f"@{match['host']}" if match["host"] else ""
    return match["group"] + on + (match["trial"] or "")


def subresult_name(item_name: str, group_id: str, variant: str, name: str, kind: str) -> str:
    """`group-id::name[params]` of a check or comparison of the item called `item_name`.

    It keeps pytest's node-id grammar (params last) and gives JUnit one row per check, named
    `check[variant]` under the group; a comparison's params start with `comparison`.
    """
    params = item_name[len(group_id) + 1 : -1]
    if kind == "comparison":
        params = "comparison" + params[len(variant) :]
    return f"{group_id}::{name}[{params}]"
