"""Gemini CLI's eager copy: its own bundle, with every module factory compiled with its chunk.

Gemini CLI ships as an esbuild bundle, its CommonJS modules (and the ES modules it initialises
lazily) wrapped in factories: `var require_x = __commonJS({ "node_modules/x.js"(exports,
module) { … } });`. V8 compiles such a method only when it is first called, so the compile
cache the evaluator warms (`hosts.compile_cache`: Node caches what V8 compiled before a module
ran) never holds a factory, and every subject parses and compiles again each one its start
runs. The eager copy writes each factory as a parenthesised function expression,
`"node_modules/x.js": (function(exports, module) { … })`, which V8 compiles with its chunk and
Node's cache then keeps. Nothing the bundle's helpers see changes: the same property name (which
they read to call it), the same `this`, `arguments` and strictness, the same line numbers.

The copy is built on first use into the operator's cache directory, once per key (the version,
where Gemini CLI is installed and what its files hold, this transform), into a
temporary directory renamed into place.
Before it is kept, esbuild prints every changed file and its original with the whitespace
removed, and the two must differ by exactly the changed heads and one `)` after each factory's
closing brace: a head or a parenthesis that landed in a string, a comment or anywhere else is a
difference, and nothing is kept. It must then answer `--version` as Gemini CLI does. Every
file's SHA-256 is kept in the copy's manifest, checked by the controller before the copy is used
(a worker checks the manifest's digest and the files' sizes); `run.json` records the digest.

The copy sits in a package directory of its own (`<home>/pkg`), its `package.json` copied and a
`node_modules` link to the directory holding the installed package. Where that directory is not
the only `node_modules` Node finds from the installed bundle (one of its own, or one above it),
no copy is made: the copy would not find its optional dependencies (`node-pty`, `keytar`) where
Gemini CLI does.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import HostError
from ..binaries import PINNED_ESBUILD, esbuild_version

PACKAGE_NAME = "@google/gemini-cli"
ENTRY = Path("bundle") / "gemini.js"
MANIFEST = "eager.json"
FORM = 1  # part of the key: raise it when the transform changes
# esbuild's factory wrappers, the line before a factory's head.
_OPENER = re.compile(r"^var [\w$]+ = __(?:commonJS|esm)\(\{$")
_HEAD = re.compile(r'^  ("(?:[^"\\]|\\.)+")\(([\w$]+(?:, [\w$]+)*)?\) \{$')
_CLOSE, _AFTER = "  }", "});"
# The same heads once esbuild has printed a file without whitespace.
_PRINTED_HEAD = re.compile(r'(__(?:commonJS|esm)\(\{"(?:[^"\\\n]|\\.)*")\(')
# A chunk's imports of its sibling chunks.
_IMPORT = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s*)["']\./([^"'\s]+\.js)["']""")


class EagerError(HostError):
    """Gemini CLI's eager copy could not be built, or does not match its manifest."""


@dataclass(frozen=True, slots=True)
class EagerCopy:
    """A built, checked copy: its entry (`bundle/gemini.js`) and the digest of its files."""

    entry: Path
    sha256: str


def cache_root() -> Path:
    """`$XDG_CACHE_HOME/pytest-skill-eval/gemini-eager`, else under `~/.cache`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-skill-eval" / "gemini-eager"


def package_of(entry: Path) -> Path | None:
    """The installed `@google/gemini-cli` package whose `bundle/gemini.js` is `entry`."""
    package = entry.resolve().parents[1]
    try:
        manifest = json.loads((package / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if entry.resolve() != package / ENTRY or manifest.get("name") != PACKAGE_NAME:
        return None
    return package


def eager_heads(text: str) -> tuple[str, int]:
    """`text` with each factory esbuild printed as a method written as a parenthesised function
    expression, and how many; EagerError where a factory's end is not where esbuild puts it."""
    lines = text.split("\n")
    count, opened = 0, False
    for number, line in enumerate(lines):
        if opened:
            if line == _CLOSE and number + 1 < len(lines) and lines[number + 1] == _AFTER:
                lines[number], opened = _CLOSE + ")", False
            elif line.startswith(_AFTER):
                raise EagerError(f"line {number + 1}: a factory ends where none was seen closing")
            continue
        head = _HEAD.match(line)
        if head and number and _OPENER.match(lines[number - 1]):
            lines[number] = f"  {head.group(1)}: (function({head.group(2) or ''}) {{"
            count, opened = count + 1, True
    if opened:
        raise EagerError("the last factory never closes")
    return "\n".join(lines), count


def only_heads_differ(original: str, changed: str, heads: int) -> bool:
    """Whether `changed` is `original` (both printed by esbuild without whitespace) with exactly
    `heads` factory heads written as parenthesised function expressions, each closed by a `)`
    right after a `}`: nothing else differs."""
    expected, found = _PRINTED_HEAD.subn(r"\1:(function(", original)
    if found != heads or len(changed) - len(expected) != heads:
        return False
    i = j = 0  # in expected, in changed: every `)` skipped in changed is one of the closes
    while True:
        same = _common(expected, i, changed, j)
        i, j = i + same, j + same
        if i == len(expected) and j == len(changed):
            return True
        if j == len(changed) or changed[j - 1 : j + 1] != "})":
            return False
        j += 1


def _common(a: str, i: int, b: str, j: int) -> int:
    """How many characters `a[i:]` and `b[j:]` share before they differ (compared in slices
    that double while they match, then halved to the first difference)."""
    shared, step = 0, 4096
    while True:
        step = min(step, len(a) - i - shared, len(b) - j - shared)
        if step <= 0:
            return shared
        if a[i + shared : i + shared + step] == b[j + shared : j + shared + step]:
            shared, step = shared + step, step * 2
            continue
        low, high = 0, step  # the first `low` match; they differ before `high`
        while high - low > 1:
            middle = (low + high) // 2
            start_a, start_b = i + shared + low, j + shared + low
            if a[start_a : i + shared + middle] == b[start_b : j + shared + middle]:
                low = middle
            else:
                high = middle
        return shared + low


def eager_copy(entry: Path, version: str, *, esbuild: Path, node: Path) -> EagerCopy:
    """The checked eager copy of the Gemini CLI whose entry is `entry`, built on first use (its
    changes proven by the pinned `esbuild`, its start by `node`)."""
    package = package_of(entry)
    if package is None:
        raise EagerError(f"{entry} is not the entry of an installed {PACKAGE_NAME}")
    _one_lookup(package / "bundle", package.parents[1])
    found = esbuild_version(esbuild)
    if found != PINNED_ESBUILD:
        raise EagerError(f"{esbuild} is esbuild {found}, not the pinned {PINNED_ESBUILD}")
    key = {
        "gemini-cli": version,
        "package": str(package),
        "installed": _fingerprint(package),
        "esbuild": found,
        "form": str(FORM),
    }
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    home = cache_root() / f"gemini-{version}-{digest}"
    if not home.is_dir():
        home.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with (home.parent / f".{home.name}.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time; the others wait and use it
            if not home.is_dir():
                for left in home.parent.glob(f".{home.name}.*"):  # a killed build's staging
                    if left.is_dir() and not left.is_symlink():
                        shutil.rmtree(left, ignore_errors=True)
                _build(package, key, home, esbuild, node)
    return checked_copy(home)


def reachable(bundle: Path, entry: str = ENTRY.name) -> list[str]:
    """The bundle's chunks `entry` imports, statically or by a literal `import("./…")`, and
    the chunks they import in turn (the other entry points' chunks are copied unchanged)."""
    found, todo = set(), [entry]
    while todo:
        name = todo.pop()
        if name in found or not (bundle / name).is_file():
            continue
        found.add(name)
        text = (bundle / name).read_text(encoding="utf-8")
        todo += [m.group(1) for m in _IMPORT.finditer(text) if "/" not in m.group(1)]
    return sorted(found)


@functools.cache
def checked_copy(home: Path, *, hashed: bool = True) -> EagerCopy:
    """The copy in `home` once every file matches its manifest: by SHA-256, or (`hashed`
    False, in a worker, after the controller hashed them) by size; and once its `node_modules`
    is still the link it was built with, the only place Node looks for its dependencies."""
    again = f"delete {home} to build it again"
    try:
        manifest = json.loads((home / MANIFEST).read_text(encoding="utf-8"))
        files: dict[str, list[Any]] = manifest["files"]
        modules = str(manifest["modules"])
        if not all(_entry_shape(value) for value in files.values()):
            raise TypeError("a file's entry is not [size, sha256]")
        found = set(_files(home / "pkg"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise EagerError(f"{home}: the copy's manifest cannot be read ({error}); {again}") from None
    link = home / "pkg" / "node_modules"
    if not link.is_symlink() or os.readlink(link) != modules:
        raise EagerError(f"{link} is not the link to {modules} it was built with; {again}")
    _one_lookup(home / "pkg" / "bundle", link)
    if found != set(files):
        raise EagerError(f"{home / 'pkg'}: its files differ from {home / MANIFEST}; {again}")
    for name, (size, sha256) in sorted(files.items()):
        path = home / "pkg" / name
        if path.stat().st_size != size or (hashed and _sha256(path) != sha256):
            raise EagerError(f"{path} does not match {home / MANIFEST}; {again}")
    if _digest(files) != manifest.get("sha256"):
        raise EagerError(f"{home / MANIFEST}: its digest does not match its files; {again}")
    return EagerCopy(home / "pkg" / ENTRY, manifest["sha256"])


def _entry_shape(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], int)
        and isinstance(value[1], str)
    )


def _module_dirs(start: Path) -> list[Path]:
    """Where Node looks for a package required from a module in `start`, in order: the
    `node_modules` of `start` and of each directory above it (none inside a `node_modules`)."""
    return [d / "node_modules" for d in (start, *start.parents) if d.name != "node_modules"]


def _one_lookup(start: Path, expected: Path) -> None:
    """EagerError unless `expected` is the only `node_modules` Node can find from `start`: a
    copy elsewhere looks only there, so it finds every dependency where Gemini CLI does."""
    found = [directory for directory in _module_dirs(start) if os.path.lexists(directory)]
    if found != [expected]:
        where = ", ".join(str(directory) for directory in found) or "nowhere"
        raise EagerError(
            f"Node finds modules for {start} in {where}, not in {expected} alone: a copy "
            "would not find the same ones"
        )


def describe(copy: EagerCopy | None) -> dict[str, str]:
    """What `run.json` records about the form of Gemini CLI that ran."""
    return {"kind": "stock"} if copy is None else {"kind": "eager", "sha256": copy.sha256}


def _files(root: Path) -> Iterable[str]:
    """Every regular file under `root` (not through its `node_modules` link), relative."""
    for directory, names, files in os.walk(root):
        names[:] = [n for n in names if not (directory == str(root) and n == "node_modules")]
        for name in files:
            yield os.path.relpath(os.path.join(directory, name), root)


def _fingerprint(package: Path) -> str:
    """What the installed files hold (each one's name and SHA-256): a package changed in place
    (patched, or another build of the version) gets a copy of its own, a reinstall the same."""
    names = sorted(_files(package))
    return hashlib.sha256(
        json.dumps([[n, _sha256(package / n)] for n in names]).encode()
    ).hexdigest()


def _sha256(path: Path) -> str:
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def _digest(files: dict[str, list[Any]]) -> str:
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def _build(package: Path, key: dict[str, str], home: Path, esbuild: Path, node: Path) -> None:
    """Copy, change and prove in a temporary directory beside `home`, then rename it there."""
    staging = Path(tempfile.mkdtemp(prefix=f".{home.name}.", dir=home.parent))
    try:
        copy = staging / "pkg"
        shutil.copytree(package / "bundle", copy / "bundle", symlinks=True)
        shutil.copy2(package / "package.json", copy / "package.json")
        changed = _change(copy / "bundle")
        _prove(esbuild, package / "bundle", copy / "bundle", changed, staging / "printed")
        shutil.rmtree(staging / "printed")
        modules = package.parents[1]
        (copy / "node_modules").symlink_to(modules)
        _one_lookup(copy / "bundle", copy / "node_modules")
        _starts(node, copy / ENTRY, key["gemini-cli"], staging)
        files = {
            name: [(copy / name).stat().st_size, _sha256(copy / name)] for name in _files(copy)
        }
        manifest = {"key": key, "changed": changed, "modules": str(modules), "files": files}
        manifest["sha256"] = _digest(files)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        try:
            staging.rename(home)
        except OSError:
            if not home.is_dir():  # a worker that built it first is the one kept
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _change(bundle: Path) -> dict[str, int]:
    """Each chunk `gemini.js` reaches, its factories made eager; how many in each one changed."""
    changed = {}
    try:
        for name in reachable(bundle):
            text, heads = eager_heads((bundle / name).read_text(encoding="utf-8"))
            if heads:
                (bundle / name).write_text(text, encoding="utf-8")
                changed[name] = heads
    except UnicodeDecodeError as error:
        raise EagerError(f"{bundle}: a chunk is not UTF-8 ({error})") from None
    if not changed:
        raise EagerError(f"{bundle} has no module factories to compile early")
    return changed


def _prove(esbuild: Path, original: Path, copy: Path, changed: dict[str, int], out: Path) -> None:
    """EagerError unless each changed chunk and its original, printed by esbuild without
    whitespace, differ by exactly the changed heads."""
    names = sorted(changed)
    sources = {f"{side}/{Path(n).stem}": base / n for n in names for side, base in
               (("original", original), ("eager", copy))}  # fmt: skip
    print_without_whitespace(esbuild, sources, out)
    for name in names:
        before, after = ((out / side / name).read_text("utf-8") for side in ("original", "eager"))
        if not only_heads_differ(before, after, changed[name]):
            raise EagerError(f"{copy / name}: the change is not the factories' heads alone")


def print_without_whitespace(esbuild: Path, sources: Mapping[str, Path], out: Path) -> None:
    """esbuild prints each source to `out/<name>.js` without whitespace (one run, all cores);
    EagerError where it cannot parse one."""
    argv = [str(esbuild), "--minify-whitespace", "--log-level=error", f"--outdir={out}"]
    argv += [f"{name}={path}" for name, path in sources.items()]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as failure:
        raise EagerError(f"esbuild could not run: {failure}") from failure
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no output"])[0]
        raise EagerError(
            f"esbuild could not print the copy (exit {done.returncode}): {first[:200]}"
        )


def _starts(node: Path, entry: Path, version: str, staging: Path) -> None:
    """The copy starts and answers `--version` with Gemini CLI's version."""
    (home := staging / "home").mkdir()
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "GEMINI_CLI_HOME": str(home),
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }
    try:
        done = subprocess.run(
            [str(node), str(entry), "--version"], capture_output=True, text=True, timeout=120,
            env=env, cwd=home, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as failure:
        raise EagerError(f"the copy did not start: {failure}") from failure
    if done.returncode != 0 or done.stdout.strip() != version:
        first = ((done.stderr or done.stdout).strip().splitlines() or ["no output"])[0]
        raise EagerError(f"the copy does not start like Gemini CLI {version}: {first[:200]}")
    shutil.rmtree(home)
