"""The names of inlined functions: IPI records, and the cross-module IDs that lead to them.

From LLVM's "The PDB TPI and IPI Streams" and "CodeView Type Records": an inline site's inlinee
is an IPI index naming an ``LF_FUNC_ID`` (scope + name) or ``LF_MFUNC_ID`` (class + name,
``streams.inlinee_name``). With /DEBUG:FASTLINK-free incremental builds an ID may be
cross-module (``codeview.CROSS_MODULE_ID``): the module's ``DEBUG_S_CROSSSCOPEIMPORTS`` name the
exporting module and its local ID, which that module's ``DEBUG_S_CROSSSCOPEEXPORTS`` map to the
global IPI index. A damaged type stream or scope subsection leaves frames unnamed, never a module
broken.
"""

from __future__ import annotations

import struct
from pathlib import Path

from symbolize.formats.errors import MalformedInputError
from symbolize.formats.pdb import codeview
from symbolize.formats.pdb.codeview import CodeViewError
from symbolize.formats.pdb.msf import MsfFile
from symbolize.formats.pdb.streams import (
    IPI_STREAM,
    NO_STREAM,
    TPI_STREAM,
    ModuleInfo,
    StringTable,
    TypeRecords,
    inlinee_name,
)

# A module's cross-scope imports (exporting module's name offset, local IDs) and exports (local -> global).
_CrossScope = tuple[list[tuple[int, tuple[int, ...]]], dict[int, int]]


class InlineeNames:
    """Inlinee names of one PDB, each read once (the IPI and TPI streams on the first)."""

    def __init__(self, msf: MsfFile, modules: list[ModuleInfo], strings: StringTable | None, path: Path) -> None:
        self._msf = msf
        self._modules = modules
        self._strings = strings
        self._path = path
        self._ids: TypeRecords | None = None
        self._types: TypeRecords | None = None
        self._names: dict[int, str | None] = {}
        self._cross_scopes: dict[int, _CrossScope] = {}

    def name(self, item_id: int, module_number: int) -> str | None:
        """The name of inlinee ``item_id`` as module ``module_number`` refers to it (a cross-module
        ID is first resolved to the IPI index the exporting module gives it)."""
        if item_id & codeview.CROSS_MODULE_ID:
            global_index = self._cross_module_index(item_id, module_number)
            if global_index is None or global_index & codeview.CROSS_MODULE_ID:
                return None  # unresolved, or (hostile) resolved to another cross-module ID
            return self.name(global_index, module_number)
        if item_id in self._names:
            return self._names[item_id]
        if self._ids is None or self._types is None:
            self._ids = self._type_records(IPI_STREAM, "IPI")
            self._types = self._type_records(TPI_STREAM, "TPI")
        try:
            name = inlinee_name(self._ids, self._types, item_id)
        except struct.error:
            name = None
        self._names[item_id] = name
        return name

    def _cross_module_index(self, item_id: int, module_number: int) -> int | None:
        """The global IPI index of cross-module ID ``item_id`` of module ``module_number``: its entry
        in the module's DEBUG_S_CROSSSCOPEIMPORTS names the exporting module (matched on the DBI
        module name, case-insensitively, as the ``pdb`` crate does) and the local ID, which that
        module's DEBUG_S_CROSSSCOPEEXPORTS maps to the global index. None where any link is
        missing or broken: the frame stays, unnamed."""
        entry, position = codeview.split_cross_module_id(item_id)
        imports = self._cross_scope(module_number)[0]
        if entry >= len(imports) or position >= len(imports[entry][1]) or self._strings is None:
            return None
        name_offset, local_ids = imports[entry]
        exporter_name = self._strings.get(name_offset)
        if exporter_name is None:
            return None
        wanted = exporter_name.casefold()
        for module in self._modules:
            if module.name.casefold() == wanted:
                return self._cross_scope(module.number)[1].get(local_ids[position])
        return None

    def _cross_scope(self, module_number: int) -> tuple[list[tuple[int, tuple[int, ...]]], dict[int, int]]:
        """Module ``module_number``'s cross-scope imports and exports, read once (empty when its
        stream or subsections do not decode)."""
        found = self._cross_scopes.get(module_number)
        if found is None:
            imports: list[tuple[int, tuple[int, ...]]] = []
            exports: dict[int, int] = {}
            module = self._modules[module_number]
            if module.stream != NO_STREAM:
                try:
                    stream = self._msf.stream(module.stream)
                    start = module.symbols_size + module.c11_size
                    for kind, data, _offset in codeview.iter_subsections(stream, start, start + module.c13_size):
                        if kind == codeview.DEBUG_S_CROSSSCOPEIMPORTS:
                            imports += codeview.parse_cross_scope_imports(data)
                        elif kind == codeview.DEBUG_S_CROSSSCOPEEXPORTS:
                            exports = {**codeview.parse_cross_scope_exports(data), **exports}
                except (CodeViewError, MalformedInputError, struct.error):
                    pass
            found = self._cross_scopes[module_number] = (imports, exports)
        return found

    def _type_records(self, stream: int, what: str) -> TypeRecords:
        """The TPI or IPI records; an empty table when the stream is broken, so that a damaged type
        stream leaves inlined frames unnamed (their files and lines stay) instead of every module
        broken."""
        try:
            return TypeRecords(self._msf.stream(stream), self._path, what)
        except MalformedInputError:
            return TypeRecords(b"", self._path, what)
