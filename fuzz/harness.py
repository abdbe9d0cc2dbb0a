"""What every fuzz target shares: seeds, the contract an input is checked against, the libFuzzer run.

A target is a function of one input's bytes that may return anything or raise
:class:`~symbolize.formats.errors.SymbolizeError` (the contract: an answer or one
typed error); any other exception is a finding. Seeds come from ``fuzz/seeds/<target>/``:
the files in it, and the repository files its ``FIXTURES`` lists (one path a line,
relative to the repository, ``#`` comments), so fixtures are not copied twice.
A reader added later gets its target by adding a seed directory (see ``fuzz/README.md``).

Two modes:

- default: an untyped exception propagates, libFuzzer saves the input as ``crash-<sha1>``
  and stops, as CI wants;
- ``SYMBOLIZE_FUZZ_KEEP_GOING=DIR``: the input and its traceback are saved in DIR, one pair per
  distinct place of failure, and the run goes on (for long runs by hand).
"""

from __future__ import annotations

import hashlib
import os
import struct
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SEEDS = REPO / "fuzz" / "seeds"
# Per input: an input that takes longer or needs more is a finding too.
TIMEOUT_SECONDS = 20
RSS_LIMIT_MB = 3072

Target = Callable[[bytes], object]


def seed_files(target: str) -> list[Path]:
    """The seed files of ``target``: its directory's files and the fixtures its FIXTURES names
    (none for a target that builds its seeds, without a directory)."""
    directory = SEEDS / target
    if not directory.is_dir():
        return []
    found = sorted(path for path in directory.iterdir() if path.is_file() and path.name != "FIXTURES")
    listing = directory / "FIXTURES"
    if listing.exists():
        for line in listing.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                found.append(REPO / line)
    return found


def seed_corpus(target: str, corpus: Path, built: Sequence[bytes] = ()) -> Path:
    """``corpus`` (created if missing) with the seeds of ``target`` and the ``built`` ones copied
    in, for libFuzzer to grow."""
    corpus.mkdir(parents=True, exist_ok=True)
    for data in [*(seed.read_bytes() for seed in seed_files(target)), *built]:
        (corpus / ("seed-" + hashlib.sha1(data).hexdigest())).write_bytes(data)
    return corpus


def checked(target: Target) -> Callable[[bytes], None]:
    """``target`` held to the contract, in the mode the environment asks for."""
    from symbolize.formats.errors import SymbolizeError

    keep_going = os.environ.get("SYMBOLIZE_FUZZ_KEEP_GOING")
    findings = Path(keep_going) if keep_going else None
    seen: set[str] = set()

    def one_input(data: bytes) -> None:
        try:
            target(data)
        except SymbolizeError:
            pass
        except Exception as error:
            if findings is None:
                raise
            _record(findings, seen, data, error)

    return one_input


def _record(findings: Path, seen: set[str], data: bytes, error: Exception) -> None:
    frames = traceback.extract_tb(error.__traceback__)
    last = frames[-1] if frames else None
    where = f"{type(error).__name__} {last.filename}:{last.lineno}" if last else type(error).__name__
    key = hashlib.sha1(where.encode()).hexdigest()[:12]
    if key in seen:
        return
    seen.add(key)
    findings.mkdir(parents=True, exist_ok=True)
    (findings / f"finding-{key}").write_bytes(data)
    (findings / f"finding-{key}.txt").write_text("".join(traceback.format_exception(error)))
    print(f"fuzz: finding {where} saved as {findings / ('finding-' + key)}", file=sys.stderr)


def scratch_file(data: bytes, suffix: str = "") -> Path:
    """``data`` in a file of a per-process scratch directory (on tmpfs when there is one)."""
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    directory = base / f"symbolize-fuzz-{os.getpid()}"
    directory.mkdir(exist_ok=True)
    path = directory / f"input{suffix}"
    path.write_bytes(data)
    return path


def _import_everything() -> None:
    """Import every module of the package now, so atheris instruments the lazily imported ones too."""
    import importlib
    import pkgutil

    import symbolize

    for module in pkgutil.walk_packages(symbolize.__path__, "symbolize."):
        if module.name.endswith("__main__") or ".cli" in module.name:
            continue
        importlib.import_module(module.name)



# A section length that keeps the template's section (replaced_sections).
KEEP_SECTION = 0xFFFF


def replaced_sections(sections: dict[str, bytes], data: bytes, names: Sequence[str]) -> dict[str, bytes] | None:
    """``sections`` with those ``data`` replaces: after its first byte (the template's number), for
    each of ``names`` a little-endian u16 length (KEEP_SECTION: keep the template's) and that many
    bytes, then the rest is ``debug_info``. "ranges" stands for whichever of ``debug_rnglists`` and
    ``debug_ranges`` the template has. None for an input too short to say."""
    replaced = dict(sections)
    position = 1
    for name in names:
        if position + 2 > len(data):
            return None
        (length,) = struct.unpack_from("<H", data, position)
        position += 2
        if length == KEEP_SECTION:
            continue
        replacement = data[position : position + length]
        position += length
        if name == "ranges":
            replaced["debug_rnglists" if "debug_rnglists" in replaced else "debug_ranges"] = replacement
        else:
            replaced[name] = replacement
    replaced["debug_info"] = data[position:]
    return replaced


def main(
    target_name: str, make_target: Callable[[], Target], argv: list[str],
    built_seeds: Callable[[], Sequence[bytes]] | None = None,
) -> None:
    """Run ``target_name`` under libFuzzer (atheris) with its seeds.

    ``argv``: libFuzzer's own options (``-max_total_time=25``, ``-runs=100000``, corpus
    directories). With no corpus directory given, the seeds are copied into a fresh one.
    ``built_seeds``: seeds the target builds at start (from the fixtures), besides its directory's.
    """
    import atheris

    with atheris.instrument_imports(include=["symbolize"]):
        _import_everything()
        target = make_target()
    built = built_seeds() if built_seeds is not None else ()
    options = [arg for arg in argv[1:] if arg.startswith("-")]
    corpora = [arg for arg in argv[1:] if not arg.startswith("-")]
    if not corpora:
        corpora = [str(seed_corpus(target_name, Path(tempfile.mkdtemp(prefix=f"fuzz-{target_name}-")), built))]
    elif not Path(corpora[0]).is_file():  # a file argument replays that input alone
        seed_corpus(target_name, Path(corpora[0]), built)
    defaults = [f"-timeout={TIMEOUT_SECONDS}", f"-rss_limit_mb={RSS_LIMIT_MB}", "-print_final_stats=1"]
    sizes = [*(len(path.read_bytes()) for path in seed_files(target_name)), *map(len, built)]
    biggest = max(sizes, default=4096)
    if not any(option.startswith("-max_len=") for option in options):
        defaults.append(f"-max_len={biggest}")
    atheris.Setup([argv[0], *defaults, *options, *corpora], checked(target))
    atheris.Fuzz()
