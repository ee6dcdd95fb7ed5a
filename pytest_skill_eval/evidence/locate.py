"""Finding a result from anywhere inside a project: `latest`, the newest, and `previous`; the
results and aggregates in one results directory (`results`, `aggregates`), by the one rule for
what is a result.

A result id names a directory under a results directory. From the current directory the
lookup walks up to the directory holding pytest's ini file (the rootdir a run would use),
collecting on the way every `<dir>/.skill-eval/runs` and the results directory an ini file
configures (`skill_eval_results`, else `skill_eval_root`'s `.skill-eval/runs`, relative to the
ini file as the plugin reads them). `find_result` is that lookup, `resolve_result` its form for a
console-script command.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ResultNotFoundError, SkillEvalError
from . import layout, read

LATEST = "latest"
# The newest finished result before `latest` (an aggregate's own trials are part of it).
PREVIOUS = "previous"
# pytest's ini files, in the order it prefers them, and the section holding its settings.
_INI_FILES = (
    ("pytest.ini", "pytest"),
    (".pytest.ini", "pytest"),
    ("pyproject.toml", None),
    ("tox.ini", "pytest"),
    ("setup.cfg", "tool:pytest"),
)


def results_dirs(start: Path) -> list[Path]:
    """Every results directory from `start` up to the project's ini file, nearest first."""
    found: list[Path] = []
    for directory in [start, *start.parents]:
        candidate = layout.runs_dir(directory)
        if candidate.is_dir() and candidate not in found:
            found.append(candidate)
        settings = _ini_settings(directory)
        if settings is None:
            continue
        configured = _configured_dir(directory, settings)
        if configured is not None and configured.is_dir() and configured not in found:
            found.append(configured)
        break  # pytest's rootdir: a run from here would read this ini file
    return found


def ini_folder(start: Path) -> Path | None:
    """The folder of the ini file a run started in `start` would read (pytest's rootdir, the
    top of the search for hosts); None: there is none."""
    return next((d for d in [start, *start.parents] if _ini_settings(d) is not None), None)


def is_result(path: Path) -> bool:
    """Whether `path` is a result: a directory holding the `invocation.json` a run writes before
    any group starts (finished or not, sealed or not)."""
    return (path / layout.INVOCATION).is_file()


def results(root: Path, *, finished: bool = False, sealed: bool = False) -> list[Path]:
    """The results in the results directory `root`, newest first (ids begin with their UTC
    creation time); with `finished`, only those with their summary; with `sealed`, only
    sealed ones."""
    if not root.is_dir():
        return []
    found = (
        entry
        for entry in root.iterdir()
        if is_result(entry)
        and (not finished or (entry / layout.SUMMARY).is_file())
        and (not sealed or (entry / layout.SEAL).is_file())
    )
    return sorted(found, key=lambda entry: entry.name, reverse=True)


def aggregates(root: Path) -> list[Path]:
    """The aggregates (of several trials) in the results directory `root`, newest first."""
    if not root.is_dir():
        return []
    found = (entry for entry in root.iterdir() if (entry / layout.AGGREGATE).is_file())
    return sorted(found, key=lambda entry: entry.name, reverse=True)


def finished(directories: list[Path]) -> list[Path]:
    """The finished results and aggregates in `directories`, newest first (ids sort by
    creation time; an aggregate follows its last trial)."""
    found = [
        entry
        for directory in directories
        for entry in (*results(directory, finished=True), *aggregates(directory))
    ]
    return sorted(
        found,
        key=lambda e: (e.name[:14], (e / layout.AGGREGATE).is_file(), e.stat().st_mtime_ns),
        reverse=True,
    )


def newest(directories: list[Path]) -> Path | None:
    """The newest finished result or aggregate in `directories`."""
    ranked = finished(directories)
    return ranked[0] if ranked else None


def previous(directories: list[Path]) -> Path | None:
    """The newest finished result or aggregate before the newest one: not one of its trials
    when the newest is an aggregate (`previous` after a run of several trials is the run
    before it)."""
    ranked = finished(directories)
    if len(ranked) < 2:
        return None
    latest = ranked[0]
    trials: set[Path] = set()
    if (latest / layout.AGGREGATE).is_file():
        try:
            trials = {trial.resolve() for trial in read.aggregate_trial_dirs(latest)}
        except (SkillEvalError, OSError):
            trials = set()  # an unreadable aggregate hides nothing before it
    return next((entry for entry in ranked[1:] if entry.resolve() not in trials), None)


# The results `latest` and `previous` name, each picked among the finished ones.
NAMED: dict[str, Callable[[list[Path]], Path | None]] = {LATEST: newest, PREVIOUS: previous}


@dataclass(frozen=True)
class Looked:
    """Where a lookup looked and found nothing: `named` when `latest` or `previous` named no
    result among `places` (the results directories), else the directories `places` it tried."""

    named: bool
    places: list[Path]


def find_result(
    target: str,
    results_dir: Path,
    start: Path,
    *,
    beside: Path | None = None,
    accept: Callable[[Path], bool] = Path.is_dir,
) -> Path | Looked:
    """The result directory `target` names, or where it was looked for.

    A path (relative to `start`), else an id under `results_dir` and every results directory
    from `start` up to the project's ini file (`results_dirs`), then under `beside`; `latest`
    and `previous` pick among the finished results there. A directory is taken when `accept`
    says so."""
    if target.startswith(".") or "/" in target or "\\" in target:
        path = Path(target) if Path(target).is_absolute() else start / target
        candidates = [path]
    else:
        found = [results_dir, *[d for d in results_dirs(start) if d != results_dir]]
        if target in NAMED:
            picked = NAMED[target]([d for d in found if d.is_dir()])
            return picked.resolve() if picked is not None else Looked(True, found)
        # The results directory named first is where results live: said even when it is not
        # there yet; the others only where they are.
        candidates = [d / target for d in found if d == results_dir or d.is_dir()]
        candidates += [beside / target] if beside is not None else []
    for candidate in candidates:
        if accept(candidate):
            return candidate.resolve()
    return Looked(False, candidates)


def resolve_result(target: str, root: Path, start: Path | None = None) -> Path:
    """`find_result` for a console-script command: from `start` (default: the current
    directory), under `<root>/.skill-eval/runs` first and `root` last; `ResultNotFoundError`
    when there is none."""
    found = find_result(target, layout.runs_dir(root), start or Path.cwd(), beside=root)
    if isinstance(found, Path):
        return found
    places = ", ".join(map(str, found.places))
    if found.named:
        wanted = "finished result" if target == LATEST else "two finished results"
        raise ResultNotFoundError(
            f"Cannot find result: {target} (no {wanted} in {places}); "
            "run pytest --skill-eval first, or pass --root DIR of the definition root"
        )
    raise ResultNotFoundError(
        f"Cannot find result: {target} (looked in {places}); "
        "pass a result id a run printed, latest, or a result directory"
    )


def _ini_settings(directory: Path) -> dict[str, str] | None:
    """pytest's settings in the first ini file of `directory` that has them; None: none."""
    # Here, not at the top: only naming an earlier result by id reads ini files, and the
    # session (so every xdist worker) imports this module.
    import configparser
    import tomllib

    for name, section in _INI_FILES:
        path = directory / name
        if not path.is_file():
            continue
        try:
            if section is None:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
                options = data.get("tool", {}).get("pytest", {}).get("ini_options")
                if isinstance(options, dict):
                    return {str(k): str(v) for k, v in options.items()}
                continue
            parser = configparser.ConfigParser(interpolation=None)
            parser.read(path, encoding="utf-8")
        except (OSError, ValueError, configparser.Error):
            continue  # pytest itself reports a broken ini file; here it configures nothing
        if parser.has_section(section):
            return dict(parser.items(section))
        if name in ("pytest.ini", ".pytest.ini"):
            return {}  # pytest.ini is the rootdir's ini file even when empty
    return None


def _configured_dir(directory: Path, settings: dict[str, str]) -> Path | None:
    results = settings.get("skill_eval_results", "").strip()
    if results:
        return (directory / results).resolve()
    root = settings.get("skill_eval_root", "").strip()
    if root:
        return layout.runs_dir((directory / root).resolve())
    return None
