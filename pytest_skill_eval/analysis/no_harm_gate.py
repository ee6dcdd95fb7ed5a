"""`--skill-eval-fail-on no-harm`: every comparison of the suite must show no harm.

Reads the sealed grades of an invocation's trials (never writes evidence) and pools them with
every earlier admitted trial of the same definitions and inputs, each subject run counted once,
exactly as the significant-regression gate does (`gate.pooled`, `admission.py`): a re-run adds
looks to one growing sequence, which the always-valid test of `noninferiority.py` allows. A
comparison passes only when its test rejects "worse by the margin or more"; one with too few
trials is named with the paired trials it would take, and fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..common.wording import counted
from .gate import Pool, identities, sequences
from .noninferiority import MOST_TRIALS, Verdict, no_harm_trials, verdict
from .stats import POWER

SUBJECT = "no-harm gate"
NOT_SHOWN = "no harm not shown:"


@dataclass(frozen=True, slots=True)
class Judged:
    """One comparison's no-harm verdict over its pooled trials."""

    name: str
    verdict: Verdict
    trials: int
    invocations: int

    def line(self, margin: float, alpha: float) -> str:
        """`no harm: …` when shown, else `no harm not shown: …` with what it would take."""
        v = self.verdict
        counts = (
            f"{self.name}: fail-to-pass {v.fail_to_pass}, pass-to-fail {v.pass_to_fail} of "
            f"{counted(v.pairs, 'pair')}, p={v.p:.4g} at margin {margin:g}"
        )
        pooled = f"(pooled over {self.trials} trial(s) of {self.invocations} invocation(s))"
        if v.shown:
            return f"no harm: {counts} {pooled}"
        return f"{NOT_SHOWN} {counts}; {more_trials(v, margin, alpha)} {pooled}"


def more_trials(v: Verdict, margin: float, alpha: float) -> str:
    """What a comparison not shown would take: more paired trials, at power 0.8, when the
    candidate is truly no worse and pairs disagree as often as they did; or nothing, when the
    candidate was observed worse by the margin or more."""
    observed = (v.fail_to_pass - v.pass_to_fail) / v.pairs if v.pairs else 0.0
    if observed <= -margin:
        return f"its observed pass rate fell by {-observed:.3g}, beyond the margin"
    discordance = (v.fail_to_pass + v.pass_to_fail) / v.pairs if v.pairs else 0.0
    needed = no_harm_trials(margin, alpha, POWER, round(discordance, 3))
    if needed is None:
        return f"more than {MOST_TRIALS} paired trials would be needed at power {POWER:g}"
    more = max(1, needed - v.pairs)
    return f"{more} more paired trial(s) would be needed at power {POWER:g}"


def evaluate(
    trial_dirs: Sequence[Path], pool: Pool, *, margin: float, alpha: float
) -> list[Judged]:
    """Every comparison of the trials, pooled with the earlier trials of the same inputs."""
    found, sources = sequences(pool.trials, identities(trial_dirs))
    several_hosts = len({host for _, host, _ in found}) > 1
    return [
        Judged(
            f"{group}/{comparison}" + (f" on {host}" if several_hosts else ""),
            verdict(seen, margin, alpha),
            len(seen),
            len(sources[(group, host, comparison)]),
        )
        for (group, host, comparison), seen in found.items()
    ]


def lines(
    results_dir: Path, trial_dirs: Sequence[Path], *, margin: float, alpha: float
) -> tuple[list[str], bool]:
    """The gate's lines (what it pooled and set aside, then each comparison) and whether it
    passes: every comparison shows no harm, and there is at least one."""
    pool = pooled_for(results_dir, trial_dirs)
    judged = evaluate(trial_dirs, pool, margin=margin, alpha=alpha)
    out = [*pool.lines(), *(j.line(margin, alpha) for j in judged)]
    if not judged:
        out.append(f"{NOT_SHOWN} no comparison was graded: nothing shows no harm")
    return out, bool(judged) and all(j.verdict.shown for j in judged)


def pooled_for(results_dir: Path, trial_dirs: Sequence[Path]) -> Pool:
    """The trials the no-harm gate tests (`gate.pooled`, named as this gate)."""
    from .gate import pooled

    return pooled(results_dir, trial_dirs, SUBJECT)
