"""An operator's own setup planted around a run, and the check that none of it reached the
evidence."""

from __future__ import annotations

from pathlib import Path

from tests.support.files import write


def invisible_skill(skills: Path, name: str) -> None:
    """A skill `name` in the operator's skills folder `skills`: a subject must never see it."""
    write(
        skills / name / "SKILL.md",
        f"---\nname: {name}\ndescription: Must stay invisible.\n---\nx\n",
    )


def assert_in_no_file(directory: Path, secret: str) -> None:
    """No file below `directory` holds `secret`."""
    __tracebackhide__ = True
    for path in directory.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
