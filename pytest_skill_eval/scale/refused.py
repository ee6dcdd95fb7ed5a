"""What a merge does not copy from a shard: the FIFOs, sockets and devices a subject left in
its workspace, which a run's manifest records by kind (they have no bytes). Each is named on
the merge's output and recorded in the merged seal (`refused`, beside the shard roots, so it is
sealed with them), where `verify` finds it: such an entry may be absent, and only it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..common.entries import recorded_path
from ..errors import SkillEvalError
from ..evidence import layout, shapes
from ..evidence.read import evidence_bytes, parse_evidence_json
from ..evidence.store import SPECIAL_DIGESTS, sha256_bytes
from .intake import MergeError, Shard, ShardGroup


@dataclass(frozen=True, slots=True)
class Refused:
    """An entry of an arrived group that is not copied: a FIFO, socket or device."""

    group: ShardGroup
    rel: str  # as its manifest keys it
    kind: str

    @property
    def record(self) -> dict[str, str]:
        """As the merged seal records it: `<result id>/groups/<group>/<entry>` and its kind."""
        result_id = self.group.path.parent.parent.name
        group = recorded_path(self.group.path.name)
        return {"path": f"{result_id}/{layout.GROUPS}/{group}/{self.rel}", "kind": self.kind}

    @property
    def line(self) -> str:
        """The merge's output line naming it."""
        return (
            f"refused: {self.group.path / self.rel} (a {self.kind} a subject left in its "
            "workspace; a merge copies regular files and links only)"
        )


def refusals(shards: Sequence[Shard]) -> dict[Path, list[Refused]]:
    """Each arrived group's entries its manifest records as a FIFO, socket or device, read
    from the manifest bytes its shard's root covers."""
    found: dict[Path, list[Refused]] = {}
    for shard in shards:
        for group in shard.groups:
            path = group.path / layout.MANIFEST
            try:
                data = evidence_bytes(path)
            except SkillEvalError as error:
                raise MergeError(str(error)) from None
            if sha256_bytes(data) != group.manifest:
                raise MergeError(
                    f"{path} changed while it was being merged: it is not the manifest its "
                    "shard's root was computed over; merge again"
                )
            files = parse_evidence_json(path, data, shapes.MANIFEST)["files"]
            found[group.path] = [
                Refused(group, rel, digest)
                for rel, digest in sorted(files.items())
                if digest in SPECIAL_DIGESTS
            ]
    return found
