"""A host CLI as a child process: spawning, framed stdout, watchdog, process-tree cleanup."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import psutil

from ..evidence import layout
from ..evidence.redact import Counts, Redactor, add
from .guardian import Processes, descendants
from .reaper import Guardian, wait_exit

FRAME_LIMIT = 16 * 1024 * 1024  # bytes without a newline before the stream is abandoned
TERMINATION_GRACE_S = 5.0
NO_PROGRESS_S = 30 * 60.0


@dataclass(frozen=True, slots=True)
class Frame:
    """One stdout record: a parsed JSON object, or the reason it could not be parsed."""

    line: int
    event: dict[str, Any] | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class EndOfStream:
    """stdout closed; `error` names a framing failure that ended reading early."""

    error: str | None = None


@dataclass
class ProcessOutcome:
    """How the process ended."""

    exit_code: int | None = None
    signal: str | None = None
    termination_reason: str | None = None
    descendants_killed: int = 0


class CancelToken:
    """Cancellation shared by every subject of an invocation (Ctrl-C sets it)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = "cancelled"

    def cancel(self, reason: str = "cancelled") -> None:
        """Request cancellation of running and queued subjects."""
        self.reason = reason
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether cancellation was requested."""
        return self._event.is_set()

    def on_interrupt(self, stop: Callable[[str], None]) -> None:
        """From the main thread: the first Ctrl-C cancels cleanly (evidence kept, the rest
        cancelled) and asks `stop` to end the session; the second stops at once."""
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGINT)

        def handler(signum: int, frame: FrameType | None) -> None:
            if self.cancelled:
                signal.signal(signal.SIGINT, previous)
                raise KeyboardInterrupt
            self.cancel("cancelled")
            stop("skill-eval: cancelled by Ctrl-C (press again to stop at once)")

        signal.signal(signal.SIGINT, handler)


@dataclass
class HostProcess:
    """A running host CLI, its stdout parsed into a queue of frames, raw bytes kept on disk."""

    argv: Sequence[str]
    env: Mapping[str, str]
    cwd: Path
    events_path: Path
    stderr_path: Path
    interactive: bool
    no_progress_s: float = NO_PROGRESS_S
    # Bounded, so a fast host waits for the evaluator instead of piling parsed events up in memory.
    frames: queue.Queue[Frame | EndOfStream] = field(
        default_factory=lambda: queue.Queue(maxsize=256)
    )
    _proc: subprocess.Popen[bytes] | None = None
    _reader: threading.Thread | None = None
    _last_progress: float = 0.0
    _seen: dict[int, psutil.Process] = field(default_factory=dict)
    _processes: Processes = field(default_factory=Processes)
    _stderr_size: int = 0
    _stdin_lock: threading.Lock = field(default_factory=threading.Lock)
    _guardian: Guardian | None = None
    # Secrets never reach events.jsonl or stderr.log; `redactions` counts what was replaced.
    redactor: Redactor = field(default_factory=Redactor)
    redactions: dict[str, Counts] = field(default_factory=dict)
    # Set when writing events.jsonl or stderr.log failed (a full disk): that file is then cut
    # short, and the run record must not present it as whole.
    events_error: OSError | None = None
    stderr_error: OSError | None = None
    # Seconds spent waiting for a start-up slot (`hosts.startup`) before the host was spawned.
    queued_s: float = 0.0
    _stderr_pump: threading.Thread | None = None
    # The isolated home's guardian, shared by every process of the home and deleting it should
    # the evaluator die (`launch.isolated_home`); when None, the process starts one of its own.
    guardian: Guardian | None = None
    # It reads its prompt on stdin (`feed`): a pipe, even when not interactive.
    takes_stdin: bool = False

    def start(self) -> None:
        """Spawn the host in its own session (so its group can be signalled) with no shell."""
        self.events_path.parent.mkdir(parents=True, exist_ok=True)
        # stderr goes through a pipe, never straight to the file: its secrets are redacted, and
        # a write that fails (a full disk) is known, so a cut-off log is never taken as whole.
        stderr = open(self.stderr_path, "xb")  # noqa: SIM115 - written by the pump
        # Started first, so no moment exists in which a killed evaluator leaves Pi unwatched.
        self._guardian = self.guardian or Guardian.start(self.cwd)
        try:
            self._proc = subprocess.Popen(
                list(self.argv),
                cwd=self.cwd,
                env=dict(self.env),
                stdin=subprocess.PIPE
                if self.interactive or self.takes_stdin
                else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
            )
            self._guardian.watch(self._proc.pid)
        except BaseException:
            self._let_go()
            stderr.close()
            raise
        self._stderr_pump = threading.Thread(
            target=self._pump_stderr, args=(stderr,), name="pi-stderr", daemon=True
        )
        self._stderr_pump.start()
        self._last_progress = time.monotonic()
        self._reader = threading.Thread(target=self._read_stdout, name="pi-stdout", daemon=True)
        self._reader.start()

    def feed(self, data: bytes) -> None:
        """Write `data` (a prompt) to the host's stdin and end it, from a thread of its own: a
        host that reads its stdin late never blocks the evaluator on a prompt larger than the
        pipe holds."""
        threading.Thread(target=self._feed, args=(data,), name="host-stdin", daemon=True).start()

    def _feed(self, data: bytes) -> None:
        """Write `data` to the host's stdin, then end it (a host gone already reads nothing)."""
        assert self._proc is not None
        stdin = self._proc.stdin
        if stdin is None:
            return
        with self._stdin_lock, contextlib.suppress(OSError, ValueError):
            stdin.write(data)
        self.close_stdin()

    @property
    def pid(self) -> int:
        """Process id of the host CLI."""
        assert self._proc is not None
        return self._proc.pid

    def _pump_stderr(self, sink: Any) -> None:
        # The carry-over of the stream redactor catches a value split across two reads.
        assert self._proc is not None
        assert self._proc.stderr is not None
        fd = self._proc.stderr.fileno()
        stream = self.redactor.stream()
        try:
            while chunk := os.read(fd, 65536):
                self._last_progress = time.monotonic()
                if self.stderr_error is not None:
                    continue  # keep draining, so the host never blocks on a full pipe
                try:
                    sink.write(stream.feed(chunk))
                    sink.flush()
                except OSError as error:
                    self.stderr_error = error
            if self.stderr_error is None:
                try:
                    sink.write(stream.flush())
                    sink.flush()
                except OSError as error:
                    self.stderr_error = error
        finally:
            with contextlib.suppress(OSError):
                sink.close()
        self._count(self.stderr_path.name, stream.counts)

    def _count(self, name: str, counts: Counts) -> None:
        if counts:
            add(self.redactions.setdefault(name, {}), counts)

    def _read_stdout(self) -> None:
        # Bytes are split on b"\n" before decoding, so a multibyte character split across reads
        # is never corrupted (a newline byte cannot occur inside a UTF-8 sequence).
        assert self._proc is not None
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        pending = bytearray()
        line_no = 0
        error: str | None = None
        # Records are redacted whole (inside their JSON strings), before they are written or
        # parsed, so every observation made from them is redacted too.
        records = self.redactor.records()
        tail = self.redactor.stream()
        counts: Counts = {}
        last = b""
        with _DrainingSink(self.events_path) as sink:
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                self._last_progress = time.monotonic()
                if error is not None:
                    # past the ceiling: keep every byte on disk, parse nothing more
                    sink.write(tail.feed(chunk))
                    sink.flush()
                    continue
                pending += chunk
                # The ceiling holds however the bytes were chunked: a record longer than
                # FRAME_LIMIT is refused whether or not its newline arrived in the same read.
                while (cut := pending.find(b"\n")) >= 0 and cut <= FRAME_LIMIT:
                    written, line = records.feed(bytes(pending[: cut + 1]))
                    del pending[: cut + 1]
                    sink.write(written)
                    line_no += 1
                    self.frames.put(_parse_frame(line_no, line[:-1]))
                sink.flush()
                if len(pending) > FRAME_LIMIT:
                    error = "incomplete-frame-limit"
                    sink.write(records.flush())
                    sink.write(tail.feed(bytes(pending)))
                    sink.flush()
                    pending.clear()
                    self.frames.put(Frame(line_no + 1, None, error))
            if error is None and pending:
                written, last = records.feed(bytes(pending))
                sink.write(written)
            sink.write(records.flush())
            sink.write(tail.flush())
            add(counts, records.counts)
            add(counts, tail.counts)
        self.events_error = sink.error
        self._count(self.events_path.name, counts)
        if error is None and pending.strip():
            # A final record without its newline is still observed; in RPC mode, where every
            # record must be terminated, it is also a framing error.
            line_no += 1
            self.frames.put(_parse_frame(line_no, last))
            if self.interactive:
                self.frames.put(Frame(line_no, None, "unterminated-record"))
        self.frames.put(EndOfStream())

    def send(self, record: Mapping[str, Any]) -> None:
        """Write one JSON command line to the host's stdin."""
        assert self._proc is not None
        assert self._proc.stdin is not None
        data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        with self._stdin_lock:
            self._proc.stdin.write(data)
            self._proc.stdin.flush()
        self._last_progress = time.monotonic()

    def close_stdin(self) -> None:
        """Closing stdin ends an interactive host (Pi in RPC mode exits normally)."""
        if self._proc is not None and self._proc.stdin is not None:
            # ValueError: the stdin feeder's thread closing it at the same moment.
            with contextlib.suppress(OSError, ValueError):
                self._proc.stdin.close()

    def next_frame(self, timeout: float) -> Frame | EndOfStream | None:
        """The next stdout frame, or None after `timeout` seconds (also a watchdog tick)."""
        try:
            return self.frames.get(timeout=timeout)
        except queue.Empty:
            return None

    def stalled(self) -> bool:
        """True when neither stdout nor stderr moved for the no-progress period."""
        self._track_descendants(fresh=False)
        try:
            size = self.stderr_path.stat().st_size
        except OSError:
            size = self._stderr_size
        if size != self._stderr_size:
            self._stderr_size = size
            self._last_progress = time.monotonic()
        return time.monotonic() - self._last_progress > self.no_progress_s

    def progressed(self) -> None:
        """Count now as progress: a wait the evaluator imposed is never the host stalling."""
        self._last_progress = time.monotonic()

    def _track_descendants(self, *, fresh: bool = True) -> None:
        # Commands started by extensions may leave the host's process group; remember every
        # descendant seen so cleanup can reach it after the host itself is gone. A watchdog
        # tick reads only the processes new since the last (`Processes`), and looks for
        # descendants only when one is; a stop reads all.
        if self._proc is None:
            return
        now = self._processes.table(fresh=fresh)
        if not self._processes.changed:
            return  # no process is new: none can be a descendant not already seen
        for pid in descendants(now, self._proc.pid):
            if pid not in self._seen:
                with contextlib.suppress(psutil.Error):
                    self._seen[pid] = psutil.Process(pid)

    def wait(self, timeout: float | None) -> int | None:
        """Wait for the host to exit; None when it is still running after `timeout`."""
        assert self._proc is not None
        return wait_exit(self._proc, timeout)

    def terminate(self, outcome: ProcessOutcome, reason: str) -> None:
        """SIGTERM the process group, SIGKILL after the grace period."""
        if outcome.termination_reason is None:
            outcome.termination_reason = reason
        self._track_descendants()
        self._signal_group(signal.SIGTERM)
        if self.wait(TERMINATION_GRACE_S) is None:
            self._signal_group(signal.SIGKILL)
            self.wait(TERMINATION_GRACE_S)

    def kill_now(self) -> None:
        """SIGKILL the group and every descendant seen, without a grace period (second Ctrl-C)."""
        if self._proc is None:
            return
        self._track_descendants()
        self._signal_group(signal.SIGKILL)
        _kill_all([*self._seen.values()], wait=False)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=TERMINATION_GRACE_S)
        self.close_stdin()
        self._let_go()

    def _let_go(self) -> None:
        """The guardian's last sweep of this process: the home's sweeps and stays on for the
        home, the process's own is released."""
        if self._guardian is None:
            return
        if self._guardian is self.guardian:
            self._guardian.sweep()
        else:
            self._guardian.release()

    def _signal_group(self, sig: signal.Signals) -> None:
        assert self._proc is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)

    def finish(self, outcome: ProcessOutcome) -> ProcessOutcome:
        """Reap the host, sweep its group and every descendant seen, and drain the reader."""
        assert self._proc is not None
        self.close_stdin()
        if self.wait(TERMINATION_GRACE_S) is None:
            self.terminate(outcome, outcome.termination_reason or "process-error")
        code = self._proc.returncode
        if code is not None and code < 0:
            outcome.signal = signal.Signals(-code).name
            outcome.exit_code = None
        else:
            outcome.exit_code = code
        self._signal_group(signal.SIGKILL)
        outcome.descendants_killed = _kill_all(self._seen.values())
        if self._reader is not None:
            # Frames nobody will read any more (after a stop) must not keep the reader blocked on
            # the bounded queue; their bytes are already in events.jsonl.
            # Drained without blocking, and joined in short steps: a blocking get would sit out
            # its whole timeout once the reader put its last frame and ended.
            deadline = time.monotonic() + TERMINATION_GRACE_S
            while self._reader.is_alive() and time.monotonic() < deadline:
                with contextlib.suppress(queue.Empty):
                    while True:
                        self.frames.get_nowait()
                self._reader.join(timeout=0.005)
        if self._stderr_pump is not None:
            # Descendants that kept stderr open were killed above: the pipe ends.
            self._stderr_pump.join(timeout=TERMINATION_GRACE_S)
        self._let_go()
        return outcome


class _DrainingSink:
    """events.jsonl, whose write failures (a full disk) never stop the reader.

    The reader must keep draining the host's stdout whatever the disk does: a reader that died
    on ENOSPC left the host blocked on a full pipe until the watchdog. Once a write fails the
    rest is dropped; the run's own records then fail to be written and say why.
    """

    def __init__(self, path: Path) -> None:
        self.error: OSError | None = None
        try:
            self._file: Any = open(path, "xb")  # noqa: SIM115 - closed in __exit__
        except OSError as error:
            self.error, self._file = error, None

    def __enter__(self) -> _DrainingSink:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            try:
                self._file.close()  # flushes what is left: it can fail too
            except OSError as error:
                self.error = self.error or error

    def write(self, data: bytes) -> None:
        """Append `data` until the first failure."""
        if self._file is not None and self.error is None:
            try:
                self._file.write(data)
            except OSError as error:
                self.error = error

    def flush(self) -> None:
        """Flush until the first failure."""
        if self._file is not None and self.error is None:
            try:
                self._file.flush()
            except OSError as error:
                self.error = error


def set_aside_partial(path: Path) -> Path | None:
    """Rename a stream file cut short to `<name>.partial` (a rename needs no free blocks); None
    when it is not there, or could only be deleted: it is never left whole-looking."""
    partial = path.with_name(path.name + layout.PARTIAL_SUFFIX)
    try:
        os.rename(path, partial)
    except OSError as error:
        if not isinstance(error, FileNotFoundError):
            path.unlink(missing_ok=True)
        return None
    return partial


def _parse_frame(line_no: int, raw: bytes) -> Frame:
    raw = raw.removesuffix(b"\r")
    if not raw.strip():
        return Frame(line_no, None, "empty-record")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Frame(line_no, None, "invalid-utf-8")
    try:
        value = json.loads(text)
    except ValueError:
        return Frame(line_no, None, "invalid-json")
    if not isinstance(value, dict):
        return Frame(line_no, None, "not-an-object")
    return Frame(line_no, value)


def _kill_all(processes: Any, wait: bool = True) -> int:
    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                process.kill()
                alive.append(process)
        except psutil.Error:
            continue
    if wait:
        psutil.wait_procs(alive, timeout=TERMINATION_GRACE_S)
    return len(alive)
