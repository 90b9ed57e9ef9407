"""A throwaway PostgreSQL server for tests: ``initdb`` into a temporary folder, ``pg_ctl start``
on a free port of 127.0.0.1, one database created, ``pg_ctl stop -m fast`` at the end.

initdb and postgres refuse to run as root; as root (CI is), both run as ``nobody`` through
``runuser``, and the server's folder belongs to ``nobody``. TCP connections need the password
(scram-sha-256), so the password a client is given really is used.
"""

import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg2

DEBIAN_BIN_DIRS = "/usr/lib/postgresql/*/bin"
UNPRIVILEGED_USER = "nobody"
SUPERUSER = "dagster"


class MissingServer(RuntimeError):
    """PostgreSQL's server binaries are not installed."""


def server_bin_dir() -> Path:
    """The folder of initdb and pg_ctl: Debian's newest /usr/lib/postgresql/<major>/bin, else
    the PATH's."""
    found = [p.parent for p in Path("/").glob(DEBIAN_BIN_DIRS.lstrip("/") + "/initdb")]
    if found:
        return max(found, key=lambda p: [int(n) for n in re.findall(r"\d+", p.parent.name)])
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl", path=str(Path(initdb).parent)):
        return Path(initdb).parent
    raise MissingServer(
        f"PostgreSQL's server binaries (initdb, pg_ctl) are neither under {DEBIAN_BIN_DIRS} "
        "nor on PATH: install them with `apt-get install -y postgresql` (.ci/run does)"
    )


@dataclass(frozen=True)
class PostgresServer:
    """Where a running test server listens and how to log in."""

    host: str
    port: int
    user: str
    password: str
    db_name: str

    def connect(self) -> "psycopg2.extensions.connection":
        """A new psycopg2 connection to the database (over TCP, with the password)."""
        return psycopg2.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            dbname=self.db_name,
        )

    def dagster_env(self) -> dict[str, str]:
        """The environment deploy/dagster-postgres.yaml reads."""
        return {
            "DAGSTER_PG_HOSTNAME": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_DB": self.db_name,
            "DAGSTER_PG_USERNAME": self.user,
            "DAGSTER_PG_PASSWORD": self.password,
        }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return done


@contextmanager
def temporary_server(db_name: str = "dagster") -> Iterator[PostgresServer]:
    """Start a fresh server holding an empty database ``db_name``; stop and remove it after."""
    bin_dir = server_bin_dir()
    base = Path(tempfile.mkdtemp(prefix="corpus-pg-"))  # short: the socket path must fit
    password = secrets.token_hex(12)
    as_server_user: list[str] = []
    pwfile = base / "pwfile"
    pwfile.write_text(password + "\n", encoding="utf-8")
    if os.geteuid() == 0:
        account = pwd.getpwnam(UNPRIVILEGED_USER)
        as_server_user = ["runuser", "-u", UNPRIVILEGED_USER, "--"]
        for path in (base, pwfile):
            os.chown(path, account.pw_uid, account.pw_gid)
    data = base / "data"

    def pg_ctl(*args: str) -> subprocess.CompletedProcess:
        command = [*as_server_user, str(bin_dir / "pg_ctl"), "-D", str(data), *args]
        return subprocess.run(command, cwd=base, capture_output=True, text=True, timeout=120)

    started = False
    try:
        initdb = [
            *as_server_user,
            str(bin_dir / "initdb"),
            "-D",
            str(data),
            "-U",
            SUPERUSER,
            f"--pwfile={pwfile}",
            "--auth-host=scram-sha-256",
            "--auth-local=trust",
            "--encoding=UTF8",
            "--locale=C",
        ]
        _run(initdb, cwd=base)
        pwfile.unlink()
        for _ in range(3):  # another process may take the free port before the server does
            port = _free_port()
            options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1"
            done = pg_ctl("-l", str(base / "server.log"), "-o", options, "-w", "-t", "60", "start")
            if done.returncode == 0:
                started = True
                break
        if not started:
            log = (base / "server.log").read_text(encoding="utf-8", errors="replace")
            raise RuntimeError(f"pg_ctl start failed:\n{done.stdout}{done.stderr}\n{log}")
        server = PostgresServer("127.0.0.1", port, SUPERUSER, password, db_name)
        admin = psycopg2.connect(
            host=server.host, port=port, user=SUPERUSER, password=password, dbname="postgres"
        )
        admin.autocommit = True
        with admin.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{db_name}"')
        admin.close()
        yield server
    finally:
        if (data / "postmaster.pid").exists():  # started, or a start that timed out
            pg_ctl("-m", "fast", "-w", "stop")
        shutil.rmtree(base, ignore_errors=True)
