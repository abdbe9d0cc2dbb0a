"""Run one command as a child process and measure its wall time and peak resident set size.

Peak RSS comes from GNU time (``/usr/bin/time -f %M``), which forks a fresh child and reads its
rusage. Two easier sources are wrong: ``getrusage(RUSAGE_CHILDREN)`` reports the maximum over all
children ever waited for, and the rusage ``wait4`` returns for a child Python spawned carries the
harness's own RSS, because CPython starts children with ``vfork`` and Linux keeps the high-water mark
of the address space the child replaced on ``exec``. Without GNU time (macOS, Windows) the wait4 value
is reported anyway, as an upper bound.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

GNU_TIME = Path("/usr/bin/time")


@dataclass(frozen=True, slots=True)
class Measurement:
    seconds: float
    peak_rss_bytes: int | None
    exit_code: int
    timed_out: bool
    stdout_path: Path | None
    stderr_tail: str
    # User + system CPU time of the tool (GNU time's %U + %S); None without GNU time. On a shared
    # machine it drifts less than wall time, which waits for the other jobs' turns too.
    cpu_seconds: float | None = None

    @property
    def ok(self) -> bool:
        return (
            self.exit_code == 0
            and not self.timed_out
            and self.stdout_path is not None
            and self.stdout_path.stat().st_size > 0
        )


@functools.cache
def gnu_time_works() -> bool:
    if not GNU_TIME.is_file():
        return False
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "rss"
        try:
            subprocess.run(
                [str(GNU_TIME), "-f", "%M", "-o", str(report), sys.executable, "-c", ""],
                capture_output=True,
                timeout=60,
                check=True,
            )
            return report.read_text().strip().isdigit()
        except (OSError, subprocess.SubprocessError):
            return False


def run_measured(argv: list[str], stdin_path: Path, out_dir: Path, timeout: float) -> Measurement:
    """Run ``argv`` with ``stdin_path`` as stdin; stdout and stderr go to files in ``out_dir``.

    The stdout file is overwritten by the next run in the same ``out_dir``.
    """
    stdout_path = out_dir / "stdout"
    stderr_path = out_dir / "stderr"
    rss_path = out_dir / "rss"
    rss_path.unlink(missing_ok=True)
    use_gnu_time = gnu_time_works()
    if use_gnu_time:
        argv = [str(GNU_TIME), "-f", "%U %S %M", "-o", str(rss_path), *argv]
    with stdin_path.open("rb") as stdin, stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
        start = time.perf_counter()
        try:
            # A session of its own, so a timeout can kill the tool under GNU time too.
            process = subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True)
        except OSError as error:
            return Measurement(0.0, None, 127, False, None, str(error))
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            _kill_group(process)

        timer = threading.Timer(timeout, expire)
        timer.start()
        try:
            exit_code, wait_rss_bytes = _wait(process)
        finally:
            timer.cancel()
        seconds = time.perf_counter() - start
    stderr_text = stderr_path.read_text(encoding="utf-8", errors="replace").strip()
    peak_rss_bytes, cpu_seconds = _gnu_time_report(rss_path) if use_gnu_time else (wait_rss_bytes, None)
    return Measurement(
        seconds=seconds,
        peak_rss_bytes=peak_rss_bytes,
        exit_code=exit_code,
        timed_out=expired.is_set(),
        stdout_path=stdout_path,
        stderr_tail=stderr_text.splitlines()[-1] if stderr_text else "",
        cpu_seconds=cpu_seconds,
    )


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    if hasattr(os, "killpg"):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    else:
        process.kill()


def _gnu_time_report(rss_path: Path) -> tuple[int | None, float | None]:
    """Peak RSS in bytes and user + system seconds from GNU time's ``%U %S %M`` line."""
    # GNU time writes "Command exited with non-zero status N" before the values on failure.
    lines = rss_path.read_text().splitlines() if rss_path.exists() else []
    fields = lines[-1].split() if lines else []
    try:
        user, system, rss = fields[-3:]
        return int(rss) * 1024, float(user) + float(system)
    except ValueError:
        return None, None


def _wait(process: subprocess.Popen[bytes]) -> tuple[int, int | None]:
    if not hasattr(os, "wait4"):
        return process.wait(), None
    _, status, usage = os.wait4(process.pid, 0)
    exit_code = os.waitstatus_to_exitcode(status)
    # Popen must not try to reap a pid that wait4 already reaped (and the OS may have reused).
    process.returncode = exit_code
    # ru_maxrss is in kilobytes on Linux and the BSDs, in bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return exit_code, usage.ru_maxrss * scale
