"""Cabinets for the tests and the fixtures: a writer ([MS-CAB]) and the smallest honest LZX encoder.

No LZX compressor runs on Linux (makecab and symstore are Windows tools; gcab and the Python
cabinet packages write MSZIP only), so the LZX cabinets besides the few real ones in
tests/data/cab/ are made here, and cabextract (libmspack) checks that they decode. The encoder
is greedy (a hash of 3-byte prefixes, longest match among the last few candidates); it writes
blocks of a given size (one per 32 KiB frame by default; others start mid-frame and span frames),
each of the kind asked: verbatim, aligned offset (every aligned symbol 3 bits long) or
uncompressed; optionally with Intel E8 call translation, the inverse of what lzxd.c undoes.
Tree lengths go through a fixed pretree, as plain deltas: no run-length codes.
MSZIP blocks come from zlib, each a final deflate stream primed with the previous 32 KiB.
"""

from __future__ import annotations

import heapq
import struct
import zlib
from collections.abc import Sequence

from symbolize.formats.cab.lzx import EXTRA_BITS, POSITION_BASE, POSITION_SLOTS
from symbolize.formats.cab.structure import FILE, FOLDER, HEADER, checksum

FRAME = 32768
COMPRESS_NONE, COMPRESS_MSZIP, COMPRESS_LZX = 0, 1, 3
VERBATIM, ALIGNED, UNCOMPRESSED = 1, 2, 3
MAX_MATCH = 257
MIN_MATCH = 3  # the format allows 2; 3 keeps the hash simple


def cabinet(name: str, blocks: Sequence[tuple[bytes, int]], compress: int, *, file_size: int | None = None,
            checksums: bool = True) -> bytes:
    """A one-folder, one-file cabinet from data blocks given as (payload, decoded size)."""
    name_bytes = name.encode("utf-8") + b"\0"
    attributes = 0x20 | (0x80 if not name.isascii() else 0)
    size = sum(out for _, out in blocks) if file_size is None else file_size
    files_offset = HEADER.size + FOLDER.size
    first_block = files_offset + FILE.size + len(name_bytes)
    body = bytearray()
    for payload, out in blocks:
        sizes = struct.pack("<HH", len(payload), out)
        value = checksum(payload, checksum(sizes)) if checksums else 0
        body += struct.pack("<I", value) + sizes + payload
    total = first_block + len(body)
    header = HEADER.pack(b"MSCF", 0, total, 0, files_offset, 0, 3, 1, 1, 1, 0, 0x1234, 0)
    folder = FOLDER.pack(first_block, len(blocks), compress)
    entry = FILE.pack(size, 0, 0, 0x5A21, 0x6000, attributes) + name_bytes
    return header + folder + entry + bytes(body)


def stored_cabinet(name: str, data: bytes) -> bytes:
    return cabinet(name, [(data[i:i + FRAME], len(data[i:i + FRAME])) for i in range(0, len(data), FRAME)] or [],
                   COMPRESS_NONE)


def mszip_cabinet(name: str, data: bytes, level: int = 9) -> bytes:
    blocks = []
    for start in range(0, len(data), FRAME):
        history = data[max(0, start - FRAME):start]
        deflater = (zlib.compressobj(level, zlib.DEFLATED, -15, zdict=history) if history
                    else zlib.compressobj(level, zlib.DEFLATED, -15))
        chunk = data[start:start + FRAME]
        blocks.append((b"CK" + deflater.compress(chunk) + deflater.flush(zlib.Z_FINISH), len(chunk)))
    return cabinet(name, blocks, COMPRESS_MSZIP)


def lzx_cabinet(name: str, data: bytes, *, window_bits: int = 16, kinds: Sequence[int] = (VERBATIM,),
                e8: bool = False, block_size: int = FRAME) -> bytes:
    """`data` LZX-compressed in blocks of `block_size`, block i of kind kinds[i % len(kinds)]."""
    frames = LzxEncoder(window_bits, e8_file_size=len(data) if e8 else 0).encode(data, kinds, block_size)
    return cabinet(name, frames, COMPRESS_LZX | (window_bits << 8))


class _BitWriter:
    """MSB-first bits into 16-bit little-endian words."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.value = 0
        self.count = 0

    def write(self, value: int, count: int) -> None:
        for shift in range(count - 1, -1, -1):
            self.value = (self.value << 1) | ((value >> shift) & 1)
            self.count += 1
            if self.count == 16:
                self.out += struct.pack("<H", self.value)
                self.value = self.count = 0

    def align(self) -> None:
        if self.count:
            self.write(0, 16 - self.count)

    def take(self) -> bytes:
        assert self.count == 0
        out, self.out = bytes(self.out), bytearray()
        return out


def huffman_lengths(frequencies: Sequence[int], limit: int = 16) -> list[int]:
    """Code lengths (at most `limit`) of a complete prefix code over the used symbols (two at least)."""
    freqs = list(frequencies)
    used = [i for i, f in enumerate(freqs) if f]
    for extra in range(len(freqs)):
        if len(used) >= 2:
            break
        if extra not in used:
            freqs[extra] = 1
            used.append(extra)
    while True:
        heap = [(freqs[i], i, (i,)) for i in used]
        heapq.heapify(heap)
        lengths = [0] * len(freqs)
        tiebreak = len(freqs)
        while len(heap) > 1:
            f1, _, s1 = heapq.heappop(heap)
            f2, _, s2 = heapq.heappop(heap)
            for symbol in s1 + s2:
                lengths[symbol] += 1
            heapq.heappush(heap, (f1 + f2, tiebreak, s1 + s2))
            tiebreak += 1
        if max(lengths) <= limit:
            return lengths
        freqs = [(f + 1) // 2 if f else 0 for f in freqs]  # flatten and retry


def canonical_codes(lengths: Sequence[int]) -> list[int]:
    codes = [0] * len(lengths)
    code = 0
    for length in range(1, 17):
        for symbol, symbol_length in enumerate(lengths):
            if symbol_length == length:
                codes[symbol] = code
                code += 1
        code <<= 1
    return codes


PRETREE_LENGTHS = [4] * 12 + [5] * 8  # a complete code over the 20 pretree symbols
PRETREE_CODES = canonical_codes(PRETREE_LENGTHS)


class LzxEncoder:
    def __init__(self, window_bits: int, e8_file_size: int = 0) -> None:
        self.window_bits = window_bits
        self.main_size = 256 + POSITION_SLOTS[window_bits] * 8
        self.max_offset = (1 << window_bits) - 3
        self.e8_file_size = e8_file_size
        self.main_lengths = [0] * self.main_size
        self.length_lengths = [0] * 249
        self.repeated = [1, 1, 1]

    def encode(self, data: bytes, kinds: Sequence[int], block_size: int = FRAME) -> list[tuple[bytes, int]]:
        """The data blocks (payload, decoded size) of `data`, one per 32 KiB frame, from LZX blocks
        of `block_size` bytes (the last shorter), block i of kind kinds[i % len(kinds)]. Blocks
        need not start at a frame: they may span frames, as the format allows."""
        bits = _BitWriter()
        bits.write(1 if self.e8_file_size else 0, 1)
        if self.e8_file_size:
            bits.write(self.e8_file_size >> 16, 16)
            bits.write(self.e8_file_size & 0xFFFF, 16)
        window = self._translated(data)
        chunks: list[tuple[bytes, int]] = []
        heads: dict[bytes, list[int]] = {}
        for index, start in enumerate(range(0, len(window), block_size)):
            end = min(start + block_size, len(window))
            # The block's pieces within one frame each: no match crosses a frame's end.
            pieces = [(cut, min(end, (cut // FRAME + 1) * FRAME)) for cut in range(start, end)
                      if cut == start or cut % FRAME == 0]
            kind = kinds[index % len(kinds)]
            if kind == UNCOMPRESSED:
                self._uncompressed(bits, window, pieces, chunks, heads)
            else:
                self._compressed(bits, window, pieces, kind, chunks, heads)
        return chunks

    @staticmethod
    def _frame_ends(bits: _BitWriter, end: int, total: int, chunks: list[tuple[bytes, int]], *, align: bool) -> None:
        """At a frame's end (or the data's): the bits re-align (not inside stored bytes) and the
        frame's bytes become one data block."""
        if end % FRAME and end != total:
            return
        if align:
            bits.align()
        chunks.append((bits.take(), end - sum(size for _, size in chunks)))

    def _translated(self, data: bytes) -> bytes:
        """Intel E8 translation, frame by frame, as lzxd.c undoes it."""
        if not self.e8_file_size:
            return data
        out = bytearray(data)
        size = self.e8_file_size
        for start in range(0, min(len(out), FRAME * 32768), FRAME):
            end = min(start + FRAME, len(out))
            if end - start <= 10:
                continue
            index = start
            while index < end - 10:
                if out[index] != 0xE8:
                    index += 1
                    continue
                relative = int.from_bytes(out[index + 1:index + 5], "little", signed=True)
                if -index <= relative < size:
                    absolute = relative + index if relative + index < size else relative - size
                    out[index + 1:index + 5] = (absolute & 0xFFFFFFFF).to_bytes(4, "little")
                index += 5
        return bytes(out)

    def _uncompressed(self, bits: _BitWriter, window: bytes, pieces: list[tuple[int, int]],
                      chunks: list[tuple[bytes, int]], heads: dict[bytes, list[int]]) -> None:
        start, end = pieces[0][0], pieces[-1][1]
        bits.write(UNCOMPRESSED, 3)
        bits.write(end - start, 24)
        if bits.count == 0:
            bits.write(0, 16)  # 1 to 16 bits of padding, never none
        bits.align()
        bits.out += struct.pack("<III", *self.repeated)
        for piece_start, piece_end in pieces:
            bits.out += window[piece_start:piece_end]
            if piece_end == end and (end - start) & 1:
                bits.out += b"\0"  # the pad byte the next block header skips
            self._frame_ends(bits, piece_end, len(window), chunks, align=False)
        for position in range(start, end - MIN_MATCH + 1):
            heads.setdefault(window[position:position + MIN_MATCH], []).append(position)

    def _matches(self, window: bytes, start: int, end: int, heads: dict[bytes, list[int]]) -> list[tuple[int, int]]:
        """Greedy parse: (literal byte, 0) or (length, offset) items."""
        items = []
        position = start
        while position < end:
            best_length, best_offset = 0, 0
            key = window[position:position + MIN_MATCH]
            if len(key) == MIN_MATCH and position + MIN_MATCH <= end:
                for candidate in reversed(heads.get(key, [])[-8:]):
                    offset = position - candidate
                    if offset > self.max_offset:
                        break
                    length = MIN_MATCH
                    limit = min(MAX_MATCH, end - position)
                    while length < limit and window[candidate + length] == window[position + length]:
                        length += 1
                    if length > best_length:
                        best_length, best_offset = length, offset
            step = best_length if best_length >= MIN_MATCH else 1
            for covered in range(position, position + step):
                piece = window[covered:covered + MIN_MATCH]
                if len(piece) == MIN_MATCH:
                    heads.setdefault(piece, []).append(covered)
            items.append((best_length, best_offset) if step > 1 else (window[position], 0))
            position += step
        return items

    def _compressed(self, bits: _BitWriter, window: bytes, pieces: list[tuple[int, int]], kind: int,
                    chunks: list[tuple[bytes, int]], heads: dict[bytes, list[int]]) -> None:
        items = []
        for piece_start, piece_end in pieces:
            items += self._matches(window, piece_start, piece_end, heads)
            items.append((-1, piece_end))  # where the piece ends
        symbols: list[tuple[int, int | None, int, int, int | None]] = []
        # (main symbol, length symbol or None, footer bits, footer value, aligned symbol or None);
        # a piece's end as (-1, end, 0, 0, None)
        repeated = self.repeated
        for length, offset in items:
            if length == -1:
                symbols.append((-1, offset, 0, 0, None))
                continue
            if offset == 0:
                symbols.append((length, None, 0, 0, None))
                continue
            header = min(length - 2, 7)
            length_symbol = length - 2 - 7 if header == 7 else None
            if offset == repeated[0]:
                slot, footer_bits, footer, aligned_symbol = 0, 0, 0, None
            else:
                formatted = offset + 2
                slot = next(s for s in range(3, 51) if POSITION_BASE[s + 1] > formatted)
                footer = formatted - POSITION_BASE[slot]
                footer_bits = EXTRA_BITS[slot]
                aligned_symbol = None
                if kind == ALIGNED and footer_bits >= 3:
                    aligned_symbol = footer & 7
                    footer, footer_bits = footer >> 3, footer_bits - 3
                repeated = [offset, repeated[0], repeated[1]]
            symbols.append((256 + slot * 8 + header, length_symbol, footer_bits, footer, aligned_symbol))
        self.repeated = repeated

        main_freq = [0] * self.main_size
        length_freq = [0] * 249
        for main, length_symbol, *_ in symbols:
            if main == -1:
                continue
            main_freq[main] += 1
            if length_symbol is not None:
                length_freq[length_symbol] += 1
        main_lengths = huffman_lengths(main_freq)
        length_lengths = huffman_lengths(length_freq)
        main_codes, length_codes = canonical_codes(main_lengths), canonical_codes(length_lengths)

        bits.write(kind, 3)
        bits.write(pieces[-1][1] - pieces[0][0], 24)
        if kind == ALIGNED:
            for _ in range(8):
                bits.write(3, 3)  # every aligned symbol 3 bits: its code is its value
        self._send_lengths(bits, main_lengths, self.main_lengths, 0, 256)
        self._send_lengths(bits, main_lengths, self.main_lengths, 256, self.main_size)
        self._send_lengths(bits, length_lengths, self.length_lengths, 0, 249)
        self.main_lengths, self.length_lengths = main_lengths, length_lengths
        for main, length_symbol, footer_bits, footer, aligned_symbol in symbols:
            if main == -1:
                assert length_symbol is not None
                self._frame_ends(bits, length_symbol, len(window), chunks, align=True)
                continue
            bits.write(main_codes[main], main_lengths[main])
            if length_symbol is not None:
                bits.write(length_codes[length_symbol], length_lengths[length_symbol])
            bits.write(footer, footer_bits)
            if aligned_symbol is not None:
                bits.write(aligned_symbol, 3)

    @staticmethod
    def _send_lengths(bits: _BitWriter, lengths: Sequence[int], previous: Sequence[int], first: int,
                      last: int) -> None:
        for length in PRETREE_LENGTHS:
            bits.write(length, 4)
        for index in range(first, last):
            delta = (previous[index] - lengths[index]) % 17
            bits.write(PRETREE_CODES[delta], PRETREE_LENGTHS[delta])
