"""One line of ``lookup``'s input read as llvm-symbolizer 22 reads it (``llvm-symbolizer.cpp``,
``parseCommand``; checked against the tool itself by tests/test_llvm_protocol.py).

- An optional ``CODE `` or ``DATA `` first (upper case, one space): a code address, or a data
  address whose covering symbol is asked for.
- Without ``--obj``, the file comes next: ``FILE:`` may prefix it; in double or single quotes it
  may hold spaces (an unclosed quote: "no input filename has been specified"), else it ends at
  the first space.
- Then the address, the next word; what follows it is ignored (``0x10 0x20`` asks for ``0x10``).
  A word that starts with a digit is a number as LLVM's ``getAsInteger(0)`` reads it (``0x``
  hex, ``0b`` binary, ``0`` octal, else decimal; 64 bits) or the error "expected a number as
  module offset"; any other word is a symbol's name, whose place is asked for. No word: "no
  module offset has been specified". An empty line asks nothing and says nothing.
"""

from typing import NamedTuple

# What ends a word (llvm-symbolizer's delimiters).
_DELIMITERS = " \n\r"
_ADDRESS_LIMIT = 1 << 64


class Query(NamedTuple):
    """What one input line asks."""

    text: str  # the line as given
    module: str  # the file named on the line ("" for none); the --obj file when there is one
    address: int | None = None
    symbol: str | None = None  # a name to find, when the word is no number
    error: str | None = None  # llvm-symbolizer's message for a line it cannot read ("" says nothing)
    data: bool = False  # DATA: the covering symbol, not the code frames


def parse_number(word: str) -> int | None:
    """``word`` as LLVM's ``StringRef::getAsInteger(0)`` reads an unsigned 64-bit number; None if not one."""
    lowered = word.lower()
    base, digits = 10, word
    if lowered.startswith("0x"):
        base, digits = 16, word[2:]
    elif lowered.startswith("0b"):
        base, digits = 2, word[2:]
    elif word.startswith("0") and len(word) > 1:
        base, digits = 8, word[1:]
    if not digits.isascii() or not digits.isalnum():  # int() would take "_", "+" and spaces
        return None
    if len(digits.lstrip("0")) > 64:  # past 64 bits in any base: not converted (a line may be MiBs)
        return None
    try:
        value = int(digits, base)
    except ValueError:
        return None
    return value if value < _ADDRESS_LIMIT else None


def _next_word(text: str) -> tuple[str, str]:
    """The first word of ``text`` (leading delimiters skipped) and what follows it."""
    text = text.lstrip(_DELIMITERS)
    ends = [position for position in map(text.find, _DELIMITERS) if position >= 0]
    end = min(ends, default=len(text))
    return text[:end], text[end:]


def parse_query(line: str, obj: str | None) -> Query:
    """What ``line`` asks of ``obj`` (the ``--obj`` file), or of the file it names when ``obj`` is None."""
    rest = line
    data = False
    if rest.startswith("CODE "):
        rest = rest[5:]
    elif rest.startswith("DATA "):
        rest, data = rest[5:], True
    if not rest.strip(_DELIMITERS):
        return Query(line, obj or "", error="", data=data)
    module = obj
    if module is None:
        while rest.startswith("FILE:"):
            rest = rest[5:]
        rest = rest.lstrip(_DELIMITERS)
        if rest[:1] in ("'", '"'):
            end = rest.find(rest[0], 1)
            if end < 0:
                return Query(line, "", error="no input filename has been specified", data=data)
            module, rest = rest[1:end], rest[end + 1 :]
        else:
            module, rest = _next_word(rest)
    word, _ = _next_word(rest)
    if not word:
        return Query(line, module, error="no module offset has been specified", data=data)
    if word[0].isdigit():
        address = parse_number(word)
        if address is None:
            return Query(line, module, error="expected a number as module offset", data=data)
        return Query(line, module, address=address, data=data)
    return Query(line, module, symbol=word, data=data)
