"""The guardian process itself (started by `reaper.Guardian`; see that module for why).

It runs as ``python -I -S guardian.py WORKSPACE [HOME]``, once per isolated home, from the
moment the home is made: the pids of the subject's processes arrive on stdin, one line each, and
``sweep`` after each process ends (it then kills what is left of them, forgets them and
answers ``swept`` on stdout). Every subject pays its start: so it imports only what is built
into the interpreter (no `site`, no `signal`, whose `enum` import alone costs more than the
interpreter's start, no psutil) and reads /proc directly. Where there is no /proc it is started
with `site` and falls back to psutil.
"""

from __future__ import annotations

# The C module under `signal`, without its enum wrappers (it has no type stubs).
import _signal  # type: ignore[import-not-found]
import os
import select
import sys

POLL_S = 0.2
RELEASED = b"released"  # the evaluator's last word: it lives and deletes the home itself
SWEEP, SWEPT = b"sweep", b"swept"  # a process of the home has ended: kill what is left of it
KILL = 9  # SIGKILL
# Whether /proc serves: else the guardian falls back to psutil (and is started with `site`).
HAS_PROC = os.path.exists("/proc/self/stat")

# A process as the guardian knows it: its pid and start time (so a reused pid is never hit).
Known = tuple[int, float]
Table = dict[int, tuple[int, float]]


def table() -> Table:
    """Every live, non-zombie process: pid -> (parent pid, start time)."""
    return Processes().table()


class Processes:
    """The process table as polled again and again: `table` reads the `stat` of a process only
    when its `/proc` entry is new.

    Reading every process's `stat` is most of a poll's CPU (the kernel composes each one), and
    nearly all of them are the same processes as last time. A `/proc/PID` directory keeps its
    inode number for as long as its process lives, and a process that reuses a pid gets a new
    one, so an entry whose inode is unchanged is the process read before: its start time is
    the same. Its parent is as read then, or it was re-parented since; a process re-parented
    into a tree was already in it (it moves only to an ancestor), so a descendant is never
    missed for it. A process that has become a zombie since it was read still appears: `fresh`
    reads every entry again. When a poll read nothing (`changed` is false), no process is new,
    so none can be a new descendant of anything.

    Most polls find nothing new, and listing `/proc` is then most of their CPU: the kernel says
    which pid it handed out last (`/proc/loadavg`, its last field), so a poll that finds the same
    one as the two polls before lists nothing and returns the last table, unchanged. It is read
    before each listing, so a process started while a listing ran makes the next poll list; and
    a pid is trusted only once a listing began a whole poll after it was first read (a process
    is listed a moment after its pid is handed out). A field that has never moved (a sandboxed
    kernel that fakes the file) is never trusted: every poll lists.
    """

    def __init__(self) -> None:
        # pid -> (inode of /proc/PID, what its stat said: None for a zombie or unreadable one)
        self._known: dict[int, tuple[int, tuple[int, float] | None]] = {}
        self.changed = False  # whether the last `table` read any entry
        self._last_pid: bytes | None = None  # the pid the kernel handed out last, as last read
        self._settled = False  # a listing began a poll after `_last_pid` was first read
        self._moves = False  # the field was seen to change: a kernel keeps it
        self._found: Table = {}

    def table(self, *, fresh: bool = False) -> Table:
        """Every live process (those read before as they were), zombies left out; without
        `fresh`, the last poll's table when no process was started since."""
        if not HAS_PROC:
            return _table_from_psutil()
        last_pid = _last_pid()
        same = last_pid is not None and last_pid == self._last_pid
        if not fresh and same and self._settled and self._moves:
            self.changed = False
            return self._found
        self._moves = self._moves or (None not in (last_pid, self._last_pid) and not same)
        self._settled, self._last_pid = same, last_pid
        known: dict[int, tuple[int, tuple[int, float] | None]] = {}
        found: Table = {}
        self.changed = False
        with os.scandir("/proc") as entries:
            for entry in entries:
                if not entry.name.isdigit():
                    continue
                pid, inode = int(entry.name), entry.inode()
                seen = None if fresh else self._known.get(pid)
                if seen is not None and seen[0] == inode:
                    stat = seen[1]
                else:
                    stat, self.changed = _stat(entry.name), True
                known[pid] = (inode, stat)
                if stat is not None:
                    found[pid] = stat
        self._known, self._found = known, found
        return found


def _last_pid() -> bytes | None:
    """The pid the kernel handed out last (`/proc/loadavg`'s last field), None if unreadable."""
    try:
        fd = os.open("/proc/loadavg", os.O_RDONLY)
    except OSError:
        return None
    try:
        last = os.read(fd, 128).split()[-1]
    except (OSError, IndexError):
        return None
    finally:
        os.close(fd)
    return last if last.isdigit() and last != b"0" else None


def descendants(now: Table, *pids: int) -> list[int]:
    """Every process of `now` below any of `pids`, children before their own."""
    children: dict[int, list[int]] = {}
    for child, (parent, _) in now.items():
        children.setdefault(parent, []).append(child)
    found: list[int] = []
    visited = set(pids)
    stack = list(pids)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in visited:
                visited.add(child)
                found.append(child)
                stack.append(child)
    return found


def stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of `/proc/PID/stat` after the command name, from its state (field 3) on;
    None when the process is gone or not ours to read."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None  # gone, or not ours to read
    try:
        data = os.read(fd, 4096)
    except OSError:
        return None  # gone while being read
    finally:
        os.close(fd)
    # "pid (comm) state ppid ... starttime ...": comm may hold spaces and parentheses.
    return data[data.rindex(b")") + 2 :].split()


def _stat(pid: str) -> tuple[int, float] | None:
    fields = stat_fields(pid)
    if fields is None:
        return None
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[1]), float(fields[19])


def _table_from_psutil() -> Table:
    import psutil  # only where there is no /proc: the guardian was then started with `site`

    found: Table = {}
    for process in psutil.process_iter(["ppid", "create_time", "status"]):
        if process.info["status"] != psutil.STATUS_ZOMBIE:
            found[process.pid] = (process.info["ppid"], process.info["create_time"])
    return found


def working_in(root: str, now: Table) -> list[int]:
    """The processes of `now` whose working directory lies in `root`."""
    if not HAS_PROC:
        import psutil

        listed = psutil.process_iter(["cwd"])
        return [p.pid for p in listed if p.pid in now and _under(p.info["cwd"] or "", root)]
    found: list[int] = []
    for pid in now:
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue  # gone, or not ours to read
        if _under(cwd, root):
            found.append(pid)
    return found


def _under(cwd: str, root: str) -> bool:
    return cwd == root or cwd.startswith(root.rstrip("/") + "/")


def _kill(pid: int, *, group: bool = False) -> None:
    try:
        if group:
            os.killpg(pid, KILL)
        else:
            os.kill(pid, KILL)
    except OSError:
        pass  # gone already, or not ours


class Watch:
    """The subjects the guardian was told about and every descendant it saw."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace
        self.roots: set[Known] = set()
        self.seen: set[Known] = set()
        self.processes = Processes()
        self._walked: set[Known] = set()  # the roots of the last walk

    def add(self, pid: int) -> None:
        if (stat := _stat(str(pid)) or table().get(pid)) is not None:
            self.roots.add((pid, stat[1]))

    def track(self, *, fresh: bool = False) -> Table:
        """Remember every live descendant of a root; returns the process table it read (every
        process read again with `fresh`, see `Processes`)."""
        now = self.processes.table(fresh=fresh)
        if not self.processes.changed and self._walked == self.roots:
            return now  # no process and no root is new: the last walk found all there is
        self._walked = set(self.roots)
        # Every live descendant, not only the new ones: a process seen before may have started
        # one since (in a session of its own, which its death would orphan).
        live = [pid for pid, start in self.roots if _same(now, pid, start)]
        self.seen.update((child, now[child][1]) for child in descendants(now, *live))
        return now

    def forget(self) -> None:
        """After a requested sweep: every process told of so far is gone (or was killed)."""
        self.roots.clear()
        self.seen.clear()
        self._walked = set()

    def sweep(self) -> int:
        """SIGKILL everything of the subject still alive; how many processes were hit."""
        now = self.track(fresh=True)
        hit = 0
        for pid, start in [*self.roots, *self.seen]:
            if not _same(now, pid, start):
                continue
            try:
                leads = os.getpgid(pid) == pid
            except OSError:
                continue
            if leads:
                _kill(pid, group=True)
            _kill(pid)
            hit += 1
        me = os.getpid()
        for pid in working_in(self.workspace, now):
            if pid != me:
                _kill(pid)
                hit += 1
        return hit


def _same(now: Table, pid: int, start: float) -> bool:
    """Whether `pid` still runs as the process started at `start` (not a reused pid)."""
    return pid in now and now[pid][1] == start


def _sweep_all(watch: Watch) -> None:
    # A killed parent may still be forking for a moment: sweep until nothing is left.
    for _ in range(5):
        if not watch.sweep():
            break


def serve(fd: int, workspace: str, home: str | None = None, answer: int = 1) -> None:
    """Track the subjects whose pids arrive on `fd` until it ends, then sweep them; delete
    `home` too unless the evaluator said `released` first (else it died). On `sweep`, kill what
    is left of the processes told of so far, forget them and answer `swept` on `answer`."""
    watch = Watch(workspace)
    pending = b""
    released = False
    swept = True  # nothing was told of since the last requested sweep (or ever)
    while True:
        ready, _, _ = select.select([fd], [], [], POLL_S)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in (line.strip() for line in lines):
                if line.isdigit():
                    watch.add(int(line))
                    swept = False
                elif line == SWEEP:
                    if not swept:  # else nothing of the subject's can be left
                        _sweep_all(watch)
                        watch.forget()
                    swept = True
                    try:  # noqa: SIM105 - contextlib is not built into the interpreter
                        os.write(answer, SWEPT + b"\n")
                    except OSError:
                        pass  # the evaluator is gone: its end of input follows
                released = released or line == RELEASED
        if watch.roots:  # nothing to follow while the home has no process
            watch.track()
    if not (released and swept):  # a released home whose last process was swept has none left
        _sweep_all(watch)
    if home is not None and not released:
        import shutil  # only on this rare path: the evaluator died

        shutil.rmtree(home, ignore_errors=True)


def main(argv: list[str]) -> None:
    """Guardian entry point: ``guardian.py WORKSPACE [HOME]``, subject pids on stdin."""
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # Ctrl-C is the evaluator's to handle
    _signal.signal(_signal.SIGHUP, _signal.SIG_IGN)
    serve(sys.stdin.fileno(), argv[1], argv[2] if len(argv) > 2 else None)
    # Nothing is left to flush (its output is /dev/null), and the evaluator waits on this exit:
    # skip the interpreter's teardown.
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
