//! Record scans over a PDB's fixed streams: the twins of `formats/pdb/streams.py`'s
//! `TypeRecords._index` (the offset of every TPI or IPI record, "The TPI and IPI Hash Streams")
//! and `iter_public_records` (the `S_PUB32` records the publics' address map points at, "The
//! Public Symbol Stream"). The Python functions stay the reference (tests/test_pdb_native.py);
//! every read is bounds-checked, names are handed back as bytes for Python to decode alike.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::pdb_module::{u16_at, u32_at};

const S_PUB32: u16 = 0x110E;

/// `TypeRecords._index`: the offsets of the records in `data[start:end]` (a broken record ends the list).
#[pyfunction]
fn type_record_offsets(data: &[u8], start: u64, end: u64) -> Vec<u64> {
    let mut offsets = Vec::new();
    let mut position = start;
    while position + 4 <= end {
        let length = u64::from(u16_at(data, position)); // 0 past the data: a broken record
        if length < 2 || position + 2 + length > end {
            break;
        }
        offsets.push(position);
        position += 2 + length;
    }
    offsets
}

/// `iter_public_records`: (flags, section, offset, name) of each S_PUB32 at `offsets`.
#[pyfunction]
fn public_records<'py>(
    py: Python<'py>,
    records: &[u8],
    offsets: Vec<u64>,
) -> Vec<(u32, u16, u32, Bound<'py, PyBytes>)> {
    let mut found = Vec::new();
    for position in offsets {
        let Ok(at) = usize::try_from(position) else { continue };
        if at.saturating_add(14) > records.len() {
            continue;
        }
        let (length, kind) = (u16_at(records, position), u16_at(records, position + 2)); // inside: checked above
        let end = at + 2 + usize::from(length);
        if kind != S_PUB32 || length < 12 || end > records.len() {
            continue;
        }
        let name = &records[at + 14..end];
        let name = name.iter().position(|byte| *byte == 0).map_or(name, |nul| &name[..nul]);
        let (flags, offset, section) = (u32_at(records, position + 4), u32_at(records, position + 8), u16_at(records, position + 12));
        found.push((flags, section, offset, PyBytes::new(py, name)));
    }
    found
}

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(type_record_offsets, module)?)?;
    module.add_function(wrap_pyfunction!(public_records, module)?)?;
    Ok(())
}
