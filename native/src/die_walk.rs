//! The abbreviation-driven DIE walk of `formats/dwarf/scan.py` (`_walk`), its compiled twin.
//!
//! DWARF 5, 7.5.2-7.5.3 (DIEs as an abbreviation code and one value per listed attribute, forms
//! in 7.5.6); what the walk keeps and skips is `scan.py`'s docstring. The Python function stays
//! the reference: this twin takes the same arguments (plus its compiled abbreviation plans and the
//! reference's range decoder, which it calls back), appends the same nodes, scopes, deferred
//! subtrees and function ranges to the same `UnitIndex`, and leaves `stack` as the reference
//! does. Where the reference would raise (a read past the section, an undefined abbreviation, an
//! unknown form, a callback that raises) or a value outgrows 64 bits, the twin touches nothing and
//! returns False: the caller then runs the reference, which raises its own error with its own
//! message. So errors are the reference's by construction.
//!
//! Every read goes through `Bytes`, which checks the section's length; every offset addition is
//! checked. Subtrees are skipped through `DW_AT_sibling` or the reference's `SubtreeSkipper`
//! (called back, so that its memo of walked subtrees stays the one the reference sees).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::ranges::{Failure, Raw, RangeSource};

// Layout kinds (`abbrev.py`).
const KIND_FIXED: u8 = 0;
const KIND_ULEB: u8 = 1;
const KIND_SLEB: u8 = 2;
const KIND_CSTRING: u8 = 3;
const KIND_BLOCK_ULEB: u8 = 4;
const KIND_BLOCK1: u8 = 5;
const KIND_BLOCK2: u8 = 6;
const KIND_BLOCK4: u8 = 7;
const KIND_IMPLICIT: u8 = 8;
const KIND_INDIRECT: u8 = 9;

// Roles (`scan.py`).
const ROLE_SKIP: u8 = 0;
const ROLE_FUNCTION: u8 = 1;
const ROLE_SCOPE: u8 = 2;
const ROLE_CONTAINER: u8 = 3;
const ROLE_NO_CODE: u8 = 4;

const TAG_CLASS: u64 = 0x02;
const TAG_ENUMERATION: u64 = 0x04;
const TAG_LEXICAL_BLOCK: u64 = 0x0B;
const TAG_COMPILE_UNIT: u64 = 0x11;
const TAG_STRUCTURE: u64 = 0x13;
const TAG_UNION: u64 = 0x17;
const TAG_INLINED_SUBROUTINE: u64 = 0x1D;
const TAG_SUBPROGRAM: u64 = 0x2E;
const TAG_NAMESPACE: u64 = 0x39;
const TAG_PARTIAL_UNIT: u64 = 0x3C;
const TAG_SKELETON_UNIT: u64 = 0x4A;

const AT_LOW_PC: u64 = 0x11;
const AT_RANGES: u64 = 0x55;

const FORM_REF_ADDR: u64 = 0x10;
const FORM_STRP: u64 = 0x0E;
const FORM_LINE_STRP: u64 = 0x1F;
const FORM_STRX: u64 = 0x1A;
const FORM_STRX1: u64 = 0x25;
const FORM_STRX2: u64 = 0x26;
const FORM_STRX3: u64 = 0x27;
const FORM_STRX4: u64 = 0x28;
const FORM_GNU_STR_INDEX: u64 = 0x1F02;
const FORM_REF1: u64 = 0x11;
const FORM_REF_UDATA: u64 = 0x15;

/// Slots the walk keeps (`scan._SLOTS`): sibling 0, name 1, linkage name 2, low_pc 3, high_pc 4,
/// ranges 5, abstract_origin 6, specification 7, call file/line/column 8-10, decl_line 11,
/// decl_file 12, the call's discriminator (DW_AT_GNU_discriminator) 13.
fn slot_of(attribute: u64) -> i8 {
    match attribute {
        0x01 => 0,
        0x03 => 1,
        0x6E | 0x2007 => 2,
        0x11 => 3,
        0x12 => 4,
        0x55 => 5,
        0x31 => 6,
        0x47 => 7,
        0x58 => 8,
        0x59 => 9,
        0x57 => 10,
        0x3B => 11,
        0x3A => 12,
        0x2136 => 13,
        _ => -1,
    }
}

/// `abbrev.form_layout`: (kind, fixed size), or None for a form the reader does not know.
pub(crate) fn form_layout(form: u64, addr_size: u8, offset_size: u8, version: u64) -> Option<(u8, u8)> {
    Some(match form {
        0x0B | 0x11 | 0x0C | 0x25 | 0x29 => (KIND_FIXED, 1),
        0x05 | 0x12 | 0x26 | 0x2A => (KIND_FIXED, 2),
        0x27 | 0x2B => (KIND_FIXED, 3),
        0x06 | 0x13 | 0x28 | 0x2C | 0x1C => (KIND_FIXED, 4),
        0x07 | 0x14 | 0x20 | 0x24 => (KIND_FIXED, 8),
        0x1E => (KIND_FIXED, 16),
        0x19 => (KIND_FIXED, 0),
        0x0E | 0x1F | 0x17 | 0x1D | 0x1F20 | 0x1F21 => (KIND_FIXED, offset_size),
        0x01 => (KIND_FIXED, addr_size),
        0x10 => (KIND_FIXED, if version == 2 { addr_size } else { offset_size }),
        0x0F | 0x15 | 0x1A | 0x1B | 0x22 | 0x23 | 0x1F01 | 0x1F02 => (KIND_ULEB, 0),
        0x0D => (KIND_SLEB, 0),
        0x08 => (KIND_CSTRING, 0),
        0x09 | 0x18 => (KIND_BLOCK_ULEB, 0),
        0x0A => (KIND_BLOCK1, 0),
        0x03 => (KIND_BLOCK2, 0),
        0x04 => (KIND_BLOCK4, 0),
        0x21 => (KIND_IMPLICIT, 0),
        0x16 => (KIND_INDIRECT, 0),
        _ => return None,
    })
}

#[derive(Clone, Copy)]
struct Step {
    /// The slot kept, or -1 for an attribute only stepped over.
    slot: i8,
    kind: u8,
    size: u8,
    form: u64,
    implicit: i64,
}

/// `scan.compile_plan` of one abbreviation, or a plan the twin cannot follow (`usable` false: a
/// form the reader does not know, or an implicit constant past 64 bits): the reference decides.
struct CodePlan {
    tag: u64,
    has_children: bool,
    role: u8,
    usable: bool,
    steps: Box<[Step]>,
}

/// Codes past this are kept in a map, so the table stays a dense list for real codes.
const MAX_DENSE_CODE: u64 = 1 << 16;

/// The compiled plans of one abbreviation table in one unit encoding (`scan.SharedTables`).
#[pyclass(frozen, module = "symbolize.formats._kernels")]
pub struct WalkPlans {
    dense: Vec<Option<Arc<CodePlan>>>,
    sparse: HashMap<u64, Arc<CodePlan>>,
    little_endian: bool,
}

impl WalkPlans {
    fn plan(&self, code: u64) -> Option<&CodePlan> {
        if code < MAX_DENSE_CODE {
            self.dense.get(code as usize).and_then(Option::as_deref)
        } else {
            self.sparse.get(&code).map(Arc::as_ref)
        }
    }
}

fn compile_plan(abbrev: &Bound<'_, PyAny>, addr_size: u8, offset_size: u8, version: u64) -> PyResult<CodePlan> {
    // A number past 64 bits matches no tag, attribute or form the reader knows.
    let tag = abbrev.getattr(intern!(abbrev.py(), "tag"))?.extract::<u64>().unwrap_or(u64::MAX);
    let has_children = abbrev.getattr(intern!(abbrev.py(), "has_children"))?.is_truthy()?;
    let mut attributes = Vec::new();
    for entry in abbrev.getattr(intern!(abbrev.py(), "attributes"))?.try_iter()? {
        let (attribute, form, implicit): (Bound<'_, PyAny>, Bound<'_, PyAny>, Bound<'_, PyAny>) = entry?.extract()?;
        attributes.push((
            attribute.extract::<u64>().unwrap_or(u64::MAX),
            form.extract::<u64>().unwrap_or(u64::MAX),
            implicit.extract::<i64>().ok(),
        ));
    }
    let is_function = tag == TAG_SUBPROGRAM || tag == TAG_INLINED_SUBROUTINE;
    let is_scope = matches!(tag, TAG_NAMESPACE | TAG_CLASS | TAG_STRUCTURE | TAG_UNION | TAG_ENUMERATION);
    let is_container = matches!(tag, TAG_LEXICAL_BLOCK | TAG_COMPILE_UNIT | TAG_PARTIAL_UNIT | TAG_SKELETON_UNIT);
    // wanted: which slots are kept (None: all of them).
    let (role, wanted): (u8, Option<&[i8]>) = if is_function {
        if attributes.iter().any(|(attribute, _, _)| *attribute == AT_LOW_PC || *attribute == AT_RANGES) {
            (ROLE_FUNCTION, None)
        } else {
            (ROLE_NO_CODE, Some(&[0]))
        }
    } else if is_scope {
        (ROLE_SCOPE, Some(&[0, 1]))
    } else if is_container {
        (ROLE_CONTAINER, Some(&[0]))
    } else {
        (ROLE_SKIP, Some(if has_children { &[0] } else { &[] }))
    };
    let mut usable = true;
    let mut steps = Vec::with_capacity(attributes.len());
    for (attribute, form, implicit) in attributes {
        let mut slot = slot_of(attribute);
        if slot >= 0 && wanted.is_some_and(|wanted| !wanted.contains(&slot)) {
            slot = -1;
        }
        let Some((kind, size)) = form_layout(form, addr_size, offset_size, version) else {
            usable = false;
            break;
        };
        let Some(implicit) = implicit else {
            usable = false;
            break;
        };
        steps.push(Step { slot, kind, size, form, implicit });
    }
    Ok(CodePlan { tag, has_children, role, usable, steps: steps.into_boxed_slice() })
}

/// What a plan depends on besides the attributes: tag, children flag, version, address and offset size.
type PlanShape = (u64, bool, u64, u8, u8);
/// (address of the attributes tuple, shape) -> (that tuple, its plan).
type PlanMap = HashMap<(usize, PlanShape), (Py<PyAny>, Arc<CodePlan>)>;

/// Compiled plans by abbreviation shape, for all the tables of a file (`scan.SharedTables`):
/// compilers repeat the same abbreviations in every unit's table, and the parser hands out one
/// attributes tuple per distinct entry (`abbrev.ShapeBytes`), so a shape is found by that tuple's
/// identity. The cache holds each tuple it was keyed by, so no other object can take its address.
#[pyclass(frozen, module = "symbolize.formats._kernels")]
pub struct PlanCache {
    plans: Mutex<PlanMap>,
}

#[pymethods]
impl PlanCache {
    #[new]
    fn new() -> Self {
        PlanCache { plans: Mutex::new(HashMap::new()) }
    }
}

#[pymethods]
impl WalkPlans {
    /// Plans for every abbreviation of `abbrevs` (code -> `Abbrev`) in the encoding `Unit.encoding`
    /// names; `cache`: plans already compiled for the file's other tables.
    #[new]
    #[pyo3(signature = (abbrevs, version, addr_size, offset_size, little_endian, cache=None))]
    fn new(
        abbrevs: &Bound<'_, PyDict>,
        version: u64,
        addr_size: u8,
        offset_size: u8,
        little_endian: bool,
        cache: Option<&Bound<'_, PlanCache>>,
    ) -> PyResult<Self> {
        let mut dense: Vec<Option<Arc<CodePlan>>> = Vec::new();
        let mut sparse = HashMap::new();
        let mut cached = match cache {
            Some(cache) => Some(cache.get().plans.lock().map_err(|_| PyRuntimeError::new_err("plan cache poisoned"))?),
            None => None,
        };
        for (code, abbrev) in abbrevs.iter() {
            let Ok(code) = code.extract::<u64>() else { continue };
            let plan = match (&mut cached, abbrev.cast::<PyTuple>()) {
                (Some(cached), Ok(fields)) if fields.len() == 4 => {
                    // Abbrev(code, tag, has_children, attributes), read as compile_plan reads them.
                    let tag = fields.get_item(1)?.extract::<u64>().unwrap_or(u64::MAX);
                    let has_children = fields.get_item(2)?.is_truthy()?;
                    let attributes = fields.get_item(3)?;
                    let key = (attributes.as_ptr() as usize, (tag, has_children, version, addr_size, offset_size));
                    match cached.get(&key) {
                        Some((_, plan)) => Arc::clone(plan),
                        None => {
                            let plan = Arc::new(compile_plan(&abbrev, addr_size, offset_size, version)?);
                            cached.insert(key, (attributes.unbind(), Arc::clone(&plan)));
                            plan
                        }
                    }
                }
                _ => Arc::new(compile_plan(&abbrev, addr_size, offset_size, version)?),
            };
            if code < MAX_DENSE_CODE {
                let code = code as usize;
                if dense.len() <= code {
                    dense.resize_with(code + 1, || None);
                }
                dense[code] = Some(plan);
            } else {
                sparse.insert(code, plan);
            }
        }
        Ok(WalkPlans { dense, sparse, little_endian })
    }
}

/// Why the walk stopped before its end: the reference decides, or a Python error to pass on.
enum Stop {
    Reference,
    Python(PyErr),
}

impl From<std::convert::Infallible> for Stop {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

impl From<PyErr> for Stop {
    fn from(error: PyErr) -> Self {
        Stop::Python(error)
    }
}

type Walked<T> = Result<T, Stop>;

/// Checked reads of the section; a read past its end is `Stop::Reference` (the reference raises).
struct Bytes<'a> {
    data: &'a [u8],
    little_endian: bool,
}

impl Bytes<'_> {
    #[inline(always)]
    fn byte(&self, offset: u64) -> Walked<u8> {
        usize::try_from(offset).ok().and_then(|at| self.data.get(at)).copied().ok_or(Stop::Reference)
    }

    fn fixed(&self, offset: u64, size: u8) -> Walked<u64> {
        let start = usize::try_from(offset).map_err(|_| Stop::Reference)?;
        let bytes = self.data.get(start..start.checked_add(usize::from(size)).ok_or(Stop::Reference)?).ok_or(Stop::Reference)?;
        let mut value = 0u64;
        for index in 0..bytes.len() {
            let byte = if self.little_endian { bytes[bytes.len() - 1 - index] } else { bytes[index] };
            value = value << 8 | u64::from(byte);
        }
        Ok(value)
    }

    /// (value, offset past it); None for a value past 64 bits.
    fn uleb(&self, mut offset: u64) -> Walked<(Option<u64>, u64)> {
        let mut value: u64 = 0;
        let mut wide = false;
        let mut shift: u32 = 0;
        loop {
            let byte = self.byte(offset)?;
            offset = next(offset, 1)?;
            let payload = u64::from(byte & 0x7F);
            if shift < 64 {
                value |= payload << shift;
                wide |= shift > 57 && payload >> (64 - shift) != 0;
            } else {
                wide |= payload != 0;
            }
            if byte < 0x80 {
                return Ok((if wide { None } else { Some(value) }, offset));
            }
            shift = shift.saturating_add(7);
        }
    }

    /// (value, offset past it); None for a value outside i64.
    fn sleb(&self, mut offset: u64) -> Walked<(Option<i64>, u64)> {
        let mut bits: u128 = 0;
        let mut shift: u32 = 0;
        let mut lost = false;
        loop {
            let byte = self.byte(offset)?;
            offset = next(offset, 1)?;
            let payload = u128::from(byte & 0x7F);
            if shift < 121 {
                bits |= payload << shift;
            } else {
                // Bits this far up are only a sign extension in any value that fits an i64.
                lost = true;
            }
            shift = shift.saturating_add(7);
            if byte < 0x80 {
                if lost {
                    return Ok((None, offset));
                }
                let value = if byte & 0x40 != 0 { (bits as i128) - (1i128 << shift) } else { bits as i128 };
                return Ok((i64::try_from(value).ok(), offset));
            }
        }
    }

    /// Offset past the LEB128 number at `offset`, its value not built.
    fn skip_leb(&self, mut offset: u64) -> Walked<u64> {
        while self.byte(offset)? & 0x80 != 0 {
            offset = next(offset, 1)?;
        }
        next(offset, 1)
    }

    /// Offset of the first zero byte at or after `offset` (`bytes.index(0, offset)`).
    fn zero_at(&self, offset: u64) -> Walked<u64> {
        let start = usize::try_from(offset).map_err(|_| Stop::Reference)?;
        let rest = self.data.get(start..).ok_or(Stop::Reference)?;
        let found = rest.iter().position(|byte| *byte == 0).ok_or(Stop::Reference)?;
        Ok((start + found) as u64)
    }

    /// `data[start:stop]` clamped as a Python slice is.
    fn clamped(&self, start: u64, stop: u64) -> (usize, usize) {
        let length = self.data.len() as u64;
        let start = start.min(length);
        (start as usize, stop.min(length).max(start) as usize)
    }
}

#[inline(always)]
fn next(offset: u64, advance: u64) -> Walked<u64> {
    offset.checked_add(advance).ok_or(Stop::Reference)
}

/// A kept attribute's raw value, as `Unit.read_value` builds it.
#[derive(Clone, Copy)]
enum Value {
    Unsigned(u64),
    Signed(i64),
    /// `data[start:stop]`
    Bytes(usize, usize),
}

/// Reads one kept attribute (`Unit.read_value`): (value, offset past it).
fn read_value(bytes: &Bytes<'_>, step: &Step, offset: u64) -> Walked<(Value, u64)> {
    let wide = |value: Option<u64>| value.ok_or(Stop::Reference);
    Ok(match step.kind {
        KIND_FIXED => match step.size {
            16 => {
                let (start, stop) = bytes.clamped(offset, offset.saturating_add(16));
                (Value::Bytes(start, stop), next(offset, 16)?)
            }
            0 => (Value::Unsigned(1), offset),
            size => (Value::Unsigned(bytes.fixed(offset, size)?), next(offset, u64::from(size))?),
        },
        KIND_ULEB => {
            let (value, offset) = bytes.uleb(offset)?;
            (Value::Unsigned(wide(value)?), offset)
        }
        KIND_SLEB => {
            let (value, offset) = bytes.sleb(offset)?;
            (Value::Signed(value.ok_or(Stop::Reference)?), offset)
        }
        KIND_CSTRING => {
            let zero = bytes.zero_at(offset)?;
            (Value::Bytes(offset as usize, zero as usize), next(zero, 1)?)
        }
        KIND_IMPLICIT => (Value::Signed(step.implicit), offset),
        KIND_BLOCK_ULEB | KIND_BLOCK1 | KIND_BLOCK2 | KIND_BLOCK4 => {
            let (length, start) = match step.kind {
                KIND_BLOCK_ULEB => {
                    let (length, start) = bytes.uleb(offset)?;
                    (wide(length)?, start)
                }
                KIND_BLOCK1 => (u64::from(bytes.byte(offset)?), next(offset, 1)?),
                KIND_BLOCK2 => (bytes.fixed(offset, 2)?, next(offset, 2)?),
                _ => (bytes.fixed(offset, 4)?, next(offset, 4)?),
            };
            let stop = next(start, length)?;
            let (first, last) = bytes.clamped(start, stop);
            (Value::Bytes(first, last), stop)
        }
        // DW_FORM_indirect names its form in the data: left to the reference.
        _ => return Err(Stop::Reference),
    })
}

/// Offset past one attribute nothing keeps (the walk's inline skips and `Unit.skip_value`).
#[inline(always)]
fn skip_value(bytes: &Bytes<'_>, step: &Step, offset: u64) -> Walked<u64> {
    match step.kind {
        KIND_FIXED => next(offset, u64::from(step.size)),
        KIND_ULEB | KIND_SLEB => bytes.skip_leb(offset),
        KIND_IMPLICIT => Ok(offset),
        KIND_BLOCK1 => next(offset, 1 + u64::from(bytes.byte(offset)?)),
        KIND_CSTRING => next(bytes.zero_at(offset)?, 1),
        _ => Ok(read_value(bytes, step, offset)?.1),
    }
}

/// One entry of the walk's stack: (role, node or scope index, enclosing node, enclosing scope),
/// and in a whole walk the DW_AT_sibling link of a node entered (0: none), where its children
/// must end (`scan._walk`'s `sibling_ends`).
#[derive(Clone, Copy)]
struct Entry {
    role: u8,
    item: i64,
    node: i64,
    scope: i64,
    sibling: u64,
}

/// What the walk found, appended to the index only once the whole walk succeeded.
struct Found<'py> {
    node_base: i64,
    scope_base: i64,
    node_ranges: Vec<Bound<'py, PyAny>>,
    node_parent: Vec<i64>,
    node_first: Vec<i64>,
    node_end: Vec<i64>,
    node_next: Vec<i64>,
    node_die: Vec<u64>,
    node_attrs: Vec<Bound<'py, PyDict>>,
    deferred: Vec<(i64, u64, u64)>,
    function_ranges: Vec<Bound<'py, PyTuple>>,
    scope_start: Vec<u64>,
    scope_end: Vec<u64>,
    scope_name: Vec<Bound<'py, PyAny>>,
    scope_parent: Vec<i64>,
    scope_is_namespace: Vec<bool>,
    // Entries the walk changed of nodes and scopes found before it (a stack passed in).
    earlier_node_ends: Vec<(i64, i64)>,
    earlier_scope_ends: Vec<(i64, u64)>,
    stack: Vec<Entry>,
}

impl<'py> Found<'py> {
    fn node_count(&self) -> i64 {
        self.node_base + self.node_ranges.len() as i64
    }

    fn close_node(&mut self, node: i64) -> Walked<()> {
        let count = self.node_count();
        if node >= self.node_base {
            let local = (node - self.node_base) as usize;
            self.node_end[local] = count;
            self.node_next[local] = count;
        } else {
            self.earlier_node_ends.push((node, count));
        }
        Ok(())
    }

    fn set_scope_end(&mut self, scope: i64, offset: u64) {
        if scope >= self.scope_base {
            self.scope_end[(scope - self.scope_base) as usize] = offset;
        } else {
            self.earlier_scope_ends.push((scope, offset));
        }
    }
}

/// The Python objects the walk reads or calls, fetched once per call.
struct Context<'py, 'a> {
    py: Python<'py>,
    bytes: Bytes<'a>,
    plans: &'a WalkPlans,
    unit: Bound<'py, PyAny>,
    unit_offset: u64,
    whole: bool,
    subtree_end_at: Bound<'py, PyAny>,
    unit_string: Bound<'py, PyAny>,
    node_ranges_of: Bound<'py, PyAny>,
    /// The string sections and bases `Unit.string` reads, fetched at the first scope (expansions
    /// meet none); inner None: every name goes through `Unit.string`.
    strings: std::cell::OnceCell<Option<StringSource<'py>>>,
    /// What the range decoder reads of the unit, read at the first subprogram (most walks are
    /// expansions of one function's subtree, and meet none); inner None: the reference's function decodes.
    ranges: std::cell::OnceCell<Option<RangeSource<'py>>>,
}

impl<'py> Context<'py, '_> {
    /// The skipper's answer (`SubtreeSkipper.subtree_end`): where the children at `offset` end, or -1.
    fn subtree_end(&self, offset: u64, end: u64, inner: bool) -> Walked<i128> {
        // A skipper that raises (it lets some bad data through) raises again in the reference.
        let found = self.subtree_end_at.call1((offset, end, inner)).map_err(|_| Stop::Reference)?;
        found.extract::<i128>().map_err(|_| Stop::Reference)
    }

    /// `Unit.string(form, value)` where it is read here: a name inline in the DIE or in a string
    /// section, valid UTF-8. None: `Unit.string` answers (another form, a string the reference
    /// decodes with replacement characters, an offset past its section, which it raises on).
    fn string(&self, form: u64, value: Value) -> Walked<Option<Bound<'py, PyAny>>> {
        let text = |data: &[u8]| std::str::from_utf8(data).ok().map(|text| PyString::new(self.py, text).into_any());
        if let Value::Bytes(start, stop) = value {
            return Ok(self.bytes.data.get(start..stop).and_then(text));
        }
        let Value::Unsigned(value) = value else { return Ok(None) };
        if self.strings.get().is_none() {
            let _ = self.strings.set(StringSource::of(&self.unit)?);
        }
        let Some(Some(source)) = self.strings.get() else { return Ok(None) };
        let offset = match form {
            FORM_STRP => Some(value),
            FORM_LINE_STRP => return Ok(c_string(source.line_str.as_bytes(), value).and_then(text)),
            FORM_STRX | FORM_STRX1 | FORM_STRX2 | FORM_STRX3 | FORM_STRX4 | FORM_GNU_STR_INDEX => {
                source.string_offset(value)
            }
            _ => None,
        };
        Ok(offset.and_then(|offset| c_string(source.str.as_bytes(), offset)).and_then(text))
    }

    fn value_object(&self, value: Value) -> Walked<Bound<'py, PyAny>> {
        Ok(match value {
            Value::Unsigned(value) => value.into_pyobject(self.py)?.into_any(),
            Value::Signed(value) => value.into_pyobject(self.py)?.into_any(),
            Value::Bytes(start, stop) => PyBytes::new(self.py, &self.bytes.data[start..stop]).into_any(),
        })
    }
}

/// What `Unit.string` reads: `.debug_str`, `.debug_line_str`, `.debug_str_offsets` and the unit's base.
struct StringSource<'py> {
    str: Bound<'py, PyBytes>,
    line_str: Bound<'py, PyBytes>,
    str_offsets: Bound<'py, PyBytes>,
    str_offsets_base: u64,
    offset_size: u8,
    little_endian: bool,
}

impl<'py> StringSource<'py> {
    /// None where a section is not `bytes` or a number is not what the reference reads.
    fn of(unit: &Bound<'py, PyAny>) -> PyResult<Option<Self>> {
        let py = unit.py();
        let sections = unit.getattr(intern!(py, "sections"))?;
        let section = |name| -> PyResult<Option<Bound<'py, PyBytes>>> { Ok(sections.getattr(name)?.cast_into::<PyBytes>().ok()) };
        let (Some(str), Some(line_str), Some(str_offsets)) =
            (section(intern!(py, "str"))?, section(intern!(py, "line_str"))?, section(intern!(py, "str_offsets"))?)
        else {
            return Ok(None);
        };
        let (Ok(str_offsets_base), Ok(offset_size), Ok(little_endian)) = (
            unit.getattr(intern!(py, "str_offsets_base"))?.extract::<u64>(),
            unit.getattr(intern!(py, "offset_size"))?.extract::<u8>(),
            sections.getattr(intern!(py, "little_endian"))?.extract::<bool>(),
        ) else {
            return Ok(None);
        };
        if offset_size != 4 && offset_size != 8 {
            return Ok(None);
        }
        Ok(Some(StringSource { str, line_str, str_offsets, str_offsets_base, offset_size, little_endian }))
    }

    /// The `.debug_str` offset at string index `index`; None where the reference raises.
    fn string_offset(&self, index: u64) -> Option<u64> {
        let size = u128::from(self.offset_size);
        let position = u128::from(self.str_offsets_base) + u128::from(index) * size;
        let data = self.str_offsets.as_bytes();
        if position + size > data.len() as u128 {
            return None;
        }
        let bytes = &data[position as usize..(position + size) as usize];
        let mut value = 0u64;
        for index in 0..bytes.len() {
            let byte = if self.little_endian { bytes[bytes.len() - 1 - index] } else { bytes[index] };
            value = value << 8 | u64::from(byte);
        }
        Some(value)
    }
}

/// `_cstring_at`'s bytes: from `offset` to the next NUL; None where it raises.
fn c_string(data: &[u8], offset: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let rest = data.get(start..)?;
    rest.iter().position(|&byte| byte == 0).map(|end| &rest[..end])
}

/// A subtree end from a sibling link or the skipper: the new offset, or None to walk into it.
fn subtree_end_or_walk(
    context: &Context<'_, '_>,
    sibling: u64,
    offset: u64,
    end: u64,
    inner: bool,
) -> Walked<Option<u64>> {
    if offset < sibling && sibling <= end {
        return Ok(Some(sibling)); // a link out of the subtree walked is not believed: the skipper decides
    }
    let found = context.subtree_end(offset, end, inner)?;
    if found >= 0 {
        return Ok(Some(u64::try_from(found).map_err(|_| Stop::Reference)?));
    }
    Ok(None)
}

/// `_node_ranges(unit, values)` of a subprogram: decoded here, or by the reference's own function
/// where this decoder leaves it to the reference; an error is the reference's to raise.
fn subprogram_ranges<'py>(context: &Context<'py, '_>, kept: &Kept, attrs: &Bound<'py, PyDict>) -> Walked<Bound<'py, PyAny>> {
    if context.ranges.get().is_none() {
        let source = RangeSource::of(&context.unit)?;
        let _ = context.ranges.set(source);
    }
    if let Some(Some(source)) = context.ranges.get() {
        let raw = |slot: usize| {
            kept.slots[slot].map(|(form, value)| {
                (form, match value {
                    Value::Unsigned(value) => Raw::Unsigned(value),
                    Value::Signed(value) => Raw::Signed(value),
                    Value::Bytes(..) => Raw::Other,
                })
            })
        };
        match source.unit().node_ranges(raw(5), raw(3), raw(4)) {
            Ok(ranges) => return Ok(PyList::new(context.py, ranges)?.into_any()),
            Err(Failure::Format(_)) => return Err(Stop::Reference),
            Err(Failure::Reference) => {}
        }
    }
    context.node_ranges_of.call1((&context.unit, attrs)).map_err(|_| Stop::Reference)
}

/// How many slots there are (`slot_of`).
const SLOTS: usize = 14;

/// The kept attributes of one DIE in the order the reference inserts them in its dict.
struct Kept {
    slots: [Option<(u64, Value)>; SLOTS],
    order: [u8; SLOTS],
    count: usize,
}

impl Kept {
    fn new() -> Self {
        Kept { slots: [None; SLOTS], order: [0; SLOTS], count: 0 }
    }

    fn put(&mut self, slot: i8, form: u64, value: Value) {
        let slot = slot as usize;
        if self.slots[slot].is_none() {
            self.order[self.count] = slot as u8;
            self.count += 1;
        }
        self.slots[slot] = Some((form, value));
    }

    fn has(&self, slot: usize) -> bool {
        self.slots[slot].is_some()
    }

    fn dict<'py>(&self, context: &Context<'py, '_>) -> Walked<Bound<'py, PyDict>> {
        let dict = PyDict::new(context.py);
        for &slot in &self.order[..self.count] {
            if let Some((form, value)) = self.slots[usize::from(slot)] {
                dict.set_item(slot, (form, context.value_object(value)?))?;
            }
        }
        Ok(dict)
    }
}

fn walk<'py>(
    context: &Context<'py, '_>,
    found: &mut Found<'py>,
    mut offset: u64,
    end: u64,
    mut current_node: i64,
    mut current_scope: i64,
) -> Walked<()> {
    let bytes = &context.bytes;
    let mut functions_open = found.stack.iter().filter(|entry| entry.role == ROLE_FUNCTION).count();
    while offset < end {
        let die_offset = offset;
        let first = bytes.byte(offset)?;
        let code = if first < 0x80 {
            offset += 1;
            u64::from(first)
        } else {
            let (code, past) = bytes.uleb(offset)?;
            offset = past;
            code.ok_or(Stop::Reference)?
        };
        if code == 0 {
            let Some(entry) = found.stack.pop() else { return Ok(()) };
            current_node = entry.node;
            current_scope = entry.scope;
            if entry.role == ROLE_FUNCTION {
                functions_open -= 1;
                if entry.item >= 0 {
                    found.close_node(entry.item)?;
                }
                if entry.sibling != 0 && entry.sibling != offset {
                    return Err(Stop::Reference); // the children and the sibling link part: the reference raises
                }
            } else if entry.role == ROLE_SCOPE {
                found.set_scope_end(entry.item, offset);
            }
            if found.stack.is_empty() {
                return Ok(());
            }
            continue;
        }
        let plan = context.plans.plan(code).ok_or(Stop::Reference)?;
        if !plan.usable {
            return Err(Stop::Reference);
        }
        let mut kept = Kept::new();
        let mut sibling: u64 = 0;
        for step in plan.steps.iter() {
            if step.slot < 0 {
                offset = skip_value(bytes, step, offset)?;
                continue;
            }
            let (value, past) = read_value(bytes, step, offset)?;
            offset = past;
            if step.slot == 0 {
                // Unit.reference: a unit-relative reference, a section offset, or none (0).
                sibling = match (step.form, value) {
                    (FORM_REF1..=FORM_REF_UDATA, Value::Unsigned(value)) => {
                        context.unit_offset.checked_add(value).ok_or(Stop::Reference)?
                    }
                    (FORM_REF_ADDR, Value::Unsigned(value)) => value,
                    _ => 0,
                };
                continue;
            }
            kept.put(step.slot, step.form, value);
        }
        let entry = |role: u8| Entry { role, item: -1, node: current_node, scope: current_scope, sibling: 0 };
        match plan.role {
            ROLE_NO_CODE => {
                if plan.has_children {
                    if let Some(past) = subtree_end_or_walk(context, sibling, offset, end, false)? {
                        offset = past;
                        continue;
                    }
                    found.stack.push(entry(ROLE_FUNCTION));
                    functions_open += 1;
                    current_node = -1;
                }
            }
            ROLE_FUNCTION => {
                let mut node = -1;
                let tag = plan.tag;
                if kept.count > 0 && (kept.has(3) || kept.has(5)) && (tag == TAG_SUBPROGRAM || current_node >= 0) {
                    let inlined = tag == TAG_INLINED_SUBROUTINE;
                    let attrs = kept.dict(context)?;
                    // An inlined call's ranges are decoded only if a lookup reaches it (chain_at).
                    let ranges = if inlined { None } else { Some(subprogram_ranges(context, &kept, &attrs)?) };
                    let has_ranges = match &ranges {
                        Some(ranges) => ranges.is_truthy().map_err(|_| Stop::Reference)?,
                        None => false,
                    };
                    if inlined || has_ranges {
                        node = found.node_count();
                        found.node_parent.push(if inlined { current_node } else { -1 });
                        found.node_first.push(node + 1);
                        found.node_end.push(node + 1);
                        found.node_next.push(node + 1);
                        found.node_die.push(die_offset);
                        found.node_attrs.push(attrs);
                        match ranges {
                            Some(ranges) => {
                                for range in ranges.try_iter().map_err(|_| Stop::Reference)? {
                                    let (low, high): (Bound<'py, PyAny>, Bound<'py, PyAny>) =
                                        range.and_then(|range| range.extract()).map_err(|_| Stop::Reference)?;
                                    found.function_ranges.push(PyTuple::new(
                                        context.py,
                                        [low, high, node.into_pyobject(context.py)?.into_any()],
                                    )?);
                                }
                                found.node_ranges.push(ranges);
                            }
                            None => found.node_ranges.push(context.py.None().into_bound(context.py)),
                        }
                    }
                }
                if plan.has_children {
                    // A node's subtree waits for a lookup (unless the whole unit is wanted); one
                    // without code hides its parameters and blocks, which hold no code.
                    let past = if context.whole && node >= 0 {
                        None
                    } else {
                        subtree_end_or_walk(context, sibling, offset, end, false)?
                    };
                    if let Some(past) = past {
                        if node >= 0 {
                            found.deferred.push((node, offset, past));
                        }
                        offset = past;
                        continue;
                    }
                    let sibling = if context.whole && node >= 0 && offset < sibling && sibling <= end { sibling } else { 0 };
                    found.stack.push(Entry { role: ROLE_FUNCTION, item: node, node: current_node, scope: current_scope, sibling });
                    functions_open += 1;
                    current_node = node;
                }
            }
            ROLE_SCOPE => {
                if plan.has_children && functions_open > 0 {
                    // A type local to a function does not qualify names.
                    if let Some(past) = subtree_end_or_walk(context, sibling, offset, end, current_node >= 0)? {
                        offset = past;
                        continue;
                    }
                    found.stack.push(entry(ROLE_CONTAINER));
                } else if plan.has_children {
                    let scope = found.scope_base + found.scope_start.len() as i64;
                    found.scope_start.push(die_offset);
                    found.scope_end.push(end);
                    let name = match kept.slots[1] {
                        Some((form, value)) => match context.string(form, value)? {
                            Some(name) => name,
                            None => context
                                .unit_string
                                .call1((form, context.value_object(value)?))
                                .map_err(|_| Stop::Reference)?,
                        },
                        None => context.py.None().into_bound(context.py),
                    };
                    found.scope_name.push(name);
                    found.scope_parent.push(current_scope);
                    let is_namespace = plan.tag == TAG_NAMESPACE;
                    found.scope_is_namespace.push(is_namespace);
                    if !is_namespace {
                        // A type's members are declarations: skip them whole.
                        if let Some(past) = subtree_end_or_walk(context, sibling, offset, end, current_node >= 0)? {
                            found.set_scope_end(scope, past);
                            offset = past;
                            continue;
                        }
                    }
                    found.stack.push(Entry { role: ROLE_SCOPE, item: scope, node: current_node, scope: current_scope, sibling: 0 });
                    current_scope = scope;
                }
            }
            role => {
                if plan.has_children {
                    if role == ROLE_SKIP {
                        // Nothing under a type, variable or call site holds code.
                        if let Some(past) = subtree_end_or_walk(context, sibling, offset, end, current_node >= 0)? {
                            offset = past;
                            continue;
                        }
                    }
                    found.stack.push(entry(role));
                }
            }
        }
    }
    // The walk ran to `end` with subtrees open (damaged data): they end there (`scan._walk`).
    for position in 0..found.stack.len() {
        let entry = found.stack[position];
        if entry.role == ROLE_FUNCTION && entry.item >= 0 {
            if entry.sibling != 0 && entry.sibling != end {
                return Err(Stop::Reference); // the children run past the sibling link: the reference raises
            }
            found.close_node(entry.item)?;
        }
    }
    Ok(())
}

fn extend<'py, T: IntoPyObject<'py> + Clone>(list: &Bound<'py, PyAny>, items: &[T]) -> PyResult<()> {
    if items.is_empty() {
        return Ok(());
    }
    let items = PyList::new(list.py(), items.iter().cloned())?;
    list.call_method1(intern!(list.py(), "extend"), (items,))?;
    Ok(())
}

/// Appends what the walk found to the index, as the reference's appends would have left it.
fn commit<'py>(index: &Bound<'py, PyAny>, stack: &Bound<'py, PyList>, found: Found<'py>) -> PyResult<()> {
    let py = index.py();
    let field = |name: &Bound<'py, pyo3::types::PyString>| index.getattr(name);
    if !found.stack.is_empty() || stack.len() != 0 {
        stack.del_slice(0, stack.len())?;
        for entry in &found.stack {
            stack.append((entry.role, entry.item, entry.node, entry.scope))?;
        }
    }
    if found.node_ranges.is_empty() && found.earlier_node_ends.is_empty() && found.scope_start.is_empty()
        && found.earlier_scope_ends.is_empty()
    {
        return Ok(()); // nothing found: most expansions of a leaf-heavy subtree
    }
    extend(&field(intern!(py, "node_ranges"))?, &found.node_ranges)?;
    extend(&field(intern!(py, "node_parent"))?, &found.node_parent)?;
    extend(&field(intern!(py, "node_first"))?, &found.node_first)?;
    let node_end = field(intern!(py, "node_end"))?;
    let node_next = field(intern!(py, "node_next"))?;
    extend(&node_end, &found.node_end)?;
    extend(&node_next, &found.node_next)?;
    for &(node, value) in &found.earlier_node_ends {
        node_end.set_item(node, value)?;
        node_next.set_item(node, value)?;
    }
    extend(&field(intern!(py, "node_die"))?, &found.node_die)?;
    extend(&field(intern!(py, "node_attrs"))?, &found.node_attrs)?;
    let deferred = field(intern!(py, "deferred"))?;
    for &(node, start, stop) in &found.deferred {
        deferred.set_item(node, (start, stop))?;
    }
    extend(&field(intern!(py, "function_ranges"))?, &found.function_ranges)?;
    extend(&field(intern!(py, "scope_start"))?, &found.scope_start)?;
    let scope_end = field(intern!(py, "scope_end"))?;
    extend(&scope_end, &found.scope_end)?;
    for &(scope, value) in &found.earlier_scope_ends {
        scope_end.set_item(scope, value)?;
    }
    extend(&field(intern!(py, "scope_name"))?, &found.scope_name)?;
    extend(&field(intern!(py, "scope_parent"))?, &found.scope_parent)?;
    extend(&field(intern!(py, "scope_is_namespace"))?, &found.scope_is_namespace)?;
    Ok(())
}

/// Twin of `scan._walk`: walks the DIEs from `offset` until the subtree `stack` describes closes,
/// appending to `index` what the reference appends. Returns True when walked; False, with
/// `index` and `stack` untouched, where the reference must walk instead (it raises there, or a
/// value outgrows 64 bits). `plans` are `WalkPlans` of the unit's abbreviations; `node_ranges_of`
/// is `scan._node_ranges`.
#[pyfunction]
#[pyo3(signature = (index, plans, offset, end, stack, current_node, current_scope, node_ranges_of))]
#[allow(clippy::too_many_arguments)]
pub fn walk_dies<'py>(
    py: Python<'py>,
    index: &Bound<'py, PyAny>,
    plans: &Bound<'py, WalkPlans>,
    offset: &Bound<'py, PyAny>,
    end: &Bound<'py, PyAny>,
    stack: &Bound<'py, PyList>,
    current_node: &Bound<'py, PyAny>,
    current_scope: &Bound<'py, PyAny>,
    node_ranges_of: &Bound<'py, PyAny>,
) -> PyResult<bool> {
    let (Ok(offset), Ok(end), Ok(current_node), Ok(current_scope)) =
        (offset.extract::<u64>(), end.extract::<u64>(), current_node.extract::<i64>(), current_scope.extract::<i64>())
    else {
        return Ok(false);
    };
    let mut entries = Vec::with_capacity(stack.len());
    for entry in stack.iter() {
        let Ok((role, item, node, scope)) = entry.extract::<(u8, i64, i64, i64)>() else { return Ok(false) };
        entries.push(Entry { role, item, node, scope, sibling: 0 });
    }
    let unit = index.getattr(intern!(py, "unit"))?;
    let sections = unit.getattr(intern!(py, "sections"))?;
    let info = sections.getattr(intern!(py, "info"))?;
    let Ok(info) = info.cast_into::<PyBytes>() else { return Ok(false) };
    let mut skipper = index.getattr(intern!(py, "skipper"))?;
    if skipper.is_none() {
        skipper = index.getattr(intern!(py, "shared"))?.call_method1(intern!(py, "skipper_for"), (&unit,))?;
        index.setattr(intern!(py, "skipper"), &skipper)?;
    }
    let plans = plans.get();
    let context = Context {
        py,
        bytes: Bytes { data: info.as_bytes(), little_endian: plans.little_endian },
        plans,
        unit_offset: unit.getattr(intern!(py, "offset"))?.extract()?,
        whole: index.getattr(intern!(py, "whole"))?.is_truthy()?,
        subtree_end_at: skipper.getattr(intern!(py, "subtree_end"))?,
        unit_string: unit.getattr(intern!(py, "string"))?,
        node_ranges_of: node_ranges_of.clone(),
        strings: std::cell::OnceCell::new(),
        ranges: std::cell::OnceCell::new(),
        unit,
    };
    let length = |name| -> PyResult<i64> { Ok(index.getattr(name)?.len()? as i64) };
    let mut found = Found {
        node_base: length(intern!(py, "node_ranges"))?,
        scope_base: length(intern!(py, "scope_start"))?,
        node_ranges: Vec::new(),
        node_parent: Vec::new(),
        node_first: Vec::new(),
        node_end: Vec::new(),
        node_next: Vec::new(),
        node_die: Vec::new(),
        node_attrs: Vec::new(),
        deferred: Vec::new(),
        function_ranges: Vec::new(),
        scope_start: Vec::new(),
        scope_end: Vec::new(),
        scope_name: Vec::new(),
        scope_parent: Vec::new(),
        scope_is_namespace: Vec::new(),
        earlier_node_ends: Vec::new(),
        earlier_scope_ends: Vec::new(),
        stack: entries,
    };
    // An entry of the stack passed in that names no node or scope is the reference's IndexError.
    let node_count = found.node_base;
    let scope_count = found.scope_base;
    if found.stack.iter().any(|entry| {
        (entry.role == ROLE_FUNCTION && entry.item >= node_count) || (entry.role == ROLE_SCOPE && entry.item >= scope_count)
    }) {
        return Ok(false);
    }
    // A panic is a bug of this twin, never the input's: the reference walks instead.
    let walked = catch_unwind(AssertUnwindSafe(|| walk(&context, &mut found, offset, end, current_node, current_scope)));
    match walked {
        Ok(Ok(())) => {}
        Ok(Err(Stop::Reference)) | Err(_) => return Ok(false),
        Ok(Err(Stop::Python(error))) => return Err(error),
    }
    commit(index, stack, found)?;
    Ok(true)
}
