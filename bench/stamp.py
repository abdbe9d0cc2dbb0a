"""How long ``symbolize stamp`` takes per mapping: is it cheap enough to run after every dump?

A profile of N mappings is written whose every mapping names a distinct file (so the stamp's
per-file cache never answers: each mapping is one header read), drawn from real files:

- ``elf``: the machine's shared libraries (``/usr/lib/x86_64-linux-gnu/*.so*`` or the
  ``sysconfig`` LIBDIR), small and large (libstdc++, libLLVM when present): the stamp reads the
  same few pages of each whatever its size;
- ``pe`` and ``macho``: the fixture images (fixtures/bin/windows, fixtures/bin/macos, universal
  files included), copied to a temporary directory N times (distinct inodes).

Measured: ``stamp()`` in this process (reading and writing the profile excluded) per mapping, the
best of ``--repeat`` runs (page cache warm, as it is right after a dump: the process had those
files mapped), and one ``symbolize stamp IN -o OUT`` process over the same profile, wall time
including interpreter start and imports, the cost a dump hook pays.

    python bench/stamp.py [--mappings 200] [--repeat 5]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from symbolize.pprof import Profile, StringTable, write_profile
from symbolize.stamp import PprofStampTarget, stamp

ROOT = Path(__file__).resolve().parent.parent
WINDOWS_BIN = ROOT / "fixtures" / "bin" / "windows"
MACOS_BIN = ROOT / "fixtures" / "bin" / "macos"
_ELF_MAGIC = b"\x7fELF"


def system_elf_files(count: int) -> list[Path]:
    """Up to ``count`` distinct ELF shared libraries of this machine, largest first (the worst case)."""
    directories = [Path("/usr/lib/x86_64-linux-gnu"), Path("/usr/lib64"), Path(str(sysconfig.get_config_var("LIBDIR")))]
    found: dict[tuple[int, int], Path] = {}
    for directory in directories:
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.so*")):
            try:
                status = path.stat()
                with path.open("rb") as stream:
                    is_elf = stream.read(4) == _ELF_MAGIC
            except OSError:
                continue
            if is_elf and path.is_file():
                found.setdefault((status.st_dev, status.st_ino), path)
    return sorted(found.values(), key=lambda path: path.stat().st_size, reverse=True)[:count]


def copies(sources: list[Path], count: int, directory: Path) -> list[Path]:
    """``count`` distinct files, copies of ``sources`` in turn, under ``directory``."""
    made = []
    for number in range(count):
        source = sources[number % len(sources)]
        target = directory / f"{number:05d}-{source.name}"
        shutil.copyfile(source, target)
        made.append(target)
    return made


def profile_of(files: list[Path]) -> Profile:
    """One mapping per file, start/limit/name only (mimalloc-pprof's shape), 16 MiB apart."""
    profile = Profile()
    strings = StringTable(profile)
    for number, path in enumerate(files, start=1):
        start = 0x7F0000000000 + (number << 24)
        profile.mapping.add(
            id=number, memory_start=start, memory_limit=start + 0x100000, filename=strings.intern(str(path))
        )
    return profile


def time_stamp(profile: Profile, repeat: int) -> tuple[float, int]:
    """The best wall time of ``stamp()`` over ``profile`` (a fresh copy each run), and the mappings stamped."""
    best, stamped = float("inf"), 0
    for _ in range(repeat):
        copy = Profile()
        copy.CopyFrom(profile)
        started = time.perf_counter()
        report = stamp(PprofStampTarget(copy))
        best = min(best, time.perf_counter() - started)
        stamped = report.stamped
    return best, stamped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mappings", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    arguments = parser.parse_args()
    count = arguments.mappings
    with tempfile.TemporaryDirectory(prefix="stamp-bench-") as scratch:
        directory = Path(scratch)
        sets = {
            "elf": system_elf_files(count),
            "pe": copies(sorted(path for path in WINDOWS_BIN.iterdir() if path.suffix in (".exe", ".dll")), count,
                         directory),
            "macho": copies(sorted(path for path in MACOS_BIN.iterdir() if path.is_file()), count, directory),
        }  # fmt: skip
        print(f"stamp of N mappings, each a distinct file; best of {arguments.repeat} (page cache warm)")
        print(f"{'files':<7} {'N':>5} {'stamped':>8} {'MB read of':>11} {'stamp()':>10} {'per mapping':>12}")
        for name, files in sets.items():
            if not files:
                print(f"{name:<7} no files found")
                continue
            megabytes = sum(path.stat().st_size for path in files) / 1e6
            seconds, stamped = time_stamp(profile_of(files), arguments.repeat)
            per = seconds / len(files) * 1e3
            print(f"{name:<7} {len(files):>5} {stamped:>8} {megabytes:>9.1f}MB {seconds * 1e3:>8.1f}ms {per:>10.3f}ms")
        every = [path for files in sets.values() for path in files]
        source = directory / "all.pb.gz"
        write_profile(profile_of(every), source, gzip=True)
        command = [sys.executable, "-m", "symbolize", "stamp", str(source), "-o", str(directory / "out.pb.gz")]
        started = time.perf_counter()
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare = time.perf_counter() - started
        print(f"symbolize stamp process, {len(every)} mappings: {wall * 1e3:.0f} ms wall "
              f"(a bare python start here: {bare * 1e3:.0f} ms); exit {completed.returncode}")  # fmt: skip
        print(completed.stderr.splitlines()[0] if completed.stderr else "(no report)")


if __name__ == "__main__":
    main()
