"""Attribute keys the pprof <-> OTLP converter reads and writes, and the build-ID forms.

Semantic conventions (registry, ``process`` and ``pprof`` pages, Development stability):

- ``process.executable.build_id.gnu``: an ELF GNU build ID, lower-case hex;
  ``process.executable.build_id.go``: a Go build ID (``a/b/c/d``);
  ``process.executable.build_id.htlhash``: SHA-256 of the file's first and last 4 KiB and its
  length (what the eBPF profiler sends; pprof has no field for it).
- ``pprof.mapping.has_functions``, ``.has_filenames``, ``.has_line_numbers``,
  ``.has_inline_frames``, ``pprof.location.is_folded`` (booleans, written when true),
  ``pprof.profile.comment`` (string[]), ``.drop_frames``, ``.keep_frames``, ``.doc_url``
  (strings); on the scope (``scope.attributes``, as the conventions require):
  ``pprof.scope.default_sample_type`` (string) and ``pprof.scope.sample_type_order`` (int[]: the
  pprof index of each profile's sample type, when the default one was moved first).

Ours, namespaced ``symbolize.`` (documented in README, "OTLP"), for what the conventions do not name:

- ``symbolize.pe.code_id`` (TimeDateStamp ``%08X`` then SizeOfImage ``%x``, the symsrv key),
  ``symbolize.pdb.id`` (GUID then age in hex, the symsrv key), ``symbolize.macho.uuid``
  (``8-4-4-4-12`` upper-case hex): the build ID of a Windows or macOS mapping;
  ``symbolize.pprof.build_id``: a pprof ``build_id`` of none of the forms above, kept as written.
- ``symbolize.pprof.string_table_length``: how many of the dictionary's first strings are the
  pprof string table, in order (the way back keeps them where they were);
  ``symbolize.pprof.mapping_ids``, ``.location_ids``, ``.function_ids`` (int[]): a pprof profile's
  IDs, written only when they are not 1..N in table order (what pprof's writers give).

A pprof ``build_id`` keeps its spelling: the attribute's value is the string as the profile held it;
the form only picks the key (:func:`build_id_key`).
"""

from __future__ import annotations

import re

GNU_BUILD_ID = "process.executable.build_id.gnu"
GO_BUILD_ID = "process.executable.build_id.go"
HTLHASH = "process.executable.build_id.htlhash"
PE_CODE_ID = "symbolize.pe.code_id"
PDB_ID = "symbolize.pdb.id"
MACHO_UUID = "symbolize.macho.uuid"
OTHER_BUILD_ID = "symbolize.pprof.build_id"
# The way back from OTLP to pprof takes the first of these a mapping has.
BUILD_ID_KEYS = (GNU_BUILD_ID, GO_BUILD_ID, PE_CODE_ID, PDB_ID, MACHO_UUID, OTHER_BUILD_ID)

HAS_FUNCTIONS = "pprof.mapping.has_functions"
HAS_FILENAMES = "pprof.mapping.has_filenames"
HAS_LINE_NUMBERS = "pprof.mapping.has_line_numbers"
HAS_INLINE_FRAMES = "pprof.mapping.has_inline_frames"
# pprof Mapping field -> its attribute.
MAPPING_FLAGS = (
    ("has_functions", HAS_FUNCTIONS),
    ("has_filenames", HAS_FILENAMES),
    ("has_line_numbers", HAS_LINE_NUMBERS),
    ("has_inline_frames", HAS_INLINE_FRAMES),
)
IS_FOLDED = "pprof.location.is_folded"

COMMENT = "pprof.profile.comment"
DROP_FRAMES = "pprof.profile.drop_frames"
KEEP_FRAMES = "pprof.profile.keep_frames"
DOC_URL = "pprof.profile.doc_url"
# pprof Profile string-index field -> its attribute.
PROFILE_STRINGS = (
    ("drop_frames", DROP_FRAMES),
    ("keep_frames", KEEP_FRAMES),
    ("doc_url", DOC_URL),
)
DEFAULT_SAMPLE_TYPE = "pprof.scope.default_sample_type"
SAMPLE_TYPE_ORDER = "pprof.scope.sample_type_order"

STRING_TABLE_LENGTH = "symbolize.pprof.string_table_length"
MAPPING_IDS = "symbolize.pprof.mapping_ids"
LOCATION_IDS = "symbolize.pprof.location_ids"
FUNCTION_IDS = "symbolize.pprof.function_ids"

_GNU = re.compile(r"(?:[0-9a-f]{2})+")
_GO = re.compile(r"[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)+")
_PE_CODE_ID = re.compile(r"[0-9A-F]{8}[0-9a-f]{1,8}")
_PDB_ID = re.compile(r"[0-9A-F]{32}[0-9A-Fa-f]{1,8}")
_MACHO_UUID = re.compile(r"[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}")
_WINDOWS_IMAGE = re.compile(r"(?i)(?:\\|\.(?:exe|dll|sys|ocx|drv|efi)$)")


def build_id_key(build_id: str, filename: str) -> str:
    """The attribute that carries pprof ``build_id`` of a mapping of ``filename``.

    A Windows image's mapping (a ``\\`` in its path, or a PE extension) is read for a code ID or a
    PDB ID first, since an all-digit code ID is also even-length hex; then a Mach-O UUID, a GNU
    build ID (lower-case hex, whole bytes), a Go build ID; anything else is kept under our own key.
    """
    if _WINDOWS_IMAGE.search(filename):
        if _PDB_ID.fullmatch(build_id):
            return PDB_ID
        if _PE_CODE_ID.fullmatch(build_id):
            return PE_CODE_ID
    if _MACHO_UUID.fullmatch(build_id):
        return MACHO_UUID
    if _GNU.fullmatch(build_id):
        return GNU_BUILD_ID
    if _GO.fullmatch(build_id):
        return GO_BUILD_ID
    if _PDB_ID.fullmatch(build_id):
        return PDB_ID
    if _PE_CODE_ID.fullmatch(build_id):
        return PE_CODE_ID
    return OTHER_BUILD_ID
