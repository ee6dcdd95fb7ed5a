"""Which script file serves a trial: per-trial and per-host cassette names and their fallbacks."""

from __future__ import annotations

from pathlib import Path

from pytest_skill_eval.modelserver.script import Script
from pytest_skill_eval.modelserver.scriptparse import load_script
from pytest_skill_eval.nodeids import DEFAULT_HOST


def cassette_file(
    directory: Path, group_id: str, variant: str, trial: int = 1, host: str = DEFAULT_HOST
) -> Path:
    """The file of exactly this trial: `<dir>/<group>/<variant>[@<host>][-trial<k>].yaml`.

    A host other than Pi is in the name, as in node ids: a recording holds one host's
    requests, so each host records its own.
    """
    suffix = "" if trial == 1 else f"-trial{trial}"
    on = "" if host == DEFAULT_HOST else f"@{host}"
    return directory / group_id / f"{variant}{on}{suffix}.yaml"


def script_path(
    directory: Path, group_id: str, variant: str, trial: int = 1, host: str = DEFAULT_HOST
) -> Path | None:
    """Return the script file for (group, variant, trial), or None when there is none.

    Trial 1 uses `<dir>/<group>/<variant>.yaml`; trial k > 1 uses
    `<dir>/<group>/<variant>-trial<k>.yaml`, falling back to the trial-1 file. Off Pi, the
    host's own files (`<variant>@<host>[-trial<k>].yaml`) come first; a script without a host
    in its name serves every host.
    """
    for candidate in dict.fromkeys(
        (
            cassette_file(directory, group_id, variant, trial, host),
            cassette_file(directory, group_id, variant, 1, host),
            cassette_file(directory, group_id, variant, trial),
            cassette_file(directory, group_id, variant),
        )
    ):
        if candidate.is_file():
            return candidate
    return None


def find_script(directory: Path, group_id: str, variant: str, trial: int = 1) -> Script | None:
    """Load the script for (group, variant, trial); None when no file exists."""
    path = script_path(directory, group_id, variant, trial)
    return None if path is None else load_script(path)
