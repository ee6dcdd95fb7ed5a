"""The `context-text` evidence of a run: the observer's records, or the loopback server's.

Pi's observer extension records what the model received from inside Pi. Claude Code and Codex
have no such hook, but every request they make passes the loopback server, whose records are
the truth of what the model was sent; each request is given to the turn during which it
arrived. Both end as `context-observations.jsonl` in the observer's shape
(`modelserver.bodies`), redacted line by line, so grading reads one format whatever the host.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..common.entries import FileTooLargeError, read_inside
from ..evidence import layout, sha256_bytes
from ..evidence.observed import ContextArtifact
from ..evidence.read import MAX_JSON_BYTES
from ..evidence.redact import Counts, Redactor, Tally
from ..modelserver.bodies import observations

CONTEXT = layout.CONTEXT_OBSERVATIONS
# The observer's records are read whole to be redacted: at most this many bytes (as a JSON
# evidence file), beyond which they are not copied (the requests' own records still are).
OBSERVER_LIMIT = MAX_JSON_BYTES


def copy_observer_records(
    source: Path, variant_dir: Path, redactor: Redactor, tally: Tally
) -> None:
    """The observer's records (written outside the result while there are secrets to redact),
    redacted line by line, into the variant directory."""
    if not redactor:
        return
    # The subject can write in its home: a link or FIFO planted there is never followed.
    try:
        data = read_inside(source.parent, source.name, limit=OBSERVER_LIMIT)
    except FileTooLargeError:
        data = None
    if data is not None:
        _write_lines(io.BytesIO(data), variant_dir / CONTEXT, redactor, tally)


def turn_of_requests(count: int, turn_ends: Sequence[tuple[int, int]]) -> list[int]:
    """The turn of each of `count` requests: `turn_ends` holds (turn, requests received when
    it ended); requests after the last ended turn belong to the turn after it."""
    after = turn_ends[-1][0] + 1 if turn_ends else 1
    return [next((t for t, end in turn_ends if index < end), after) for index in range(count)]


def write_request_observations(
    requests: Sequence[Mapping[str, Any]],
    turn_ends: Sequence[tuple[int, int]],
    variant_dir: Path,
    redactor: Redactor,
    tally: Tally,
) -> None:
    """The observer-shaped records of the requests the loopback server received, once."""
    bodies = [request.get("body") for request in requests]
    turns = turn_of_requests(len(bodies), turn_ends)
    pairs = [(t, body) for t, body in zip(turns, bodies, strict=True) if isinstance(body, dict)]
    lines = [json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in observations(pairs)]
    _write_lines(lines, variant_dir / CONTEXT, redactor, tally)


def _write_lines(lines: Any, path: Path, redactor: Redactor, tally: Tally) -> None:
    counts: Counts = {}
    with open(path, "xb") as sink:
        for line in lines:
            clean, found = redactor.redact_json_line(line)
            sink.write(clean)
            for name, count in found.items():
                counts[name] = counts.get(name, 0) + count
    tally.add(CONTEXT, counts)


def context_artifact_of(variant_dir: Path) -> tuple[ContextArtifact | None, str | None]:
    """The run record's `contextObservationArtifact`, or why there is none."""
    path = variant_dir / CONTEXT
    if not path.is_file():
        return None, "the context observer produced no evidence"
    data = path.read_bytes()
    surfaces: dict[str, None] = {}
    count = 0
    # Split on "\n" only: JSON.stringify leaves U+2028 and friends unescaped inside a line.
    for number, line in enumerate(data.decode("utf-8", "replace").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            return None, f"context observation line {number} is not JSON"
        count += 1
        surfaces.setdefault(str(record.get("surface")), None)
    if count == 0:
        return None, None
    artifact: ContextArtifact = {
        "path": CONTEXT,
        "sha256": sha256_bytes(data),
        "bytes": len(data),
        "count": count,
        "surfaces": list(surfaces),
    }
    return artifact, None
