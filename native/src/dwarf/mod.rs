//! The compiled DWARF answer source: a whole unit's answer runs, built in Rust on gimli, as
//! `UnitRuns.all_runs` in `formats/dwarf/answers.py` builds them (the Python reader stays the
//! reference and the fallback).
//!
//! `DwarfUnits.unit_runs` answers a unit or returns None, "the reference must decide": for any
//! decode error, any form or shape whose meaning the reference gives by a rule this source does
//! not carry (dwz references, split units, a line program that steps back, a name chain leaving
//! its unit), so that a unit it answers is answered as the reference answers it. A panic is
//! caught and raised as `CompiledDwarfError`, which the reader turns into its typed error.
//!
//! What is hand-written here is policy; gimli parses. `unit` (the bases, strings, addresses and
//! range lists the reference reads its own way), `lines` (file names, the rows that answer),
//! `tree` (which DIEs are nodes and scopes), `names` (llvm-symbolizer's naming), `runs` (which
//! function, inline level, row and symbol answer each address), `index` (the persistent index's
//! interned tables, built from the whole units' chains without a Python object per frame).
//!
//! The sections are borrowed, not copied (`Section`): the reader hands views of its file's mmap
//! (or the `bytes` it decompressed or read), and this source reads them through the buffer
//! protocol for as long as it lives. That takes the one `unsafe` of this crate's DWARF code, the
//! one PyO3 needs to see a Python buffer as `&[u8]` (`Section::bytes`, its SAFETY comment says
//! why it holds). What it cannot guard against: a file truncated by another process while it is
//! mapped faults (SIGBUS) on the next read of a page past the new end, as in llvm-symbolizer,
//! which maps its inputs too; the reader checks sizes against the file when it opens it.

mod index;
mod lazy;
mod lines;
mod names;
pub(crate) mod runs;
mod tree;
mod unit;

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyException, PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use runs::{Columns, SymbolBounds};

use crate::unpanicked;

pyo3::create_exception!(
    _kernels,
    CompiledDwarfError,
    PyException,
    "The compiled DWARF answer source failed (a caught panic): the reader raises its typed error."
);

pub(crate) type R<'a> = gimli::EndianSlice<'a, gimli::RunTimeEndian>;

/// Why a unit is left to the reference.
#[derive(Debug)]
pub(crate) struct Defer(pub &'static str);

impl From<gimli::Error> for Defer {
    fn from(_: gimli::Error) -> Self {
        Defer("gimli cannot read it")
    }
}

pub(crate) type Decided<T> = Result<T, Defer>;

/// One DWARF section's bytes: borrowed from the Python object that holds them (a view of the
/// file's mmap, or `bytes`), or owned (the Rust tests and the fuzz target). Reads as `&[u8]`.
pub(crate) enum Section {
    Owned(Vec<u8>),
    /// A read-only, C-contiguous buffer of bytes (checked in `Section::borrow`), kept exported
    /// (and so its memory in place: an mmap with exports refuses to close) until dropped.
    Borrowed(PyBuffer<u8>),
}

impl Section {
    /// `data`'s bytes without a copy where its buffer is read-only and contiguous (a view of an
    /// mmap opened read-only, `bytes`); copied otherwise (a writable buffer could change under a
    /// read made without the GIL).
    pub(crate) fn borrow(data: &Bound<'_, PyAny>) -> PyResult<Self> {
        let buffer = PyBuffer::<u8>::get(data)?;
        if buffer.readonly() && buffer.is_c_contiguous() {
            return Ok(Section::Borrowed(buffer));
        }
        Ok(Section::Owned(buffer.to_vec(data.py())?))
    }

    #[allow(unsafe_code)] // the crate's one unsafe: see the SAFETY comment
    fn bytes(&self) -> &[u8] {
        match self {
            Section::Owned(bytes) => bytes,
            Section::Borrowed(buffer) if buffer.item_count() == 0 => &[],
            // SAFETY: `buffer` holds an export of a read-only, C-contiguous buffer of
            // `item_count()` bytes (`Section::borrow` checked both; `PyBuffer::<u8>::get` checked
            // the item size and format): its memory stays in place and unchanged until the export
            // is released, which happens only when `buffer` drops, after every borrow of `self`.
            // A pointer of a non-empty buffer is non-null; the empty one is handled above.
            Section::Borrowed(buffer) => unsafe {
                std::slice::from_raw_parts(buffer.buf_ptr().cast::<u8>().cast_const(), buffer.item_count())
            },
        }
    }
}

impl std::ops::Deref for Section {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.bytes()
    }
}

/// The DWARF sections of one file, as the reader's section getter gives them.
pub(crate) struct Sections {
    pub info: Section,
    pub abbrev: Section,
    pub str: Section,
    pub line_str: Section,
    pub str_offsets: Section,
    pub addr: Section,
    pub ranges: Section,
    pub rnglists: Section,
    pub line: Section,
    pub endian: gimli::RunTimeEndian,
    /// The container's address size: no range reaches past its last address.
    pub address_size: u8,
    /// Abbreviation tables by offset, parsed once: units may share one table, and a table parsed
    /// per unit would make thousands of units sharing a large one cost their product in memory.
    pub abbrev_tables: AbbrevTables,
}

/// Parsed abbreviation tables of one `.debug_abbrev`, by offset, shared by the units using them.
#[derive(Default)]
pub(crate) struct AbbrevTables(Mutex<FxHashMap<u64, Arc<gimli::Abbreviations>>>);

impl AbbrevTables {
    /// The table at `offset` (gimli's parse of it), parsed on its first use.
    pub(crate) fn get(&self, sections: &Sections, offset: gimli::DebugAbbrevOffset<usize>) -> gimli::Result<Arc<gimli::Abbreviations>> {
        let key = offset.0 as u64;
        if let Some(table) = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get(&key) {
            return Ok(Arc::clone(table));
        }
        let table = Arc::new(gimli::DebugAbbrev::new(&sections.abbrev, sections.endian).abbreviations(offset)?);
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(key, Arc::clone(&table));
        Ok(table)
    }
}

/// The sections `Sections::named` takes, in order.
pub const SECTION_NAMES: [&str; 9] = [
    ".debug_info", ".debug_abbrev", ".debug_line", ".debug_str", ".debug_line_str", ".debug_str_offsets",
    ".debug_addr", ".debug_ranges", ".debug_rnglists",
];

impl Sections {
    /// The sections `section(position, name)` gives for each of `SECTION_NAMES`.
    fn named<E>(mut section: impl FnMut(usize, &str) -> Result<Section, E>, little_endian: bool, address_size: u8) -> Result<Self, E> {
        let mut found = Vec::with_capacity(SECTION_NAMES.len());
        for (position, name) in SECTION_NAMES.iter().enumerate() {
            found.push(section(position, name)?);
        }
        let Ok([info, abbrev, line, str, line_str, str_offsets, addr, ranges, rnglists]) = <[Section; 9]>::try_from(found) else {
            unreachable!("one section a name")
        };
        let endian = if little_endian { gimli::RunTimeEndian::Little } else { gimli::RunTimeEndian::Big };
        let abbrev_tables = AbbrevTables::default();
        Ok(Sections { info, abbrev, str, line_str, str_offsets, addr, ranges, rnglists, line, endian, address_size, abbrev_tables })
    }

    pub(crate) fn last_address(&self) -> u128 {
        (1u128 << (8 * u32::from(self.address_size))) - 1
    }
}

/// A unit's runs, or why the reference must build them.
pub(crate) fn build_unit<'a>(
    sections: &'a Sections, units: &[(u64, u64)], symbols: &SymbolBounds, offset: u64, functions_only: bool,
    caches: &mut names::NamerCaches<'a>,
) -> Decided<Columns> {
    let decoded = names::decode_unit(sections, offset)?;
    let (unit, tree, lines) = (&decoded.unit, tree::scanned(&decoded.unit, false)?, &decoded.lines);
    let namer = names::Namer { unit, tree: &tree, lines: lines.as_ref(), units, caches };
    runs::all_runs(&tree, namer, lines.as_ref(), symbols, functions_only)
}

/// (offset, end) of each unit in .debug_info, up to the first header gimli cannot read.
fn unit_spans(sections: &Sections) -> Vec<(u64, u64)> {
    let mut spans = Vec::new();
    let mut headers = gimli::DebugInfo::new(&sections.info, sections.endian).units();
    while let Ok(Some(header)) = headers.next() {
        let offset = header.offset().0 as u64;
        spans.push((offset, offset + header.length_including_self() as u64));
    }
    spans
}

/// The units of one file's DWARF, answered one whole unit at a time.
#[pyclass(frozen, module = "symbolize.formats._kernels")]
pub struct DwarfUnits {
    /// (offset, end) of each unit in .debug_info, up to the first header that cannot be read.
    units: Arc<Vec<(u64, u64)>>,
    symbols: Py<SymbolBounds>,
    /// The sections, and what the whole-unit builds and the lazy units (`lazy_unit`) share.
    lazy: Arc<Mutex<lazy::LazyFile>>,
}

/// One unit's runs as parallel columns (see `formats/_kernels.pyi`). The chains stay here until
/// asked for one by one (`chain`): a batch of lookups names a few of a unit's thousands, and
/// turning them all into Python tuples cost as much as the sweep that built the runs.
#[pyclass(frozen, module = "symbolize.formats._kernels")]
pub struct UnitColumns {
    /// The seven run columns, handed out once (`take_columns`): the reader copies them into its
    /// table's arrays, and a copy kept here held every unit of an index build twice.
    columns: Mutex<Option<[Py<PyBytes>; 7]>>,
    #[pyo3(get)]
    file_names: Py<PyList>,
    chains: runs::Chains,
    /// Per head: (chain or -1, symbol or -1); the index's tables read them here
    /// (`IndexTables.unit_chains`), not as a Python tuple each.
    #[pyo3(get, name = "head_keys")]
    head_key_list: Vec<(i64, i64)>,
    /// The Python string of each file and function name the chains give, made once: a unit's
    /// thousands of calling frames name a few files and repeat their callers, and a new string per
    /// frame is hashed anew by every dict the index builder and the render look it up in.
    strings: Mutex<FxHashMap<usize, (runs::Text, Py<PyString>)>>,
}

#[pymethods]
impl UnitColumns {
    /// The run columns in `formats/_kernels.pyi`'s order; a second call raises.
    fn take_columns(&self) -> PyResult<[Py<PyBytes>; 7]> {
        let taken = self.columns.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
        taken.ok_or_else(|| PyValueError::new_err("the unit's columns were taken already"))
    }

    /// Chain `chain`: (innermost function, its decl line and file, its entry, calling frames
    /// innermost first).
    fn chain<'py>(&self, py: Python<'py>, chain: usize) -> PyResult<Bound<'py, PyTuple>> {
        chain_tuple(py, &self.chains, chain, &self.strings)
    }
}

/// Chain `chain` of `chains` as Python reads it, each name one Python string per `strings`.
pub(crate) fn chain_tuple<'py>(
    py: Python<'py>, chains: &runs::Chains, chain: usize, strings: &Mutex<FxHashMap<usize, (runs::Text, Py<PyString>)>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let Some(((name, start_line, start_file), entry, (first, end))) = chains.list.get(chain) else {
        return Err(PyIndexError::new_err(format!("chain {chain} of {}", chains.list.len())));
    };
    let mut strings = strings.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    // By the text's address: one name is one shared `Text` (a DIE's is named once, a file's is its
    // line table's), and the map keeps each `Text` it saw alive, so no address is reused.
    let mut shared = |text: &Option<runs::Text>| -> Option<Py<PyString>> {
        let text = text.as_ref()?;
        let made = strings.entry(text.as_ptr() as usize).or_insert_with(|| (text.clone(), PyString::new(py, text).unbind()));
        Some(made.1.clone_ref(py))
    };
    let frames = PyList::empty(py);
    for (function, file, line, column, frame_start_line, frame_start_file, start_address, discriminator) in
        chains.outer[*first as usize..*end as usize].iter().map(|&frame| &chains.frames[frame as usize])
    {
        let frame = (shared(function), shared(file), line, column, frame_start_line, shared(frame_start_file), start_address,
                     discriminator);
        frames.append(frame)?;
    }
    (shared(name), start_line, shared(start_file), entry, frames).into_pyobject(py)
}

fn machine_bytes<'py, T: Copy, const N: usize>(py: Python<'py>, values: &[T], to_bytes: fn(T) -> [u8; N]) -> PyResult<Py<PyBytes>> {
    Ok(PyBytes::new_with(py, values.len() * N, |buffer| {
        for (chunk, value) in buffer.chunks_exact_mut(N).zip(values) {
            chunk.copy_from_slice(&to_bytes(*value));
        }
        Ok(())
    })?
    .unbind())
}

impl UnitColumns {
    fn from_columns(py: Python<'_>, built: Columns) -> PyResult<Self> {
        Ok(UnitColumns {
            columns: Mutex::new(Some([
                machine_bytes(py, &built.lows, u64::to_ne_bytes)?,
                machine_bytes(py, &built.highs, u64::to_ne_bytes)?,
                machine_bytes(py, &built.files, i64::to_ne_bytes)?,
                machine_bytes(py, &built.lines, i64::to_ne_bytes)?,
                machine_bytes(py, &built.columns, i64::to_ne_bytes)?,
                machine_bytes(py, &built.heads, i64::to_ne_bytes)?,
                machine_bytes(py, &built.discriminators, i64::to_ne_bytes)?,
            ])),
            file_names: PyList::new(py, built.file_names.iter().map(Option::as_deref))?.unbind(),
            head_key_list: built.head_keys,
            chains: built.chains,
            strings: Mutex::new(FxHashMap::default()),
        })
    }
}

impl DwarfUnits {
    fn decide(&self, py: Python<'_>, unit_offset: u64, functions_only: bool) -> PyResult<Decided<Columns>> {
        let (symbols, units) = (self.symbols.get(), &self.units[..]);
        py.detach(|| {
            lazy::LazyFile::work(&self.lazy, |sections, state| {
                build_unit(sections, units, symbols, unit_offset, functions_only, &mut state.names)
            })
        })
        .map_err(CompiledDwarfError::new_err)
    }
}

#[pymethods]
impl DwarfUnits {
    #[new]
    fn new(sections: &Bound<'_, PyDict>, little_endian: bool, address_size: u8, symbols: Py<SymbolBounds>) -> PyResult<Self> {
        if !(1..=8).contains(&address_size) {
            return Err(CompiledDwarfError::new_err(format!("address size {address_size}")));
        }
        let section = |_, name: &str| match sections.get_item(name)? {
            Some(data) => Section::borrow(&data),
            None => Ok(Section::Owned(Vec::new())),
        };
        let sections = Sections::named(section, little_endian, address_size)?;
        let units = unpanicked("DWARF reader", || unit_spans(&sections)).map_err(CompiledDwarfError::new_err)?;
        let lazy = lazy::LazyFile::shared(Arc::new(sections));
        Ok(DwarfUnits { units: Arc::new(units), symbols, lazy })
    }

    /// The runs of the unit whose header is at `unit_offset` in .debug_info; None where the
    /// reference must decide.
    fn unit_runs(&self, py: Python<'_>, unit_offset: u64, functions_only: bool) -> PyResult<Option<UnitColumns>> {
        match self.decide(py, unit_offset, functions_only)? {
            Ok(built) => Ok(Some(UnitColumns::from_columns(py, built)?)),
            Err(_) => Ok(None),
        }
    }

    /// The unit whose header is at `unit_offset`, its tree and line table decoded, to answer a
    /// cold lookup's addresses one span at a time (`LazyUnit.run_at`); None where the reference
    /// must decide.
    fn lazy_unit(&self, py: Python<'_>, unit_offset: u64, functions_only: bool) -> PyResult<Option<lazy::LazyUnit>> {
        lazy::LazyUnit::open(py, &self.lazy, &self.units, &self.symbols, unit_offset, functions_only)
    }

    /// Why `unit_runs` leaves the unit to the reference (None: it answers it), for measurement.
    fn deferral(&self, py: Python<'_>, unit_offset: u64, functions_only: bool) -> PyResult<Option<&'static str>> {
        Ok(self.decide(py, unit_offset, functions_only)?.err().map(|defer| defer.0))
    }
}

pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<DwarfUnits>()?;
    module.add_class::<UnitColumns>()?;
    module.add_class::<index::IndexTables>()?;
    module.add("IndexTablesDeferred", module.py().get_type::<index::IndexTablesDeferred>())?;
    module.add_class::<lazy::LazyUnit>()?;
    module.add("CompiledDwarfDeferred", module.py().get_type::<lazy::CompiledDwarfDeferred>())?;
    module.add_class::<SymbolBounds>()?;
    module.add("CompiledDwarfError", module.py().get_type::<CompiledDwarfError>())?;
    Ok(())
}

/// What the cargo-fuzz target drives (native/fuzz/fuzz_targets/dwarf_units.rs).
pub mod fuzzing {
    pub use super::SECTION_NAMES;
    use super::{build_unit, unit_spans, Section, Sections, SymbolBounds};

    /// Every unit of `sections` (named as `SECTION_NAMES`) built or deferred, uncaught: a panic
    /// here is what the Python module would raise as `CompiledDwarfError`.
    pub fn build_every_unit(sections: &[Vec<u8>], little_endian: bool, address_size: u8, functions_only: bool) {
        let section = |at: usize, _: &str| Ok::<_, std::convert::Infallible>(Section::Owned(sections.get(at).cloned().unwrap_or_default()));
        let Ok(sections) = Sections::named(section, little_endian, address_size);
        let symbols = SymbolBounds { starts: Vec::new(), stops: Vec::new() };
        let (units, mut caches) = (unit_spans(&sections), Default::default());
        for &(offset, _) in &units {
            let _ = build_unit(&sections, &units, &symbols, offset, functions_only, &mut caches);
        }
    }
}
