"""The skill author's loop of `docs/iterating.md`, run as the page writes it.

The commands are read from the page (its first indented block): each `pytest --skill-eval
suite.json …` line runs the suite of a real root through the plugin on a real host, each
`# edit <path>` line edits that file. Between them, what the page promises is checked: the
edited group runs (its baseline copied), the other is referenced by seal, a group left unrun
stays unchanged in the next iteration, and a run where nothing is affected passes.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from pytest_skill_eval.evidence import layout, locate, read
from tests.support.files import read_json, write
from tests.support.roots import (
    FAST_HOST,
    body_group,
    make_root,
    on_fast_host,
    variant,
    write_answer,
)
from tests.support.runs import run_detached

pytestmark = pytest.mark.pi

DOC = Path(__file__).parents[2] / "docs" / "iterating.md"
PREFIX = ["pytest", "--skill-eval", "suite.json"]
EDITED = "skills/changelog-writer"


def _loop() -> list[str]:
    """The page's first indented block: the loop, one command or comment per line."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("    pytest "))
    block = []
    for line in lines[start:]:
        if not line.startswith("    "):
            break
        block.append(line.strip())
    return block


def _root(root: Path) -> Path:
    """g0's candidate holds the skill the loop edits, g1's another one."""
    groups = [
        body_group(
            "g0",
            variants={"baseline": variant(), "candidate": variant([EDITED], target=0)},
            **on_fast_host(),
        ),
        body_group("g1", **on_fast_host()),
    ]
    scripts = {f"{g}/baseline": write_answer("no") for g in ("g0", "g1")}
    scripts |= {f"{g}/candidate": write_answer("yes") for g in ("g0", "g1")}
    make_root(root, groups, scripts)
    write(
        root / EDITED / "SKILL.md",
        "---\nname: changelog-writer\ndescription: Record changes in CHANGELOG.md.\n---\n\n"
        "Write `yes` to answer.txt.\n",
    )
    return root


def _ran(result: Path) -> dict[str, dict[str, bool]]:
    """Each group the result ran → each variant → whether its run was reused."""
    groups = result / layout.GROUPS
    return (
        {
            group.name: {
                name: "reused" in read_json(group / name / layout.RUN)
                for name in ("baseline", "candidate")
            }
            for group in sorted(groups.iterdir())
            if group.is_dir()
        }
        if groups.is_dir()
        else {}
    )


def _new_result(root: Path, before: set[Path]) -> Path | None:
    made = (
        set(layout.runs_dir(root).iterdir()) - before if layout.runs_dir(root).is_dir() else set()
    )
    finished = [d for d in made if (d / layout.SUMMARY).is_file()]
    return finished[0] if len(finished) == 1 else None


def test_the_documented_loop_runs_as_written(tmp_path: Path) -> None:
    root = _root(tmp_path / "root")
    g0, g1 = (layout.group_dir_name(g, FAST_HOST) for g in ("g0", "g1"))
    runs: list[tuple[list[str], str, dict[str, dict[str, bool]]]] = []
    edits = 0
    for line in _loop():
        if line.startswith("# edit "):
            path = root / line.removeprefix("# edit ").split()[0]
            edits += 1
            write(path, path.read_text(encoding="utf-8") + f"Edit {edits}.\n")
            continue
        if line.startswith("#"):
            continue
        words = shlex.split(line, comments=True)
        assert words[:3] == PREFIX, line
        before = set(layout.runs_dir(root).iterdir()) if layout.runs_dir(root).is_dir() else set()
        done = run_detached(root, *words[3:])
        assert done.returncode == 0, f"{line}\n{done.stdout}{done.stderr}"
        result = _new_result(root, before)
        runs.append((words[3:], done.stdout, _ran(result) if result is not None else {}))

    assert edits == 2
    (first, _, ran_first), (listing, listed, _), second, third, (_last, idle, ran_last) = runs
    assert first == []
    assert ran_first.keys() == {g0, g1}
    assert "--collect-only" in listing
    assert f"  {g0}: affected (candidate: skills)" in listed
    assert f"  {g1}: unchanged" in listed
    # Each edit runs g0 alone, its baseline copied; g1 stays referenced, never run again.
    for options, out, ran in (second, third):
        assert "--skill-eval-reuse" in options
        assert ran == {g0: {"baseline": True, "candidate": False}}, out
        assert f"group {g1} [unchanged] grade=complete" in out
    # Nothing edited: nothing runs, the unchanged lines are printed, and the run passes.
    assert not any(ran_last.values())
    assert f"group {g0} [unchanged] grade=complete" in idle
    assert f"group {g1} [unchanged] grade=complete" in idle
    assert "no tests ran" in idle or "deselected" in idle


def test_previous_is_the_result_before_latest_never_a_trial_of_it(tmp_path: Path) -> None:
    root = _root(tmp_path / "root")
    runs = layout.runs_dir(root)
    assert run_detached(root, "--skill-eval-trials", "2").returncode == 0
    [aggregate] = [d for d in runs.iterdir() if (d / layout.AGGREGATE).is_file()]
    # Only an aggregate and its own trials: there is no result before it.
    assert locate.newest([runs]) == aggregate
    assert locate.previous([runs]) is None
    refused = run_detached(root, "--skill-eval-affected-since", "previous")
    assert refused.returncode != 0
    assert "--skill-eval-affected-since previous: fewer than two finished results" in (
        refused.stdout + refused.stderr
    )
    done = run_detached(root, "-n", "2", "--skill-eval-affected-since", "latest")
    # Nothing changed since the aggregate: under xdist too, nothing runs and the run passes.
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[unchanged] grade=complete" in done.stdout
    # A run that ran nothing is no result: `latest` is still the aggregate.
    assert locate.newest([runs]) == aggregate
    assert run_detached(root).returncode == 0
    latest = locate.newest([runs])
    assert latest is not None
    assert latest != aggregate
    assert locate.previous([runs]) == aggregate
    # `previous` names the aggregate, which stands for its first trial.
    listed = run_detached(root, "--skill-eval-affected-since", "previous", "--collect-only")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    first = read.aggregate_trial_dirs(aggregate)[0]
    assert f"affected since {first.name} " in listed.stdout
