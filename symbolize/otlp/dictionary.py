"""Building a ``ProfilesDictionary`` (opentelemetry-proto, ``profiles/v1development/profiles.proto``).

Every table starts with its zero entry (``string_table[0] == ""``, ``Mapping{}``, ``Location{}``,
``Function{}``, ``Link{}``, ``KeyValueAndUnit{}``, ``Stack{}``), as the dictionary's rules require,
so that index 0 means "not set". Strings, attributes and stacks are interned (equal values share
one index: the rules ask for no duplicates); mappings, locations and functions are appended as
the caller gives them, since each is one pprof entry the way back must find again.

:class:`DictionaryEditor` appends to a dictionary someone else wrote (what naming and stamping
an export add), interning against what it holds; :class:`DictionaryBuilder` is one over a new
dictionary.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue
from opentelemetry.proto.profiles.v1development.profiles_pb2 import (
    Function,
    KeyValueAndUnit,
    Link,
    Location,
    Mapping,
    Profile,
    ProfilesData,
    ProfilesDictionary,
    Stack,
)

from symbolize.mapping_ids import id_parts
from symbolize.otlp import attributes as keys

# What an attribute's value may be here: pprof labels and the converter's own facts.
AttributeValue = str | int | bool | tuple[str, ...] | tuple[int, ...]


def as_int64(value: int) -> int:
    """A uint64 as the int64 of the same bits: how pprof's int64 fields and OTLP's uint64 ones
    (and an attribute's int64 holding a pprof uint64 ID) carry each other's values."""
    return value - (1 << 64) if value >= 1 << 63 else value


def any_value(value: AttributeValue) -> AnyValue:
    """``value`` as an OTLP AnyValue (a tuple becomes an ArrayValue of its elements)."""
    if isinstance(value, tuple):
        return AnyValue(array_value=ArrayValue(values=[any_value(element) for element in value]))
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    return AnyValue(string_value=value)


class DictionaryEditor:
    """Appends to a ProfilesDictionary: strings and attributes interned against what it holds
    already (the first of equal entries reused), so nothing added is a duplicate. Over a dictionary
    someone else wrote, it is what naming and stamping an export add with."""

    def __init__(self, dictionary: ProfilesDictionary) -> None:
        self.dictionary = dictionary
        self._strings: dict[str, int] = {}
        for index, text in enumerate(dictionary.string_table):
            self._strings.setdefault(text, index)
        # (key string index, value type, value, unit string index) -> index, for scalar values.
        self._attributes: dict[tuple[int, str, AttributeValue, int], int] = {}
        for index, entry in enumerate(dictionary.attribute_table):
            kind = entry.value.WhichOneof("value")
            if index and kind in ("string_value", "bool_value", "int_value"):
                value = getattr(entry.value, kind)
                identity = (entry.key_strindex, type(value).__name__, value, entry.unit_strindex)
                self._attributes.setdefault(identity, index)

    def string(self, text: str) -> int:
        """The index of ``text``, appended when new (the first index of a duplicated one)."""
        index = self._strings.get(text)
        if index is None:
            index = self._strings[text] = len(self.dictionary.string_table)
            self.dictionary.string_table.append(text)
        return index

    def attribute(self, key_strindex: int, value: AttributeValue, unit_strindex: int = 0) -> int:
        """The index of the attribute ``key = value`` (in ``unit``), appended when new."""
        identity = (key_strindex, type(value).__name__, value, unit_strindex)
        index = self._attributes.get(identity)
        if index is None:
            index = self._attributes[identity] = len(self.dictionary.attribute_table)
            self.dictionary.attribute_table.append(
                KeyValueAndUnit(key_strindex=key_strindex, value=any_value(value), unit_strindex=unit_strindex)
            )
        return index

    def named_attribute(self, key: str, value: AttributeValue) -> int:
        """:meth:`attribute` with its key given as text."""
        return self.attribute(self.string(key), value)

    def key_of(self, index: int) -> str:
        """The key (text) of attribute ``index``; "" for an index out of the table."""
        table = self.dictionary.attribute_table
        if not 0 < index < len(table):
            return ""
        key = table[index].key_strindex
        return self.dictionary.string_table[key] if 0 <= key < len(self.dictionary.string_table) else ""

    def attributes(self, indices: Sequence[int]) -> dict[str, object]:
        """Key -> value (str, bool, int; others as None) of the attributes at ``indices``; indices
        out of the table are skipped."""
        found: dict[str, object] = {}
        table = self.dictionary.attribute_table
        for index in indices:
            if not 0 < index < len(table):
                continue
            kind = table[index].value.WhichOneof("value")
            value = getattr(table[index].value, kind) if kind in ("string_value", "bool_value", "int_value") else None
            found[self.key_of(index)] = value
        return found

    def set_attribute(self, holder: Mapping | Profile, key: str, value: str | bool) -> None:
        """Gives ``holder`` the attribute ``key = value``, in place of one of that key it has."""
        self._replace(holder, {key}, [self.named_attribute(key, value)])

    def set_flags(self, mapping: Mapping, flags: tuple[bool, ...]) -> None:
        """Replaces the mapping's ``pprof.mapping.has_*`` attributes by ``flags`` (written when true)."""
        added = [self.named_attribute(key, True) for (_, key), on in zip(keys.MAPPING_FLAGS, flags, strict=True) if on]
        self._replace(mapping, {key for _, key in keys.MAPPING_FLAGS}, added)

    def _replace(self, holder: Mapping | Profile, replaced: set[str], added: list[int]) -> None:
        indices = holder.attribute_indices
        kept = [index for index in indices if self.key_of(index) not in replaced]
        del indices[:]
        indices.extend([*kept, *added])

    def add_ids(self, mapping: Mapping, text: str, filename: str) -> None:
        """Adds the IDs of ``text`` (as symbolize/mapping_ids.py spells them) the mapping lacks, each
        under the key the converter gives it (:func:`symbolize.otlp.attributes.build_id_key`)."""
        indices = mapping.attribute_indices
        held = {self.key_of(index) for index in indices}
        for part in id_parts(text):
            key = keys.build_id_key(part, filename)
            if key not in held:
                indices.append(self.named_attribute(key, part))
                held.add(key)

    def set_drop_frames(self, message: ProfilesData, pattern: str) -> None:
        """Sets every profile's ``pprof.profile.drop_frames`` attribute to ``pattern``."""
        for resource in message.resource_profiles:
            for scope in resource.scope_profiles:
                for profile in scope.profiles:
                    self.set_attribute(profile, keys.DROP_FRAMES, pattern)


class DictionaryBuilder(DictionaryEditor):
    """A new ProfilesDictionary being filled, with its zero entries in place.

    ``strings`` seeds the string table as given, order and duplicates included (a pprof string
    table, whose indices then stay valid); ``""`` must be its first entry.
    """

    def __init__(self, strings: Sequence[str] = ("",)) -> None:
        super().__init__(
            ProfilesDictionary(
                string_table=strings,
                mapping_table=[Mapping()],
                location_table=[Location()],
                function_table=[Function()],
                link_table=[Link()],
                attribute_table=[KeyValueAndUnit()],
                stack_table=[Stack()],
            )
        )
        self._stacks: dict[tuple[int, ...], int] = {(): 0}

    def stack(self, location_indices: Iterable[int]) -> int:
        """The index of the stack of ``location_indices`` (leaf first), appended when new."""
        identity = tuple(location_indices)
        index = self._stacks.get(identity)
        if index is None:
            index = self._stacks[identity] = len(self.dictionary.stack_table)
            self.dictionary.stack_table.append(Stack(location_indices=identity))
        return index
