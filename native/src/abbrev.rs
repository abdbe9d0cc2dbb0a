//! Abbreviation tables (DWARF 5, 7.5.3), the twin of `read_abbrev_table` in
//! `formats/dwarf/abbrev.py`.
//!
//! The Python function stays the reference. This twin returns the same `{code: Abbrev}` dict (and
//! the offset past the table's terminating 0 code) and
//! leaves the same entries in the `shapes` memo (it looks each entry up by the same bytes and
//! stores it under the same bytes), or returns None where the reference raises (a table that runs
//! off the section) or a number is past 64 bits (a code, tag, attribute or form; an implicit
//! constant past `i64`): the reference then parses the table, and raises its own error. Entries
//! it stored in `shapes` before handing back are exact (the memo maps an entry's bytes to what
//! they decode to), so the reference reads them as it would have read its own.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

const FORM_IMPLICIT_CONST: u64 = 0x21;

/// The reference decides.
struct Reference;

type Parsed<T> = Result<T, Reference>;

fn byte(data: &[u8], offset: usize) -> Parsed<u8> {
    data.get(offset).copied().ok_or(Reference)
}

/// `read_uleb`, for numbers that fit 64 bits.
fn uleb(data: &[u8], mut offset: usize) -> Parsed<(u64, usize)> {
    let mut value: u64 = 0;
    let mut shift: u32 = 0;
    loop {
        let byte = byte(data, offset)?;
        offset += 1;
        let bits = u64::from(byte & 0x7F);
        if bits != 0 {
            if shift >= 64 || (bits << shift) >> shift != bits {
                return Err(Reference);
            }
            value |= bits << shift;
        }
        if byte < 0x80 {
            return Ok((value, offset));
        }
        shift = shift.saturating_add(7);
    }
}

/// `read_sleb`, for numbers of at most ten bytes that fit `i64`.
fn sleb(data: &[u8], mut offset: usize) -> Parsed<(i64, usize)> {
    let mut value: i128 = 0;
    let mut shift: u32 = 0;
    loop {
        if shift >= 70 {
            return Err(Reference);
        }
        let byte = byte(data, offset)?;
        offset += 1;
        value |= i128::from(byte & 0x7F) << shift;
        shift += 7;
        if byte < 0x80 {
            if byte & 0x40 != 0 {
                value -= 1i128 << shift;
            }
            return i64::try_from(value).map(|value| (value, offset)).map_err(|_| Reference);
        }
    }
}

/// (attribute, form, implicit constant) in the order the DIE stores them.
type Attributes = Vec<(u64, u64, i64)>;

/// `_parse_entry`: (tag, has children, attributes, offset past the entry).
fn parse_entry(data: &[u8], offset: usize) -> Parsed<(u64, bool, Attributes, usize)> {
    let (tag, mut offset) = uleb(data, offset)?;
    let has_children = byte(data, offset)? != 0;
    offset += 1;
    let mut attributes = Vec::new();
    loop {
        let (attribute, next) = uleb(data, offset)?;
        let (form, next) = uleb(data, next)?;
        offset = next;
        if attribute == 0 && form == 0 {
            return Ok((tag, has_children, attributes, offset));
        }
        let mut implicit = 0;
        if form == FORM_IMPLICIT_CONST {
            (implicit, offset) = sleb(data, offset)?;
        }
        attributes.push((attribute, form, implicit));
    }
}

/// `data.find(b"\0\0", offset) + 2`, or None when there is none.
fn double_nul_end(data: &[u8], offset: usize) -> Option<usize> {
    data.get(offset..)?.windows(2).position(|pair| pair == [0, 0]).map(|found| offset + found + 2)
}

/// Twin of `read_abbrev_table(data, offset, shapes)`: the table and the offset past its
/// terminating 0 code; `abbrev` is the `Abbrev` class. None: the reference must parse the table
/// (see the module docstring).
#[pyfunction]
pub fn parse_abbrev_table<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    offset: u64,
    shapes: &Bound<'py, PyDict>,
    abbrev: &Bound<'py, PyAny>,
) -> PyResult<Option<(Bound<'py, PyDict>, u64)>> {
    // A section held as another buffer (a memoryview) is left to the reference.
    let Ok(data) = data.cast::<PyBytes>() else {
        return Ok(None);
    };
    let bytes = data.as_bytes();
    let Ok(mut offset) = usize::try_from(offset) else {
        return Ok(None);
    };
    // tuple.__new__(Abbrev, fields): what Abbrev(*fields) builds, without its Python-level __new__.
    let tuple_new = py.get_type::<PyTuple>().getattr(intern!(py, "__new__"))?;
    let table = PyDict::new(py);
    loop {
        let Ok((code, next)) = uleb(bytes, offset) else {
            return Ok(None);
        };
        offset = next;
        if code == 0 {
            return Ok(Some((table, offset as u64)));
        }
        if let Some(end) = double_nul_end(bytes, offset) {
            let key = PyBytes::new(py, &bytes[offset..end]);
            if let Some(shape) = shapes.get_item(&key)? {
                let shape = shape.cast_into::<PyTuple>()?;
                let fields = PyTuple::new(py, [code.into_pyobject(py)?.into_any(), shape.get_item(0)?,
                                               shape.get_item(1)?, shape.get_item(2)?])?;
                table.set_item(code, tuple_new.call1((abbrev, fields))?)?;
                offset = end;
                continue;
            }
        }
        let start = offset;
        let Ok((tag, has_children, attributes, next)) = parse_entry(bytes, offset) else {
            return Ok(None);
        };
        offset = next;
        let attributes = PyTuple::new(py, attributes.iter().map(|entry| entry.into_pyobject(py)).collect::<PyResult<Vec<_>>>()?)?;
        let shape = (tag, has_children, &attributes).into_pyobject(py)?;
        shapes.set_item(PyBytes::new(py, &bytes[start..offset]), &shape)?;
        let fields = (code, tag, has_children, attributes);
        table.set_item(code, tuple_new.call1((abbrev, fields))?)?;
    }
}

/// Where the table at `offset` ends (past its 0 code), and where the last entry of code `code`
/// starts after its code (None: the table has none), without building it: what an open needs of
/// a unit whose other DIEs the compiled source reads (`formats/dwarf/abbrev.py`
/// `LazyAbbrevTable`). None where `read_abbrev_table`'s twin would leave the table to the
/// reference: the reference then parses it, and raises what it raises.
#[pyfunction]
pub fn abbrev_table_extent(data: &Bound<'_, PyAny>, offset: u64, code: u64) -> Option<(u64, Option<u64>)> {
    let bytes = data.cast::<PyBytes>().ok()?.as_bytes();
    let mut offset = usize::try_from(offset).ok()?;
    let mut found = None;
    loop {
        let (entry_code, next) = uleb(bytes, offset).ok()?;
        if entry_code == 0 {
            return Some((next as u64, found));
        }
        if entry_code == code {
            found = Some(next as u64);
        }
        (_, _, _, offset) = parse_entry(bytes, next).ok()?;
    }
}
