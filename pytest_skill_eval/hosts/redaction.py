"""The secrets of one subject run, and redacting the trees a subject leaves behind.

Built where the inherited environment is, so every host inherits the same redaction.
"""

from __future__ import annotations

import json
import os
import re
import secrets as tokens
from collections.abc import Mapping
from pathlib import Path

from ..common.entries import open_regular
from ..definitions import Group
from ..evidence.redact import Counts, Redactor, Tally, credential_values, marker
from .base import Endpoint

_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def subject_redactor(group: Group, endpoint: Endpoint, environment: Mapping[str, str]) -> Redactor:
    """Every secret of one run, by name: inherited values, installed credentials, upstream keys.

    Built where the inherited environment is, so every host inherits it.
    """
    secrets: dict[str, str] = {}
    if endpoint.live_models is not None:
        providers = endpoint.live_models.get("providers")
        for provider, entry in (providers if isinstance(providers, dict) else {}).items():
            key = entry.get("apiKey") if isinstance(entry, dict) else None
            # An apiKey that names a variable is read from it: only an inherited one is set.
            if isinstance(key, str) and key and not _VARIABLE_NAME.fullmatch(key):
                secrets[f"models.json:{provider}.apiKey"] = key
            if isinstance(entry, dict) and isinstance(entry.get("headers"), dict):
                secrets |= credential_values(entry["headers"], f"models.json:{provider}.headers")
    if endpoint.auth_json is not None:
        try:
            secrets |= credential_values(json.loads(endpoint.auth_json), "auth.json")
        except ValueError:
            secrets["auth.json"] = endpoint.auth_json.decode("utf-8", "replace").strip()
    secrets |= dict(endpoint.secrets)
    for key in group.effective_runtime.environment.inherit:
        if key in environment:
            secrets[key] = environment[key]
    return Redactor(secrets)


def markers(redactor: Redactor, content: bytes) -> Counts:
    """How many markers of each name `content` holds (for files made from redacted records)."""
    return {name: content.count(marker(name).encode("utf-8")) for name in redactor.secrets}


def redact_tree(redactor: Redactor, root: Path, variant_dir: Path, tally: Tally) -> None:
    """Redact every regular file below `root` in place; links, FIFOs, devices are never opened."""
    if not redactor:
        return
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(directory, d))]
        for name in filenames:
            path = Path(directory, name)
            opened = open_regular(path)
            if not isinstance(opened, int):
                continue
            with open(opened, "rb") as handle:
                data = handle.read()
            clean, counts = redactor.redact_bytes(data)
            if not counts:
                continue
            mode = path.stat().st_mode
            tmp = path.with_name(f".{name}.{tokens.token_hex(4)}.redacting")
            with open(tmp, "xb") as out:
                out.write(clean)
            os.chmod(tmp, mode & 0o7777)
            os.replace(tmp, path)
            tally.add(path.relative_to(variant_dir).as_posix(), counts)
