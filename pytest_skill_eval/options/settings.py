"""Every --skill-eval option and skill_eval_* ini key, read once into one frozen Settings.

A bad value stops the invocation before anything runs, as a `pytest.UsageError` raised here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from ..analysis import adaptive, gate_option, noise_floor
from ..analysis.sequential import DEFAULT_MAX_TRIALS
from ..budget.ledger_choice import ledger_problem, reserve_value
from ..common.optionvalues import choice, number, positive_int, shard_of
from ..errors import SkillEvalError
from ..hosts import registry
from ..hosts.options import HostOptions
from ..hosts.process import NO_PROGRESS_S
from ..run import attempts
from ..run.providers import RECORD_MODES
from . import definitions, option, usage_errors
from .declared import FAIL_ON, VARIANT_SELECTORS


@dataclass(frozen=True, slots=True)
class Settings:
    """What the invocation asked for, from the command line, else the ini file, validated."""

    root: Path
    paths: tuple[Path, ...]
    # Group selectors (ids or positions) in the order given; empty: every group.
    group_selectors: tuple[str, ...]
    variant_selector: str | None
    trials: int  # with `adaptive`, the most trials that may run
    fail_on: str
    results_dir: Path
    cassettes: Path | None
    record: str
    no_progress_s: float
    max_cost: float | None
    node: str | None  # --skill-eval-node; None: the pinned runtime
    # Each host's `--skill-eval-<binary_option> PATH` (or ini key), by host name.
    binaries: tuple[tuple[str, str | None], ...]
    pi_auth: Path | None
    pi_models: Path | None
    upstream_url: str | None
    collect_only: bool
    plan: Path | None = None
    shard: tuple[int, int] | None = None  # (K, N), one-based K
    ledger_url: str | None = None  # a Redis ledger instead of the invocation's file ledger
    reserve: float | None = None  # room a Redis ledger holds for each running subject
    # Hosts chosen by the invocation, in order; empty: each group runs on its runtime.host.
    hosts: tuple[str, ...] = ()
    # `--skill-eval-trials auto`: trials stop once the sequential test resolves every comparison.
    adaptive: bool = False
    noise_floor: bool = False  # the baseline arm is the candidate's (`noise_floor.py`)
    codex_unconfined_reads: bool = False
    pi_bundle: bool = True  # --skill-eval-pi-bundle off: stock Pi
    gemini_eager: bool = True  # --skill-eval-gemini-eager off: Gemini CLI's own files
    # The family-wise error rate of fail-on's statistical gate.
    alpha: float = gate_option.DEFAULT_ALPHA
    retries: int = 0  # runs again of a variant whose run was infrastructure-failed
    resume: str | None = None  # the result --skill-eval-resume completes (as given)
    # pytest's rootdir: hosts and the pinned Node are looked for from the root up to it.
    rootdir: Path | None = None

    def host_options(self, host: str) -> HostOptions:
        """What the invocation says about `host`'s binary and what it accepts."""
        binary = dict(self.binaries).get(host)
        return HostOptions(
            binary,
            self.codex_unconfined_reads,
            self.node,
            self.pi_bundle,
            self.gemini_eager,
            self.rootdir,
        )

    @classmethod
    def from_config(cls, config: pytest.Config, modes: tuple[str, ...] = ()) -> Settings:
        """Read and check every option; the first bad one is a usage error. `modes` are the
        --skill-eval-fail-on modes the loop features add."""
        handed = _handed_paths(config)
        if handed is not None:
            return cls._from_config(config, handed, modes)
        invoked = Path(config.invocation_params.dir)
        root = (_path_option(config, "root") or invoked).resolve()
        if not root.is_dir():
            raise pytest.UsageError(
                f"--skill-eval-root {root} is not a directory; pass the directory the "
                "definitions' paths are relative to"
            )
        paths = tuple(definitions(config))
        results = _path_option(config, "results")
        cassettes_raw = _path_option(config, "cassettes")
        plan_raw = option(config, "plan")
        return cls._from_config(
            config,
            {
                "root": str(root),
                "rootdir": str(config.rootpath),
                "paths": [str(p) for p in paths],
                "results": str(results.resolve()) if results else None,
                "cassettes": str(cassettes_raw.resolve()) if cassettes_raw else None,
                "plan": str(Path(plan_raw).resolve()) if plan_raw else None,
                "pi_auth": _str(_ini_path(config, "skill_eval_pi_auth")),
                "pi_models": _str(_ini_path(config, "skill_eval_pi_models")),
            },
            modes,
        )

    def resolved_paths(self) -> dict[str, Any]:
        """Every path option as the controller resolved it, for its xdist workers."""
        return {
            "root": str(self.root),
            "rootdir": _str(self.rootdir),
            "paths": [str(p) for p in self.paths],
            "results": str(self.results_dir),
            "cassettes": _str(self.cassettes),
            "plan": _str(self.plan),
            "pi_auth": _str(self.pi_auth),
            "pi_models": _str(self.pi_models),
        }

    @classmethod
    def _from_config(
        cls, config: pytest.Config, resolved: dict[str, Any], modes: tuple[str, ...]
    ) -> Settings:
        root = Path(resolved["root"])
        paths = tuple(Path(p) for p in resolved["paths"])
        with usage_errors():
            variant = _choice(config, "variant", VARIANT_SELECTORS, None)
            trials, adaptive = _trials(config)
            fail_on = _choice(config, "fail-on", (*FAIL_ON, *modes), "infrastructure")
            record = _choice(config, "record", RECORD_MODES, "none")
            no_progress_s = _number(config, "no-progress-timeout", "seconds", NO_PROGRESS_S)
            max_cost = _number(config, "max-cost", "USD", None)
            reserve = reserve_value(option(config, "reserve"))
            shard = shard_of("--skill-eval-shard", option(config, "shard"))
            alpha = gate_option.alpha_value(option(config, "alpha"))
            pi_bundle = _choice(config, "pi-bundle", ("on", "off"), "on") == "on"
            gemini_eager = _choice(config, "gemini-eager", ("on", "off"), "on") == "on"
            retries = attempts.retries_value(option(config, "retries"))
        cassettes = _path(resolved["cassettes"])
        if cassettes is not None and not cassettes.is_dir() and record == "none":
            raise pytest.UsageError(
                f"--skill-eval-cassettes {cassettes} is not a directory; pass the directory "
                "holding <group>/<variant>.yaml, or --skill-eval-record once to create it"
            )
        if record != "none" and cassettes is None:
            raise pytest.UsageError(
                f"--skill-eval-record {record} needs somewhere to write: pass "
                "--skill-eval-cassettes DIR"
            )
        settings = cls(
            root=root,
            paths=paths,
            group_selectors=_group_selectors(config),
            variant_selector=variant,
            trials=trials,
            adaptive=adaptive,
            noise_floor=option(config, "noise-floor") not in (None, ""),
            fail_on=fail_on,
            alpha=alpha,
            results_dir=_path(resolved["results"]) or root / ".skill-eval" / "runs",
            cassettes=cassettes,
            record=record,
            no_progress_s=no_progress_s,
            max_cost=max_cost,
            node=option(config, "node") or None,
            pi_bundle=pi_bundle,
            gemini_eager=gemini_eager,
            binaries=tuple(
                (r.name, option(config, r.binary_option)) for r in registry.registered()
            ),
            codex_unconfined_reads=bool(
                config.getoption("--skill-eval-codex-unconfined-reads")
                or config.getini("skill_eval_codex_unconfined_reads")
            ),
            pi_auth=_path(resolved["pi_auth"]),
            pi_models=_path(resolved["pi_models"]),
            upstream_url=config.getini("skill_eval_upstream_url") or None,
            collect_only=bool(config.option.collectonly),
            plan=_path(resolved["plan"]),
            shard=shard,
            hosts=_hosts(config),
            ledger_url=option(config, "ledger-url") or None,
            reserve=reserve,
            retries=retries,
            resume=option(config, "resume") or None,
            rootdir=_path(resolved.get("rootdir")),
        )
        if settings.shard is not None and settings.plan is None:
            raise pytest.UsageError(
                f"--skill-eval-shard {settings.shard[0]}/{settings.shard[1]} runs part of a plan: "
                "pass --skill-eval-plan PLAN too (from `skill-eval plan`)"
            )
        if settings.plan is not None:
            settings = _following_plan(settings, settings.plan, config)
        # A shared ledger: a usable Redis URL and the ceiling it needs (a plan may give it).
        problem = ledger_problem(settings.ledger_url, settings.max_cost, settings.reserve)
        if problem is not None:
            raise pytest.UsageError(problem)
        return settings


def _following_plan(settings: Settings, plan: Path, config: pytest.Config) -> Settings:
    """`settings` with what the plan pins (a contradicting option is a usage error)."""
    from ..scale.plan import adopt_plan

    # A Redis ledger holds the whole run's ceiling, unsplit among the shards.
    split = settings.shard[1] if settings.shard and not settings.ledger_url else 1
    try:
        pinned = adopt_plan(plan, _given(config), settings.hosts, settings.max_cost, split)
    except SkillEvalError as error:  # a PlanError, or the reader's on a damaged file
        raise pytest.UsageError(str(error)) from None
    return replace(settings, **pinned)


def _path_option(config: pytest.Config, name: str) -> Path | None:
    """A path option: relative to the invocation directory, or as an ini key to the ini file."""
    value = config.getoption(f"--skill-eval-{name}")
    if value not in (None, ""):
        return Path(config.invocation_params.dir) / str(value)
    value = config.getini(f"skill_eval_{name.replace('-', '_')}")
    if value in (None, ""):
        return None
    return _ini_dir(config) / str(value)


def _ini_dir(config: pytest.Config) -> Path:
    return config.inipath.parent if config.inipath is not None else config.rootpath


def _handed_paths(config: pytest.Config) -> dict[str, Any] | None:
    """On an xdist worker, the paths its controller resolved (see `Settings.resolved_paths`)."""
    handed = getattr(config, "workerinput", {}).get("skill_eval")
    return handed.get("settings") if isinstance(handed, dict) else None


def _given(config: pytest.Config) -> dict[str, Any]:
    """The selection options given explicitly (a plan refuses to be contradicted)."""
    names = ("trials", "variant", "fail-on", "record")
    given = {name: option(config, name) for name in names if option(config, name) is not None}
    if selectors := _group_selectors(config):
        given["group"] = selectors[0] if len(selectors) == 1 else list(selectors)
    return given


def _choice(config: pytest.Config, name: str, choices: tuple[str, ...], default: Any) -> Any:
    raw = option(config, name)
    return default if raw in (None, "") else choice(f"--skill-eval-{name}", raw, choices)


def _number(config: pytest.Config, name: str, unit: str, default: Any) -> Any:
    raw = option(config, name)
    return (
        default if raw in (None, "") else number(f"--skill-eval-{name}", raw, zero=False, unit=unit)
    )


def _path(raw: str | None) -> Path | None:
    return Path(raw) if raw else None


def _str(path: Path | None) -> str | None:
    return str(path) if path is not None else None


def _group_selectors(config: pytest.Config) -> tuple[str, ...]:
    """--skill-eval-group ID|POS…, else the skill_eval_group ini key's selectors."""
    given = config.getoption("--skill-eval-group") or config.getini("skill_eval_group") or []
    return tuple(str(selector) for selector in given)


def _hosts(config: pytest.Config) -> tuple[str, ...]:
    """--skill-eval-host NAME…, else the skill_eval_hosts ini key; each known, each once."""
    names: list[str] = list(config.getoption("--skill-eval-host") or [])
    if not names:
        names = [str(n) for n in config.getini("skill_eval_hosts") or []]
    with usage_errors():  # each one known, each once, in the order given
        known = registry.names()
        return tuple(dict.fromkeys(choice("--skill-eval-host", n, known) for n in names))


def _trials(config: pytest.Config) -> tuple[int, bool]:
    """(trials, adaptive): N trials, `auto` with its maximum, or the noise floor's trials."""
    if (floor := option(config, "noise-floor")) not in (None, ""):
        given = [n for n in ("trials", "max-trials", "variant", "plan") if option(config, n)]
        return noise_floor.floor_trials(floor, given), False
    if str(option(config, "trials")).strip().lower() != "auto":
        if option(config, "max-trials") is not None:
            raise pytest.UsageError(adaptive.MAX_WITHOUT_AUTO)
        return _positive_int(config, "trials", 1), False
    maximum = _positive_int(config, "max-trials", DEFAULT_MAX_TRIALS)
    with usage_errors():
        adaptive.check_auto(
            maximum,
            planned=option(config, "plan") is not None,
            one_variant=option(config, "variant") is not None,
        )
    return maximum, True


def _positive_int(config: pytest.Config, name: str, default: int) -> int:
    raw = option(config, name)
    if raw in (None, ""):
        return default
    accepted = "a positive integer such as 3" + (", or auto" if name == "trials" else "")
    return positive_int(f"--skill-eval-{name}", raw, accepted)


def _ini_path(config: pytest.Config, name: str) -> Path | None:
    raw = config.getini(name)
    if not raw:
        return None
    path = Path(str(raw))
    if not path.is_absolute():
        path = _ini_dir(config) / path
    if not path.is_file():
        raise pytest.UsageError(f"{name} = {raw}: no such file; set it to an existing file")
    return path
