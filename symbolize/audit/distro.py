"""Files a distribution installed: their debug info comes from the distribution, not from a rebuild.

A binary under the system's library and program directories (``/usr/lib``, ``/lib64``,
``/usr/bin``, ...; not ``/usr/local`` nor ``/usr/lib/debug``) was built and stripped by its
distribution, which ships the debug info apart: as a debug package (Debian's and Ubuntu's
``-dbgsym`` packages, older ``-dbg`` ones such as glibc's ``libc6-dbg``; Fedora's and RHEL's
``-debuginfo`` packages, ``dnf debuginfo-install``) or from a debuginfod server by build ID
(elfutils' ``debuginfod-find``; Debian, Ubuntu, Fedora, Arch and openSUSE run public ones).
Where dpkg's database is readable, the package that installed the file is named (what
``dpkg -S PATH`` says), so the advice names the debug package to install.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import NamedTuple

# Where distributions install libraries and programs (the FHS), and where their debug files go.
SYSTEM_DIRECTORIES = (
    "/lib", "/lib32", "/lib64", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libexec",
    "/bin", "/sbin", "/usr/bin", "/usr/sbin",
)  # fmt: skip
DEBUG_DIRECTORY = "/usr/lib/debug"
DPKG_INFO = Path("/var/lib/dpkg/info")
# Debian packages whose debug files are a -dbg package of their own rather than -dbgsym.
_DEBIAN_DBG = {"libc6": "libc6-dbg"}


class DistributionFile(NamedTuple):
    """A binary the distribution installed, and the package that did when dpkg says."""

    path: str
    package: str | None  # without its ``:arch``; None when no package database names it


def distribution_file(path: Path, dpkg_info: Path = DPKG_INFO) -> DistributionFile | None:
    """``path`` as a distribution's file when it lies in a system directory; else None."""
    posix = PurePosixPath(path.absolute().as_posix())
    text = str(posix)
    if text.startswith(DEBUG_DIRECTORY + "/"):
        return None
    if not any(text.startswith(directory + "/") for directory in SYSTEM_DIRECTORIES):
        return None
    return DistributionFile(text, _dpkg_owner(posix, dpkg_info))


def _dpkg_owner(path: PurePosixPath, dpkg_info: Path) -> str | None:
    """The package whose file list holds ``path`` (or, on a merged-/usr system, its /usr twin)."""
    spellings = {str(path)}
    if str(path).startswith("/usr/"):
        spellings.add(str(path)[len("/usr") :])
    else:
        spellings.add("/usr" + str(path))
    try:
        lists = sorted(dpkg_info.glob("*.list"))
    except OSError:
        return None
    for listed in lists:
        try:
            lines = listed.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        if spellings.intersection(lines):
            return listed.stem.split(":", 1)[0]
    return None


def debug_package_fixes(found: DistributionFile, build_id: str | None) -> list[str]:
    """How to get a distribution file's debug info: its debug package, or debuginfod by build ID."""
    if found.package is not None:
        debug = _DEBIAN_DBG.get(found.package, f"{found.package}-dbgsym")
        fixes = [
            f"install the debug package of {found.package} (dpkg -S {found.path}): apt install {debug} "
            "(Debian's debug archive or Ubuntu's ddebs; its files land under /usr/lib/debug/.build-id/, "
            "where symbolize looks): do not rebuild or re-strip a distribution's file"
        ]
    else:
        fixes = [
            f"install the distribution's debug package of {found.path} (Debian/Ubuntu: the -dbgsym package "
            f"of what dpkg -S {found.path} names; Fedora/RHEL: dnf debuginfo-install $(rpm -qf {found.path})): "
            "do not rebuild or re-strip a distribution's file"
        ]
    if build_id:
        fixes.append(
            f"or fetch it by build ID from the distribution's debuginfod server: debuginfod-find debuginfo {build_id} "
            f"(DEBUGINFOD_URLS set), copied to /usr/lib/debug/.build-id/{build_id[:2]}/{build_id[2:]}.debug "
            "or under a --debug-dir"
        )
    return fixes
