"""The `skill-eval plan` and `merge` commands (registered by cli.py)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..budget import estimate
from ..common.optionvalues import choice, number, positive_int
from ..common.wording import counted, noun
from ..errors import SkillEvalError
from ..evidence import locate, sealed_root
from .balance import recorded_durations
from .intake import parse_shard_roots
from .merge import merge
from .plan import PlanError, load_plan, make_plan, write_plan

FAIL_ON = ("infrastructure", "candidate", "any", "regression")


def arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Declare `skill-eval plan` or `merge` (`command`) on its `parser`."""
    if command == "plan":
        _plan_arguments(parser)
    else:
        _merge_arguments(parser)


def _plan_arguments(plan: argparse.ArgumentParser) -> None:
    plan.add_argument("suite", nargs="+", help="suite or group definitions (JSON)")
    plan.add_argument("--root", dest="plan_root", help="definition root (default: --root or .)")
    plan.add_argument("--trials", default="1", help="trials (default 1; with --estimate, or auto)")
    plan.add_argument("--group", help="one group, by id or one-based position")
    plan.add_argument("--variant", choices=("baseline", "candidate"), help="one variant")
    plan.add_argument(
        "--host",
        action="append",
        default=[],
        metavar="NAME",
        help="run every group on this host instead of its declared one (repeatable: several "
        "hosts side by side); the shards then run without --skill-eval-host",
    )
    plan.add_argument("--cassettes", metavar="DIR", help="scripts/cassettes directory")
    plan.add_argument("--record", default="none", choices=("none", "once", "all"))
    plan.add_argument(
        "--fail-on",
        default="infrastructure",
        choices=("infrastructure", "candidate", "any", "regression"),
    )
    plan.add_argument(
        "--max-cost",
        metavar="USD",
        help="the whole run's ceiling (ceiling/N a shard; whole in a --skill-eval-ledger-url "
        "Redis ledger shared by every shard)",
    )
    plan.add_argument(
        "--durations-from",
        metavar="RUNS",
        help="balance shards by what each group took in the newest earlier result under RUNS "
        "(default: the root's .skill-eval/runs when it exists; else units go round-robin)",
    )
    plan.add_argument(
        "-o", "--output", metavar="PLAN", help="the plan to write (required without --estimate)"
    )
    estimate.add_arguments(plan)


def _merge_arguments(joined: argparse.ArgumentParser) -> None:
    joined.add_argument("plan", help="the plan the shards ran")
    joined.add_argument("shards", nargs="+", help="shard directories, or directories holding them")
    joined.add_argument(
        "-o", "--output", metavar="RESULTS", help="runs directory (default <root>/.skill-eval/runs)"
    )
    joined.add_argument(
        "--shard-root",
        action="append",
        default=[],
        metavar="K=HASH",
        help="bind shard K to the root its log printed (`seal sha256:<root>`): a shard K that "
        "hashes otherwise is refused (repeatable)",
    )
    joined.add_argument(
        "--shard-roots",
        metavar="FILE",
        help="the same, one K=HASH a line (blank lines and # comments ignored)",
    )


def run(args: argparse.Namespace, root: Path) -> int:
    """Run `plan` or `merge`."""
    if args.command == "plan" and args.estimate:
        return _estimate(args, root)
    if args.command == "plan":
        if args.output is None:
            raise PlanError("plan needs -o PLAN, the plan file to write (or --estimate)")
        trials = positive_int("--trials", args.trials)
        max_cost = None
        if args.max_cost is not None:
            max_cost = number("--max-cost", args.max_cost, zero=False, unit="USD")
        base = Path(args.plan_root).resolve() if args.plan_root else root
        plan = make_plan(
            [Path(s) if Path(s).is_absolute() else Path.cwd() / s for s in args.suite],
            base,
            trials=trials,
            group=args.group,
            variant=args.variant,
            cassettes=Path(args.cassettes) if args.cassettes else None,
            record=args.record,
            fail_on=args.fail_on,
            max_cost=max_cost,
            hosts=_plan_hosts(args.host),
            durations=recorded_durations(
                Path(args.durations_from).resolve()
                if args.durations_from
                else base / ".skill-eval" / "runs"
            ),
        )
        out = write_plan(plan, Path(args.output).resolve())
        units, count = counted(len(plan["units"]), "unit"), counted(trials, "trial")
        print(f"plan {plan['id']}: {units}, {count}: {out}")
        return 0
    return _merge(args, root)


def _merge(args: argparse.Namespace, root: Path) -> int:
    """`skill-eval merge`: exit 1 when a unit of the plan has no shard's result."""
    loaded = load_plan(Path(args.plan).resolve())
    # Not resolved here: the merge checks the -o given, links and all, against the shards.
    out = Path(os.path.abspath(args.output)) if args.output else root / ".skill-eval" / "runs"
    roots = _shard_roots(args.shard_root, args.shard_roots)
    outcome = merge(loaded, [Path(s) for s in args.shards], out, roots)
    for unit in outcome.missing:
        print(f"shard-missing: {unit.group} (trial {unit.trial})")
    for line in outcome.refused:
        print(line)
    verb = "already merged" if outcome.already else "merged"
    for result in outcome.results:
        seal = sealed_root(result)
        print(f"{verb}: {result}" + (f" seal sha256:{seal}" if seal else ""))
    unbound = [k for k in outcome.shards if k not in roots]
    if unbound:  # an existing result is "already merged" only if bound as this merge
        print(
            f"unbound: {noun(len(unbound), 'shard')} {', '.join(map(str, unbound))} merged "
            "without a root "
            "(pass --shard-root K=HASH from each shard's log to prove the chain)"
        )
    if outcome.aggregate is not None:
        print(f"aggregate: {outcome.aggregate}")
    return 1 if outcome.missing else 0


def _estimate(args: argparse.Namespace, root: Path) -> int:
    """`plan --estimate`: print the forecast of a live run; nothing is written."""
    from ..hosts.binaries import locate_for
    from ..hosts.registry import registration_for

    base = Path(args.plan_root).resolve() if args.plan_root else root
    rootdir = locate.ini_folder(base)  # hosts are looked for up to it, as a run does
    models = Path(args.models).resolve() if args.models else None
    if models is not None and not models.is_file():
        raise PlanError(f"--models {models} is not a file; pass a Pi models.json")
    _plan_hosts(args.host)
    lines = estimate.plan_estimate(
        args,
        [Path(s) if Path(s).is_absolute() else Path.cwd() / s for s in args.suite],
        base,
        estimate.price_function(
            models, lambda host: locate_for(registration_for(host), None, base, rootdir)
        ),
    )
    print("\n".join(lines))
    return 0


def _shard_roots(given: list[str], file: str | None) -> dict[int, str]:
    """`--shard-root K=HASH…` and the lines of `--shard-roots FILE`, as {K: hex}."""
    lines = list(given)
    if file is not None:
        try:
            text = Path(file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise SkillEvalError(f"--shard-roots: cannot read {file}: {error}") from None
        from_file = [line.split("#", 1)[0].strip() for line in text.splitlines()]
        file_roots = parse_shard_roots(
            [line for line in from_file if line], f"--shard-roots {file}"
        )
        for index, root in file_roots.items():
            lines.append(f"{index}={root}")
    return parse_shard_roots(lines)


def _plan_hosts(names: list[str]) -> tuple[str, ...]:
    """`--host NAME…`: each a known host, each once, in order."""
    from ..hosts import UnknownHostError, chosen_hosts
    from ..hosts.registry import names as known

    for name in names:
        choice("--host", name, known())
    try:
        return chosen_hosts(names)
    except UnknownHostError as error:
        raise PlanError(f"--host: {error}") from None
