"""profile's CI gates: --fail-unnamed-above PCT (per sample type) and --require-verified.

Each has its own exit code (symbolize/cli/exits.py; README "Commands"), the output is written
before the gate fails the run, and the summary (text and JSON) says what tripped it. Real
fixture profiles: the daemon-style profile (no build IDs: every binary matched by file name
only) and tcmalloc's heap_v2 of the Rust program run without a search path (its program
mapping's file is not on this machine, so part of each sample type stays unnamed).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from symbolize.cli.app import app
from symbolize.cli.entry import plain_command
from symbolize.cli.exits import EXIT_UNNAMED_ABOVE, EXIT_UNVERIFIED
from symbolize.cli.profile_command import ProfileRequest
from symbolize.pprof import read_profile
from tests.fixtures_data import FIXTURES
from tests.test_summary_top import needs_libtcmalloc

BIN = FIXTURES / "bin"
PROFILES = FIXTURES / "profiles"
DAEMON = PROFILES / "rustdemo-full.cpu.daemon.pb.gz"  # mappings without build IDs
VERIFIED = PROFILES / "rustdemo-full.cpu.pb"  # mappings with GNU build IDs
HEAP_V2 = PROFILES / "gperftools" / "rustdemo-full.heap_v2"


def _run(*arguments: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["profile", *arguments, "--no-background-index"])
    return result.exit_code, result.stdout, result.stderr


def test_exit_codes_are_their_own() -> None:
    assert len({0, 1, 2, 70, EXIT_UNNAMED_ABOVE, EXIT_UNVERIFIED}) == 6


def test_require_verified_fails_a_match_by_file_name_after_writing(tmp_path: Path) -> None:
    out = tmp_path / "out.pb.gz"
    code, stdout, stderr = _run(str(DAEMON), "-o", str(out), "--search-path", str(BIN), "--json-summary",
                                "--require-verified")  # fmt: skip
    assert code == EXIT_UNVERIFIED, stderr
    summary = json.loads(stdout)
    unverified = {m["filename"] for m in summary["mappings"] if m["unverified"]}
    assert unverified
    assert {g["subject"] for g in summary["gates"]} == unverified
    assert {g["gate"] for g in summary["gates"]} == {"require-verified"}
    assert "gate --require-verified failed:" in stderr
    written, _ = read_profile(out)  # written whole before the gate failed the run
    assert any(location.line for location in written.location)
    # Without the gate the same run passes; with build IDs it passes the gate.
    assert _run(str(DAEMON), "-o", str(out), "--search-path", str(BIN))[0] == 0
    code, _, stderr = _run(str(VERIFIED), "-o", str(out), "--search-path", str(BIN), "--require-verified")
    assert code == 0, stderr


# The shares differ only where the machine's libtcmalloc names the leaves: without it, every type is 1.0.
@needs_libtcmalloc
def test_fail_unnamed_above_is_per_sample_type(tmp_path: Path) -> None:
    out = tmp_path / "out.pb"
    code, stdout, stderr = _run(str(HEAP_V2), "-o", str(out), "--json-summary")
    assert code == 0, stderr
    shares = json.loads(stdout)["unnamed_value_share"]
    assert len(shares) == 4 and max(shares.values()) > 0.05
    # A limit between the shares: only the types above it trip the gate.
    low, high = min(shares.values()), max(shares.values())
    limit = (low + high) / 2 * 100
    out.unlink()
    code, stdout, stderr = _run(str(HEAP_V2), "-o", str(out), "--json-summary", "--fail-unnamed-above", f"{limit}")
    assert code == EXIT_UNNAMED_ABOVE, stderr
    gates = json.loads(stdout)["gates"]
    assert {g["subject"] for g in gates} == {name for name, share in shares.items() if share * 100 > limit}
    assert all(g["gate"] == "fail-unnamed-above" and g["limit"] == pytest.approx(limit / 100) for g in gates)
    assert all(g["share"] == pytest.approx(shares[g["subject"]]) for g in gates)
    assert out.is_file()
    # The text summary says it too; a limit at the highest share passes.
    code, _, stderr = _run(str(HEAP_V2), "-o", str(out), "--fail-unnamed-above", "10")
    assert code == EXIT_UNNAMED_ABOVE and "gate --fail-unnamed-above failed: unnamed alloc_space:" in stderr
    assert _run(str(HEAP_V2), "-o", str(out), "--fail-unnamed-above", f"{high * 100}")[0] == 0


def test_both_gates_exit_with_the_unnamed_code_and_list_both(tmp_path: Path) -> None:
    code, stdout, _ = _run(str(HEAP_V2), "-o", str(tmp_path / "o.pb"), "--json-summary",
                           "--fail-unnamed-above", "0", "--require-verified")  # fmt: skip
    assert code == EXIT_UNNAMED_ABOVE
    assert {g["gate"] for g in json.loads(stdout)["gates"]} == {"fail-unnamed-above", "require-verified"}


@pytest.mark.parametrize("percent", ["abc", "101", "-1", "nan"])
def test_a_limit_that_is_no_percentage_is_a_usage_error(percent: str, tmp_path: Path) -> None:
    out = tmp_path / "out.pb"
    code, _, stderr = _run(str(HEAP_V2), "-o", str(out), f"--fail-unnamed-above={percent}")
    assert code == 2 and "not a percentage" in stderr
    assert not out.exists()  # refused before any work


def test_the_plain_path_reads_the_flags_and_hands_the_limit_to_typer() -> None:
    request = plain_command(["profile", "a.pb", "--require-verified", "--keep-hashes"])
    assert isinstance(request, ProfileRequest) and request.require_verified and request.keep_hashes
    assert request.fail_unnamed_above is None
    assert plain_command(["profile", "a.pb", "--fail-unnamed-above", "5"]) is None


def test_the_console_script_exits_with_the_gate_code(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "symbolize", "profile", str(DAEMON), "-o", str(tmp_path / "o.pb.gz"),
         "--search-path", str(BIN), "--no-background-index", "--require-verified"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == EXIT_UNVERIFIED, done.stderr
    assert "gate --require-verified failed:" in done.stderr
