//! `symbolize.formats._kernels`: compiled twins of hot loops in symbolize's readers.
//!
//! Optional: `symbolize.formats.native` loads this module when it was built and
//! `SYMBOLIZE_PURE_PYTHON` is not set; the Python functions stay the reference and the fallback.
//! Each kernel takes and returns what its Python twin does. The kernels are safe Rust (the crate
//! forbids `unsafe`); a panic is caught and raised as the typed error the Python reader raises.

#![forbid(unsafe_code)]

mod abbrev;
mod cabinet;
mod die_walk;
pub(crate) mod dwarf;
/// What the cargo-fuzz targets (native/fuzz/) drive: not an API.
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::dwarf::fuzzing::{build_every_unit, SECTION_NAMES};
}
mod line_header;
mod line_program;
mod pdb_module;
mod pdb_records;
mod profile_entries;
mod ranges;
mod skip_tables;
mod unit_runs;
mod warm;
mod warm_frames;
mod warm_index;
mod warm_text;

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::PyZeroDivisionError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use line_program::{Header, Outcome, Rows};

pyo3::import_exception!(symbolize.formats.dwarf.reader, DwarfFormatError);

/// The message of a caught panic, for the error raised in its place.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// Native-endian bytes of `values`, for `array.frombytes` (the arrays hold machine integers).
fn machine_bytes<'py, T: Copy, const N: usize>(
    py: Python<'py>,
    values: &[T],
    to_bytes: fn(T) -> [u8; N],
) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, values.len() * N, |buffer| {
        for (chunk, value) in buffer.chunks_exact_mut(N).zip(values) {
            chunk.copy_from_slice(&to_bytes(*value));
        }
        Ok(())
    })
}

/// Twin of `_run_program` in `formats/dwarf/lines.py`: same arguments, same rows and sequences
/// appended to `table`, same DwarfFormatError messages. Returns True when decoded, False where an
/// address steps back (rows kept) as the reference does, and None, with `table` untouched, where a
/// value outgrows 64 bits: the reference then decodes the program.
#[pyfunction]
#[pyo3(signature = (table, data, offset, position, end, unit, min_length, line_base, line_range, opcode_base,
                    standard_lengths, *, keep_every_row))]
#[allow(clippy::too_many_arguments)]
fn run_line_program(
    py: Python<'_>,
    table: &Bound<'_, PyAny>,
    data: &[u8],
    offset: u64,
    position: u128,
    end: u128,
    unit: &Bound<'_, PyAny>,
    min_length: u8,
    line_base: i8,
    line_range: u8,
    opcode_base: u8,
    standard_lengths: Vec<u64>,
    keep_every_row: bool,
) -> PyResult<Option<bool>> {
    if line_range == 0 {
        return Err(PyZeroDivisionError::new_err("integer division or modulo by zero"));
    }
    let header = Header {
        addr_size: unit.getattr(intern!(py, "addr_size"))?.extract()?,
        little_endian: unit
            .getattr(intern!(py, "sections"))?
            .getattr(intern!(py, "little_endian"))?
            .extract()?,
        min_length,
        line_base,
        line_range,
        opcode_base,
        standard_lengths: &standard_lengths,
    };
    // data[position:end], clamped as a Python slice is.
    let length = data.len() as u128;
    let start = position.min(length) as usize;
    let stop = end.min(length).max(start as u128) as usize;
    let program = &data[start..stop];

    let decoded = py.detach(|| {
        catch_unwind(AssertUnwindSafe(|| {
            let mut rows = Rows::default();
            line_program::run(&header, program, keep_every_row, &mut rows).map(|outcome| (outcome, rows))
        }))
    });
    let (outcome, rows) = match decoded {
        Ok(Ok(decoded)) => decoded,
        Ok(Err(failure)) => return Err(DwarfFormatError::new_err(failure.message(offset))),
        Err(payload) => {
            return Err(DwarfFormatError::new_err(format!(
                "line program at {offset:#x}: the compiled decoder failed ({})",
                panic_message(payload.as_ref())
            )))
        }
    };
    if outcome == Outcome::Beyond {
        return Ok(None);
    }

    let addresses = table.getattr(intern!(py, "addresses"))?;
    let base = addresses.len()?;
    let frombytes = intern!(py, "frombytes");
    addresses.call_method1(frombytes, (machine_bytes(py, &rows.addresses, u64::to_ne_bytes)?,))?;
    table
        .getattr(intern!(py, "file_indexes"))?
        .call_method1(frombytes, (machine_bytes(py, &rows.files, i64::to_ne_bytes)?,))?;
    table
        .getattr(intern!(py, "lines"))?
        .call_method1(frombytes, (machine_bytes(py, &rows.lines, i64::to_ne_bytes)?,))?;
    table
        .getattr(intern!(py, "columns"))?
        .call_method1(frombytes, (machine_bytes(py, &rows.columns, i64::to_ne_bytes)?,))?;
    table
        .getattr(intern!(py, "discriminators"))?
        .call_method1(frombytes, (machine_bytes(py, &rows.discriminators, i64::to_ne_bytes)?,))?;
    let sequences = table.getattr(intern!(py, "sequences"))?.cast_into::<PyList>()?;
    for &(low, high, first, stop) in &rows.sequences {
        sequences.append((low, high, first + base, stop + base))?;
    }
    Ok(Some(outcome == Outcome::Complete))
}

#[pymodule]
fn _kernels(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(run_line_program, module)?)?;
    module.add_function(wrap_pyfunction!(line_header::line_file_names, module)?)?;
    module.add_function(wrap_pyfunction!(abbrev::parse_abbrev_table, module)?)?;
    module.add_function(wrap_pyfunction!(profile_entries::count_profile_entries, module)?)?;
    module.add_function(wrap_pyfunction!(skip_tables::skip_tables, module)?)?;
    module.add_function(wrap_pyfunction!(die_walk::walk_dies, module)?)?;
    module.add_class::<die_walk::WalkPlans>()?;
    module.add_class::<die_walk::PlanCache>()?;
    module.add_function(wrap_pyfunction!(ranges::decode_ranges, module)?)?;
    module.add_function(wrap_pyfunction!(ranges::node_ranges, module)?)?;
    module.add_function(wrap_pyfunction!(unit_runs::build_unit_runs, module)?)?;
    dwarf::register(module)?;
    warm::register(module)?;
    pdb_module::register(module)?;
    pdb_records::register(module)?;
    cabinet::register(module)?;
    Ok(())
}
