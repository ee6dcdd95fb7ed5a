"""A real `redis-server` (Debian's) for the shared spend ledger's tests: its own directory, a
password, a unix socket and a loopback port, append-only persistence; stopped by its owner."""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.support.processes import wait_for

PASSWORD = "ledger-pw-5f3a91c7"


def _free_port() -> int:
    __tracebackhide__ = True
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    """One redis-server process in `directory`; `start`, `stop` (kill -9 or not) and `start`
    again keep its data (`appendonly yes`)."""

    def __init__(self, directory: Path) -> None:
        __tracebackhide__ = True
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not Path(binary).is_file():
            pytest.fail("redis-server is not installed (apt-get install redis-server)")
        self.binary = binary
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.socket = directory / "redis.sock"
        self.port = _free_port()
        self.config = directory / "redis.conf"
        self.config.write_text(
            "\n".join(
                [
                    "bind 127.0.0.1",
                    f"port {self.port}",
                    f"unixsocket {self.socket}",
                    "unixsocketperm 700",
                    f"dir {directory}",
                    f"requirepass {PASSWORD}",
                    "appendonly yes",
                    "appendfsync always",
                    'save ""',
                    "daemonize no",
                    f"logfile {directory / 'redis.log'}",
                    "",
                ]
            ),
            encoding="utf-8",
        )
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, *, password: bool = True) -> str:
        """`redis://:PASSWORD@127.0.0.1:PORT/0` (without the password: `redis://127.0.0.1:…`)."""
        secret = f":{PASSWORD}@" if password else ""
        return f"redis://{secret}127.0.0.1:{self.port}/0"

    def unix_url(self) -> str:
        """`unix:///…/redis.sock?db=0` (the password comes from the environment)."""
        return f"unix://{self.socket}?db=0"

    def client(self) -> redis.Redis:
        """A client of our own, to look at the ledger's keys."""
        return redis.Redis(unix_socket_path=str(self.socket), password=PASSWORD)

    def start(self) -> None:
        """Start (again) and wait until it answers."""
        __tracebackhide__ = True
        self.process = subprocess.Popen([self.binary, str(self.config)])
        wait_for(self._answers, f"redis-server in {self.directory}")

    def stop(self) -> None:
        """Stop it (SIGTERM: it flushes the append-only file) and wait until it is gone."""
        __tracebackhide__ = True
        if self.process is None:
            return
        self.process.terminate()
        self.process.wait(timeout=60)
        self.process = None

    def _answers(self) -> bool:
        try:
            return bool(self.client().ping())
        except redis.RedisError:
            return False


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One redis-server for the session (each test uses ledger keys of its own)."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def own_redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of the test's own, for tests that stop or restart it."""
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()
