"""The summary's top leaf functions: per sample type, with shares, skipping ``drop_frames``.

A sample's leaf function is the innermost inlined frame of its first location. With a
``drop_frames`` pattern (profile.proto: "frames with Function.function_name fully matching the
regexp will be dropped from the samples, along with their successors"), each stack is walked
from its root as pprof's ``Prune`` walks it (``profile/prune.go``): a frame is dropped when its
function name, cut at its first ``(`` as pprof's ``simplifyFunc`` cuts it, fully matches; at the
first such frame after a frame of the program's own (one that does not match), that frame and
every frame it called are dropped, and the leaf is the innermost frame kept. Frames that match
before any of the program's are kept (pprof never prunes a stack away), so a stack of the
allocator's frames alone keeps its leaf. The shares are taken of the sum of every sample's
absolute value.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

from symbolize.pprof import StringTable
from symbolize.proto.profile_pb2 import Profile
from symbolize.summary import TopFunction

__all__ = ["top_leaf_functions"]


def top_leaf_functions(
    profile: Profile, strings: StringTable, drop_frames: re.Pattern[str] | None = None, count: int = 10
) -> dict[str, list[TopFunction]]:
    """Sample type name -> its ``count`` leaf functions with the highest value, highest first."""
    if drop_frames is None:
        leaf_of = _leaf_names(profile, strings)
    else:
        leaf_of = _pruned_leaf_names(profile, strings, drop_frames)
    type_count = len(profile.sample_type)
    totals = [0] * type_count
    by_leaf: list[Counter[str]] = [Counter() for _ in range(type_count)]
    for sample in profile.sample:
        values = list(sample.value[:type_count])
        for index, value in enumerate(values):
            totals[index] += abs(value)
        leaf = leaf_of(sample.location_id)
        if leaf:
            for index, value in enumerate(values):
                by_leaf[index][leaf] += value
    tops: dict[str, list[TopFunction]] = {}
    for index, value_type in enumerate(profile.sample_type):
        name = strings.get(value_type.type) or f"#{index}"
        total = totals[index]
        tops[name] = [
            TopFunction(function, value, value / total if total else 0.0)
            for function, value in by_leaf[index].most_common(count)
        ]
    return tops


def _leaf_names(profile: Profile, strings: StringTable) -> Callable[[Sequence[int]], str]:
    """A stack's leaf name without ``drop_frames``: the innermost frame of its first location
    (what :func:`_leaf_name` finds when nothing is dropped), "" when that location has none."""
    leaves = {sample.location_id[0] for sample in profile.sample if sample.location_id}
    # Later entries with the same id win, as in the dicts _pruned_leaf_names builds.
    # -1 (no pprof id: they are unsigned) for a location without lines.
    innermost = {
        location.id: location.line[0].function_id if location.line else -1
        for location in profile.location
        if location.id in leaves
    }
    functions = {function.id: function.name for function in profile.function}
    names: dict[int, str] = {}

    def leaf_of(stack: Sequence[int]) -> str:
        if not stack:
            return ""
        function_id = innermost.get(stack[0], -1)
        name = names.get(function_id)
        if name is None:
            string_id = functions.get(function_id)
            name = names[function_id] = "" if string_id is None else strings.get(string_id)
        return name

    return leaf_of


def _pruned_leaf_names(
    profile: Profile, strings: StringTable, drop_frames: re.Pattern[str]
) -> Callable[[Sequence[int]], str]:
    """A stack's leaf name with ``drop_frames`` applied (:func:`_leaf_name`), once per distinct stack."""
    names = {
        function.id: (strings.get(function.name), strings.get(function.system_name)) for function in profile.function
    }
    # Each location's frames, innermost first, as (name, system name).
    frames = {
        location.id: [names.get(line.function_id, ("", "")) for line in location.line] for location in profile.location
    }
    leaf_cache: dict[tuple[int, ...], str] = {}

    def leaf_of(location_ids: Sequence[int]) -> str:
        stack = tuple(location_ids)
        leaf = leaf_cache.get(stack)
        if leaf is None:
            leaf = leaf_cache[stack] = _leaf_name(stack, frames, drop_frames)
        return leaf

    return leaf_of


def _leaf_name(
    stack: tuple[int, ...], frames: dict[int, list[tuple[str, str]]], drop_frames: re.Pattern[str]
) -> str:
    """The leaf of ``stack`` once pprof's ``Prune`` has applied ``drop_frames`` (module docstring)."""
    found_user = False
    leaf = ""  # the innermost frame kept so far, walking from the root
    for location_id in reversed(stack):
        lines = frames.get(location_id, [])
        # pprof looks from a location's outermost line inward and cuts at the first that matches.
        cut = next((index for index in range(len(lines) - 1, -1, -1) if _dropped(lines[index][0], drop_frames)), -1)
        if cut < 0:
            found_user = True
            leaf = lines[0][0] if lines else ""  # an unnamed location is a frame of the program's
            continue
        whole = cut == len(lines) - 1
        if not found_user:
            # Before the program's first frame nothing is dropped, but a location cut inside keeps
            # only the lines outside the match (pprof trims the location itself).
            leaf = lines[0][0] if whole else lines[cut + 1][0]
            continue
        return leaf if whole else lines[cut + 1][0]
    return leaf


# pprof's bracketRx: the names simplifyFunc keeps whole although they hold "(", or a "(".
_RESERVED = ("(anonymous namespace)", "operator()")
_BRACKET = re.compile("|".join(re.escape(word) for word in (*_RESERVED, "(")))


def _dropped(name: str, drop_frames: re.Pattern[str]) -> bool:
    """Whether pprof drops a frame of this function name: its simplified name matches whole."""
    return bool(name) and drop_frames.fullmatch(simplified_name(name)) is not None


def simplified_name(name: str) -> str:
    """pprof's ``simplifyFunc``: ``name`` cut at its first ``(`` that opens no reserved name
    (``(anonymous namespace)``, ``operator()``), without a leading ``.`` (PPC64 ELFv1)."""
    name = name.removeprefix(".")
    for found in _BRACKET.finditer(name):
        if found.group() not in _RESERVED:
            return name[: found.start()]
    return name
