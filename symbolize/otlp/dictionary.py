"""Building a ``ProfilesDictionary`` (opentelemetry-proto, ``profiles/v1development/profiles.proto``).

Every table starts with its zero entry (``string_table[0] == ""``, ``Mapping{}``, ``Location{}``,
``Function{}``, ``Link{}``, ``KeyValueAndUnit{}``, ``Stack{}``), as the dictionary's rules require,
so that index 0 means "not set". Strings, attributes and stacks are interned (equal values share
one index: the rules ask for no duplicates); mappings, locations and functions are appended as
the caller gives them, since each is one pprof entry the way back must find again.
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
    ProfilesDictionary,
    Stack,
)

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


class DictionaryBuilder:
    """A ProfilesDictionary being filled, with its zero entries in place.

    ``strings`` seeds the string table as given, order and duplicates included (a pprof string
    table, whose indices then stay valid); ``""`` must be its first entry.
    """

    def __init__(self, strings: Sequence[str] = ("",)) -> None:
        self.dictionary = ProfilesDictionary()
        table = self.dictionary
        table.string_table.extend(strings)
        table.mapping_table.append(Mapping())
        table.location_table.append(Location())
        table.function_table.append(Function())
        table.link_table.append(Link())
        table.attribute_table.append(KeyValueAndUnit())
        table.stack_table.append(Stack())
        self._strings: dict[str, int] = {}
        for index, text in enumerate(strings):
            self._strings.setdefault(text, index)
        self._attributes: dict[tuple[int, str, AttributeValue, int], int] = {}
        self._stacks: dict[tuple[int, ...], int] = {(): 0}

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

    def stack(self, location_indices: Iterable[int]) -> int:
        """The index of the stack of ``location_indices`` (leaf first), appended when new."""
        identity = tuple(location_indices)
        index = self._stacks.get(identity)
        if index is None:
            index = self._stacks[identity] = len(self.dictionary.stack_table)
            self.dictionary.stack_table.append(Stack(location_indices=identity))
        return index
