"""`plan --estimate --margin D | --effect E`: per comparison, the paired trials a gate needs.

Before the run, for each comparison of the selected groups on each host: how many paired trials
give the declared power (default 0.8) at the declared alpha (default 0.05) to

- show no harm at `--margin D` under `--skill-eval-fail-on no-harm`, when the candidate is truly
  no worse than the baseline (every comparison is tested at alpha: an intersection-union test);
- catch a regression of `--effect E` (the candidate's pass rate lower by E) under
  `--skill-eval-fail-on significant-regression`, at alpha / m for m comparisons (the first step
  of Holm's procedure, the strictest).

Either depends on how often the arms disagree, the discordant share (`--discordance`, default
0.3), which no definition tells. The counts are exact trinomial computations
(`analysis/noninferiority.py`), the same for the same inputs on every machine.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable, Sequence

from ..common.optionvalues import refuse
from ..definitions import LoadedGroup
from ..errors import SkillEvalError

DISCORDANCE = 0.3
POWER = 0.8
ALPHA = 0.05


def add_arguments(plan: argparse.ArgumentParser) -> None:
    """What `plan --estimate` reads to count trials per comparison."""
    plan.add_argument(
        "--margin",
        metavar="D",
        help="with --estimate: per comparison, the paired trials that show no harm at this "
        "margin (--fail-on no-harm) when the candidate is truly no worse",
    )
    plan.add_argument(
        "--effect",
        metavar="E",
        help="with --estimate: per comparison, the paired trials that catch a candidate whose "
        "pass rate is lower by E (--fail-on significant-regression, Holm across comparisons)",
    )
    plan.add_argument(
        "--power", metavar="P", help=f"with --margin or --effect: the power (default {POWER})"
    )
    plan.add_argument(
        "--alpha", metavar="A", help=f"with --margin or --effect: the error rate (default {ALPHA})"
    )
    plan.add_argument(
        "--discordance",
        metavar="Q",
        help="with --margin or --effect: the share of trials whose arms disagree "
        f"(default {DISCORDANCE})",
    )


def _share(option: str, raw: str | None, default: float | None, *, closed: bool = False) -> float:
    """A number strictly between 0 and 1 (up to 1 itself when `closed`)."""
    if raw is None:
        assert default is not None
        return default
    try:
        value = float(str(raw).strip())
    except ValueError:
        value = math.nan
    if 0 < value < 1 or (closed and value == 1):
        return value
    example = {"--power": "0.8", "--alpha": "0.05", "--discordance": "0.3"}.get(option, "0.1")
    raise refuse(option, raw, f"a number between 0 and 1, such as {example}")


def trial_lines(
    args: argparse.Namespace,
    selected: Iterable[tuple[LoadedGroup, Sequence[str], Sequence[str]]],
    declared: int | None,
) -> list[str]:
    """One line per comparison and host and asked-for gate; none when neither was asked."""
    margin, effect = getattr(args, "margin", None), getattr(args, "effect", None)
    if margin is None and effect is None:
        for option in ("power", "alpha", "discordance"):
            if getattr(args, option, None) is not None:
                raise SkillEvalError(f"--{option} needs --margin or --effect; add one of them")
        return []
    from ..analysis.noninferiority import MOST_TRIALS, no_harm_trials, regression_trials

    power = _share("--power", args.power, POWER)
    alpha = _share("--alpha", args.alpha, ALPHA)
    discordance = _share("--discordance", args.discordance, DISCORDANCE, closed=True)
    names = [
        f"{loaded.group.id}/{comparison}" + (f" on {host}" if len(hosts) > 1 else "")
        for loaded, _, hosts in selected
        for comparison in dict.fromkeys(
            e.comparison for e in loaded.group.expectations if e.comparison is not None
        )
        for host in hosts or ("",)
    ]
    asked = f"alpha {alpha:g}, power {power:g}, discordant share {discordance:g}"
    gates: list[tuple[str, int | None]] = []
    if margin is not None:
        d = _share("--margin", margin, None)
        gates.append(
            (f"no harm at margin {d:g} ({asked})", no_harm_trials(d, alpha, power, discordance))
        )
    if effect is not None:
        e = _share("--effect", effect, None)
        if e > discordance:
            raise SkillEvalError(
                f"--effect {e:g} exceeds --discordance {discordance:g}: a pass rate can fall by "
                "no more than the share of trials whose arms disagree; raise --discordance"
            )
        m = max(1, len(names))
        n = regression_trials(e, alpha / m, power, discordance)
        gates.append((f"a regression of {e:g} caught ({asked}, Holm over {m})", n))
    out = []
    for name in names:
        for gate, needed in gates:
            count = (
                f"{needed} paired trials" if needed else f"more than {MOST_TRIALS} paired trials"
            )
            short = (
                f"; --trials {declared} is {needed - declared} short"
                if declared is not None and needed is not None and needed > declared
                else ""
            )
            out.append(f"trials: {name}: {gate}: {count}{short}")
    if not names:
        out.append("trials: no comparison is declared in the selected groups: no gate to plan")
    return out
