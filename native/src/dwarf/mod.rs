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
//! function, inline level, row and symbol answer each address).

mod lines;
mod names;
pub(crate) mod runs;
mod tree;
mod unit;

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use runs::{Columns, SymbolBounds};

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

/// The DWARF sections of one file, as the reader's section getter gives them.
pub(crate) struct Sections {
    pub info: Vec<u8>,
    pub abbrev: Vec<u8>,
    pub str: Vec<u8>,
    pub line_str: Vec<u8>,
    pub str_offsets: Vec<u8>,
    pub addr: Vec<u8>,
    pub ranges: Vec<u8>,
    pub rnglists: Vec<u8>,
    pub line: Vec<u8>,
    pub endian: gimli::RunTimeEndian,
    /// The container's address size: no range reaches past its last address.
    pub address_size: u8,
}

impl Sections {
    pub(crate) fn last_address(&self) -> u128 {
        (1u128 << (8 * u32::from(self.address_size))) - 1
    }
}

/// A unit's runs, or why the reference must build them.
pub(crate) fn build_unit(
    sections: &Sections, units: &[(u64, u64)], symbols: &SymbolBounds, offset: u64, functions_only: bool,
) -> Decided<Columns> {
    let unit = unit::UnitData::load(sections, offset)?;
    let lines = match unit.stmt_list {
        Some(stmt_list) => Some(lines::decode(&unit, stmt_list)?),
        None => None,
    };
    let tree = tree::scan(&unit)?;
    let namer = names::Namer::new(&unit, &tree, lines.as_ref(), units);
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

/// The message of a caught panic.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// The units of one file's DWARF, answered one whole unit at a time.
#[pyclass(frozen, module = "symbolize.formats._kernels")]
pub struct DwarfUnits {
    sections: Sections,
    /// (offset, end) of each unit in .debug_info, up to the first header that cannot be read.
    units: Vec<(u64, u64)>,
    symbols: Py<SymbolBounds>,
}

/// One unit's runs as parallel columns (see `formats/_kernels.pyi`).
#[pyclass(frozen, get_all, module = "symbolize.formats._kernels")]
pub struct UnitColumns {
    lows: Py<PyBytes>,
    highs: Py<PyBytes>,
    files: Py<PyBytes>,
    lines: Py<PyBytes>,
    columns: Py<PyBytes>,
    heads: Py<PyBytes>,
    file_names: Py<PyList>,
    chains: Py<PyList>,
    head_keys: Py<PyList>,
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
        let chains = PyList::empty(py);
        for ((name, start_line), outer) in built.chains {
            chains.append((name, start_line, PyList::new(py, outer)?))?;
        }
        Ok(UnitColumns {
            lows: machine_bytes(py, &built.lows, u64::to_ne_bytes)?,
            highs: machine_bytes(py, &built.highs, u64::to_ne_bytes)?,
            files: machine_bytes(py, &built.files, i64::to_ne_bytes)?,
            lines: machine_bytes(py, &built.lines, i64::to_ne_bytes)?,
            columns: machine_bytes(py, &built.columns, i64::to_ne_bytes)?,
            heads: machine_bytes(py, &built.heads, i64::to_ne_bytes)?,
            file_names: PyList::new(py, built.file_names)?.unbind(),
            chains: chains.unbind(),
            head_keys: PyList::new(py, built.head_keys)?.unbind(),
        })
    }
}

fn section(sections: &Bound<'_, PyDict>, name: &str) -> PyResult<Vec<u8>> {
    Ok(match sections.get_item(name)? {
        Some(data) => data.extract::<&[u8]>()?.to_vec(),
        None => Vec::new(),
    })
}

impl DwarfUnits {
    fn decide(&self, py: Python<'_>, unit_offset: u64, functions_only: bool) -> PyResult<Decided<Columns>> {
        let symbols = self.symbols.get();
        let (sections, units) = (&self.sections, &self.units);
        py.detach(|| catch_unwind(AssertUnwindSafe(|| build_unit(sections, units, symbols, unit_offset, functions_only))))
            .map_err(|payload| {
                CompiledDwarfError::new_err(format!(
                    "the compiled DWARF reader failed ({})",
                    panic_message(payload.as_ref())
                ))
            })
    }
}

#[pymethods]
impl DwarfUnits {
    #[new]
    fn new(sections: &Bound<'_, PyDict>, little_endian: bool, address_size: u8, symbols: Py<SymbolBounds>) -> PyResult<Self> {
        if !(1..=8).contains(&address_size) {
            return Err(CompiledDwarfError::new_err(format!("address size {address_size}")));
        }
        let sections = Sections {
                info: section(sections, ".debug_info")?,
                abbrev: section(sections, ".debug_abbrev")?,
                str: section(sections, ".debug_str")?,
                line_str: section(sections, ".debug_line_str")?,
                str_offsets: section(sections, ".debug_str_offsets")?,
                addr: section(sections, ".debug_addr")?,
                ranges: section(sections, ".debug_ranges")?,
                rnglists: section(sections, ".debug_rnglists")?,
                line: section(sections, ".debug_line")?,
                endian: if little_endian { gimli::RunTimeEndian::Little } else { gimli::RunTimeEndian::Big },
                address_size,
        };
        let units = catch_unwind(AssertUnwindSafe(|| unit_spans(&sections))).map_err(|payload| {
            CompiledDwarfError::new_err(format!("the compiled DWARF reader failed ({})", panic_message(payload.as_ref())))
        })?;
        Ok(DwarfUnits { sections, units, symbols })
    }

    /// The runs of the unit whose header is at `unit_offset` in .debug_info; None where the
    /// reference must decide.
    fn unit_runs(&self, py: Python<'_>, unit_offset: u64, functions_only: bool) -> PyResult<Option<UnitColumns>> {
        match self.decide(py, unit_offset, functions_only)? {
            Ok(built) => Ok(Some(UnitColumns::from_columns(py, built)?)),
            Err(_) => Ok(None),
        }
    }

    /// Why `unit_runs` leaves the unit to the reference (None: it answers it), for measurement.
    fn deferral(&self, py: Python<'_>, unit_offset: u64, functions_only: bool) -> PyResult<Option<&'static str>> {
        Ok(self.decide(py, unit_offset, functions_only)?.err().map(|defer| defer.0))
    }
}

pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<DwarfUnits>()?;
    module.add_class::<UnitColumns>()?;
    module.add_class::<SymbolBounds>()?;
    module.add("CompiledDwarfError", module.py().get_type::<CompiledDwarfError>())?;
    Ok(())
}
