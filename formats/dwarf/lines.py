"""Line number programs (DWARF 5, 6.2; DWARF 2-4, 6.2) decoded into flat arrays.

One pass of the state machine per program; each emitted row is appended to
parallel lists (address, file, line, column) and sequences are kept as
``(low, high, first_row, end_row)`` sorted by address, so a lookup is two
bisections. pyelftools copies its whole state object per row, which is why
this decoder is written by hand.

A row whose address the next row of its sequence repeats is dropped: a lookup
takes the last row at or before an address, so it never answers with such a
row, and GCC emits one for most addresses (its location views). That holds
while a sequence's addresses only grow; a program whose addresses step back
(DW_LNE_set_address, 6.2.5.3) is decoded again keeping every row. A program
that ends inside an instruction, steps below line 0 or sets a value too large
to store raises DwarfFormatError.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterator
from typing import Literal

from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.reader import DwarfFormatError, read_initial_length, read_uleb, uint_reader
from symbolize.formats.dwarf.sections import cstring_at
from symbolize.formats.dwarf.unit import Unit

# A discriminator is an unsigned 32-bit value in llvm-symbolizer (DWARFDebugLine::Row).
_DISCRIMINATOR_BITS = 32
_DISCRIMINATOR_MASK = (1 << _DISCRIMINATOR_BITS) - 1


def join_path(directory: str | None, name: str) -> str:
    """Join like llvm-symbolizer does: absolute names win, the separator follows the directory's style."""
    if not directory or name.startswith("/") or (len(name) > 2 and name[1] == ":") or name.startswith("\\"):
        return name
    separator = "\\" if ("\\" in directory and "/" not in directory) else "/"
    return directory.rstrip("/\\") + separator + name


class LineTable:
    # A plain class, not a dataclass: ``import dataclasses`` (inspect, ast, dis, tokenize) is about
    # a tenth of a one-address cold lookup's instructions.
    __slots__ = ("_sequence_lows", "addresses", "columns", "discriminators", "file_indexes", "files", "increasing",
                 "lines", "sequences")  # fmt: skip

    def __init__(self, files: list[str | None], increasing: bool = True) -> None:
        self.files = files
        # Rows, in program order; see the module docstring for the rows left out.
        # Typed arrays, not lists: a large unit has a million rows, and a list of int objects costs
        # several times the memory.
        self.addresses: array[int] = array("Q")
        self.file_indexes: array[int] = array("q")
        self.lines: array[int] = array("q")
        self.columns: array[int] = array("q")
        # Each row's discriminator (DW_LNE_set_discriminator), 0 for most.
        self.discriminators: array[int] = array("Q")
        # (low, high, first row, end row), sorted by low; high is the end_sequence address.
        self.sequences: list[tuple[int, int, int, int]] = []
        self._sequence_lows: list[int] = []
        # Whether addresses strictly increase within every sequence (False: the program steps back).
        self.increasing = increasing

    def file_name(self, index: int) -> str | None:
        return self.files[index] if 0 <= index < len(self.files) else None

    def finish(self) -> None:
        self.sequences.sort()
        self._sequence_lows = [sequence[0] for sequence in self.sequences]

    def lookup(self, vaddr: int) -> tuple[str | None, int, int] | None:
        """(file, line, column) of the last row at or before vaddr in the sequence holding it."""
        position = bisect_right(self._sequence_lows, vaddr) - 1
        # Sequences of code the linker discarded can overlap (all at 0); walk back over them.
        while position >= 0:
            low, high, first, end = self.sequences[position]
            if low <= vaddr < high:
                row = bisect_right(self.addresses, vaddr, first, end) - 1
                return self.file_name(self.file_indexes[row]), self.lines[row], self.columns[row]
            if low < vaddr - (1 << 24):
                break
            position -= 1
        return None


def _entry_formats(data: bytes, offset: int, end: int) -> tuple[list[tuple[int, int]], int]:
    count = data[offset]
    offset += 1
    if 2 * count > end - offset:
        raise DwarfFormatError(f"line table header at {offset:#x} lists {count} entry formats in {end - offset} bytes")
    formats = []
    for _ in range(count):
        content_type, offset = read_uleb(data, offset)
        form, offset = read_uleb(data, offset)
        formats.append((content_type, form))
    return formats, offset


def _read_entries(
    unit: Unit, data: bytes, offset: int, limit: int, offset_size: int
) -> tuple[list[tuple[str, int]], int]:
    """DWARF 5 directory or file-name entries: (path, directory index), read before ``limit``."""
    formats, offset = _entry_formats(data, offset, limit)
    count, offset = read_uleb(data, offset)
    # Every form an entry can use takes at least one byte, so the bytes left bound the count;
    # an entry with no formats takes none, and so is allowed only as one of as many as there are
    # bytes left (a header of zero formats and 2^32-1 directories would append billions of them).
    if count * max(1, len(formats)) > limit - offset:
        raise DwarfFormatError(f"line table header at {offset:#x} lists {count} entries in {limit - offset} bytes")
    read_offset = uint_reader(offset_size, unit.sections.little_endian)
    entries = []
    for _ in range(count):
        path = ""
        directory = 0
        for content_type, form in formats:
            value: object
            if form == c.DW_FORM_string:
                end = data.index(0, offset)
                value = data[offset:end].decode("utf-8", "replace")
                offset = end + 1
            elif form in (c.DW_FORM_line_strp, c.DW_FORM_strp):
                section = unit.sections.line_str if form == c.DW_FORM_line_strp else unit.sections.str
                position = read_offset(data, offset)
                offset += offset_size
                found = cstring_at(section, position)
                if found is None:
                    raise DwarfFormatError(f"line table string offset {position:#x} outside its section")
                value = found
            elif form in (c.DW_FORM_udata,):
                value, offset = read_uleb(data, offset)
            elif form in (c.DW_FORM_data1, c.DW_FORM_data2, c.DW_FORM_data4, c.DW_FORM_data8, c.DW_FORM_data16):
                size = {c.DW_FORM_data1: 1, c.DW_FORM_data2: 2, c.DW_FORM_data4: 4, c.DW_FORM_data8: 8}.get(form, 16)
                value = uint_reader(size, unit.sections.little_endian)(data, offset) if size <= 8 else 0
                offset += size
            elif form == c.DW_FORM_block:
                length, offset = read_uleb(data, offset)
                offset += length
                value = 0
            elif form in (c.DW_FORM_strx, c.DW_FORM_strx1, c.DW_FORM_strx2, c.DW_FORM_strx3, c.DW_FORM_strx4):
                if form == c.DW_FORM_strx:
                    index, offset = read_uleb(data, offset)
                else:
                    size = {c.DW_FORM_strx1: 1, c.DW_FORM_strx2: 2, c.DW_FORM_strx3: 3, c.DW_FORM_strx4: 4}[form]
                    index = uint_reader(size, unit.sections.little_endian)(data, offset)
                    offset += size
                value = unit.string(c.DW_FORM_strx, index)
            else:
                raise DwarfFormatError(f"line table entry uses unsupported form {form:#x}")
            if content_type == c.DW_LNCT_path and isinstance(value, str):
                path = value
            elif content_type == c.DW_LNCT_directory_index and isinstance(value, int):
                directory = value
        entries.append((path, directory))
    return entries, offset


def decode_line_table(unit: Unit, offset: int) -> LineTable:
    """Decode the program at ``offset`` in the unit's ``.debug_line``."""
    data, offset_size, position, end, version, program_start, header_fields = _read_header(unit, offset)
    min_instruction_length, line_base, line_range, opcode_base, standard_lengths = header_fields
    files = file_names(unit, data, position, end, offset_size, version)
    table = LineTable(files=files)
    program = (data, offset, program_start, end, unit, min_instruction_length, line_base, line_range, opcode_base,
               standard_lengths)
    if not _run_program(table, *program, keep_every_row=False):
        # An address steps back inside a sequence; lookups bisect its rows, so all must stay.
        table = LineTable(files=files, increasing=False)
        _run_program(table, *program, keep_every_row=True)
    # Line numbers are unsigned; a program that steps below line 0 is damaged. Checked once here
    # on the rows kept, not per row; _run_program checks the rows it drops.
    if table.lines and min(table.lines) < 0:
        raise DwarfFormatError(f"line program at {offset:#x} steps below line 0")
    table.finish()
    return table


def relative_file_names(unit: Unit, offset: int) -> list[tuple[str | None, str | None]]:
    """The header's file names at ``offset`` as (:func:`file_names`' name, the name without the
    compilation directory): llvm-symbolizer's ``--relativenames`` (``FileLineInfoKind::
    RelativeFilePath``): an absolute name stays; else the name joined with its include directory
    as the table spells it, none for directory 0 (DWARF 5: the compilation directory; DWARF 2-4:
    the unit's directory). Read by the Python header reader alone: asked once per unit, for the
    index or ``--relativenames``."""
    data, offset_size, position, end, version, _, _ = _read_header(unit, offset)
    return _file_name_pairs(unit, data, position, end, offset_size, version)


_Header = tuple[bytes, int, int, int, int, int, tuple[int, int, int, int, list[int]]]


def _read_header(unit: Unit, offset: int) -> _Header:
    """The header of the program at ``offset``: (section, offset size, where its directory and file
    tables start, its end, version, where its program starts, (minimum instruction length,
    line_base, line_range, opcode_base, standard opcode lengths))."""
    data = unit.sections.line_bytes()
    little = unit.sections.little_endian
    offset_size, position, end = read_initial_length(data, offset, little, "line table")
    version = uint_reader(2, little)(data, position)
    position += 2
    if version >= 5:
        position += 2  # address_size, segment_selector_size
    if not 2 <= version <= 5:
        raise DwarfFormatError(f"line table at {offset:#x} has unsupported version {version}")
    header_length = uint_reader(offset_size, little)(data, position)
    position += offset_size
    program_start = position + header_length
    min_instruction_length = data[position]
    position += 1
    if version >= 4:
        position += 1  # maximum_operations_per_instruction (VLIW only)
    # default_is_stmt (data[position]) does not change which row names an address.
    line_base = data[position + 1] - 256 if data[position + 1] > 127 else data[position + 1]
    line_range = data[position + 2]
    opcode_base = data[position + 3]
    position += 4
    standard_lengths = list(data[position : position + opcode_base - 1])
    position += opcode_base - 1
    if line_range == 0:
        raise DwarfFormatError(f"line table at {offset:#x} has line_range 0")
    return (data, offset_size, position, end, version, program_start,
            (min_instruction_length, line_base, line_range, opcode_base, standard_lengths))


def file_names(unit: Unit, data: bytes, position: int, end: int, offset_size: int, version: int) -> list[str | None]:
    """The header's file names from ``position`` (its directory and file tables), each joined
    with its directory as llvm-symbolizer joins them; DWARF 4 file numbers start at 1, so its
    list starts with None."""
    return [name for name, _ in _file_name_pairs(unit, data, position, end, offset_size, version)]


def _file_name_pairs(
    unit: Unit, data: bytes, position: int, end: int, offset_size: int, version: int
) -> list[tuple[str | None, str | None]]:
    """(:func:`file_names`' name, :func:`relative_file_names`' name) of each entry."""
    comp_dir = unit.comp_dir
    files: list[tuple[str | None, str | None]]
    if version >= 5:
        directories, position = _read_entries(unit, data, position, end, offset_size)
        dir_names = [name for name, _ in directories]
        file_entries, position = _read_entries(unit, data, position, end, offset_size)
        files = []
        for name, dir_index in file_entries:
            directory = dir_names[dir_index] if 0 <= dir_index < len(dir_names) else None
            relative = join_path(directory if dir_index != 0 else None, name)
            if directory is not None and dir_index != 0:
                directory = join_path(dir_names[0] if dir_names else comp_dir, directory)
            files.append((join_path(directory, name), relative))
    else:
        dir_names = [comp_dir or ""]
        raw_dirs: list[str | None] = [None]
        while data[position] != 0:
            end_name = data.index(0, position)
            directory_text = data[position:end_name].decode("utf-8", "replace")
            raw_dirs.append(directory_text)
            dir_names.append(join_path(comp_dir, directory_text))
            position = end_name + 1
        position += 1
        files = [(None, None)]  # DWARF 4 file numbers start at 1
        while data[position] != 0:
            end_name = data.index(0, position)
            name = data[position:end_name].decode("utf-8", "replace")
            position = end_name + 1
            dir_index, position = read_uleb(data, position)
            _, position = read_uleb(data, position)  # mtime
            _, position = read_uleb(data, position)  # length
            directory = dir_names[dir_index] if dir_index < len(dir_names) else None
            relative = join_path(raw_dirs[dir_index] if dir_index < len(raw_dirs) else None, name)
            files.append((join_path(directory, name), relative))
    return files


def _row_opcodes(min_length: int, line_base: int, line_range: int,
                 opcode_base: int) -> tuple[list[bool], list[int], list[int]]:
    """Per opcode: whether it emits a row, and its address and line advance (6.2.5.1).

    Special opcodes emit a row after advancing; ``DW_LNS_copy`` emits one advancing nothing, so
    the decoder has one row emitter for both (where a hostile ``opcode_base`` of 0 or 1 makes
    opcode 1 a special opcode, it is one).
    """
    emits = [opcode >= opcode_base for opcode in range(256)]
    emits[c.DW_LNS_copy] = True
    address_advance = [0] * 256
    line_advance = [0] * 256
    for opcode in range(opcode_base, 256):
        adjusted = opcode - opcode_base
        address_advance[opcode] = (adjusted // line_range) * min_length
        line_advance[opcode] = line_base + adjusted % line_range
    return emits, address_advance, line_advance


def _next_uleb(first: int, stream: Iterator[int]) -> int:
    """The rest of a ULEB128 number whose first byte (at least 0x80) was already read."""
    result = first & 0x7F
    shift = 7
    while True:
        byte = next(stream)
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result
        shift += 7


def _sleb_tail(low_bits: int, shift: int, stream: Iterator[int]) -> int:
    """An SLEB128 number whose first bytes, all with the continuation bit, gave ``low_bits`` (``shift`` bits)."""
    while True:
        byte = next(stream)
        low_bits |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return low_bits - (1 << shift) if byte & 0x40 else low_bits


def _discriminator(stream: Iterator[int], operand_size: int) -> int:
    """DW_LNE_set_discriminator's operand of ``operand_size`` bytes: a ULEB128 read within them,
    modulo 2^32 as llvm-symbolizer keeps it (a uint32_t); every operand byte is consumed."""
    value = shift = 0
    ended = False
    for _ in range(operand_size):
        byte = next(stream)
        if not ended:
            if shift < _DISCRIMINATOR_BITS:
                value |= (byte & 0x7F) << shift
            shift += 7
            ended = byte < 0x80
    return value & _DISCRIMINATOR_MASK


def _run_program(table: LineTable, data: bytes, offset: int, position: int, end: int, unit: Unit, min_length: int,
                 line_base: int, line_range: int, opcode_base: int, standard_lengths: list[int], *,
                 keep_every_row: bool) -> bool:
    """Append the rows and sequences of the program at data[position:end] to ``table``.

    ``offset``, where the program's header starts, names the program in errors. Unless
    ``keep_every_row``, a row whose address the next row repeats is dropped, and the decode stops
    and returns False (``table`` partly filled) where an address steps back inside a sequence:
    rows there are not sorted, so dropping one could change a lookup's answer. Otherwise it
    returns True.

    The opcodes are read from an iterator over the program's bytes: a for loop over it costs
    less per opcode than indexing the section and advancing an offset, which is most of the
    time a cold lookup spends. A row is held back until the next one shows whether it repeats
    its address.
    """
    addresses = table.addresses
    add_address = addresses.append
    add_file = table.file_indexes.append
    add_line = table.lines.append
    add_column = table.columns.append
    add_discriminator = table.discriminators.append
    sequences = table.sequences
    addr_size = unit.addr_size
    little = unit.sections.little_endian
    byteorder: Literal["little", "big"] = "little" if little else "big"
    emits_row, address_advance, line_advance = _row_opcodes(min_length, line_base, line_range, opcode_base)
    const_add_pc = address_advance[255]
    # Locals: a module attribute is two lookups per comparison, and these are made per opcode.
    set_column, advance_line, negate_stmt = c.DW_LNS_set_column, c.DW_LNS_advance_line, c.DW_LNS_negate_stmt
    set_file, const_add, advance_pc, fixed_advance_pc = (
        c.DW_LNS_set_file, c.DW_LNS_const_add_pc, c.DW_LNS_advance_pc, c.DW_LNS_fixed_advance_pc)
    end_sequence, set_address = c.DW_LNE_end_sequence, c.DW_LNE_set_address
    set_discriminator = c.DW_LNE_set_discriminator
    read = next
    address = 0
    file_index = 1
    line = 1
    column = 0
    discriminator = 0
    first_row = len(addresses)
    # The row held back (address -1: none; addresses never go below 0).
    row_address = -1
    row_file = row_line = row_column = row_discriminator = 0
    stream = iter(data[position:end])
    try:
        for opcode in stream:
            # Branches in the order opcodes occur in GCC, Clang and rustc output (measured:
            # special or copy, set_column, advance_line, negate_stmt, set_file, extended, then the
            # rest). The row emitter: a special opcode or DW_LNS_copy emits a row, and the row held
            # back before it is appended unless the two share an address.
            if emits_row[opcode]:
                address += address_advance[opcode]
                line += line_advance[opcode]
                if address != row_address or keep_every_row:
                    if row_address >= 0:
                        add_address(row_address)
                        add_file(row_file)
                        add_line(row_line)
                        add_column(row_column)
                        add_discriminator(row_discriminator)
                elif row_line < 0:
                    # Dropped, it would escape the check decode_line_table makes on the rows kept.
                    raise DwarfFormatError(f"line program at {offset:#x} steps below line 0")
                row_address = address
                row_file = file_index
                row_line = line
                row_column = column
                # A row takes the discriminator set since the last row, which then goes back to 0.
                row_discriminator = discriminator
                discriminator = 0
            elif opcode == set_column:
                column = read(stream)
                if column >= 0x80:
                    column = _next_uleb(column, stream)
                    # Checked where set, not where stored: a dropped row would not be stored.
                    if column >> 63:
                        raise DwarfFormatError(f"line program at {offset:#x} sets column {column}, too large to store")
            elif opcode == advance_line:
                delta = read(stream)
                if delta < 0x80:
                    line += delta - 0x80 if delta & 0x40 else delta
                else:
                    # Two bytes: most jumps between a header's and a source file's lines.
                    high = read(stream)
                    if high < 0x80:
                        delta = (delta & 0x7F) | (high << 7)
                        line += delta - 0x4000 if high & 0x40 else delta
                    else:
                        line += _sleb_tail((delta & 0x7F) | (high & 0x7F) << 7, 14, stream)
                        # 62, not 63 bits: the shorter advances cannot then carry a line past 63.
                        if abs(line) >> 62:
                            if line < 0:
                                raise DwarfFormatError(f"line program at {offset:#x} steps below line 0")
                            raise DwarfFormatError(f"line program at {offset:#x} advances to line {line}, "
                                                   "too large to store")
            elif opcode == negate_stmt:
                pass  # is_stmt does not change which row names an address
            elif opcode == set_file:
                file_index = read(stream)
                if file_index >= 0x80:
                    file_index = _next_uleb(file_index, stream)
                    if file_index >> 63:
                        raise DwarfFormatError(f"line program at {offset:#x} sets file {file_index}, "
                                               "too large to store")
            elif opcode == 0:
                length = read(stream)
                if length >= 0x80:
                    length = _next_uleb(length, stream)
                if length == 0:
                    continue
                sub_opcode = read(stream)
                operand_size = length - 1
                if sub_opcode == set_address and operand_size == addr_size:
                    new_address = int.from_bytes(bytes([read(stream) for _ in range(addr_size)]), byteorder)
                    # Every other opcode only moves the address forward.
                    if new_address < address and not keep_every_row:
                        return False
                    address = new_address
                    continue
                if sub_opcode == set_discriminator:
                    discriminator = _discriminator(stream, operand_size)
                    continue
                if sub_opcode == end_sequence:
                    if row_address >= 0:
                        add_address(row_address)
                        add_file(row_file)
                        add_line(row_line)
                        add_column(row_column)
                        add_discriminator(row_discriminator)
                        row_address = -1
                    row_count = len(addresses)
                    if row_count > first_row:
                        # The sequence's low address is its first row's.
                        sequences.append((addresses[first_row], address, first_row, row_count))
                    first_row = row_count
                    address = 0
                    file_index = 1
                    line = 1
                    column = 0
                    discriminator = 0
                elif sub_opcode == set_address:
                    if address and not keep_every_row:
                        return False
                    address = 0
                for _ in range(operand_size):
                    read(stream)
            elif opcode == const_add:
                address += const_add_pc
            elif opcode == advance_pc:
                advance = read(stream)
                if advance >= 0x80:
                    advance = _next_uleb(advance, stream)
                address += advance * min_length
            elif opcode == fixed_advance_pc:
                # A uhalf operand, in the file's byte order like every other fixed-size value.
                first = read(stream)
                second = read(stream)
                address += first | second << 8 if little else first << 8 | second
            else:
                # basic_block, prologue/epilogue, isa and opcodes of later versions: none changes
                # which source position a row names, so their operands are skipped.
                for _ in range(standard_lengths[opcode - 1] if opcode <= len(standard_lengths) else 0):
                    operand = read(stream)
                    if operand >= 0x80:
                        _next_uleb(operand, stream)
        if row_address >= 0:
            add_address(row_address)
            add_file(row_file)
            add_line(row_line)
            add_column(row_column)
            add_discriminator(row_discriminator)
    except StopIteration:
        raise DwarfFormatError(f"line program at {offset:#x} ends inside an instruction") from None
    except OverflowError as error:
        # Lines, columns and files were checked above; only an address can outgrow its array.
        raise DwarfFormatError(f"line program at {offset:#x} advances past a 64-bit address") from error
    return True
