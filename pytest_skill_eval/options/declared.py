"""Every --skill-eval option and skill_eval_* ini key pytest is told about, with its help.

`add_options` registers them, with the `--skill-eval-fail-on` modes the loop features add
(`features/`, which declare their own options with `add_option`); `INI_KEYS` lets the glue tell
an ini file that configures the plugin without enabling it. Reading their values is
`options.settings.Settings`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from ..analysis import gate_option
from ..analysis.sequential import DEFAULT_MAX_TRIALS
from ..hosts import registry

# The modes of --skill-eval-fail-on no feature adds.
FAIL_ON = ("infrastructure", "candidate", "any", "regression")
FAIL_ON_HELP = (
    "what fails the pytest run: infrastructure (default), candidate, any, regression (any "
    "pass-to-fail)"
)
VARIANT_SELECTORS = ("baseline", "candidate")

_OPTIONS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "root",
        "DIR",
        {
            "help": "definition root (default: current directory); containment is "
            "checked against its canonical path"
        },
    ),
    (
        "variant",
        "baseline|candidate",
        {"help": "run only this variant; the other is recorded not-selected"},
    ),
    (
        "trials",
        "N|auto",
        {
            "help": "independent complete results to produce (default 1); auto: run trials "
            "until a sequential test resolves every comparison or the rest cannot or will not "
            "resolve (futility), at most --skill-eval-max-trials"
        },
    ),
    (
        "max-trials",
        "N",
        {"help": f"the most trials --skill-eval-trials auto runs (default {DEFAULT_MAX_TRIALS})"},
    ),
    ("noise-floor", "N", {"help": "N>=2 trials of identical arms; checks that disagree: flaky"}),
    ("results", "DIR", {"help": "where results go (default <root>/.skill-eval/runs)"}),
    (
        "cassettes",
        "DIR",
        {
            "help": "scripts/cassettes directory: subjects talk only to the loopback model "
            "server, which replays <DIR>/<group>/<variant>.yaml"
        },
    ),
    (
        "record",
        "none|once|all",
        {"help": "record mode with --skill-eval-cassettes (default none: replay only)"},
    ),
    ("fail-on", "|".join(FAIL_ON), {"help": FAIL_ON_HELP}),
    gate_option.OPTION,
    # Declared here, not in `budget.estimate`, which only a forecast (the controller's) imports.
    (
        "estimate",
        "DIR",
        {
            "help": "with --collect-only: forecast a live run's cost per group, host and model "
            "from the usage recorded in the cassettes under DIR and the real prices, as a range; "
            "a paid run under --skill-eval-max-cost forecasts from DIR too before its first request"
        },
    ),
    ("max-cost", "USD", {"help": "spend ceiling shared by every worker and trial"}),
    (
        "ledger-url",
        "URL",
        {
            "help": "keep the spend ledger in the Redis at URL (redis://[user@]host:port/db): "
            "one ceiling across shards and machines; password in SKILL_EVAL_LEDGER_PASSWORD"
        },
    ),
    ("reserve", "USD", {"help": "with --skill-eval-ledger-url: room held per running subject"}),
    (
        "plan",
        "PLAN",
        {
            "help": "run a planned invocation (from `skill-eval plan`): its result ids, pins "
            "and selection"
        },
    ),
    (
        "shard",
        "K/N",
        {"help": "with --skill-eval-plan, run only shard K of N of the plan's work units"},
    ),
    ("node", "PATH", {"help": "the Node that runs Node hosts (default: the one the lock pins)"}),
    ("pi-bundle", "on|off", {"help": "off: run stock Pi, not its verified bundle (default on)"}),
    (
        "gemini-eager",
        "on|off",
        {"help": "off: run Gemini CLI's own files, not its verified eager copy (default on)"},
    ),
    (
        "no-progress-timeout",
        "SECONDS",
        {"help": "stop a subject that prints nothing for this long (default 1800)"},
    ),
    (
        "retries",
        "N",
        {
            "help": "run a variant whose run was infrastructure-failed again, up to N times "
            "(default 0); a run that failed a check is never retried; every attempt's evidence is "
            "kept in <variant>/attempts/<n>/"
        },
    ),
    (
        "resume",
        "RESULT",
        {
            "help": "complete an interrupted result (its directory, its id, or latest) into a new "
            "result: the groups it finished are copied byte for byte and named by their "
            "manifests' hashes, its missing, cancelled and infrastructure-failed groups run"
        },
    ),
]

# ini keys without a command-line option.
_INI_ONLY = (
    (
        "skill_eval_pi_auth",
        "path of a Pi auth.json installed into each subject's isolated agent directory",
    ),
    (
        "skill_eval_upstream_url",
        "base URL of the real provider when recording (default: the provider's own)",
    ),
    (
        "skill_eval_pi_models",
        "path of a Pi models.json installed into each subject's isolated agent directory",
    ),
)


# Every ini key, for telling that an ini file configures the plugin without enabling it.
INI_KEYS = (
    *(
        "skill_eval_definitions",
        "skill_eval_group",
        "skill_eval_hosts",
        "skill_eval_codex_unconfined_reads",
    ),
    *(registration.ini for registration in registry.registered()),
    *(f"skill_eval_{name.replace('-', '_')}" for name, _, _ in _OPTIONS),
    *(key for key, _ in _INI_ONLY),
)


def add_option(parser: pytest.Parser, name: str, metavar: str, help_text: str) -> None:
    """Register `--skill-eval-<name> METAVAR` and its ini key `skill_eval_<name>` (`-` as
    `_`), which the option wins over."""
    group = parser.getgroup("skill-eval")
    group.addoption(f"--skill-eval-{name}", metavar=metavar, default=None, help=help_text)
    parser.addini(f"skill_eval_{name.replace('-', '_')}", help_text, default=None)


def fail_on_option(modes: Sequence[tuple[str, str]]) -> tuple[str, dict[str, Any]]:
    """--skill-eval-fail-on's metavar and help with the features' `(mode, what it fails)`."""
    names = (*FAIL_ON, *(mode for mode, _ in modes))
    help_text = FAIL_ON_HELP + "".join(f", {mode} ({says})" for mode, says in modes)
    return "|".join(names), {"help": help_text}


def add_options(parser: pytest.Parser, modes: Sequence[tuple[str, str]] = ()) -> None:
    """Register --skill-eval options and their ini keys; `modes` are the `(mode, what it
    fails)` the loop features add to --skill-eval-fail-on."""
    group = parser.getgroup("skill-eval", "skill evaluation (pytest-skill-eval)")
    group.addoption(
        "--skill-eval",
        action="append",
        default=[],
        metavar="PATH",
        help="suite or group definition (JSON) to evaluate; repeatable. Without it the plugin "
        "collects nothing.",
    )
    parser.addini(
        "skill_eval_definitions",
        "suite or group definitions to evaluate, one a line, relative to the ini file "
        "(used when --skill-eval is not given)",
        type="paths",
        default=[],
    )
    group.addoption(
        "--skill-eval-host",
        action="append",
        default=[],
        metavar="NAME",
        help="run every selected group on this host instead of its declared runtime.host; "
        f"repeatable ({', '.join(registry.names())})",
    )
    group.addoption(
        "--skill-eval-group",
        action="append",
        metavar="ID|POS",
        help="select a group by id or one-based suite position; repeatable (suite order kept)",
    )
    parser.addini("skill_eval_group", "groups to select (ids or positions)", type="args")
    group.addoption(
        "--skill-eval-codex-unconfined-reads",
        action="store_true",
        default=None,
        help="where bubblewrap cannot confine Codex's reads to the workspace and declared "
        "resources, run Codex groups anyway (its shell can read any file you can); recorded "
        "in evidence",
    )
    parser.addini(
        "skill_eval_codex_unconfined_reads",
        "run Codex groups with unconfined reads (true/false)",
        type="bool",
        default=False,
    )
    parser.addini(
        "skill_eval_hosts",
        "hosts every selected group runs on instead of its declared runtime.host",
        type="args",
        default=[],
    )
    for registration in registry.registered():
        command = registration.command
        help_text = (
            f"the {registration.display_name} binary (default: {command} on PATH, else "
            f"node_modules/.bin/{command} from the root up to the rootdir, or beside this package)"
        )
        group.addoption(registration.option, metavar="PATH", default=None, help=help_text)
        parser.addini(registration.ini, help_text, default=None)
    for name, metavar, extra in _OPTIONS:
        if name == "fail-on":
            metavar, extra = fail_on_option(modes)
        group.addoption(f"--skill-eval-{name}", metavar=metavar, default=None, **extra)
        parser.addini(f"skill_eval_{name.replace('-', '_')}", extra["help"], default=None)
    for key, help_text in _INI_ONLY:
        parser.addini(key, help_text, default=None)
