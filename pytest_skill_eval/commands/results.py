"""`skill-eval verify`, `view`, `report` and `summary`: one saved result or aggregate each.

Each finds the result it is given (an id, `latest`, `previous` or a directory) through
`evidence.locate.resolve_result`, and imports only the view it renders.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import views
from ..analysis.trials import verify_aggregate
from ..common.wording import counted
from ..errors import EvidenceError, OutputError
from ..evidence import parse_root, sealed_root, unfinished
from ..evidence.locate import resolve_result
from ..evidence.read import is_aggregate
from ..evidence.seal import files_only_manifests
from ..evidence.shard_seal import unbound_shards, verify
from ..views.summary import DEFAULT_REPORT_URL, render_markdown
from .cli import result_argument

__all__ = ["arguments", "run"]


def arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Declare `verify`, `view`, `report` or `summary` (`command`) on its `parser`."""
    result_argument(parser)
    if command == "verify":
        parser.add_argument(
            "--seal",
            dest="expected_root",
            metavar="HASH",
            help="fail unless the result's seal root is HASH (sha256:<hex>, as the run printed)",
        )
        parser.add_argument(
            "--root",
            dest="verify_root",
            metavar="DIR",
            help="definition root holding .skill-eval/runs (as for plan; default: --root or .)",
        )
    elif command == "view":
        parser.add_argument(
            "--group", help="one group, by id or one-based position; ID@HOST for one host"
        )
        parser.add_argument("--variant", help="baseline or candidate")
    elif command == "report":
        parser.add_argument("--html", required=True, metavar="OUT", help="the HTML file to write")
    else:
        parser.add_argument(
            "--markdown", action="store_true", required=True, help="print it as Markdown"
        )
        parser.add_argument(
            "--report-url",
            default=DEFAULT_REPORT_URL,
            metavar="URL",
            help=f"where the summary links the HTML report (default: {DEFAULT_REPORT_URL})",
        )
        parser.add_argument(
            "--excerpts",
            action="store_true",
            help="add what each failed text check observed (bounded; agent output or workspace "
            "text, so only for pages that are not public)",
        )


def run(args: argparse.Namespace, root: Path) -> int:
    """Run `verify`, `view`, `report` or `summary` on the result `args.result` names."""
    result = resolve_result(args.result, root)
    if args.command == "view":
        sys.stdout.write(views.render_text(result, group=args.group, variant=args.variant))
        return 0
    if args.command == "summary":
        sys.stdout.write(
            render_markdown(result, report_url=args.report_url, excerpts=args.excerpts)
        )
        return 0
    if args.command == "report":
        out = Path(args.html).resolve()
        html = views.render_html(result, link_base=out.parent)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(html, encoding="utf-8")
        except OSError as error:
            raise OutputError(f"cannot write {out}: {error.strerror or error}") from None
        print(f"report: {out}")
        return 0
    return _verify(args, result)


def _verify(args: argparse.Namespace, result: Path) -> int:
    """`skill-eval verify`: exit 1 on any difference from the manifests or the seal."""
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
