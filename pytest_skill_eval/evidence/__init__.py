"""Evidence: the layout of a result, writing it once, its states, its record shapes, reading it."""

from __future__ import annotations

from . import layout, shapes
from .read import DamagedEvidenceError, ReadError
from .seal import (
    looks_like_root_hash,
    parse_root,
    sealed_root,
    unfinished,
    verify_result,
    verify_seal,
    write_seal,
)
from .states import (
    FAILING_RUN_STATES,
    RUN_STATES,
    batch_state,
    group_state,
    run_failed,
)
from .store import (
    EvidenceError,
    atomic_write,
    create_result_dir,
    entry_digest,
    evidence_files,
    json_bytes,
    new_result_id,
    read_json,
    sha256_bytes,
    sha256_file,
    utc_now,
    verify_group,
    write_json_once,
    write_manifest,
    write_once,
)

MANIFEST = layout.MANIFEST

__all__ = [
    "FAILING_RUN_STATES",
    "MANIFEST",
    "RUN_STATES",
    "DamagedEvidenceError",
    "EvidenceError",
    "ReadError",
    "atomic_write",
    "batch_state",
    "create_result_dir",
    "entry_digest",
    "evidence_files",
    "group_state",
    "json_bytes",
    "layout",
    "looks_like_root_hash",
    "new_result_id",
    "parse_root",
    "read_json",
    "run_failed",
    "sealed_root",
    "sha256_bytes",
    "sha256_file",
    "shapes",
    "unfinished",
    "utc_now",
    "verify_group",
    "verify_result",
    "verify_seal",
    "write_json_once",
    "write_manifest",
    "write_once",
    "write_seal",
]
