"""Function symbols from ``.symtab``, ``.dynsym`` and MiniDebugInfo (gABI chapter 4, "Symbol Table").

A function symbol is what llvm-symbolizer 14 names code by: ``STT_FUNC`` and
``STT_GNU_IFUNC`` anywhere, and ``STT_NOTYPE`` or ``STT_OBJECT`` in an executable
section (hand-written assembly labels carry no type: BLAKE3's and OpenSSL's x86
routines). llvm-symbolizer takes untyped and data symbols in other sections too,
but they only name data addresses (``_edata``, ``__bss_start``), never code.

Mapping symbols ("ELF for the Arm Architecture" and "ELF for the Arm 64-bit Architecture",
"Mapping symbols"; the RISC-V ELF psABI likewise) mark where code of an instruction set or
data starts (``$a``, ``$t``, ``$x``, ``$d``, optionally with a suffix: ``$x.12``, ``$d.3``);
they name no function and sit inside functions wherever a literal pool or a Thumb-2 jump
table interrupts the code. llvm skips them: ``ELFObjectFile::getSymbolFlags`` marks every
symbol whose name *starts with* these on the machine's list ``SF_FormatSpecific``, and
``SymbolizableObjectFile::addSymbol`` drops those, whatever their type. So do we
(:data:`MAPPING_SYMBOL_PREFIXES`).

MiniDebugInfo (GDB manual, "MiniDebugInfo") is an xz-compressed ELF in
``.gnu_debugdata`` whose ``.symtab`` holds the local function symbols a
stripped binary dropped; its tables are read one level deep (a payload's own
``.gnu_debugdata`` is not followed), and its size is capped against xz bombs.
"""

from typing import NamedTuple

from symbolize.formats.elf.headers import SHT_DYNSYM, SHT_SYMTAB, ElfHeaders, Section, c_string
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.symbols import ROW_ORDER, ROW_SECTION_END, ROW_SIZE, ROW_VADDR, SymbolRow
from symbolize.formats.types import Symbol

SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00
SHF_EXECINSTR = 0x4
STT_NOTYPE = 0
STT_OBJECT = 1
STT_FUNC = 2
STT_FILE = 4
STT_GNU_IFUNC = 10
STB_LOCAL = 0
EM_ARM = 40
EM_AARCH64 = 183
EM_RISCV = 243

# Per machine, the name prefixes llvm's getSymbolFlags treats as mapping symbols (see the docstring).
MAPPING_SYMBOL_PREFIXES: dict[int, tuple[str, ...]] = {
    EM_ARM: ("$a", "$d", "$t"),
    EM_AARCH64: ("$d", "$x"),
    EM_RISCV: ("$d", "$x"),
}

# The fields of a row (_function_symbols) past formats/symbols.py's (vaddr, size, section end, order).
_ROW_STRINGS, _ROW_NAME_AT, _ROW_SOURCE, _ROW_IS_LOCAL = 4, 5, 6, 7

# Makes a NamedTuple from its fields in order, without its Python-level __new__.
_new_tuple = tuple.__new__

# A MiniDebugInfo payload is a few hundred KiB; refuse an xz bomb well before memory runs out.
MAX_DEBUGDATA_SIZE = 1 << 30


# The table ranks of FunctionSymbol.order: .symtab above MiniDebugInfo above .dynsym.
SYMTAB_RANK = 2
MINIDEBUGINFO_RANK = 1
DYNSYM_RANK = 0


class FunctionSymbol(NamedTuple):
    symbol: Symbol
    is_local: bool
    # End of the symbol's section: how far a size-0 symbol may reach.
    section_end: int | None
    # (table rank, index in table): .symtab ranks above MiniDebugInfo, which ranks above .dynsym.
    order: tuple[int, int] = (0, 0)


def function_symbol_rows(headers: ElfHeaders, mini_debug_info: bool = True) -> list[SymbolRow]:
    """Every function symbol of every table, as the tables list them (one name may appear in
    several: .symtab and .dynsym), as rows (see :func:`_function_symbols`) that
    :func:`symbol_of_row` makes the symbol of: a cold lookup names a few of them only."""
    rows: list[SymbolRow] = []
    for section in headers.sections:
        if section.sh_type in (SHT_SYMTAB, SHT_DYNSYM):
            rows += _function_symbols(headers, section)
    if mini_debug_info:
        rows += _mini_debug_info_symbols(headers)
    return rows


def symbol_of_row(row: SymbolRow) -> Symbol:
    """The symbol a row of :func:`function_symbol_rows` stands for: its name cut from its string
    table (c_string's steps), without the assembler's symbol version."""
    strings, name_at = row[_ROW_STRINGS], row[_ROW_NAME_AT]
    end = strings.find(b"\0", name_at)
    # A debug file's .symtab keeps the assembler's symbol versions (``cfree@GLIBC_2.2.5``,
    # ``pthread_create@@GLIBC_2.34``); llvm-symbolizer names the function without them.
    name = strings[name_at : end if end >= 0 else len(strings)].decode("utf-8", "surrogateescape")
    if "@" in name:
        name = name.partition("@")[0]
    # tuple.__new__: Symbol's own __new__ is a Python function, and a cold lookup names thousands.
    return _new_tuple(Symbol, (name, row[ROW_VADDR], row[ROW_SIZE], row[_ROW_SOURCE]))


def all_function_symbols(rows: list[SymbolRow]) -> list[FunctionSymbol]:
    """Of :func:`function_symbol_rows`, one per (name, address) (the preferred one), sorted by
    address and name."""
    found: dict[tuple[int, str], FunctionSymbol] = {}
    for row in rows:
        entry = FunctionSymbol(symbol_of_row(row), row[_ROW_IS_LOCAL], row[ROW_SECTION_END], row[ROW_ORDER])
        key = (entry.symbol.vaddr, entry.symbol.name)
        kept = found.get(key)
        # preference(entry) > preference(kept), inline: this runs once per symbol of the file.
        if kept is None or (entry.symbol.size, entry.order) > (kept.symbol.size, kept.order):
            found[key] = entry
    return [found[key] for key in sorted(found)]  # by address, then name: the keys' own order


def _function_symbols(headers: ElfHeaders, section: Section) -> list[SymbolRow]:
    """The table's function symbols as rows: (vaddr, size, section end, order) as
    formats/symbols.py's SymbolIndex.from_rows reads them, then the string table, the name's
    offset in it, the source file (a local symbol's) and whether the symbol is local. Names are
    not decoded here: whether an entry has one is read from its first byte (see below)."""
    data = headers.raw(section)
    if data is None:
        return []
    sections = headers.sections
    if not 0 < section.sh_link < len(sections):
        raise headers.fail(f"{section.name} links to missing string table {section.sh_link}", section.sh_offset)
    strings = bytes(headers.raw(sections[section.sh_link]) or b"")
    layout = headers.layout.sym
    stride = section.sh_entsize or layout.size
    if stride < layout.size:
        raise headers.fail(f"{section.name} entry size {stride} is too small", section.sh_offset)
    thumb_mask = ~1 if headers.e_machine == EM_ARM else ~0
    mapping_prefixes = tuple(prefix.encode() for prefix in MAPPING_SYMBOL_PREFIXES.get(headers.e_machine, ()))
    source_file = None
    rank = SYMTAB_RANK if section.sh_type == SHT_SYMTAB else DYNSYM_RANK
    count = (len(data) - layout.size) // stride + 1 if len(data) >= layout.size else 0
    # One unpack over the whole table when entries are packed, as they always are in practice.
    entries = (
        layout.iter_unpack(data[: count * stride])
        if stride == layout.size
        else (layout.unpack_from(data, position * stride) for position in range(count))
    )
    # A symbol's section bounds how far a size-0 symbol may reach.
    homes = sections[: min(SHN_LORESERVE, len(sections))]
    section_ends = [home.sh_addr + home.sh_size for home in homes]
    is_code = [bool(home.sh_flags & SHF_EXECINSTR) for home in homes]
    is_64 = headers.layout.is_64
    homes_count = len(homes)
    strings_size = len(strings)
    rows: list[SymbolRow] = []
    append = rows.append
    # The loop below runs once per symbol of the file (thousands): a row is one tuple.
    for position, entry in enumerate(entries):
        if is_64:
            st_name, st_info, _other, st_shndx, st_value, st_size = entry
        else:
            st_name, st_value, st_size, st_info, _other, st_shndx = entry
        symbol_type = st_info & 0xF
        if symbol_type == STT_FILE:
            # Local symbols follow the STT_FILE entry of the source they came from.
            source_file = c_string(strings, st_name) or None
            continue
        if st_shndx == SHN_UNDEF:
            continue
        # Untyped and data symbols name code only where they label it (see the docstring).
        if (
            symbol_type != STT_FUNC
            and symbol_type != STT_GNU_IFUNC
            and (symbol_type > STT_OBJECT or st_shndx >= homes_count or not is_code[st_shndx])
        ):
            continue
        if st_name >= strings_size:
            continue  # no name (c_string's "")
        # symbol_of_row's name is empty exactly when the first byte ends it (NUL) or starts the
        # symbol version ("@"); a mapping symbol's prefix is ASCII, so its bytes start the name.
        first = strings[st_name]
        if first == 0 or first == 0x40 or (mapping_prefixes and strings.startswith(mapping_prefixes, st_name)):
            continue
        is_local = st_info >> 4 == STB_LOCAL
        section_end = section_ends[st_shndx] if st_shndx < homes_count else None
        append((st_value & thumb_mask, st_size, section_end, (rank, position), strings, st_name,
                source_file if is_local else None, is_local))  # fmt: skip
    return rows


def _mini_debug_info_symbols(headers: ElfHeaders) -> list[SymbolRow]:
    found = headers.named_raw(".gnu_debugdata")
    if found is None:
        return []
    section, data = found
    payload = _unxz(headers, data, section.sh_offset)
    try:
        mini = ElfHeaders(memoryview(payload), headers.path)
        inner = function_symbol_rows(mini, False)
        return [(*row[:ROW_ORDER], (MINIDEBUGINFO_RANK, row[ROW_ORDER][1]), *row[ROW_ORDER + 1 :]) for row in inner]
    except MalformedInputError as err:
        # Offsets inside the payload mean nothing in the outer file; name the section instead.
        raise headers.fail(f"in .gnu_debugdata: {err.reason}", section.sh_offset) from err


def _unxz(headers: ElfHeaders, data: memoryview, file_offset: int) -> bytes:
    import lzma  # here: few binaries carry MiniDebugInfo, and every run opening an ELF imported it

    decompressor = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    try:
        payload = decompressor.decompress(data, MAX_DEBUGDATA_SIZE)
    except lzma.LZMAError as err:
        raise headers.fail(f"bad xz data in .gnu_debugdata: {err}", file_offset) from err
    if not decompressor.eof:
        raise headers.fail("truncated xz data in .gnu_debugdata", file_offset)
    return payload
