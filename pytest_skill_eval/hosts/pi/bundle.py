"""Pi as a verified esbuild bundle: the same code in a few files instead of ~1,470 modules.

Almost all of a Pi subject's start-up CPU is Node's ES-module loader walking Pi's files; the
bundle cuts a real start to under half. It is built with the pinned esbuild from the installed
Pi into the operator's cache directory, once per key (Pi's version, the lockfile's hash,
esbuild's version, where Pi and this package are installed), into a temporary directory renamed
into place, so workers racing to build it leave one complete copy. Every file's SHA-256 is kept
in the bundle's manifest and checked before the bundle is used; `run.json` records the digest.

The bundle sits where Pi expects its own code: `<mirror>/pkg/dist/core/bundle/`, in a mirror
of Pi's package whose other files are links to the installed ones (the extension loader finds
`dist/index.js` two levels up, `config.js` walks up to `package.json`), beside a `node_modules`
link to the installed dependencies. The Bedrock provider, imported by a name esbuild cannot
see, is an entry point of its own (`amazon-bedrock.js`, where pi-ai looks for it), and so is
Pi's skill loader (`skills.js`, the module `--skill` goes through): the evaluator's skill-warnings
extension imports it (`hosts/pi/host.py`), and from the bundle it shares its chunks with the
running CLI instead of loading the installed module graph again (about 50 ms of CPU a subject).

Two aliases defer what a json or rpc start never uses (a third of the bundle's start-up CPU):
jiti's Babel, needed only to load a `.ts` extension, comes from jiti's own lazy entry instead of
its static one (that entry requires `../dist/babel.cjs` beside the bundle at its first
transform: a link in the mirror), and cli-highlight registers highlight.js's languages only when
something is highlighted (`lazy_highlight.mjs`). Both are part of the bundle the equivalence
tests prove against stock Pi on every run of the test suite.

Each module factory esbuild wrote is then made to compile with its chunk, so Node's compile cache
keeps it (`hosts/factories.py`, proven against what esbuild wrote before the bundle is kept):
about 4% of a Pi subject's CPU.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import HostError
from ...evidence.store import sha256_file
from ..binaries import esbuild_binary, esbuild_version
from ..factories import FactoryError, eager_chunks, prove
from ..staged import (
    build_once,
    cache_dir,
    digest,
    read_once_per_change,
    used,
    version_failure,
    write_manifest,
)

PI_PACKAGE = Path("@mariozechner") / "pi-coding-agent"
BEDROCK = Path("@mariozechner") / "pi-ai" / "dist" / "providers" / "amazon-bedrock.js"
BUNDLE_DIR = Path("pkg") / "dist" / "core" / "bundle"
SKILL_LOADER = Path("dist") / "core" / "skills.js"  # Pi's skill loader, in its package
MANIFEST = "bundle.json"
# Native or optional modules Pi loads only where they exist: never bundled.
EXTERNALS = ("@silvia-odwyer/photon-node", "@mariozechner/clipboard", "koffi", "@opentelemetry/api")
# Deferred at start-up (see above): what Pi imports, and the installed module each one becomes.
LAZY_JITI = ("jiti/static", Path("jiti") / "lib" / "jiti.mjs")
JITI_BABEL = Path("jiti") / "dist" / "babel.cjs"
LAZY_HIGHLIGHT = Path(__file__).with_name("lazy_highlight.mjs")
HIGHLIGHT = ("pi-lazy:cli-highlight", Path("cli-highlight") / "dist" / "index.js")
# Part of the bundle's key: raise it when the aliases, the entry points or the change made to
# its factories change.
LAZY_FORM = 3
# The bundle's modules call `require` (CommonJS dependencies) next to where they now sit.
BANNER = (
    "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);"
)


class BundleError(HostError):
    """Pi's bundle could not be built or does not match its manifest."""


@dataclass(frozen=True, slots=True)
class PiBundle:
    """A built, checked bundle: its entry and the digest of its files."""

    entry: Path
    sha256: str

    @property
    def skill_loader(self) -> Path:
        """Pi's skill loader as the bundle's own entry point, beside its CLI."""
        return self.entry.with_name(SKILL_LOADER.name)


def cache_root() -> Path:
    """`$XDG_CACHE_HOME/pytest-skill-eval/pi-bundle`, else under `~/.cache`."""
    return cache_dir("pi-bundle")


def package_of(entry: Path) -> Path | None:
    """Pi's installed package (`…/node_modules/@mariozechner/pi-coding-agent`) of `entry`."""
    for parent in entry.resolve().parents:
        if parent.name == PI_PACKAGE.name and parent.parent.name == PI_PACKAGE.parent.name:
            return parent
    return None


def _lockfile(modules: Path) -> Path | None:
    for candidate in (modules.parent / "package-lock.json", modules / ".package-lock.json"):
        if candidate.is_file():
            return candidate
    return None


def _version(esbuild: Path) -> str:
    found = esbuild_version(esbuild)
    if not found:
        raise BundleError(f"{esbuild} --version failed")
    return found


def bundle_key(package: Path, esbuild: Path) -> dict[str, str]:
    """What the bundle is built from: Pi's version, the lockfile's hash, esbuild's version (and
    where Pi is installed, and the lazy shim's hash and place: the bundle names it by its path,
    so a copy of this package installed elsewhere builds its own)."""
    modules = package.parents[1]
    lock = _lockfile(modules)
    pi_version = json.loads((package / "package.json").read_text(encoding="utf-8"))["version"]
    return {
        "pi": str(pi_version),
        "lock": sha256_file(lock) if lock else "none",
        "esbuild": _version(esbuild),
        "modules": str(modules),
        "lazy": f"{LAZY_FORM}-{sha256_file(LAZY_HIGHLIGHT)}",
        "shim": str(LAZY_HIGHLIGHT),
    }


def pi_bundle(entry: Path, *, esbuild_version: str, node: Path | None = None) -> PiBundle:
    """The checked bundle of the Pi whose CLI is `entry`, built on first use with the esbuild
    of `esbuild_version` (the one it is proven with); a new build must start on `node` and
    answer `--version` as Pi does before it is kept."""
    package = package_of(entry)
    if package is None:
        raise BundleError(f"{entry} is not inside an installed {PI_PACKAGE}")
    esbuild = esbuild_binary(package)
    if esbuild is None:
        raise BundleError(
            f"esbuild is not installed beside Pi: `npm install esbuild@{esbuild_version}` where "
            "Pi is installed, or pass --skill-eval-pi-bundle off"
        )
    key = bundle_key(package, esbuild)
    if key["esbuild"] != esbuild_version:
        found = key["esbuild"]
        raise BundleError(f"{esbuild} is esbuild {found}, not the pinned {esbuild_version}")
    home = cache_root() / f"pi-{key['pi']}-{digest(key)[:20]}"
    build_once(home, lambda staging: _build(package, esbuild, key, staging, node))
    used(home)
    return checked_bundle(home)


@functools.cache
def checked_bundle(home: Path) -> PiBundle:
    """The bundle in `home` once every file matches its manifest (checked once per process,
    and hashed again only once a file of the bundle changed: `staged.read_once_per_change`)."""
    try:
        manifest = json.loads((home / MANIFEST).read_text(encoding="utf-8"))
        files: dict[str, str] = manifest["files"]
        bundle = home / BUNDLE_DIR
        found = {p.name for p in bundle.iterdir()}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise BundleError(f"{home}: the bundle's manifest cannot be read ({error})") from None
    if found != set(files):
        raise BundleError(f"{bundle}: its files differ from {home / MANIFEST}")

    def hashed() -> str:
        for name, expected in sorted(files.items()):
            if sha256_file(bundle / name) != expected:
                raise BundleError(f"{bundle / name} does not match its hash in {home / MANIFEST}")
        return digest(files)

    if read_once_per_change(bundle, "pi-bundle", hashed) != manifest.get("sha256"):
        raise BundleError(f"{home / MANIFEST}: its digest does not match its files")
    return PiBundle(bundle / "cli.js", manifest["sha256"])


def _build(
    package: Path, esbuild: Path, key: dict[str, str], staging: Path, node: Path | None = None
) -> None:
    """Build the bundle, its package around it and its manifest into `staging`."""
    out = staging / BUNDLE_DIR
    _esbuild(package, esbuild, out)
    _eager(esbuild, out, staging)
    _mirror(package, staging)
    if node is not None:
        _starts(node, out / "cli.js", key["pi"], staging)
    files = {p.name: sha256_file(p) for p in sorted(out.iterdir())}
    write_manifest(staging / MANIFEST, {"key": key, "files": files, "sha256": digest(files)})


def _eager(esbuild: Path, out: Path, staging: Path) -> None:
    """The bundle's module factories written to compile with their chunk, proven against what
    esbuild wrote (`hosts/factories.py`)."""
    written = staging / "esbuilt"
    shutil.copytree(out, written)
    try:
        changed = eager_chunks(out, sorted(path.name for path in out.glob("*.js")))
        if changed:
            prove(esbuild, written, out, changed, staging / "printed")
    except FactoryError as error:
        raise BundleError(f"the bundle's factories cannot compile early: {error}") from None
    shutil.rmtree(written)


def _esbuild(package: Path, esbuild: Path, out: Path) -> None:
    modules = package.parents[1]
    bedrock = modules / BEDROCK
    if not bedrock.is_file():
        nested = package / "node_modules" / BEDROCK
        bedrock = nested if nested.is_file() else bedrock
    argv = [
        str(esbuild),
        f"cli={package / 'dist' / 'cli.js'}",
        f"amazon-bedrock={bedrock}",
        f"skills={package / SKILL_LOADER}",
        *("--bundle", "--splitting", "--platform=node", "--format=esm", "--target=node20"),
        f"--outdir={out}",
        *("--entry-names=[name]", "--chunk-names=chunk-[hash]", "--log-level=error"),
        *(f"--external:{name}" for name in EXTERNALS),
        f"--banner:js={BANNER}",
        *_aliases(package),
    ]
    # Run from the directory holding node_modules: the bundle names sources relative to it, so
    # the same inputs give the same bytes wherever they are installed.
    try:
        done = subprocess.run(
            argv, cwd=modules.parent, capture_output=True, text=True, timeout=600, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as failure:
        raise BundleError(f"esbuild could not run: {failure}") from failure
    if done.returncode != 0 or not (out / "cli.js").is_file():
        first = (done.stderr.strip().splitlines() or ["no output"])[0]
        raise BundleError(f"esbuild failed (exit {done.returncode}): {first[:200]}")


def _installed(package: Path, module: Path) -> Path:
    """Where Node finds `module` from Pi's package: nested under it, else beside it."""
    for base in (package / "node_modules", package.parents[1]):
        if (base / module).is_file():
            return base / module
    raise BundleError(f"{module} is not installed beside Pi: the bundle cannot defer it")


def _aliases(package: Path) -> list[str]:
    """esbuild's aliases for the two deferred modules, as paths from the directory it runs in
    (the one holding node_modules: the bundle's bytes then do not depend on the cache)."""
    base = package.parents[2]

    def relative(path: Path) -> str:
        return "./" + os.path.relpath(path, base)

    (jiti, jiti_entry), (highlight, highlight_entry) = LAZY_JITI, HIGHLIGHT
    return [
        f"--alias:{jiti}={relative(_installed(package, jiti_entry))}",
        f"--alias:cli-highlight={relative(LAZY_HIGHLIGHT)}",
        f"--alias:{highlight}={relative(_installed(package, highlight_entry))}",
    ]


def _starts(node: Path, cli: Path, version: str, staging: Path) -> None:
    """The built bundle starts and answers `--version` with Pi's version."""
    argv, env = [str(node), str(cli), "--version"], {"PI_OFFLINE": "1"}
    failure = version_failure(argv, staging, env, lambda out, err: version in out + err)
    if failure is not None:
        raise BundleError(f"the built bundle does not start like Pi {version}: {failure}")


def _mirror(package: Path, staging: Path) -> None:
    """Pi's package around the bundle, as links to the installed files."""
    mirror = staging / "pkg"
    for source, target in (
        (package, mirror),
        (package / "dist", mirror / "dist"),
        (package / "dist" / "core", mirror / "dist" / "core"),
    ):
        for child in source.iterdir():
            if not (target / child.name).exists():  # the directories leading to the bundle
                (target / child.name).symlink_to(child)
    # jiti's lazy entry requires `../dist/babel.cjs` from the bundle's directory.
    babel = mirror / "dist" / "core" / "dist" / JITI_BABEL.name
    if babel.parent.exists():
        raise BundleError(f"{package / 'dist' / 'core' / 'dist'} exists: no room for jiti's Babel")
    babel.parent.mkdir()
    babel.symlink_to(_installed(package, JITI_BABEL))
    (staging / "node_modules").symlink_to(package.parents[1])


def describe(bundle: PiBundle | None) -> dict[str, Any]:
    """What `run.json` records about the form of Pi that ran."""
    if bundle is None:
        return {"kind": "stock"}
    return {"kind": "bundle", "sha256": bundle.sha256}
