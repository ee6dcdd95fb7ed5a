"""Run several `skill-eval` commands in one child process, as a user would run them one by one.

`python -m tests.support.cli_batch COMMANDS.json` runs each argv list of the file through
`pytest_skill_eval.commands.cli.main` with its own stdout and stderr, and prints one JSON list: per
command its exit status, what it printed, and the traceback of any exception that escaped
`main` (None when none did). One interpreter for many commands keeps a fuzz test fast; the
caller's subprocess timeout guards against a hang.

`review` checks the Pi binary's version before it reads anything; here that check is answered
once from the pinned version, since a review of a group without questions never starts Pi.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from pytest_skill_eval.commands import cli
from pytest_skill_eval.hosts.pi.binary import PiBinary
from pytest_skill_eval.hosts.pi.registration import PINNED


def _pinned_pi(path: Path) -> PiBinary:
    return PiBinary(path, PINNED)


def run_all(commands: list[list[str]]) -> list[dict[str, Any]]:
    """Each command's exit status, stdout, stderr and escaped traceback."""
    cli.check_pi = _pinned_pi  # type: ignore[attr-defined]
    outcomes = []
    for argv in commands:
        out, err = io.StringIO(), io.StringIO()
        escaped: str | None = None
        code: int | None = None
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except BaseException:
                escaped = traceback.format_exc()
        outcomes.append(
            {
                "argv": argv,
                "code": code,
                "stdout": out.getvalue(),
                "stderr": err.getvalue(),
                "traceback": escaped,
            }
        )
    return outcomes


if __name__ == "__main__":
    given = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    print(json.dumps(run_all(given)))
