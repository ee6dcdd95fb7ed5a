"""The significance gate's decision, in the words every place that shows it uses.

`gate.py` tests the comparisons; this module states the outcome once: the line that leads the
bottom line (terminal, Markdown summary, HTML report), the lines naming what was pooled, and
one entry per rejected comparison (a failing JUnit test case, counted in pytest's final line).
Both trial counts are said: this invocation's trials and the pooled ones, which a bottom line
of this run alone ("not resolved after 5 trials") would otherwise contradict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..common.wording import counted
from . import gate
from .gate import SUBJECT, Pool, Tested

GATE_CASE = "significance-gate"
"""The test case name a rejected comparison fails under (`<GATE_CASE>[<comparison>]`)."""


@dataclass(frozen=True, slots=True)
class GateDecision:
    """What the gate tested, over which trials, at which alpha, and what it rejected."""

    tested: tuple[Tested, ...]
    pool: Pool
    this_run: int  # this invocation's trials
    alpha: float

    @property
    def rejected(self) -> tuple[Tested, ...]:
        return tuple(t for t in self.tested if t.rejected)

    @property
    def passed(self) -> bool:
        return not self.rejected

    def pooled_trials(self) -> int:
        """The most trials any comparison was tested over (all pooled invocations)."""
        return max((t.trials for t in self.tested), default=0)

    def trials_text(self, trials: int | None = None) -> str:
        """ "11 trials pooled from 3 results (this run's 5)": both counts, always together."""
        pooled = self.pooled_trials() if trials is None else trials
        return (
            f"{counted(pooled, 'trial')} pooled from {counted(len(self.pool.trials), 'result')} "
            f"(this run's {self.this_run})"
        )

    def headline(self) -> str:
        """The one line that leads the bottom line: failed, with each rejected comparison, or
        passed, with what it tested, over how many trials, at which alpha."""
        if self.rejected:
            named = "; ".join(
                f"{t.name} regressed (pass-to-fail {t.pass_to_fail}, fail-to-pass "
                f"{t.fail_to_pass}, Holm-adjusted p={t.adjusted:.4g}, "
                f"{self.trials_text(t.trials)})"
                for t in self.rejected
            )
            return f"{SUBJECT} FAILED at alpha {self.alpha:g}: {named}"
        return (
            f"{SUBJECT} passed: {counted(len(self.tested), 'comparison')} tested, none "
            f"regressed beyond chance (Holm at alpha {self.alpha:g}, {self.trials_text()})"
        )

    def lines(self) -> list[str]:
        """What was pooled and set aside, then one line per rejected comparison."""
        return [*self.pool.lines(), *(t.line() for t in self.rejected)]

    def failures(self) -> list[tuple[str, str]]:
        """Per rejected comparison, its test case name and the failure text (the pool named)."""
        pooled = self.pool.lines()[0]
        return [
            (f"{GATE_CASE}[{t.name}]", f"{t.line()}; this run's {self.this_run}; {pooled}")
            for t in self.rejected
        ]


def decide(
    results_dir: Path, trial_dirs: Sequence[Path], *, alpha: float, earlier_only: bool = False
) -> GateDecision:
    """Pool this invocation's trials with the earlier admitted ones and test every comparison
    (`earlier_only`: none that ran after them, as a view made later decides again)."""
    trials = list(trial_dirs)
    pool = gate.pooled(results_dir, trials, earlier_only=earlier_only)
    tested = gate.evaluate(trials, alpha=alpha, pool=pool)
    return GateDecision(tuple(tested), pool, len(trials), alpha)


def recorded_decision(target: Path) -> GateDecision | None:
    """The gate's decision on a result or aggregate, decided again from the sealed evidence as
    the run decided it (the trials before it, at the alpha it recorded); None when the run was
    not gated. For the views made after the run (the HTML report, `skill-eval summary`)."""
    from ..evidence import read
    from .gate_option import DEFAULT_ALPHA, MODE

    if read.is_aggregate(target):
        listed = read.load_aggregate(target).get("trials") or []
        ids = [str(t.get("id")) for t in listed if isinstance(t, Mapping)]
        trials = [target.parent / i for i in ids if (target.parent / i).is_dir()]
    else:
        trials = [target]
    invocation = read.load_invocation(trials[0]) if trials else None
    if not isinstance(invocation, Mapping) or invocation.get("failOn") != MODE:
        return None
    alpha = invocation.get("alpha")
    alpha = alpha if isinstance(alpha, float) and 0 < alpha < 1 else DEFAULT_ALPHA
    return decide(target.parent, trials, alpha=alpha, earlier_only=True)
