"""Every hostile reproducer in its own process, in a 3 GiB address space and 20 s.

A case passes when it ends with an answer or one typed error (tests/hostile_run.py); a
traceback, MemoryError, RecursionError or a hang fails it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

if sys.platform == "win32":
    pytest.skip("the runner bounds memory with setrlimit, which is POSIX's", allow_module_level=True)

RUNNER = Path(__file__).resolve().parent / "hostile_run.py"
SECONDS_PER_INPUT = 20
CASES = subprocess.run(
    [sys.executable, str(RUNNER), "--list"], capture_output=True, text=True, check=True
).stdout.split()


@pytest.mark.parametrize("case", CASES)
def test_hostile_case_is_bounded_and_typed(case: str) -> None:
    try:
        done = subprocess.run(
            [sys.executable, str(RUNNER), case], capture_output=True, text=True, timeout=SECONDS_PER_INPUT
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case} took more than {SECONDS_PER_INPUT} s")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"ok {case}:"), done.stdout
