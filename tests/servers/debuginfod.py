"""elfutils' own ``debuginfod``, serving a directory of fixture ELF files, for end-to-end tests.

The real server, not a model of it: ``debuginfod -F -p PORT -d :memory: DIR`` scans ``DIR`` for
ELF files with a build ID and answers ``/buildid/<hex>/debuginfo`` and ``/executable`` for
them. It listens on every interface (0.188 has no option to bind one), so it runs in a private
network namespace (``unshare -n``, with ``lo`` brought up first), where nothing but a process of
that namespace reaches it: the test's client runs there too, through ``nsenter`` into the
server's namespace (:meth:`DebuginfodServer.run`). As root the namespace is a plain network one
(``unshare -n``); otherwise, where unprivileged user namespaces are allowed, a user namespace
with it (``unshare -rn``, joined with ``nsenter -U -n``). Where neither can be made,
:func:`start_debuginfod` raises :class:`Unavailable` with the reason, which the fixture turns into
a skip: debuginfod is never left listening on a machine's interfaces.

Readiness is polled at ``/metrics`` until the scan has indexed every file of ``DIR``. What the
server was asked is read from its own log (``-v`` prints one line per request, with its path
and status) and from ``/metrics`` (``http_responses_total``), so a test can assert that a second
run made no request.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

# Inside the private namespace the port is the namespace's own: any fixed one is free.
PORT = 8002
SCAN_DEADLINE = 30.0
# One request line of ``debuginfod -v``'s log: "... GET /buildid/<hex>/debuginfo 200 1234 ...".
_REQUEST = re.compile(r" (GET|HEAD) (/\S*) (\d{3}) ")
# Run in the server's namespace: fetch one URL, print its body (the readiness poll and /metrics).
_GET = "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())"


class Unavailable(Exception):
    """Why the real debuginfod cannot be run here (the tests skip with it)."""


class DebuginfodServer:
    """A running ``debuginfod`` in its own network namespace; ``url`` is reachable from :meth:`run` only."""

    def __init__(self, process: subprocess.Popen[bytes], served: Path, log: Path, user_namespace: bool) -> None:
        self.process = process
        self.user_namespace = user_namespace
        self.served = served
        self.log = log
        self.url = f"http://127.0.0.1:{PORT}"

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the server's network namespace (and its user namespace, if it has one)."""
        joined = ["--preserve-credentials", "-U", "-n"] if self.user_namespace else ["-n"]
        return ["nsenter", *joined, "-t", str(self.process.pid), "--", *argv]

    def run(
        self, argv: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = 120.0
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` where the server is reachable; its output captured as text."""
        return subprocess.run(self.command(argv), capture_output=True, text=True, env=env, timeout=timeout, check=False)

    def get(self, path: str) -> str:
        """The body of ``GET <url><path>``, asked from inside the namespace."""
        done = self.run([sys.executable, "-c", _GET, self.url + path], timeout=30)
        if done.returncode != 0:
            raise RuntimeError(f"GET {path} failed: {done.stderr.strip()}")
        return done.stdout

    def metrics(self) -> dict[str, float]:
        """``/metrics``, as ``{'name{labels}': value}``."""
        found: dict[str, float] = {}
        for line in self.get("/metrics").splitlines():
            name, _, value = line.rpartition(" ")
            if name and not line.startswith("#"):
                try:
                    found[name] = float(value)
                except ValueError:
                    continue
        return found

    def requests(self) -> list[tuple[str, int]]:
        """Every request the server logged so far, as (path, status), oldest first (/metrics excluded)."""
        text = self.log.read_text(errors="replace")
        return [(path, int(status)) for _, path, status in _REQUEST.findall(text) if path != "/metrics"]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def namespace_flags() -> tuple[list[str] | None, str]:
    """``unshare``'s flags for a private network namespace here (None when none can be made), and
    why not."""
    said = []
    for flags in (["-n"], ["-r", "-n"]):
        probe = subprocess.run(["unshare", *flags, "true"], capture_output=True, text=True, check=False)
        if probe.returncode == 0:
            return flags, ""
        said.append(f"unshare {' '.join(flags)}: {probe.stderr.strip()}")
    return None, "; ".join(said)


def unavailable_reason() -> str | None:
    """Why the real debuginfod cannot run here, or None when it can."""
    for tool in ("debuginfod", "unshare", "nsenter", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (.ci/run installs debuginfod, util-linux and iproute2)"
    flags, why = namespace_flags()
    if flags is None:
        return f"cannot make a private network namespace for debuginfod ({why})"
    return None


def start_debuginfod(served: Path, log: Path) -> DebuginfodServer:
    """A ``debuginfod`` serving ``served`` in a new network namespace, its scan done.

    Raises :class:`Unavailable` when it cannot run here, RuntimeError when it starts but does not
    answer or scan in time.
    """
    reason = unavailable_reason()
    flags, _ = namespace_flags()
    if reason is not None or flags is None:
        raise Unavailable(reason or "no network namespace")
    expected = sum(1 for path in served.rglob("*") if path.is_file())
    argv = [
        "unshare", *flags, "sh", "-c", 'ip link set lo up && exec "$@"', "sh",
        "debuginfod", "-v", "-F", "-p", str(PORT), "-d", ":memory:", "-t", "0", "-g", "0", str(served),
    ]  # fmt: skip
    # unshare and sh exec, so the process started is debuginfod itself, in the new namespace.
    with log.open("wb") as sink:
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    server = DebuginfodServer(process, served, log, user_namespace="-r" in flags)
    deadline = time.monotonic() + SCAN_DEADLINE
    while True:
        if process.poll() is not None:
            said = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"debuginfod exited with {process.returncode}: {said}")
        try:
            metrics = server.metrics()
        except RuntimeError:
            metrics = {}
        scanned = metrics.get('scanned_files_total{source="file"}', 0)
        if scanned >= expected and metrics.get('thread_work_pending{role="scan"}', 1) == 0:
            return server
        if time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"debuginfod scanned {scanned} of {expected} files in {SCAN_DEADLINE} s")
        time.sleep(0.1)


@contextmanager
def debuginfod_serving(files: Sequence[Path], root: Path) -> Iterator[DebuginfodServer]:
    """debuginfod serving copies of ``files`` (fixture ELF files) from ``root/served``; stopped after."""
    served = root / "served"
    served.mkdir(parents=True)
    for path in files:
        shutil.copyfile(path, served / path.name)
    server = start_debuginfod(served, root / "debuginfod.log")
    try:
        yield server
    finally:
        server.stop()


def client_environment(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a client run in the namespace: its own caches under ``home``, no server
    taken from the caller's environment unless a test sets one."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("DEBUGINFOD_")}
    env.pop("_NT_SYMBOL_PATH", None)
    # elfutils' client makes its cache directory but not the one above it.
    (home / "xdg-cache").mkdir(parents=True, exist_ok=True)
    env.update(
        XDG_CACHE_HOME=str(home / "xdg-cache"),
        SYMBOLIZE_CACHE_DIR=str(home / "symbolize-cache"),
        SYMBOLIZE_BACKGROUND_INDEX="0",
    )
    env.update(extra)
    return env
