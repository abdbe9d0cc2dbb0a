"""LZX decompression of a cabinet folder ([MS-PATCH] 2 "LZX DELTA" minus its delta parts, as
[MS-CAB] uses it; the decoding rules follow libmspack's lzxd.c, which cabextract runs).

Hand-written because no maintained Python package decodes LZX (zlib and the standard library do
not; the PyPI cabinet readers do MSZIP only). It is the reference the compiled path (the Rust
``cab`` crate with ``lzxd``) is tested against, and the fallback where the kernels are not built.

The stream, per folder: 16-bit little-endian words read from their most significant bit; an Intel
E8 header once; then blocks (verbatim, aligned offset or uncompressed), each a 3-bit type and a
24-bit output size, whose Huffman tree lengths are sent as deltas from the previous block's.
Output is cut into 32 KiB frames: a block may span frames, a match may not, the bit reader
re-aligns to a word at each frame's end, and each frame's E8 call targets are translated back.
Every read is bounds-checked; the output never exceeds the folder's declared size.
"""

from __future__ import annotations

from collections.abc import Sequence

FRAME_SIZE = 32768
MIN_MATCH = 2
NUM_CHARS = 256
PRETREE_SIZE = 20
LENGTH_TREE_SIZE = 249
ALIGNED_TREE_SIZE = 8

BLOCK_VERBATIM = 1
BLOCK_ALIGNED = 2
BLOCK_UNCOMPRESSED = 3

# Position slots per window size (2^15 .. 2^21), [MS-PATCH] 2.2.1.
POSITION_SLOTS = {15: 30, 16: 32, 17: 34, 18: 36, 19: 38, 20: 42, 21: 50}


def _offset_tables() -> tuple[list[int], list[int]]:
    extra_bits = []
    bits = 0
    for slot in range(0, 52, 2):
        extra_bits += [bits, bits]
        if slot != 0 and bits < 17:
            bits += 1
    position_base = []
    base = 0
    for slot in range(52):
        position_base.append(base)
        base += 1 << extra_bits[slot]
    return extra_bits, position_base


EXTRA_BITS, POSITION_BASE = _offset_tables()


class LzxError(ValueError):
    """The LZX stream is corrupt; the message says where."""


class _Bits:
    """MSB-first reader over the stream's 16-bit little-endian words.

    The words are byte-swapped once into a big-endian copy so that a peek is one int.from_bytes.
    Reads past the end see zeros (a Huffman peek looks 16 bits ahead); consuming past the end
    is an error, checked by :meth:`check_end`.
    """

    def __init__(self, data: bytes) -> None:
        self.raw = data
        swapped = bytearray(data + b"\0" * (len(data) & 1))
        swapped[0::2], swapped[1::2] = swapped[1::2], swapped[0::2]
        self.words = bytes(swapped) + b"\0" * 8
        self.position = 0  # in bits
        self.limit = len(data) * 8

    def peek(self, count: int) -> int:
        start = self.position >> 3
        window = int.from_bytes(self.words[start:start + 4], "big")
        return (window >> (32 - (self.position & 7) - count)) & ((1 << count) - 1)

    def read(self, count: int) -> int:
        if count == 0:
            return 0
        if count > 24:  # a peek covers 32 bits from a byte boundary
            high = self.read(count - 16)
            return (high << 16) | self.read(16)
        value = self.peek(count)
        self.position += count
        self.check_end()
        return value

    def check_end(self) -> None:
        if self.position > self.limit:
            raise LzxError("the compressed data ends inside a code")

    def align_to_word(self) -> None:
        """Drop the rest of the current word (a frame's end)."""
        self.position = (self.position + 15) & ~15

    def skip_to_bytes(self) -> int:
        """An uncompressed block's start: 1 to 16 bits of padding, then bytes. Returns the byte offset."""
        self.position = (self.position + 16) & ~15
        self.check_end()
        return self.position >> 3

    def take_bytes(self, start: int, count: int) -> bytes:
        if start + count > len(self.raw):
            raise LzxError("an uncompressed block runs past the compressed data")
        return self.raw[start:start + count]


class _Huffman:
    """A canonical Huffman code decoded through one table indexed by the next `bits` bits (the
    code's longest length).

    Built in one pass over the used symbols in canonical order, (length, symbol): each code is the
    next run of table entries. So a block's trees cost what reading their lengths costs, however
    many blocks a hostile stream packs in, and a short code's table is small.
    """

    def __init__(self, lengths: Sequence[int], what: str) -> None:
        self.what = what
        self.table: list[int] | None = None  # (symbol << 5) | length, per `bits`-bit prefix
        self.bits = 0
        used = sorted((length, symbol) for symbol, length in enumerate(lengths) if length)
        if not used:
            return  # an empty code: legal while it is not used (libmspack allows it too)
        self.bits = used[-1][0]
        table = [0] * (1 << self.bits)
        filled = 0
        for length, symbol in used:
            span = 1 << (self.bits - length)
            if filled + span > len(table):
                raise LzxError(f"the {what} tree's lengths are over-subscribed")
            table[filled:filled + span] = [(symbol << 5) | length] * span
            filled += span
        if filled != len(table):
            raise LzxError(f"the {what} tree's lengths leave codes unused")
        self.table = table

    def decode(self, bits: _Bits) -> int:
        if self.table is None:
            raise LzxError(f"a symbol is read from the empty {self.what} tree")
        entry = self.table[bits.peek(self.bits)]
        bits.position += entry & 31
        bits.check_end()
        return entry >> 5


def _read_lengths(bits: _Bits, lengths: list[int], first: int, last: int) -> None:
    """Tree lengths first..last, sent through a pretree as deltas from the previous ones."""
    pretree = _Huffman([bits.read(4) for _ in range(PRETREE_SIZE)], "pretree")
    index = first
    while index < last:
        code = pretree.decode(bits)
        if code == 17:
            run, value = bits.read(4) + 4, 0
        elif code == 18:
            run, value = bits.read(5) + 20, 0
        elif code == 19:
            run = bits.read(1) + 4
            value = (lengths[index] - pretree.decode(bits)) % 17
        else:
            run, value = 1, (lengths[index] - code) % 17
        if index + run > last:
            raise LzxError("a run of tree lengths passes the tree's end")
        lengths[index:index + run] = [value] * run
        index += run


def _translate_e8(frame: bytearray, position: int, file_size: int) -> None:
    """Undo the encoder's Intel E8 call translation in one frame starting at stream offset `position`."""
    end = len(frame) - 10
    index = 0
    while index < end:
        if frame[index] != 0xE8:
            index += 1
            continue
        current = position + index
        absolute = int.from_bytes(frame[index + 1:index + 5], "little", signed=True)
        if -current <= absolute < file_size:
            relative = absolute - current if absolute >= 0 else absolute + file_size
            frame[index + 1:index + 5] = (relative & 0xFFFFFFFF).to_bytes(4, "little")
        index += 5


def _decode_run(bits: _Bits, output: bytearray, goal: int, frame_end: int, window_size: int, main: _Huffman,
                length: _Huffman, aligned: _Huffman | None, repeated: list[int]) -> None:
    """Literals and matches of a verbatim (`aligned` None) or aligned-offset block until `output`
    reaches `goal` (a match may pass it: the caller charges the block). Updates `repeated`.

    The hot loop of the reference: the bit reader's peek is inlined on locals (about twice as
    fast as the method calls), and the position is handed back to `bits` before any call.
    """
    main_table = main.table
    if main_table is None:
        raise LzxError("a symbol is read from the empty main tree")
    shift = 32 - main.bits  # peek(main.bits), inlined
    mask = (1 << main.bits) - 1
    words = bits.words
    limit = bits.limit
    position = bits.position
    append = output.append
    while len(output) < goal:
        start = position >> 3
        entry = main_table[(int.from_bytes(words[start:start + 4], "big") >> (shift - (position & 7))) & mask]
        position += entry & 31
        if position > limit:
            raise LzxError("the compressed data ends inside a code")
        symbol = entry >> 5
        if symbol < NUM_CHARS:
            append(symbol)
            continue
        bits.position = position
        symbol -= NUM_CHARS
        match_length = symbol & 7
        if match_length == 7:
            match_length += length.decode(bits)
        match_length += MIN_MATCH
        slot = symbol >> 3
        if slot > 2:
            extra = EXTRA_BITS[slot]
            offset = POSITION_BASE[slot] - 2
            if aligned is not None and extra >= 3:
                offset += (bits.read(extra - 3) << 3) + aligned.decode(bits)
            elif extra > 0:
                offset += bits.read(extra)
            else:
                offset = 1
            repeated[2] = repeated[1]
            repeated[1] = repeated[0]
            repeated[0] = offset
        elif slot == 0:
            offset = repeated[0]
        else:
            offset = repeated[slot]
            repeated[slot] = repeated[0]
            repeated[0] = offset
        position = bits.position
        here = len(output)
        if here + match_length > frame_end:
            raise LzxError(f"a match crosses the frame ending at {frame_end}")
        if offset > here or offset > window_size - 3 or offset == 0:
            raise LzxError(f"a match reaches {offset} bytes back from {here}")
        source = here - offset
        if offset >= match_length:
            output += output[source:source + match_length]
        else:  # overlapping: the copy repeats the last `offset` bytes
            output += (output[source:here] * (match_length // offset + 1))[:match_length]
    bits.position = position


def decompress(stream: bytes, window_bits: int, output_size: int) -> bytes:
    """The folder's `output_size` bytes from its LZX `stream` (the data blocks' payloads joined).

    Raises :class:`LzxError` where the stream is corrupt.
    """
    if window_bits not in POSITION_SLOTS:
        raise LzxError(f"no LZX window of 2^{window_bits} bytes")
    window_size = 1 << window_bits
    main_size = NUM_CHARS + POSITION_SLOTS[window_bits] * 8
    bits = _Bits(stream)
    main_lengths = [0] * main_size
    length_lengths = [0] * LENGTH_TREE_SIZE
    output = bytearray()  # the decoded stream: LZX's window, never trimmed (output_size is capped)
    translated = bytearray()  # the same, frames E8-translated, where the stream asks for it
    repeated = [1, 1, 1]
    block_type = 0
    block_remaining = 0
    block_length = 0
    main = length = aligned = None
    e8_file_size = 0
    if output_size > 0 and bits.read(1):
        e8_file_size = bits.read(32)

    frame_start = 0
    while frame_start < output_size:
        frame_end = min(frame_start + FRAME_SIZE, output_size)
        while len(output) < frame_end:
            if block_remaining == 0:
                if block_type == BLOCK_UNCOMPRESSED and block_length & 1:
                    bits.position += 8  # the pad byte after an odd-sized uncompressed block
                    bits.check_end()
                block_type = bits.read(3)
                block_remaining = block_length = bits.read(24)
                if block_type == BLOCK_ALIGNED:
                    aligned = _Huffman([bits.read(3) for _ in range(ALIGNED_TREE_SIZE)], "aligned offset")
                if block_type in (BLOCK_VERBATIM, BLOCK_ALIGNED):
                    _read_lengths(bits, main_lengths, 0, NUM_CHARS)
                    _read_lengths(bits, main_lengths, NUM_CHARS, main_size)
                    main = _Huffman(main_lengths, "main")
                    _read_lengths(bits, length_lengths, 0, LENGTH_TREE_SIZE)
                    length = _Huffman(length_lengths, "length")
                elif block_type == BLOCK_UNCOMPRESSED:
                    start = bits.skip_to_bytes()
                    header = bits.take_bytes(start, 12)
                    repeated = [int.from_bytes(header[i:i + 4], "little") for i in (0, 4, 8)]
                    bits.position = (start + 12) * 8
                else:
                    raise LzxError(f"block type {block_type} is not an LZX block")
            run = min(block_remaining, frame_end - len(output))
            if block_type == BLOCK_UNCOMPRESSED:
                start = bits.position >> 3
                output += bits.take_bytes(start, run)
                bits.position += run * 8
                block_remaining -= run
                continue
            assert main is not None and length is not None
            goal = len(output) + run
            _decode_run(bits, output, goal, frame_end, window_size, main, length,
                        aligned if block_type == BLOCK_ALIGNED else None, repeated)
            block_remaining -= len(output) - (goal - run)
            if block_remaining < 0:
                raise LzxError("a match runs past its block's end")
        if e8_file_size:
            # The window keeps what was decoded (later matches copy it); the caller gets it translated.
            frame = output[frame_start:frame_end]
            if len(frame) > 10 and frame_start < FRAME_SIZE * 32768:
                _translate_e8(frame, frame_start, e8_file_size)
            translated += frame
        frame_start = frame_end
        if block_type != BLOCK_UNCOMPRESSED:  # raw bytes keep their place; bits re-align to a word
            bits.align_to_word()
            bits.check_end()
    return bytes(translated if e8_file_size else output)
