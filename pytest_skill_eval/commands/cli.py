"""The `skill-eval` console script: views and checks of saved results, and a first suite."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from ..analysis.trials import verify_aggregate
from ..common.wording import counted
from ..errors import EvidenceError, OutputError, ResultNotFoundError, SkillEvalError
from ..evidence import (
    layout,
    locate,
    looks_like_root_hash,
    parse_root,
    sealed_root,
    unfinished,
)
from ..evidence.read import is_aggregate, unreadable
from ..evidence.seal import files_only_manifests
from ..evidence.shard_seal import unbound_shards, verify
from ..hosts.pi.binary import pi_executable
from ..scale import commands as scale_commands
from ..views import render_html, render_text
from ..views.summary import DEFAULT_REPORT_URL, render_markdown
from . import compare, importing, lint, scaffold
from .review import THINKING_LEVELS, ReviewSettings, review_target

__all__ = ["ResultNotFoundError", "main", "resolve_result"]


def resolve_result(target: str, root: Path, start: Path | None = None) -> Path:
    """A result directory from a path, or from an id (or `latest`) under a results directory.

    An id is looked up under `<root>/.skill-eval/runs`, then in every results directory from
    `start` (default: the current directory) up to the project's ini file, so that an id a run
    printed is found from anywhere inside the project. `latest` names the newest of them,
    `previous` the one before it.
    """
    path_like = target.startswith(".") or "/" in target or "\\" in target
    if path_like:
        candidates = [Path(target)]
    else:
        found = [layout.runs_dir(root)]
        found += [d for d in locate.results_dirs(start or Path.cwd()) if d not in found]
        if target in locate.NAMED:
            picked = locate.NAMED[target]([d for d in found if d.is_dir()])
            if picked is not None:
                return picked.resolve()
            wanted = "finished result" if target == locate.LATEST else "two finished results"
            raise ResultNotFoundError(
                f"Cannot find result: {target} (no {wanted} in {', '.join(map(str, found))}); "
                "run pytest --skill-eval first, or pass --root DIR of the definition root"
            )
        candidates = [d / target for d in found]
        candidates.append(root / target)
    for candidate in candidates:
        if candidate.is_dir():
            return candidate.resolve()
    raise ResultNotFoundError(
        f"Cannot find result: {target} (looked in {', '.join(str(c) for c in candidates)}); "
        "pass a result id a run printed, latest, or a result directory"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `skill-eval`."""
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except SkillEvalError as error:
        print(f"skill-eval: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("skill-eval: review cancelled; earlier reviews are kept", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    """The `skill-eval` command line: its options and every subcommand."""
    parser = argparse.ArgumentParser(
        prog="skill-eval",
        description="Inspect pytest-skill-eval results. Run evaluations with "
        "`pytest --skill-eval SUITE.json`.",
    )
    parser.add_argument(
        "--root", default=".", help="definition root holding .skill-eval/runs (default: .)"
    )
    parser.add_argument(
        "--version", action="version", version=f"skill-eval {metadata.version('pytest-skill-eval')}"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    check = _result_command(
        commands,
        "verify",
        help="re-hash a result against its manifests and its seal and report any difference",
    )
    check.add_argument(
        "--seal",
        dest="expected_root",
        metavar="HASH",
        help="fail unless the result's seal root is HASH (sha256:<hex>, as the run printed)",
    )
    check.add_argument(
        "--root",
        dest="verify_root",
        metavar="DIR",
        help="definition root holding .skill-eval/runs (as for plan; default: --root or .)",
    )
    view = _result_command(
        commands,
        "view",
        help="the text view of a result or aggregate: grade first, TAB-separated rows",
    )
    view.add_argument(
        "--group", help="one group, by id or one-based position; ID@HOST for one host"
    )
    view.add_argument("--variant", help="baseline or candidate")
    report = _result_command(
        commands, "report", help="write a self-contained HTML report of a result or aggregate"
    )
    report.add_argument("--html", required=True, metavar="OUT", help="the HTML file to write")
    _add_review(commands)
    _add_summary(commands)
    scale_commands.add_parsers(commands)
    compare.add_parser(commands)
    scaffold.add_parser(commands)
    lint.add_parser(commands)
    importing.add_parser(commands)
    return parser


def _result_command(commands: Any, name: str, help: str) -> argparse.ArgumentParser:
    """A subcommand on one result or aggregate, named by its positional `result`."""
    command: argparse.ArgumentParser = commands.add_parser(name, help=help)
    command.add_argument("result", help="result id, aggregate id, latest, previous, or directory")
    return command


def _add_review(commands: Any) -> None:
    """`skill-eval review`: the advisory reviewer."""
    review = _result_command(
        commands,
        "review",
        help="advisory review: a reviewer model answers the group's review questions about "
        "two anonymous runs (never canonical evidence)",
    )
    review.add_argument("--model", required=True, help="reviewer model as provider/model")
    review.add_argument("--thinking", choices=THINKING_LEVELS, help="reviewer thinking level")
    review.add_argument(
        "--group", help="one group, by id or one-based position; ID@HOST for one host"
    )
    review.add_argument(
        "--cassettes",
        metavar="DIR",
        help="answer from the scripted reviewer DIR/<group-id>/review.yaml on loopback "
        "(no network); without it the reviewer is live",
    )
    review.add_argument(
        "--inherit",
        action="append",
        default=[],
        metavar="NAME",
        help="pass environment variable NAME (a credential) to a live reviewer; repeatable",
    )
    review.add_argument(
        "--pi",
        help="the Pi binary (default: pi on PATH, else node_modules from the root up to the "
        "project's ini file, then beside this package)",
    )


def _add_summary(commands: Any) -> None:
    """`skill-eval summary --markdown`: the decision-first summary for pull requests."""
    summary = _result_command(
        commands,
        "summary",
        help="a decision-first Markdown summary of a result or aggregate for pull requests and "
        "CI job pages (no agent output, no workspace content)",
    )
    summary.add_argument(
        "--markdown", action="store_true", required=True, help="print it as Markdown"
    )
    summary.add_argument(
        "--report-url",
        default=DEFAULT_REPORT_URL,
        metavar="URL",
        help=f"where the summary links the HTML report (default: {DEFAULT_REPORT_URL})",
    )
    summary.add_argument(
        "--excerpts",
        action="store_true",
        help="add what each failed text check observed (bounded; agent output or workspace "
        "text, so only for pages that are not public)",
    )


def _run(args: argparse.Namespace) -> int:
    """Run one command; every failure the user can act on is raised as a SkillEvalError."""
    try:
        return _command(args)
    except OSError as error:
        # A file system refusal no reader anticipated (a path longer than PATH_MAX, a loop
        # below a shard): still one line naming the entry, never a traceback.
        raise unreadable(error) from None


def _command(args: argparse.Namespace) -> int:
    root = _definition_root(args)
    scaled = scale_commands.run(args, root)
    if scaled is not None:
        return scaled
    if args.command == "compare":
        return compare.run(args, lambda target: resolve_result(target, root))
    if args.command == "init":
        return scaffold.run(args)
    if args.command == "lint":
        return lint.run(args, root)
    if args.command == "import":
        return importing.run(args)
    result = resolve_result(args.result, root)
    if args.command == "view":
        sys.stdout.write(render_text(result, group=args.group, variant=args.variant))
        return 0
    if args.command == "summary":
        sys.stdout.write(
            render_markdown(result, report_url=args.report_url, excerpts=args.excerpts)
        )
        return 0
    if args.command == "report":
        out = Path(args.html).resolve()
        html = render_html(result, link_base=out.parent)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(html, encoding="utf-8")
        except OSError as error:
            raise OutputError(f"cannot write {out}: {error.strerror or error}") from None
        print(f"report: {out}")
        return 0
    if args.command == "review":
        return _review(args, result, root)
    if args.command == "verify":
        expected = parse_root(args.expected_root) if args.expected_root is not None else None
        if is_aggregate(result):
            return _verify_aggregate(result, expected)
        incomplete = unfinished(result)
        if incomplete is not None:
            print(incomplete)
            return 1
        problems = verify(result, expected)
        for line in problems:
            print(line)
        if problems:
            print(f"{counted(len(problems), 'difference')} in {result}", file=sys.stderr)
            return 1
        print(f"verified: {result} (seal sha256:{sealed_root(result)})")
        _files_only(result)
        unbound = unbound_shards(result)
        if unbound:
            print(
                f"unbound: shard(s) {', '.join(map(str, unbound))} were merged without a root "
                "from their logs; the chain reaches the roots they had, not the ones CI printed"
            )
        return 0
    return 2  # pragma: no cover - argparse rejects unknown commands


def _files_only(result: Path) -> None:
    """One line per group manifest of the earlier format: what `verified` does not cover."""
    for manifest in files_only_manifests(result):
        print(
            f"files only: {manifest} is of the earlier manifest format, which lists no "
            "directories: its files are verified, a directory added or removed there is not"
        )


def _verify_aggregate(aggregate: Path, expected: str | None) -> int:
    """Verify an aggregate: each trial result as `verify` would, and its own record."""
    if expected is not None:
        raise EvidenceError(
            f"--seal: {aggregate} is an aggregate, which has no seal of its own; each trial "
            "result has one: verify a trial with --seal, or the aggregate without it"
        )

    def one(trial: Path) -> list[str]:
        incomplete = unfinished(trial)
        return [incomplete] if incomplete is not None else verify(trial)

    trials, problems = verify_aggregate(aggregate, one)
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} difference(s) in aggregate {aggregate}", file=sys.stderr)
        return 1
    for trial in trials:
        print(f"verified: {trial} (seal sha256:{sealed_root(trial)})")
        _files_only(trial)
    print(
        f"verified: aggregate {aggregate.name}: {len(trials)} trial result(s) and its own "
        f"record ({aggregate})"
    )
    return 0


def _definition_root(args: argparse.Namespace) -> Path:
    """The definition root: `--root DIR` before the command, or after `verify` (as for `plan`).

    `verify --root HASH` is the old spelling of `--seal HASH`: a value that is a seal hash and no
    directory still means the hash, with one deprecation line, so `--root` has one meaning.
    """
    given = getattr(args, "verify_root", None)
    if given is None:
        return Path(args.root).resolve()
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


def _review(args: argparse.Namespace, result: Path, root: Path) -> int:
    """Run `skill-eval review`; exit 1 when any group ended `review-error`."""
    settings = ReviewSettings(
        pi=pi_executable(args.pi, root, rootdir=locate.ini_folder(root)),
        model=args.model,
        thinking=args.thinking,
        cassettes=Path(args.cassettes).resolve() if args.cassettes else None,
        inherit=tuple(args.inherit),
    )
    outcomes = review_target(result, settings, group=args.group, emit=print)
    return 1 if any(o.state == "review-error" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
