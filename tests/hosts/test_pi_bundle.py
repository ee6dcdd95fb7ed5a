"""Pi's bundle: built once per key into the cache, renamed into place, checked by hash before
use; a bundle that cannot be built leaves stock Pi running, said in one line.

A stand-in Pi package and esbuild keep these fast; the real build and its equivalence with stock
Pi are proven end to end (tests/plugin/test_pi_bundle_e2e.py, tests/extensions/test_pi_forms.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from pytest_skill_eval.evidence import verified
from pytest_skill_eval.evidence.store import sha256_file
from pytest_skill_eval.hosts import binaries
from pytest_skill_eval.hosts.binaries import PINNED_ESBUILD, esbuild_binary
from pytest_skill_eval.hosts.pi import bundle
from pytest_skill_eval.hosts.pi.binary import pi_executable
from pytest_skill_eval.hosts.pi.bundle import MANIFEST, BundleError, checked_bundle, pi_bundle
from pytest_skill_eval.hosts.pi.host import skill_loader
from pytest_skill_eval.hosts.pi.registration import PINNED
from pytest_skill_eval.hosts.staged import staged
from tests.support.files import write
from tests.support.paths import REPO

# Writes a deterministic cli.js and one chunk into --outdir, counting its builds beside itself.
ESBUILD = """#!/bin/sh
[ "$1" = --version ] && { echo "${FAKE_ESBUILD_VERSION:-%s}"; exit 0; }
[ -n "$FAKE_ESBUILD_FAIL" ] && { echo "$FAKE_ESBUILD_FAIL" >&2; exit 1; }
echo build >> "$(dirname "$0")/builds"
printf '%%s\n' "$@" | grep -- '^--alias:' > "$(dirname "$0")/aliases"
for arg in "$@"; do case "$arg" in --outdir=*) out="${arg#--outdir=}";; esac; done
mkdir -p "$out"
echo 'import "./chunk-A.js"; console.log("%s");' > "$out/cli.js"
[ -n "$FAKE_BUNDLE_BROKEN" ] && echo 'throw new Error("broken");' > "$out/cli.js"
echo 'export {};' > "$out/chunk-A.js"
echo 'export {};' > "$out/amazon-bedrock.js"
""" % (PINNED_ESBUILD, PINNED)  # noqa: UP031 (the shell's own ${…} would need escaping)


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Pi package installed with its lockfile and esbuild; returns Pi's CLI."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    modules = tmp_path / "project" / "node_modules"
    package = modules / "@mariozechner" / "pi-coding-agent"
    write(package / "package.json", json.dumps({"version": PINNED, "type": "module"}))
    cli = write(package / "dist" / "cli.js", f'#!/usr/bin/env node\nconsole.log("{PINNED}");\n')
    write(package / "dist" / "core" / "config.js", "export {};\n")
    write(modules / "@mariozechner" / "pi-ai" / "dist" / "providers" / "amazon-bedrock.js", "")
    write(modules / "esbuild" / "bin" / "esbuild", ESBUILD, mode=0o755)
    for lazy in ("jiti/lib/jiti.mjs", "jiti/dist/babel.cjs", "cli-highlight/dist/index.js"):
        write(modules / lazy, "")
    (modules / ".bin").mkdir()
    (modules / ".bin" / "esbuild").symlink_to(modules / "esbuild" / "bin" / "esbuild")
    (modules / ".bin" / "pi").symlink_to(cli)
    write(tmp_path / "project" / "package-lock.json", "{}")
    cli.chmod(0o755)
    return cli


def test_the_bundle_is_built_once_into_the_cache_beside_a_mirror_of_pis_package(
    installed: Path, tmp_path: Path
) -> None:
    built = pi_bundle(installed, esbuild_version=PINNED_ESBUILD)
    home = built.entry.parents[4]
    assert home.parent == tmp_path / "cache" / "pytest-skill-eval" / "pi-bundle"
    assert built.entry == home / "pkg" / "dist" / "core" / "bundle" / "cli.js"
    # Where Pi looks for its own files from the bundle: two levels up, and up to package.json.
    package = installed.parents[1]
    assert (home / "pkg" / "package.json").resolve() == package / "package.json"
    assert (
        home / "pkg" / "dist" / "core" / "config.js"
    ).resolve() == package / "dist/core/config.js"
    assert (home / "node_modules").resolve() == package.parents[1]
    # The two deferred modules: jiti's lazy entry (its Babel found beside the bundle at its
    # first transform) and cli-highlight through the shim; paths from where esbuild runs.
    babel = home / "pkg" / "dist" / "core" / "dist" / "babel.cjs"
    assert babel.resolve() == package.parents[1] / "jiti" / "dist" / "babel.cjs"
    aliases = (package.parents[1] / "esbuild" / "bin" / "aliases").read_text().splitlines()
    shim = os.path.relpath(bundle.LAZY_HIGHLIGHT, package.parents[2])
    assert aliases == [
        "--alias:jiti/static=./node_modules/jiti/lib/jiti.mjs",
        f"--alias:cli-highlight=./{shim}",
        "--alias:pi-lazy:cli-highlight=./node_modules/cli-highlight/dist/index.js",
    ]
    manifest = json.loads((home / MANIFEST).read_text())
    assert manifest["sha256"] == built.sha256
    assert set(manifest["files"]) == {"cli.js", "chunk-A.js", "amazon-bedrock.js"}
    again = pi_bundle(installed, esbuild_version=PINNED_ESBUILD)
    assert again == built
    assert (installed.parents[3] / "esbuild" / "bin" / "builds").read_text() == "build\n"
    # No staging left behind; the lock the builders took stays.
    assert sorted(p.name for p in home.parent.iterdir()) == [".lock", home.name]


def test_a_lockfile_change_is_another_bundle(installed: Path) -> None:
    first = pi_bundle(installed, esbuild_version=PINNED_ESBUILD)
    write(installed.parents[4] / "package-lock.json", '{"changed": true}')
    second = pi_bundle(installed, esbuild_version=PINNED_ESBUILD)
    assert second.entry != first.entry
    assert second.sha256 == first.sha256  # the same inputs built the same bytes


def test_a_copy_of_the_plugin_installed_elsewhere_builds_its_own_bundle(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The bundle names the lazy shim by its path: another copy's bundle is other bytes.
    first = pi_bundle(installed, esbuild_version=PINNED_ESBUILD)
    elsewhere = write(
        tmp_path / "site-packages" / "lazy_highlight.mjs", bundle.LAZY_HIGHLIGHT.read_bytes()
    )
    monkeypatch.setattr(bundle, "LAZY_HIGHLIGHT", elsewhere)
    assert pi_bundle(installed, esbuild_version=PINNED_ESBUILD).entry != first.entry


def test_a_worker_that_loses_the_race_keeps_the_winners_bundle(installed: Path) -> None:
    built = pi_bundle(installed, esbuild_version=PINNED_ESBUILD)
    home = built.entry.parents[4]
    package = installed.parents[1]
    esbuild = esbuild_binary(package)
    assert esbuild is not None
    # A second build (another machine's process, sharing the cache without its lock) finishing
    # after the first one was renamed into place.
    with staged(home) as staging:
        bundle._build(package, esbuild, bundle.bundle_key(package, esbuild), staging)
    assert checked_bundle.__wrapped__(home) == built
    assert sorted(p.name for p in home.parent.iterdir()) == [".lock", home.name]


def test_a_changed_file_is_refused_before_use(installed: Path) -> None:
    built = pi_bundle(installed, esbuild_version=PINNED_ESBUILD)
    checked_bundle.cache_clear()
    (built.entry.parent / "chunk-A.js").write_text("globalThis.planted = 1;\n")
    with pytest.raises(BundleError, match=r"chunk-A\.js does not match its hash in "):
        pi_bundle(installed, esbuild_version=PINNED_ESBUILD)
    checked_bundle.cache_clear()
    (built.entry.parent / "extra.js").write_text("")
    with pytest.raises(BundleError, match="its files differ from"):
        checked_bundle(built.entry.parents[4])


def test_a_later_run_hashes_the_bundle_again_only_once_a_file_of_it_changed(
    installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(verified, "_SETTLED_S", 0.0)  # built just now: remembered at once
    built = pi_bundle(installed, esbuild_version=PINNED_ESBUILD)
    hashed: list[Path] = []

    def counting(path: Path) -> str:
        hashed.append(path)
        return sha256_file(path)

    monkeypatch.setattr(bundle, "sha256_file", counting)
    bundle_dir = built.entry.parent
    checked_bundle.cache_clear()  # a later run
    assert checked_bundle(built.entry.parents[4]) == built
    assert not [path for path in hashed if path.parent == bundle_dir]
    (bundle_dir / "chunk-A.js").write_text("export { };\n")  # the same size
    checked_bundle.cache_clear()
    with pytest.raises(BundleError, match=r"chunk-A\.js does not match its hash in "):
        checked_bundle(built.entry.parents[4])
    assert [path for path in hashed if path.parent == bundle_dir]


def test_a_bundle_that_cannot_be_built_leaves_stock_pi_and_one_line(
    installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_ESBUILD_FAIL", "error: something esbuild cannot read")
    lines: list[str] = []
    binary = pi_executable(str(installed), installed.parents[4], notice=lines.append)
    assert binary.bundle is None
    assert binary.entry == installed
    assert binary.record()["form"] == {"kind": "stock"}
    assert lines == [
        "skill-eval: Pi's bundle cannot be used (esbuild failed (exit 1): error: something "
        "esbuild cannot read); subjects run stock Pi"
    ]


def test_an_esbuild_other_than_the_pinned_one_builds_nothing(
    installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_ESBUILD_VERSION", "0.1.0")
    with pytest.raises(BundleError, match=rf"is esbuild 0\.1\.0, not the pinned {PINNED_ESBUILD}"):
        pi_bundle(installed, esbuild_version=PINNED_ESBUILD)
    lines: list[str] = []
    binary = pi_executable(str(installed), installed.parents[4], bundle=False, notice=lines.append)
    assert (binary.bundle, lines) == (None, [])


def test_a_built_bundle_that_does_not_start_like_pi_is_not_kept(
    installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_BUNDLE_BROKEN", "1")
    lines: list[str] = []
    binary = pi_executable(str(installed), installed.parents[4], notice=lines.append)
    assert (binary.bundle, binary.entry) == (None, installed)
    assert len(lines) == 1
    assert lines[0].startswith(
        "skill-eval: Pi's bundle cannot be used (the built bundle does not start like Pi 0.73.1: "
    )
    # Nothing kept but the builders' lock: the next run tries again.
    assert [p.name for p in bundle.cache_root().iterdir()] == [".lock"]


@pytest.mark.pi
def test_the_pinned_pi_builds_into_the_same_bytes_anywhere_and_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    usual = pi_executable(None, REPO)  # the operator's cache (built by an earlier run, or now)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "elsewhere"))
    lines: list[str] = []
    fresh = pi_executable(None, REPO, notice=lines.append)
    assert lines == []
    assert fresh.bundle is not None
    assert usual.bundle is not None
    assert fresh.bundle.entry.is_relative_to(tmp_path / "elsewhere")
    assert fresh.bundle.sha256 == usual.bundle.sha256


def test_the_skill_warnings_read_pis_loader_from_the_bundle_it_runs() -> None:
    # The loader the running CLI already holds, not the installed module graph loaded again.
    binary = pi_executable(None, REPO)
    assert binary.bundle is not None
    assert binary.runtime is not None
    loader = skill_loader(binary)
    assert loader == binary.bundle.entry.with_name("skills.js")
    probe = (
        "const m = await import(process.argv[1]);"
        "process.exit(typeof m.loadSkills === 'function' ? 0 : 3)"
    )
    url = loader.as_uri()
    done = subprocess.run(
        [str(binary.runtime.path), "--input-type=module", "-e", probe, url], check=False
    )
    assert done.returncode == 0


def test_no_esbuild_beside_pi_says_what_to_install(
    installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (installed.parents[3] / ".bin" / "esbuild").unlink()
    monkeypatch.setattr(binaries, "ESBUILD_BESIDE", installed.parents[4] / "elsewhere")
    lines: list[str] = []
    binary = pi_executable(str(installed), installed.parents[4], notice=lines.append)
    assert binary.bundle is None
    assert lines == [
        f"skill-eval: Pi's bundle cannot be used (esbuild is not installed beside Pi: `npm install "
        f"esbuild@{PINNED_ESBUILD}` where Pi is installed, or pass --skill-eval-pi-bundle off); "
        "subjects run stock Pi"
    ]


def test_each_use_marks_the_bundle_used_so_pruning_keeps_it(installed: Path) -> None:
    built = pi_bundle(installed, esbuild_version=PINNED_ESBUILD)
    home = built.entry.parents[4]
    month_ago = time.time() - 40 * 86400
    os.utime(home, (month_ago, month_ago))
    assert pi_bundle(installed, esbuild_version=PINNED_ESBUILD) == built
    assert time.time() - home.stat().st_mtime < 3600


def test_a_cache_that_cannot_be_written_leaves_stock_pi_and_one_line(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(write(tmp_path / "a-file", "")))
    lines: list[str] = []
    binary = pi_executable(str(installed), installed.parents[4], notice=lines.append)
    assert (binary.bundle, binary.entry) == (None, installed)
    assert len(lines) == 1
    assert lines[0].startswith("skill-eval: Pi's bundle cannot be used ([Errno 20] Not a directory")
