"""`skill-eval import SOURCE`: another format's eval suite as a schema-v1 suite, faithfully.

SOURCE is a `claude plugin eval` plugin (a folder), an Agent Skills `evals.json`, or a trigger
set (a JSON list of `{query, should_trigger}`). The suite is written with script templates that
replay offline, and IMPORTED.md beside it lists what every item of the source became, including
what no check can express; the same list is printed.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .agent_skills import import_evals, import_triggers, kind_of
from .plugin_eval import import_plugin
from .reading import read_json
from .suite import REPORT, Fidelity, Imported, SourceError, write_suite

__all__ = ["SourceError", "arguments", "run"]


def arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Declare `skill-eval import SOURCE [--skill DIR] [--target SKILL] [--out DIR]`."""
    parser.add_argument(
        "source", help="a plugin folder, an evals.json, or a trigger set (JSON list)"
    )
    parser.add_argument(
        "--skill",
        metavar="DIR",
        help="the skill an evals.json or trigger set is for (default: the nearest folder "
        "holding SKILL.md from the file's folder up)",
    )
    parser.add_argument(
        "--target", metavar="SKILL", help="a plugin's skill to evaluate when a case names none"
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="the suite's folder, inside the definition root (default: evals/<suite id> in "
        "it; a plugin's: skill-eval/ in the plugin)",
    )


def run(args: argparse.Namespace, root: Path) -> int:
    """Import `args.source`, write the suite, and print what became of every item.

    The suite's definition root is the plugin's folder or the skill's parent, never `root`.
    """
    source = Path(args.source).resolve()
    if source.is_dir():
        base = source
        imported = import_plugin(source, args.target)
        default = base / "skill-eval"
    else:
        data = read_json(source)
        kind = kind_of(data)
        if kind is None:
            raise SourceError(
                f"{source}: neither an evals.json (an object with evals) nor a trigger set "
                "(a list of {query, should_trigger})"
            )
        skill = skill_folder(source, args.skill)
        base = skill.parent
        importer = import_evals if kind == "evals" else import_triggers
        imported = importer(source, data, skill)
        default = base / "evals" / imported.suite_id
    if not imported.groups:
        raise SourceError(f"{source}: no case, eval or query maps to a group; nothing written")
    folder = Path(args.out).resolve() if args.out else default
    if not folder.is_relative_to(base):
        raise SourceError(f"--out {folder}: must lie inside the definition root {base}")
    write_suite(imported, folder, base)
    summarise(imported, folder, base)
    return 0


def skill_folder(source: Path, given: str | None) -> Path:
    """The skill a JSON source is for: `--skill`, else the nearest folder up with SKILL.md."""
    if given is not None:
        folder = Path(given).resolve()
        if not (folder / "SKILL.md").is_file():
            raise SourceError(f"--skill {folder}: no SKILL.md there")
        return folder
    for folder in source.parents:
        if (folder / "SKILL.md").is_file():
            return folder
    raise SourceError(f"{source}: no SKILL.md in its folder or above; pass --skill DIR")


def summarise(imported: Imported, folder: Path, root: Path) -> None:
    """What was written, what could not be carried, and how to run it."""
    print(f"wrote {folder / 'suite.json'} ({len(imported.groups)} groups, script templates)")
    for note in imported.notes:
        if note.fidelity != Fidelity.EXACT:
            print(f"{note.fidelity}: {note.where}: {note.item}: {note.becomes}")
    print(f"what became of each item: {folder / REPORT}")
    suite = os.path.relpath(folder / "suite.json", root)
    scripts = os.path.relpath(folder / "scripts", root)
    print(
        f"run it: cd {root} && pytest --skill-eval {suite} --skill-eval-cassettes {scripts} "
        "--skill-eval-fail-on candidate"
    )
