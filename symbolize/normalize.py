"""Address normalization: a runtime address in a pprof mapping to a vaddr in the image, per format.

A pprof ``Mapping`` (profile.proto) says that ``[memory_start, memory_limit)``
of the process shows the file from ``file_offset`` on. Producers fill it in
several ways; every convention the toolkit accepts is listed here, and
nothing else in the toolkit turns runtime addresses into vaddrs.

ELF (gABI chapter 5, "Program Header"; pprof's ``elfexec.GetBase``): the loader
maps each ``PT_LOAD`` from its file page at ``page_floor(p_vaddr) + bias``.

- ``ET_EXEC`` (``position_dependent``): the runtime address is the vaddr.
- Per-segment mapping, one ``/proc/<pid>/maps`` line (pprof's own convention,
  gperftools): ``file_offset + (runtime_addr - memory_start)`` is a file
  offset; the ``PT_LOAD`` holding it gives the vaddr. This includes lld's
  layout, where the code segment shares file page 0 with a small read-only
  segment: its ``r-xp`` line starts one page above the load base with file
  offset 0, and pprof keeps only such lines when it converts a gperftools
  profile.
- Whole-module mapping (one mapping from the module's lowest to its highest
  address, file offset 0 or unset; our daemon-style producer, perf-to-pprof
  converters): the start is the image's ``load_base`` (the first ``PT_LOAD``'s
  page) moved by the bias, so ``vaddr = runtime_addr - (memory_start - load_base)``.
  Told apart from a per-segment line with offset 0 by its size: a mapping
  larger than any single segment mapped from file page 0 could be (or one
  without a limit) is whole-module. Within the first segment both rules agree.

PE (PE/COFF specification, "Section Table"; the image's ``segments()`` are its
sections, ``vaddr = ImageBase + VirtualAddress``, and ``load_base`` is
``ImageBase``):

- Module mapping (start = module base, file offset 0 or unset: ETW, Windows
  minidumps, every Windows profiler): ``rva = runtime_addr - memory_start``,
  ``vaddr = load_base + rva``.
- A mapping carrying a file offset (a PE mapped section by section from the
  file, as Wine does): the section holding ``file_offset + (runtime_addr -
  memory_start)`` gives the vaddr.

Mach-O (``<mach-o/loader.h>``; ``load_base`` is the ``__TEXT`` vmaddr,
segments carry their names):

- The mapping starts at ``__TEXT``: ``slide = memory_start - load_base``,
  ``vaddr = runtime_addr - slide`` (dyld's ``_dyld_get_image_header`` is the
  ``__TEXT`` address; vmmap and Instruments report the same).
- Except a producer walking dyld's image list that reports a main
  executable from its lowest segment *including* ``__PAGEZERO``: the mapping
  is then larger than the image from ``__TEXT`` on, so when its size exceeds
  ``high - load_base`` (``high`` the end of the last segment), the start
  stands for the lowest segment: ``slide = memory_start - low``.
- A nonzero file offset is read as for ELF, through the segments' file
  offsets. In a universal (fat) file it may count from the slice (what the
  slice's own load commands say) or from the start of the fat file (what
  the kernel maps and vmmap reports: the slice's offset plus the
  segment's); :func:`macho_offset_base` tells them apart. The fat-file
  reading is taken only when the offset, less the slice's, lands better on
  the slice's segments than the offset as it is: on a segment's first byte
  (a mapping starts where a segment does), then inside ``__TEXT``, then in
  any segment; else (ties included) the slice reading stands. So an offset
  on which both readings start a segment (an arm64 slice at 0x4000 whose
  ``__LINKEDIT`` starts 0x4000 into it) is read as ``__TEXT``'s: a profile's
  addresses are code.
- On arm64 (arm64e above all), return addresses may carry a pointer-
  authentication signature above the 47-bit user address space; those bits
  are cleared first (what ``ptrauth_strip`` does), before any other rule.

In every format a vaddr that falls in no segment's memory (``__PAGEZERO``
excluded) is None: the caller reports it as outside the file.

A mapping without a build ID names its file only by name, which may be
another build. :func:`mapping_contradiction` says when the mapping cannot be
of that file under any rule above: it is larger than the whole image (ELF:
the ``PT_LOAD`` span; PE: ``SizeOfImage``, headers included; Mach-O: every
segment, ``__PAGEZERO`` included), rounded up to 64 KiB (the largest page a
loader uses); its file offset lies past the file's end; or (ELF) its file
offset falls in no ``PT_LOAD``'s file pages.

Module-relative addresses (a ``module+0x<rel>`` frame of an in-process
sampler, see :mod:`symbolize.offset_frames`) carry no mapping: ``rel`` is the
object address relative to the image, the ELF vaddr itself on Linux (a PC
minus the module's load bias), the RVA on Windows, the offset from the
``__TEXT`` segment's start on macOS; so the vaddr is ``rel`` for ELF and
``load_base + rel`` for PE and Mach-O. A runtime address with the module's
runtime base (``<module@0xBASE>``) is ``rel = runtime_addr - BASE``. A vaddr in
no segment's memory is None here too.

Roles (pprof's own symbolizer): every frame but an on-CPU profile's leaf is
the address a call returns to, so it is looked up one byte back, at the call
site (:func:`role_at`, :func:`step_back`). A mapping's runtime address steps
back before it is placed, as pprof does; a module-relative one is placed (its
vaddr must lie in a segment) and its vaddr then steps back. The two differ
only for a return address on a segment's first or one-past-last byte.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from symbolize.formats.types import Image, Segment

# Mappings start on a page boundary; 4 KiB is the smallest page of every Linux target, and the
# first PT_LOAD's vaddr and file offset agree modulo any page size the loader used.
PAGE_SIZE = 0x1000
PAGEZERO = "__PAGEZERO"
# The largest page any supported loader maps with (arm64 Linux with 64 KiB pages): the slack
# allowed before a mapping's size or offset contradicts its file.
LARGEST_PAGE = 0x10000
# macOS arm64 user addresses fit in 47 bits; a pointer-authentication signature sits above them.
ARM64_ADDRESS_MASK = (1 << 47) - 1

# runtime address -> vaddr, or None when no segment holds it; built once per mapping.
Translator = Callable[[int], "int | None"]
# (runtime address, role) -> the vaddr to look up, or None when no segment holds it.
Placement = Callable[[int, int], "int | None"]

# A location's roles, as bits (plain ints: a set of enum members costs a Python-level hash per
# sample frame, and profiles have tens of thousands).
EXACT = 1  # the interrupted instruction itself
RETURN = 2  # the instruction after a call
MIXED = EXACT | RETURN


def role_at(position: int, on_cpu: bool, adjust_return_addresses: bool) -> int:
    """The role of the frame at ``position`` of a sample (0 is the leaf): only an on-CPU profile's
    leaf is the interrupted instruction; every other frame returns from a call. A producer that
    already stepped its return addresses back (``adjust_return_addresses=False``) gives exact ones."""
    if not adjust_return_addresses or (on_cpu and position == 0):
        return EXACT
    return RETURN


def step_back(address: int, role: int) -> int:
    """The address to name for one of this role: a return address's call site is one byte back."""
    return address - 1 if role == RETURN and address > 0 else address


def mapping_placement(image: Image, memory_start: int, memory_limit: int, file_offset: int | None) -> Placement:
    """Where the addresses of one pprof mapping of ``image`` are looked up, by role (module docstring)."""
    to_vaddr = translator(image, memory_start, memory_limit, file_offset)

    def place(runtime_addr: int, role: int) -> int | None:
        return to_vaddr(step_back(runtime_addr, role))

    return place


def module_placement(image: Image, base: int = 0) -> Placement:
    """Where module-relative addresses of ``image`` are looked up, by role: ``rel`` itself when
    ``base`` is 0, else runtime addresses of a module whose runtime base is ``base`` (module docstring)."""
    # ELF: rel is the vaddr itself (PC minus load bias); PE: an RVA; Mach-O: an offset from __TEXT.
    origin = 0 if image.format == "elf" else image.load_base
    bounds = tuple((segment.vaddr, segment.vaddr + segment.memsz) for segment in image.segments())

    def place(address: int, role: int) -> int | None:
        if address < base:
            return None
        vaddr = origin + address - base
        if not any(low <= vaddr < high for low, high in bounds):
            return None
        return step_back(vaddr, role)

    return place


def runtime_to_vaddr(
    image: Image,
    memory_start: int,
    memory_limit: int,
    file_offset: int | None,
    runtime_addr: int,
) -> int | None:
    """The vaddr of ``runtime_addr`` in ``image``, or None when no segment holds it (rules above)."""
    return translator(image, memory_start, memory_limit, file_offset)(runtime_addr)


def translator(image: Image, memory_start: int, memory_limit: int, file_offset: int | None) -> Translator:
    """The runtime-to-vaddr rule for one mapping of ``image`` (see the module docstring).

    ``memory_limit <= memory_start`` means the producer gave no limit.
    """
    segments = tuple(image.segments())
    has_limit = memory_limit > memory_start
    if not segments:
        return _nowhere
    if image.format == "pe":
        rule = _pe_rule(image, segments, memory_start, file_offset)
    elif image.format == "macho":
        rule = _macho_rule(image, segments, memory_start, memory_limit, file_offset)
    else:
        rule = _elf_rule(image, segments, memory_start, memory_limit, file_offset)
    if has_limit:
        unbounded = rule

        def rule(runtime_addr: int) -> int | None:
            return unbounded(runtime_addr) if memory_start <= runtime_addr < memory_limit else None

    if image.format == "macho" and image.arch.startswith("arm64"):
        authenticated = rule

        def rule(runtime_addr: int) -> int | None:
            return authenticated(runtime_addr & ARM64_ADDRESS_MASK)

    return rule


def mapping_contradiction(
    image: Image, memory_start: int, memory_limit: int, file_offset: int | None, file_size: int | None
) -> str | None:
    """Why a mapping cannot show ``image`` (a file ``file_size`` bytes long, when known), or None.

    Conservative: a mapping any convention of the module docstring could read as this image passes.
    """
    segments = tuple(image.segments())
    if not segments:
        return None
    offset = file_offset or 0
    if file_size is not None and offset >= file_size > 0:
        return f"the mapping's file offset {offset:#x} lies past the end of the file ({file_size:#x} bytes)"
    if image.format == "elf" and offset and not any(_holds_file_page(segment, offset) for segment in segments):
        return f"the mapping's file offset {offset:#x} is in no loaded segment of the file"
    if memory_limit > memory_start:
        low = min(min(segment.vaddr for segment in segments), image.load_base)
        high = max(segment.vaddr + segment.memsz for segment in segments)
        extent = _ceil(high - _floor(low, LARGEST_PAGE), LARGEST_PAGE)
        if memory_limit - memory_start > extent:
            return (
                f"the mapping is {memory_limit - memory_start:#x} bytes, larger than the whole image"
                f" ({high - low:#x} bytes)"
            )
    return None


def _holds_file_page(segment: Segment, file_offset: int) -> bool:
    """Whether a mapping starting at ``file_offset`` may be this segment's (its pages, of any size)."""
    if segment.filesz == 0:
        return False
    return _floor(segment.file_offset, LARGEST_PAGE) <= file_offset < segment.file_offset + segment.filesz


def _floor(value: int, page: int) -> int:
    return value // page * page


def _ceil(value: int, page: int) -> int:
    return -(-value // page) * page


def _nowhere(runtime_addr: int) -> int | None:
    return None


def _elf_rule(
    image: Image, segments: Sequence[Segment], memory_start: int, memory_limit: int, file_offset: int | None
) -> Translator:
    if image.position_dependent:
        return lambda runtime_addr: runtime_addr if _in_memory(segments, runtime_addr) else None
    if not file_offset and _is_whole_module(segments, memory_start, memory_limit):
        return _biased(segments, memory_start - image.load_base)
    return _by_file_offset(segments, memory_start, file_offset or 0)


def _is_whole_module(segments: Sequence[Segment], memory_start: int, memory_limit: int) -> bool:
    """Whether an offset-0 mapping is larger than any one segment mapped from file page 0 could be."""
    if memory_limit <= memory_start:
        return True
    from_first_page = [segment for segment in segments if segment.file_offset < PAGE_SIZE]
    largest = max(
        (_page_ceil(segment.vaddr + segment.memsz) - _page_floor(segment.vaddr) for segment in from_first_page),
        default=0,
    )
    return memory_limit - memory_start > largest


def _pe_rule(image: Image, segments: Sequence[Segment], memory_start: int, file_offset: int | None) -> Translator:
    if file_offset:
        return _by_file_offset(segments, memory_start, file_offset)
    image_base = image.load_base
    # The headers (RVA 0 up to the first section) are part of the image too, but hold no code.
    return _biased(segments, memory_start - image_base)


def macho_offset_base(image: Image, file_offset: int | None) -> int:
    """What to subtract from a mapping's ``file_offset`` of a Mach-O ``image`` to get a slice
    offset: 0 when it counts from the slice (or the file is thin), the slice's offset in its
    universal file when it counts from the start of the fat file (module docstring)."""
    if not file_offset or image.format != "macho" or not image.universal:
        return 0
    slice_offset = image.slice_offset
    if file_offset < slice_offset:
        return 0
    mapped = tuple(segment for segment in image.segments() if segment.name != PAGEZERO and segment.filesz)

    def fit(offset: int) -> tuple[bool, bool, bool]:
        holding = [s for s in mapped if s.file_offset <= offset < s.file_offset + s.filesz]
        return (
            any(segment.file_offset == offset for segment in holding),
            any(segment.name == "__TEXT" for segment in holding),
            bool(holding),
        )

    return slice_offset if fit(file_offset - slice_offset) > fit(file_offset) else 0


def _macho_rule(
    image: Image, segments: Sequence[Segment], memory_start: int, memory_limit: int, file_offset: int | None
) -> Translator:
    mapped = tuple(segment for segment in segments if segment.name != PAGEZERO)
    if file_offset:
        return _by_file_offset(mapped, memory_start, file_offset - macho_offset_base(image, file_offset))
    low = min(segment.vaddr for segment in segments)
    high = max(segment.vaddr + segment.memsz for segment in segments)
    text = image.load_base
    starts_at_lowest = memory_limit > memory_start and low < text and memory_limit - memory_start > high - text
    return _biased(mapped, memory_start - (low if starts_at_lowest else text))


def _biased(segments: Sequence[Segment], bias: int) -> Translator:
    # _in_memory's test with the bounds computed once: a profile asks for every location.
    bounds = tuple((segment.vaddr, segment.vaddr + segment.memsz) for segment in segments)

    def rule(runtime_addr: int) -> int | None:
        vaddr = runtime_addr - bias
        for low, high in bounds:
            if low <= vaddr < high:
                return vaddr
        return None

    return rule


def _by_file_offset(segments: Sequence[Segment], memory_start: int, file_offset: int) -> Translator:
    def rule(runtime_addr: int) -> int | None:
        return _offset_to_vaddr(segments, file_offset + (runtime_addr - memory_start))

    return rule


def _in_memory(segments: Sequence[Segment], vaddr: int) -> bool:
    return any(segment.vaddr <= vaddr < segment.vaddr + segment.memsz for segment in segments)


def _offset_to_vaddr(segments: Sequence[Segment], offset: int) -> int | None:
    for segment in segments:
        if segment.file_offset <= offset < segment.file_offset + segment.filesz:
            return segment.vaddr + (offset - segment.file_offset)
    # Zero-filled tails (.bss) have no file bytes; the mapping still covers them.
    for segment in segments:
        if segment.file_offset <= offset < segment.file_offset + segment.memsz:
            return segment.vaddr + (offset - segment.file_offset)
    return None


def _page_floor(value: int) -> int:
    return value // PAGE_SIZE * PAGE_SIZE


def _page_ceil(value: int) -> int:
    return -(-value // PAGE_SIZE) * PAGE_SIZE
