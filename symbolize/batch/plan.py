"""Which profiles each worker of ``symbolize batch`` rewrites: outputs named, profiles sharded by debug ID.

A profile's *key* is the debug ID of the mapping most of its locations fall in (pprof's
``Mapping.build_id``, else the mapping's file name): the binary whose index answers most of it.
Profiles of one key go to one worker, so each index is warmed (fetched, or built) by as few
workers as the balance allows: the groups are placed largest first on the least loaded worker
(LPT, Graham's rule), and a group larger than a worker's fair share is cut into fair-share
pieces first (otherwise a batch of one binary's profiles would run on one worker). A shard is
ordered by key, so a worker meets each binary's profiles one after the other, and the later
pieces of a cut group come last: by then the worker with its first piece has built the index
(in the cache the workers of one machine share, or the index store), so it is built once.

Planning reads each profile once (protobuf parsing, milliseconds); one it cannot read is planned
with no key, and its worker reports why, as ``symbolize profile`` would.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from symbolize.errors import SymbolizeError

# The key of a profile whose mappings could not be read (its worker says why).
NO_KEY = ""


@dataclass(frozen=True)
class PlannedProfile:
    """One input and where its output goes; ``key`` and ``weight`` (its locations, at least 1) place it."""

    in_path: Path
    out_path: Path
    key: str = NO_KEY
    weight: int = 1


def output_paths(inputs: Sequence[Path], out_dir: Path) -> list[Path]:
    """``OUTDIR/<name symbolize profile gives IN>`` for each input, in order. Raises SymbolizeError
    naming both inputs when two would write the same output (the same base name in two
    directories, or one input given twice): one would silently replace the other; and naming the
    output that would replace an input (``a.pb`` beside ``a.symbolized.pb``, OUTDIR their directory)."""
    from symbolize.cli.profile_command import default_output_path

    outputs: list[Path] = []
    seen: dict[Path, Path] = {}
    for in_path in inputs:
        out_path = out_dir / default_output_path(in_path).name
        if out_path in seen:
            raise SymbolizeError(f"{seen[out_path]} and {in_path} would both be written to {out_path.name}", out_dir)
        seen[out_path] = in_path
        outputs.append(out_path)
    read = {_resolved(in_path): in_path for in_path in inputs}
    for out_path in outputs:
        if _resolved(out_path) in read:
            raise SymbolizeError(f"would be written over the input {read[_resolved(out_path)]}", out_path)
    return outputs


def _resolved(path: Path) -> Path:
    """``path`` with its directory's links resolved (the file itself may not exist yet)."""
    return path.parent.resolve() / path.name


def profile_key(in_path: Path) -> tuple[str, int]:
    """The debug ID (or file name) of the mapping most of the profile's locations fall in, and its
    number of locations; ``(NO_KEY, 1)`` when it cannot be read here."""
    from symbolize.pprof import read_profile

    try:
        profile, _ = read_profile(in_path)
    except (SymbolizeError, OSError):
        return NO_KEY, 1
    strings = profile.string_table
    names: dict[int, str] = {}
    for mapping in profile.mapping:
        build_id = strings[mapping.build_id] if 0 <= mapping.build_id < len(strings) else ""
        filename = strings[mapping.filename] if 0 <= mapping.filename < len(strings) else ""
        names[mapping.id] = build_id or Path(filename.replace("\\", "/")).name
    counts = Counter(names.get(location.mapping_id, NO_KEY) for location in profile.location)
    if not counts:
        return NO_KEY, 1
    key, _ = counts.most_common(1)[0]
    return key, max(1, len(profile.location))


def plan(inputs: Sequence[Path], out_dir: Path) -> list[PlannedProfile]:
    """Each input with its output (:func:`output_paths`), key and weight, in the inputs' order."""
    planned: list[PlannedProfile] = []
    for in_path, out_path in zip(inputs, output_paths(inputs, out_dir), strict=True):
        key, weight = profile_key(in_path)
        planned.append(PlannedProfile(in_path, out_path, key, weight))
    return planned


def shard(profiles: Sequence[PlannedProfile], workers: int) -> list[list[PlannedProfile]]:
    """``profiles`` in at most ``workers`` shards, by key (module docstring); none empty."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    groups: dict[str, list[PlannedProfile]] = defaultdict(list)
    for profile in profiles:
        groups[profile.key].append(profile)
    total = sum(profile.weight for profile in profiles)
    fair = max(1, -(-total // workers))
    # (rank of the piece in its key's group, the piece): each key's first piece is rank 0.
    pieces: list[tuple[int, list[PlannedProfile]]] = []
    for group in groups.values():
        piece: list[PlannedProfile] = []
        rank = weight = 0
        for profile in group:
            if piece and weight + profile.weight > fair:
                pieces.append((rank, piece))
                piece = []
                rank, weight = rank + 1, 0
            piece.append(profile)
            weight += profile.weight
        pieces.append((rank, piece))
    shards: list[list[tuple[int, PlannedProfile]]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for rank, piece in sorted(pieces, key=lambda ranked: -sum(member.weight for member in ranked[1])):
        lightest = loads.index(min(loads))
        shards[lightest].extend((rank, member) for member in piece)
        loads[lightest] += sum(member.weight for member in piece)
    # A worker takes its keys' first pieces first and the later pieces of a split key last: by then the
    # worker with the first piece has built (and published) the key's index, which answers them.
    return [
        [member for _, member in sorted(members, key=lambda ranked: (ranked[0], ranked[1].key))]
        for members in shards
        if members
    ]
