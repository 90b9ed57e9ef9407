"""DVC's command line, run in a child process that does not import DVC again.

A new Python process running ``dvc add`` then ``dvc push`` spends about 1.3 s importing DVC
and its plugins before it reads a byte: more than hashing and pushing a 300 MB stage (a pin took
2.0 s in a new process, 0.6 s forked; 295 MB of Parquet, measured 2026-11-24). So one helper
process (the *zygote*) imports DVC once and forks a child for each list of commands. The child
is a process of its own, as the subprocess it replaces was: it gets the caller's environment
and the project root as working directory, writes its output to files read back afterwards,
and shares no state with earlier commands (each starts from the freshly imported zygote).

The zygote (``python -m corpus_platform.store.dvc_process``) reads one JSON request a line on
its stdin and answers each with the child's exit code; it ends when its stdin closes, so it
never outlives the process that started it. Where the platform cannot fork (Windows), the
commands run in a new Python process (``--commands JSON``).
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Finished:
    """How a list of DVC commands ended: the first failing command's exit code (0: all
    succeeded) and everything the commands printed."""

    returncode: int
    stdout: str
    stderr: str


class _Zygote:
    """The helper process that has imported DVC; one request at a time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process: subprocess.Popen[str] | None = None

    def _started(self) -> subprocess.Popen[str]:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                [sys.executable, "-m", __name__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, "DVC_NO_ANALYTICS": "1"},
            )
        return self.process

    def run(self, root: Path, commands: list[list[str]], env: dict[str, str]) -> Finished:
        with self.lock, tempfile.TemporaryDirectory(prefix="corpus-dvc-") as scratch:
            out, err = Path(scratch) / "stdout", Path(scratch) / "stderr"
            request = {
                "root": str(root),
                "env": env,
                "commands": commands,
                "out": str(out),
                "err": str(err),
            }
            process = self._started()
            assert process.stdin is not None and process.stdout is not None
            try:
                process.stdin.write(json.dumps(request) + "\n")
                process.stdin.flush()
                answer = process.stdout.readline()
            except BrokenPipeError:
                answer = ""
            if not answer:  # the zygote died (killed, out of memory): one new process instead
                self.process = None
                return _in_new_process(root, commands, env)
            return Finished(json.loads(answer)["code"], _text(out), _text(err))

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait(timeout=30)


_ZYGOTE_PROCESS = _Zygote()
atexit.register(_ZYGOTE_PROCESS.close)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def _in_new_process(root: Path, commands: list[list[str]], env: dict[str, str]) -> Finished:
    done = subprocess.run(
        [sys.executable, "-m", __name__, "--commands", json.dumps(commands)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return Finished(done.returncode, done.stdout, done.stderr)


def run_dvc(root: Path, commands: list[list[str]], env: dict[str, str]) -> Finished:
    """Run DVC's command line once per entry of ``commands`` (its arguments) in the project at
    ``root`` with the environment ``env``, stopping at the first that fails: in a child forked
    from the zygote, or in a new Python process where the platform cannot fork."""
    if not hasattr(os, "fork"):
        return _in_new_process(root, commands, env)
    return _ZYGOTE_PROCESS.run(root, commands, env)


# --- the zygote's side --------------------------------------------------------------------


def _child(request: dict) -> int:
    """Run one request's commands (in a forked child): the caller's environment and working
    directory, stdin from /dev/null (the zygote's stdin carries its requests), fds 1 and 2 to
    the request's files before DVC sets up its logging; the first failing command's code."""
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["root"])
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    for fd, path in ((1, request["out"]), (2, request["err"])):
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(handle, fd)
        os.close(handle)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    try:
        code = run_commands(request["commands"])
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    return code


@contextmanager
def _linking(module: Any, name: str) -> Iterator[None]:
    """While inside, ``module.name`` (a DVC transfer function) is called with ``hardlink=True``:
    each new object a reflink clone where the filesystem clones, else a hard link, else a copy
    (DVC's own order for a link; a target on another filesystem or in S3 is copied)."""
    transfer = getattr(module, name)

    def linking(*positional: object, **named: object) -> object:
        return transfer(*positional, **{**named, "hardlink": True})

    setattr(module, name, linking)
    try:
        yield
    finally:
        setattr(module, name, transfer)


# Not a DVC command: `dvc add --no-relink ARGS` whose transfer into the cache clones or hard-links
# each new object to its workspace file (reflink, hardlink, then copy: the first that works).
LINKED_ADD = "add-linked-in-place"


def linked_add(args: list[str]) -> int:
    """`dvc add --no-relink` with each new cache object linked to its workspace file (a
    reflink clone where the filesystem clones, else a hard link; a copy where neither works).

    DVC's add links a file into the cache only when it relinks the workspace afterwards: it
    removes every file and links it back from the cache, and a reader that opens a file in
    between finds none. Here the transfer DVC makes (``dvc.output.otransfer``) is told to link,
    and no relink follows: every workspace file stays where it is, with its inode, size and
    mtime, and its bytes are stored once (DVC makes the shared inode read-only, as it does for
    any linked file). Only in a child that exits afterwards, or undone before returning."""
    import dvc.output
    from dvc.cli import main

    with _linking(dvc.output, "otransfer"):
        return main(["add", "--no-relink", *args])


# Not a DVC command: `dvc push ARGS` whose transfer to a folder remote clones or hard-links each
# new remote object to its cache object (reflink, hardlink, then copy: the first that works).
LINKED_PUSH = "push-linked"


def linked_push(args: list[str]) -> int:
    """`dvc push` with each new object of a folder remote linked to its cache object (a reflink
    clone where the filesystem clones, else a hard link; a copy across filesystems), as ``git
    clone --local`` links its objects: DVC's objects are named by their MD5 and read-only, so
    the remote's copy would hold the same bytes twice on one disk. DVC's own push clones or
    copies (``dvc_data.index.push.transfer`` without ``hardlink``). For projects whose
    ``cache.type`` lists hardlink (:func:`corpus_platform.store.remotes.DvcSettings.push_links`)."""
    import dvc_data.index.push
    from dvc.cli import main

    with _linking(dvc_data.index.push, "transfer"):
        return main(["push", *args])


# Not a DVC command: `SEED_HASHES JSON` records each {absolute path: MD5} of JSON in DVC's state
# (its cache of file hashes, keyed by the file's inode, size and modification time), so that the
# add that follows takes those files' MD5s from it instead of reading them.
SEED_HASHES = "seed-known-hashes"


def seed_hashes(known: str) -> int:
    """Record the MD5s of ``known`` (JSON: absolute path -> [MD5 of the file's bytes, then the
    identity of the file hashed: device, inode, size, mtime in ns], computed by the platform:
    :func:`corpus_platform.base.files.known_md5s`) in DVC's state, keyed as DVC keys them (its
    own look at the file, taken here). A file whose identity is no longer the one hashed is left
    for DVC to read. DVC trusts its state as it trusts its own hashes, so only hashes of the
    files' bytes may be handed over, never a hash a manifest claims."""
    from dvc.repo import Repo
    from dvc_data.hashfile.hash_info import HashInfo

    repo = Repo(".")
    try:
        items = []
        for path, (md5, *hashed) in json.loads(known).items():
            info = repo.fs.info(path)  # what DVC's state keys the file by
            now = os.stat(path)
            same = [now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns] == hashed
            if same and (info["ino"], info["size"]) == (now.st_ino, now.st_size):
                items.append((path, HashInfo("md5", md5), info))
        repo.state.save_many(items, repo.fs)
    finally:
        repo.close()
    return 0


def run_commands(commands: list[list[str]]) -> int:
    """DVC's command line once per entry of ``commands``, in this process (:data:`LINKED_ADD`
    as :func:`linked_add`, :data:`LINKED_PUSH` as :func:`linked_push`, :data:`SEED_HASHES` as
    :func:`seed_hashes`); the first failing command's exit code, its words on stderr."""
    from dvc.cli import main

    special: dict[str, Callable[[list[str]], int]] = {
        LINKED_ADD: linked_add,
        LINKED_PUSH: linked_push,
        SEED_HASHES: lambda args: seed_hashes(args[0]),
    }
    for args in commands:
        code = special[args[0]](args[1:]) if args[0] in special else main(args)
        if code:
            print("dvc " + " ".join(args), file=sys.stderr)
            return code
    return 0


def serve() -> None:
    """The zygote: import what add, push, pull, checkout and config need, then fork a child for
    each JSON request read from stdin and answer with its exit code, until stdin closes. Among
    them what every add and push imports on first use, which each child imported again when
    the zygote had not: DVC's git bindings (``Repo()``) and networkx (the stage graph), 0.2 s a
    command (sampled 2026-11-28)."""
    import dvc.cli
    import dvc.commands.add
    import dvc.commands.checkout
    import dvc.commands.config
    import dvc.commands.data_sync
    import dvc.output
    import dvc.repo
    import dvc.repo.add
    import dvc.repo.checkout
    import dvc.repo.fetch
    import dvc.repo.push
    import dvc.scm  # noqa: F401
    import dvc_data.hashfile.hash_info
    import dvc_data.index.push  # noqa: F401
    import networkx  # noqa: F401 (imported once, here, for every child)

    answers = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            os._exit(_child(request))
        _, status = os.waitpid(pid, 0)
        answers.write(json.dumps({"code": os.waitstatus_to_exitcode(status)}) + "\n")
        answers.flush()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--commands"]:  # one list, in this new process (no fork)
        sys.exit(run_commands(json.loads(sys.argv[2])))
    serve()
