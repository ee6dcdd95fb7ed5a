"""The `skill-eval` console script: views and checks of saved results, and a first suite.

Each command's arguments and work live in one module, imported only when that command is
chosen: `skill-eval --help` and each command load no layer but their own (the whole package
took about 0.6 s of CPU to import). A command's module gives `arguments(command, parser)`,
which declares what the command reads, and `run(args, root)`, which does it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import import_module
from pathlib import Path
from typing import Any, Protocol, cast

from ..errors import SkillEvalError

__all__ = ["COMMANDS", "main"]

# Each command: the module that declares and runs it, and its line in `skill-eval --help`.
COMMANDS: dict[str, tuple[str, str]] = {
    "verify": (
        ".results",
        "re-hash a result against its manifests and its seal and report any difference",
    ),
    "view": (
        ".results",
        "the text view of a result or aggregate: grade first, TAB-separated rows",
    ),
    "report": (".results", "write a self-contained HTML report of a result or aggregate"),
    "review": (
        ".review",
        "advisory review: a reviewer model answers the group's review questions about two "
        "anonymous runs (never canonical evidence)",
    ),
    "summary": (
        ".results",
        "a decision-first Markdown summary of a result or aggregate for pull requests and CI "
        "job pages (no agent output, no workspace content)",
    ),
    "plan": (
        "..scale.commands",
        "pin an invocation (result ids, fingerprints, Git commits, selection) and list its "
        "work units, for shards on N machines",
    ),
    "merge": (
        "..scale.commands",
        "verify and join a plan's shards into the result(s), summary and aggregate one "
        "machine would write",
    ),
    "compare": (
        ".compare",
        "what changed between two results or aggregates of the same groups: per check and "
        "comparison the change in pass rate, regressions first",
    ),
    "init": (
        ".scaffold",
        "write a first suite for a skill next to it (a description group and a body group "
        "with scripts that replay offline) and the ini keys that make `pytest` run it",
    ),
    "lint": (
        ".lint",
        "check skills against the Agent Skills specification and each host's limits before "
        "any run (exit 0 clean, 1 findings, 2 usage)",
    ),
    "import": (
        ".importing",
        "write a suite from a `claude plugin eval` plugin, an evals.json or a trigger set, "
        "listing what could not be carried in IMPORTED.md",
    ),
}


class Command(Protocol):
    """What the module of a command gives (see the module's docstring)."""

    def arguments(self, command: str, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace, root: Path) -> int: ...


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `skill-eval`."""
    given = list(sys.argv[1:] if argv is None else argv)
    parser, commands = _parser()
    chosen = _chosen(given)
    if chosen is not None:
        _module(chosen).arguments(chosen, commands[chosen])
    args = parser.parse_args(given)
    try:
        return _run(args)
    except SkillEvalError as error:
        print(f"skill-eval: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("skill-eval: review cancelled; earlier reviews are kept", file=sys.stderr)
        return 130


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The `skill-eval` command line, and each command's parser, its arguments not declared."""
    parser = argparse.ArgumentParser(
        prog="skill-eval",
        description="Inspect pytest-skill-eval results. Run evaluations with "
        "`pytest --skill-eval SUITE.json`.",
    )
    parser.add_argument(
        "--root", default=".", help="definition root holding .skill-eval/runs (default: .)"
    )
    parser.add_argument("--version", action=_Version)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands = {
        name: subparsers.add_parser(name, help=help) for name, (_, help) in COMMANDS.items()
    }
    return parser, commands


def result_argument(parser: argparse.ArgumentParser) -> None:
    """The positional `result` of a command on one result or aggregate (`results`, `review`)."""
    parser.add_argument("result", help="result id, aggregate id, latest, previous, or directory")


def _chosen(argv: list[str]) -> str | None:
    """The command `argv` names: its first word past `--root DIR` (or `--ro DIR`, as argparse
    takes a prefix), when it is one."""
    words = iter(argv)
    for word in words:
        if len(word) > 2 and "--root".startswith(word):
            next(words, None)
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def _module(command: str) -> Command:
    """The module of `command`, imported now."""
    return cast(Command, import_module(COMMANDS[command][0], __package__))


class _Version(argparse._VersionAction):
    """`--version`: the installed distribution's version, read only when asked for (printed as
    argparse prints it: a closed or broken stdout is no traceback)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from importlib import metadata

        self.version = f"skill-eval {metadata.version('pytest-skill-eval')}"
        super().__call__(parser, namespace, values, option_string)


def _run(args: argparse.Namespace) -> int:
    """Run one command; every failure the user can act on is raised as a SkillEvalError."""
    try:
        return _module(args.command).run(args, _definition_root(args))
    except OSError as error:
        # A file system refusal no reader anticipated (a path longer than PATH_MAX, a loop
        # below a shard): still one line naming the entry, never a traceback.
        from ..evidence.read import unreadable

        raise unreadable(error) from None


def _definition_root(args: argparse.Namespace) -> Path:
    """The definition root: `--root DIR` before the command, or after `verify` (as for `plan`).

    `verify --root HASH` is the old spelling of `--seal HASH`: a value that is a seal hash and no
    directory still means the hash, with one deprecation line, so `--root` has one meaning.
    """
    given = getattr(args, "verify_root", None)
    if given is None:
        return Path(args.root).resolve()
    from ..evidence import looks_like_root_hash

    if not Path(given).is_dir() and looks_like_root_hash(given):
        print(
            "skill-eval: `verify --root HASH` is deprecated; use `verify --seal HASH` "
            "(--root names the definition root, as for plan)",
            file=sys.stderr,
        )
        if args.expected_root is None:
            args.expected_root = given
        return Path(args.root).resolve()
    return Path(given).resolve()


if __name__ == "__main__":
    sys.exit(main())
