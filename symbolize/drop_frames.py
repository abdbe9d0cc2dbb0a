"""The ``drop_frames`` a heap profile gets by default: the allocator's own frames, as pprof drops them.

pprof (``profile/legacy_profile.go``, ``addLegacyFrameInfo``) sets ``DropFrames`` to its list of
allocation routines (``allocRxStr``) on every legacy heap profile it reads, and ``pprof -top`` of
it then starts each stack at the allocating caller (``Profile.Prune``: a frame whose name matches
is dropped with the frames it called). A pprof protobuf keeps its ``drop_frames`` field as written,
so a heap profile we write must carry the list itself: :data:`HEAP_DROP_FRAMES` is pprof's list
(POSIX and glibc entry points, tcmalloc, macOS zones, ``operator new``, C++ allocators; not the Go
runtime's) with what native heap profiles of today add: mimalloc (``mi_*`` and its ``_mi_``
internals, such as mimalloc-pprof's sampler ``_mi_prof_stack_intern``), Rust's allocator shims
(``__rust_alloc*``, ``__rust_realloc``, ``__rust_dealloc``, ``__rg_*``/``__rdl_*``, ``alloc::alloc::*``,
the ``GlobalAlloc`` and ``Allocator`` impls, ``mimalloc::*``), the containers' allocation plumbing
(Rust's ``alloc::raw_vec::*``; C++'s ``std::__new_allocator<T>::allocate`` and kin, which pprof's
``allocate`` and ``_M_allocate`` stand for on the template-free names its own symbolizer writes),
and the mangled spellings of ``operator new``/``delete`` and ``alloc::alloc`` for ``--demangle none``.

A profile is a heap profile when its sample types are one of pprof's heap sets
(``heapzSampleTypes``): ``allocations``/``size``, ``objects``/``space``, ``inuse_*``,
``alloc_*``, or all four. The pattern is written in RE2's and Python's common syntax, matched
against the whole name as pprof matches it (``^(...)$``).
"""

from __future__ import annotations

from symbolize.pprof import StringTable
from symbolize.proto.profile_pb2 import Profile

__all__ = ["HEAP_DROP_FRAMES", "HEAP_SAMPLE_TYPES", "is_heap_profile"]

# pprof's heapzSampleTypes, each a profile's sample type names in order.
HEAP_SAMPLE_TYPES: tuple[tuple[str, ...], ...] = (
    ("allocations", "size"),
    ("objects", "space"),
    ("inuse_objects", "inuse_space"),
    ("alloc_objects", "alloc_space"),
    ("alloc_objects", "alloc_space", "inuse_objects", "inuse_space"),
)

_ALLOCATOR_FRAMES = (
    # POSIX and glibc entry points (pprof's list, glibc's __libc_* and internal names added).
    "calloc",
    "cfree",
    "malloc",
    "free",
    "memalign",
    "do_memalign",
    "(__)?posix_memalign",
    "aligned_alloc",
    "pvalloc",
    "valloc",
    "realloc",
    "reallocarray",
    "__libc_(malloc|calloc|realloc|free|memalign|valloc|pvalloc)",
    "_int_(malloc|free|realloc|memalign)",
    # tcmalloc (pprof's list).
    "tcmalloc::.*",
    "tc_(calloc|cfree|malloc|free|memalign|posix_memalign|pvalloc|valloc|realloc|new|delete|newarray|"
    "deletearray|new_nothrow|newarray_nothrow)",
    # macOS malloc zones (pprof's list).
    "malloc_zone_(malloc|calloc|valloc|realloc|memalign|free)",
    # Other allocation routines (pprof's list).
    "BaseArena::.*",
    "(::)?do_malloc_no_errno",
    "(::)?do_malloc_pages",
    "(::)?do_malloc",
    "DoSampledAllocation",
    "MallocedMemBlock::MallocedMemBlock",
    "_M_allocate",
    "__builtin_(vec_)?delete",
    "__builtin_(vec_)?new",
    "__gnu_cxx::new_allocator::allocate",
    "__malloc_alloc_template::allocate",
    "allocate",
    "cpp_alloc",
    "operator new(\\[\\])?",
    "operator delete(\\[\\])?",
    "simple_alloc::allocate",
    # operator new and delete as linkage names (--demangle none).
    "_Zn[wa][jmy].*",
    "_Zd[la]Pv.*",
    # mimalloc: its API (mi_malloc, mi_heap_malloc_zoned, ...) and internals (_mi_malloc_generic,
    # mimalloc-pprof's _mi_prof_stack_intern), and the Rust crate's GlobalAlloc.
    "_?mi_.*",
    "mimalloc::.*",
    # Rust's allocator shims and the alloc crate's entry points, demangled and mangled.
    "__rust_(alloc|alloc_zeroed|realloc|dealloc)",
    "__(rg|rdl)_(alloc|alloc_zeroed|realloc|dealloc)",
    "<?alloc::alloc::.*",
    "<[^<>]* as core::alloc::global::GlobalAlloc>::(alloc|alloc_zeroed|realloc|dealloc)",
    # Rust's and C++'s containers' allocation plumbing, as pprof's `allocate` and `_M_allocate` are
    # meant: pprof matches them on names its symbolizer simplified, without template arguments.
    "<?alloc::raw_vec::.*",
    "std::(__new_allocator|allocator|allocator_traits)<.*>::allocate",
    "__gnu_cxx::new_allocator<.*>::allocate",
    "std::_Vector_base<.*>::_M_allocate",
    "_ZN5alloc5alloc.*",
    "_RNvNtCs[0-9A-Za-z_]+_5alloc5alloc.*",
)

HEAP_DROP_FRAMES = "|".join(_ALLOCATOR_FRAMES)


def is_heap_profile(profile: Profile, strings: StringTable) -> bool:
    """Whether ``profile``'s sample types are one of pprof's heap sets (module docstring)."""
    names = tuple(strings.get(value_type.type) for value_type in profile.sample_type)
    return names in HEAP_SAMPLE_TYPES
