//! The per-code tables of `SubtreeSkipper` (`formats/dwarf/skip.py`), the twin of the loop in its
//! `__init__` (`_skip_layout` and `_layout` of every abbreviation): DWARF 5, 7.5.3 and 7.5.6, a
//! DIE's size from its abbreviation's forms.
//!
//! The Python loop stays the reference. This twin returns the same five lists (size in outer
//! walks, size in inner walks, children flag, variable steps, fixed tail; indexed by code), or
//! None where an implicit constant is past `i64`, a code is not an unsigned int or a children
//! flag not a bool: the loop then runs.
//! A form the reader does not know, or `DW_FORM_indirect`, stops a walk there, as in the loop.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::die_walk::form_layout;

const STOP: i64 = -2;
const VARIABLE: i64 = -1;
const MAX_DENSE_CODE: u64 = 1 << 16;

const KIND_FIXED: u8 = 0;
const KIND_IMPLICIT: u8 = 8;
const KIND_INDIRECT: u8 = 9;

const TAG_CLASS: u64 = 0x02;
const TAG_ENUMERATION: u64 = 0x04;
const TAG_STRUCTURE: u64 = 0x13;
const TAG_UNION: u64 = 0x17;
const TAG_INLINED_SUBROUTINE: u64 = 0x1D;
const TAG_SUBPROGRAM: u64 = 0x2E;
const TAG_NAMESPACE: u64 = 0x39;
const AT_LOW_PC: u64 = 0x11;
const AT_RANGES: u64 = 0x55;

/// The variable-size attributes of one abbreviation, as (fixed bytes before it, kind, form, implicit constant).
type Steps = Vec<(u64, u8, u64, i64)>;
/// One code's (outer size, inner size, children flag, steps, fixed tail).
type Layout = (i64, i64, u8, Steps, u64);

/// `_layout`: (size or VARIABLE or STOP, variable steps, fixed tail).
fn layout(attributes: &[(u64, u64, i64)], addr_size: u8, offset_size: u8, version: u64) -> (i64, Steps, u64) {
    let mut steps = Vec::new();
    let mut pending: u64 = 0;
    for &(_, form, implicit) in attributes {
        let Some((kind, size)) = form_layout(form, addr_size, offset_size, version) else {
            return (STOP, Vec::new(), 0);
        };
        if kind == KIND_FIXED {
            pending += u64::from(size);
        } else if kind == KIND_INDIRECT {
            return (STOP, Vec::new(), 0);
        } else if kind != KIND_IMPLICIT {
            steps.push((pending, kind, form, implicit));
            pending = 0;
        }
    }
    if steps.is_empty() {
        return (pending as i64, steps, 0);
    }
    (VARIABLE, steps, pending)
}

/// `_skip_layout` of one abbreviation.
fn skip_layout(tag: u64, has_children: bool, attributes: &[(u64, u64, i64)], addr_size: u8, offset_size: u8,
               version: u64) -> Layout {
    let (size, steps, tail) = layout(attributes, addr_size, offset_size, version);
    let has_code = attributes.iter().any(|&(attribute, _, _)| attribute == AT_LOW_PC || attribute == AT_RANGES);
    let children = u8::from(has_children);
    if tag == TAG_SUBPROGRAM && has_code {
        return (STOP, STOP, children, steps, tail);
    }
    let is_scope = matches!(tag, TAG_NAMESPACE | TAG_CLASS | TAG_STRUCTURE | TAG_UNION | TAG_ENUMERATION);
    let outer = if is_scope && has_children { STOP } else { size };
    let inner = if tag == TAG_INLINED_SUBROUTINE && has_code { STOP } else { size };
    (outer, inner, children, steps, tail)
}

/// Twin of `SubtreeSkipper.__init__`'s tables for `abbrevs` (code -> `Abbrev`) in the encoding
/// `Unit.encoding` names: (outer, inner, children, steps, tails), or None (see the module docstring).
#[pyfunction]
pub fn skip_tables<'py>(
    py: Python<'py>,
    abbrevs: &Bound<'py, PyDict>,
    version: u64,
    addr_size: u8,
    offset_size: u8,
    little_endian: bool,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let _ = little_endian; // sizes do not depend on byte order
    let mut layouts: Vec<(usize, Layout)> = Vec::with_capacity(abbrevs.len());
    let mut count = 0usize;
    for (code, abbrev) in abbrevs.iter() {
        let Ok(code) = code.extract::<u64>() else { return Ok(None) };
        if code >= MAX_DENSE_CODE {
            continue;
        }
        let abbrev = abbrev.cast_into::<PyTuple>()?;
        // Abbrev(code, tag, has_children, attributes); a number past 64 bits matches no tag, attribute or form.
        let tag = abbrev.get_item(1)?.extract::<u64>().unwrap_or(u64::MAX);
        // The loop stores int(has_children): a bool from the parser; anything else is left to it.
        let Ok(has_children) = abbrev.get_item(2)?.extract::<bool>() else { return Ok(None) };
        let mut attributes = Vec::new();
        for entry in abbrev.get_item(3)?.try_iter()? {
            let entry = entry?.cast_into::<PyTuple>()?;
            let Ok(implicit) = entry.get_item(2)?.extract::<i64>() else { return Ok(None) };
            attributes.push((
                entry.get_item(0)?.extract::<u64>().unwrap_or(u64::MAX),
                entry.get_item(1)?.extract::<u64>().unwrap_or(u64::MAX),
                implicit,
            ));
        }
        let code = code as usize;
        count = count.max(code + 1);
        layouts.push((code, skip_layout(tag, has_children, &attributes, addr_size, offset_size, version)));
    }
    let count = count.max(1);
    let mut outer = vec![STOP; count];
    let mut inner = vec![STOP; count];
    let mut children = vec![0u8; count];
    let mut tails = vec![0u64; count];
    let empty = PyTuple::empty(py);
    let steps = PyList::new(py, std::iter::repeat_n(&empty, count))?;
    for (code, (outer_size, inner_size, has_children, code_steps, tail)) in layouts {
        outer[code] = outer_size;
        inner[code] = inner_size;
        children[code] = has_children;
        tails[code] = tail;
        steps.set_item(code, PyTuple::new(py, code_steps)?)?;
    }
    Ok(Some(PyTuple::new(py, [
        PyList::new(py, outer)?.into_any(),
        PyList::new(py, inner)?.into_any(),
        PyList::new(py, children)?.into_any(),
        steps.into_any(),
        PyList::new(py, tails)?.into_any(),
    ])?))
}
