"""Every --skill-eval option and skill_eval_* ini key, read once into one frozen Settings.

A bad value stops the invocation before anything runs, as a `pytest.UsageError` raised here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .errors import SkillEvalError
from .hosts.process import NO_PROGRESS_S
from .providers import RECORD_MODES

FAIL_ON = ("infrastructure", "candidate", "any", "regression")
VARIANT_SELECTORS = ("baseline", "candidate")

# name, metavar, extra addoption arguments (always with "help", shared by the ini key).
_OPTIONS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "root",
        "DIR",
        {
            "help": "definition root (default: current directory); containment is "
            "checked against its canonical path"
        },
    ),
    ("group", "ID|POS", {"help": "select one group by id or one-based suite position"}),
    (
        "variant",
        "baseline|candidate",
        {"help": "run only this variant; the other is recorded not-selected"},
    ),
    (
        "trials",
        "N",
        {"type": int, "help": "independent complete results to produce (default 1)"},
    ),
    ("results", "DIR", {"help": "where results go (default <root>/.skill-eval/runs)"}),
    (
        "pi",
        "PATH",
        {
            "help": "the Pi binary (default: pi on PATH, else node_modules/.bin/pi under "
            "the root or this package)"
        },
    ),
    (
        "claude",
        "PATH",
        {
            "help": "the Claude Code binary (default: claude on PATH, else "
            "node_modules/.bin/claude under the root or this package)"
        },
    ),
    (
        "cassettes",
        "DIR",
        {
            "help": "scripts/cassettes directory: subjects talk only to the "
            "loopback model server, which replays <DIR>/<group>/"
            "<variant>.yaml"
        },
    ),
    (
        "record",
        "none|once|all",
        {"help": "record mode with --skill-eval-cassettes (default none: replay only)"},
    ),
    (
        "fail-on",
        "|".join(FAIL_ON),
        {"help": "what fails the pytest run: infrastructure (default), candidate, any, regression"},
    ),
    (
        "max-cost",
        "USD",
        {"type": float, "help": "spend ceiling shared by every worker and trial"},
    ),
    (
        "no-progress-timeout",
        "SECONDS",
        {
            "type": float,
            "help": "stop a subject that prints nothing for this long (default 1800)",
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


def add_options(parser: pytest.Parser) -> None:
    """Register --skill-eval options and their ini keys."""
    group = parser.getgroup("skill-eval", "skill evaluation (pytest-skill-eval)")
    group.addoption(
        "--skill-eval",
        action="append",
        default=[],
        metavar="PATH",
        help="suite or group definition (JSON) to evaluate; repeatable. Without it the plugin "
        "collects nothing.",
    )
    group.addoption(
        "--skill-eval-host",
        action="append",
        default=[],
        metavar="NAME",
        help="run every selected group on this host instead of its declared runtime.host; "
        "repeatable (pi, claude-code)",
    )
    parser.addini(
        "skill_eval_hosts",
        "hosts every selected group runs on instead of its declared runtime.host",
        type="args",
        default=[],
    )
    for name, metavar, extra in _OPTIONS:
        group.addoption(f"--skill-eval-{name}", metavar=metavar, default=None, **extra)
        parser.addini(f"skill_eval_{name.replace('-', '_')}", extra["help"], default=None)
    for key, help_text in _INI_ONLY:
        parser.addini(key, help_text, default=None)


def enabled(config: pytest.Config) -> bool:
    """The plugin acts only when --skill-eval was given."""
    return bool(config.getoption("--skill-eval"))


@dataclass(frozen=True, slots=True)
class Settings:
    """What the invocation asked for, from the command line, else the ini file, validated."""

    root: Path
    paths: tuple[Path, ...]
    group_selector: str | None
    variant_selector: str | None
    trials: int
    fail_on: str
    results_dir: Path
    cassettes: Path | None
    record: str
    no_progress_s: float
    max_cost: float | None
    pi: str | None
    claude: str | None
    pi_auth: Path | None
    pi_models: Path | None
    upstream_url: str | None
    collect_only: bool
    # Hosts chosen by the invocation, in order; empty: each group runs on its runtime.host.
    hosts: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        """Read and check every option; the first bad one is a usage error."""
        invoked = Path(config.invocation_params.dir)
        root = Path(_option(config, "root") or invoked).resolve()
        if not root.is_dir():
            raise pytest.UsageError(f"--skill-eval-root {root} is not a directory")
        paths = tuple(
            path if path.is_absolute() else invoked / path
            for path in map(Path, config.getoption("--skill-eval"))
        )
        variant: str | None = _option(config, "variant")
        if variant not in (None, *VARIANT_SELECTORS):
            raise pytest.UsageError(
                f"--skill-eval-variant must be baseline or candidate, not {variant!r}"
            )
        trials = _positive_int(config, "trials", 1)
        fail_on = _option(config, "fail-on") or "infrastructure"
        if fail_on not in FAIL_ON:
            raise pytest.UsageError(
                f"--skill-eval-fail-on must be one of {', '.join(FAIL_ON)}, not {fail_on!r}"
            )
        results = _option(config, "results")
        cassettes_raw = _option(config, "cassettes")
        cassettes = Path(cassettes_raw).resolve() if cassettes_raw else None
        record = _option(config, "record") or "none"
        if record not in RECORD_MODES:
            raise pytest.UsageError(f"--skill-eval-record must be one of {', '.join(RECORD_MODES)}")
        if cassettes is not None and not cassettes.is_dir() and record == "none":
            raise pytest.UsageError(f"--skill-eval-cassettes {cassettes} is not a directory")
        if record != "none" and cassettes is None:
            raise pytest.UsageError(
                f"--skill-eval-record {record} needs --skill-eval-cassettes DIR to write to"
            )
        timeout = _option(config, "no-progress-timeout")
        no_progress_s = float(timeout) if timeout else NO_PROGRESS_S
        max_cost_raw = _option(config, "max-cost")
        max_cost = float(max_cost_raw) if max_cost_raw not in (None, "") else None
        if max_cost is not None and not max_cost > 0:
            raise pytest.UsageError(
                f"--skill-eval-max-cost must be a positive number, not {max_cost_raw!r}"
            )
        return cls(
            root=root,
            paths=paths,
            group_selector=_option(config, "group"),
            variant_selector=variant,
            trials=trials,
            fail_on=fail_on,
            results_dir=Path(results).resolve() if results else root / ".skill-eval" / "runs",
            cassettes=cassettes,
            record=record,
            no_progress_s=no_progress_s,
            max_cost=max_cost,
            pi=_option(config, "pi"),
            claude=_option(config, "claude"),
            pi_auth=_ini_path(config, "skill_eval_pi_auth"),
            pi_models=_ini_path(config, "skill_eval_pi_models"),
            upstream_url=config.getini("skill_eval_upstream_url") or None,
            collect_only=bool(config.option.collectonly),
            hosts=_hosts(config),
        )


@contextlib.contextmanager
def usage_errors() -> Iterator[None]:
    """Turn an own error raised while checking the setup (a missing Pi) into a usage error."""
    try:
        yield
    except SkillEvalError as error:
        raise pytest.UsageError(str(error)) from None


def _option(config: pytest.Config, name: str) -> Any:
    """A --skill-eval-NAME option, else its skill_eval_NAME ini key."""
    value = config.getoption(f"--skill-eval-{name}")
    if value is None:
        value = config.getini(f"skill_eval_{name.replace('-', '_')}")
    return value


def _hosts(config: pytest.Config) -> tuple[str, ...]:
    """--skill-eval-host NAME…, else the skill_eval_hosts ini key; each known, each once."""
    from .hosts import UnknownHostError, host_for

    names: list[str] = list(config.getoption("--skill-eval-host") or [])
    if not names:
        names = [str(n) for n in config.getini("skill_eval_hosts") or []]
    chosen: list[str] = []
    for name in names:
        try:
            host_for(name)
        except UnknownHostError as error:
            raise pytest.UsageError(f"--skill-eval-host: {error}") from None
        if name not in chosen:
            chosen.append(name)
    return tuple(chosen)


def _positive_int(config: pytest.Config, name: str, default: int) -> int:
    raw = _option(config, name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        value = 0
    if value < 1:
        raise pytest.UsageError(f"--skill-eval-{name} must be a positive integer, not {raw!r}")
    return value


def _ini_path(config: pytest.Config, name: str) -> Path | None:
    raw = config.getini(name)
    if not raw:
        return None
    path = Path(str(raw))
    if not path.is_absolute():
        path = config.rootpath / path
    if not path.is_file():
        raise pytest.UsageError(f"{name} = {raw}: no such file")
    return path
