//! The warm lookup kernel: `symbolize lookup`'s answers to a batch of address texts, from
//! persistent indexes, as the text the command prints. The twin of `symbolize/answer_text.py`'s
//! `answer_text` over a module whose every source is an index (`IndexedObject`), with the
//! module's `lookup`, `FrameShaper.shape` and the line formatting in one pass.
//!
//! Where the Python path would take a turn this kernel does not (a text that is not a plain
//! address, a number past 64 bits, a string that is not valid UTF-8), it returns None and the
//! caller runs the reference for the batch. An index whose ids do not hold together raises
//! `IndexInconsistentError(source, message)`; a panic raises it with source -1.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use std::sync::Arc;

use crate::dwarf::Section;
use crate::unpanicked;
use crate::warm_index::{self, Column, Found, Frame, IndexError, Layout, ARRAYS};
use crate::warm_text as text;

create_exception!(
    _kernels,
    IndexInconsistentError,
    PyException,
    "An index whose numbers do not hold together: args are (source position, message)."
);

/// CRC-32 (zlib's) of `data[start:start + length]` (any buffer of bytes): the index's per-array checksum.
#[pyfunction]
fn crc32(data: &Bound<'_, PyAny>, start: usize, length: usize) -> PyResult<u32> {
    let data = Section::borrow(data)?;
    let part = start.checked_add(length).and_then(|end| data.get(start..end));
    part.map(crc32fast::hash).ok_or_else(|| IndexInconsistentError::new_err((-1, "checksummed range runs past the data")))
}

/// `table[index]` of each machine-order i64 of `indexes` (below 0: from the end, as a Python list's), as machine-order
/// u64s, None where one falls outside `table`: an index build's file and chain ids of a table's runs (index/build.py).
#[pyfunction]
fn gather(py: Python<'_>, table: Vec<u64>, indexes: &[u8]) -> Option<Py<PyBytes>> {
    let mut found = Vec::with_capacity(indexes.len());
    for item in indexes.chunks_exact(8) {
        let index = i64::from_ne_bytes(item.try_into().ok()?);
        let wrapped = if index < 0 { index.checked_add(table.len() as i64)? } else { index };
        found.extend_from_slice(&table.get(usize::try_from(wrapped).ok()?)?.to_ne_bytes());
    }
    Some(PyBytes::new(py, &found).unbind())
}

/// The index's own ids (string, chain numbers) and tuples of them, hashed by rustc's Fx hash:
/// they are not chosen by anyone who gains from collisions (a hostile index only slows its own
/// lookups), and SipHash was a twentieth of a lookup.
pub(crate) type IdsMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// One index's arrays (the mapped file, borrowed, its arrays checked by the caller against their
/// CRC32s) and what lookups have printed from it.
#[pyclass(module = "symbolize.formats._kernels")]
pub struct IndexedRuns {
    /// The index file's bytes: shared, so that a batch reads them while it updates the pieces below.
    pub(crate) data: Arc<Section>,
    pub(crate) layout: Layout,
    /// `str(MalformedInputError(text, path))` of each broken region, by error number - 1.
    error_details: Vec<String>,
    /// What the pieces below are printed for: demangle mode, JSON or text.
    style: (String, bool),
    /// A name or file as printed (JSON string or `null`; text, or `??`), by string id.
    name_pieces: IdsMap<u64, String>,
    file_pieces: IdsMap<u64, String>,
    /// A chain's calling frames as printed, by chain id: every address under one inlined call
    /// shares them.
    outer_pieces: IdsMap<u64, String>,
}

#[pymethods]
impl IndexedRuns {
    /// `arrays` maps each name of `ARRAYS` and `str_blob` to `(type code, byte offset, count)`.
    /// An index whose arrays do not hold together ([`Layout::validate`]) raises
    /// `IndexInconsistentError`: no lookup then meets an id past its array.
    #[new]
    #[pyo3(signature = (data, arrays, error_details=Vec::new()))]
    fn new(data: &Bound<'_, PyAny>, arrays: &Bound<'_, PyDict>, error_details: Vec<String>) -> PyResult<Self> {
        let data = Arc::new(Section::borrow(data)?);
        let data_len = data.len();
        let inconsistent = |error: String| IndexInconsistentError::new_err((-1, error));
        let place = |name: &str| -> PyResult<(char, usize, usize)> {
            arrays.get_item(name)?.ok_or_else(|| inconsistent(format!("index has no array {name}")))?.extract()
        };
        let mut columns = Vec::with_capacity(ARRAYS.len());
        for name in ARRAYS {
            let (code, start, count) = place(name)?;
            columns.push(Column::new(name, code, start, count, data_len).map_err(|error| inconsistent(error.0))?);
        }
        let (blob_code, blob_start, blob_length) = place("str_blob")?;
        if blob_code != 'B' {
            return Err(inconsistent(format!("index array str_blob has type {blob_code:?}, not bytes")));
        }
        let layout = Layout::new(&columns, (blob_start, blob_length), data_len).map_err(|error| inconsistent(error.0))?;
        layout.validate(&data).map_err(|error| inconsistent(error.0))?;
        let (name_pieces, file_pieces, outer_pieces) = Default::default();
        Ok(IndexedRuns { data, layout, error_details, style: (String::new(), false), name_pieces, file_pieces, outer_pieces })
    }

    /// `str(MalformedInputError(text, path))` of each broken region, by error number - 1: made
    /// in Python from the strings this object gives back ([`Self::strings`]) once it has checked them.
    fn set_error_details(&mut self, error_details: Vec<String>) {
        self.error_details = error_details;
    }

    /// The bytes of each string of `ids` (None for id 0, which stands for None), as
    /// `IndexedObject._string` cuts them from the blob before decoding.
    fn strings<'py>(&self, py: Python<'py>, ids: Vec<u64>) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        let string = |id| warm_index::string_bytes(&self.layout, &self.data, id).map(|bytes| PyBytes::new(py, bytes));
        let strings: Result<Vec<_>, IndexError> = ids.into_iter().map(|id| (id != 0).then(|| string(id)).transpose()).collect();
        strings.map_err(|error| IndexInconsistentError::new_err((-1, error.0)))
    }
}

/// How names are shown: a `demangle` mode, and the Python function that shows a name under it
/// (`shown(name, full)`, `full` the stored full demangling or None) where this kernel cannot.
struct Naming<'a, 'py> {
    mode: &'a str,
    shown: &'a Bound<'py, PyAny>,
}

/// Why a batch stops: the reference should answer it, or an error to raise.
enum Stop {
    Fallback,
    Raise(PyErr),
}

impl From<PyErr> for Stop {
    fn from(error: PyErr) -> Self {
        Stop::Raise(error)
    }
}

/// An index error in a source, raised as the caller expects it: `(source position, message)`.
impl From<(usize, IndexError)> for Stop {
    fn from((source, error): (usize, IndexError)) -> Self {
        Stop::Raise(IndexInconsistentError::new_err((source as i64, error.0)))
    }
}

impl IndexedRuns {
    /// String `string_id` of `data` (None for id 0), decoded; one that is not valid UTF-8 the
    /// Python path decodes with surrogateescape: the reference answers (source `source`'s errors).
    fn shown(&self, data: &[u8], string_id: u64, source: usize) -> Result<Option<String>, Stop> {
        if string_id == 0 {
            return Ok(None);
        }
        let bytes = warm_index::string_bytes(&self.layout, data, string_id).map_err(|error| (source, error))?;
        std::str::from_utf8(bytes).map(|text| Some(text.to_owned())).map_err(|_| Stop::Fallback)
    }

    /// The name with string id `name_id` as `FrameShaper` shows it under `naming.mode`.
    fn name(&self, data: &[u8], name_id: u64, naming: &Naming<'_, '_>, source: usize) -> Result<Option<String>, Stop> {
        let Some(raw) = self.shown(data, name_id, source)? else { return Ok(None) };
        // IndexedObject._name: the stored full demangling (the name itself when it is empty) goes
        // to the demangler's memo; FrameShaper then demangles every non-empty name.
        let full_id = self.layout.name_full.at(data, name_id).map_err(|error| (source, error))?;
        let full = self.shown(data, full_id, source)?.map(|full| if full.is_empty() { raw.clone() } else { full });
        if raw.is_empty() || naming.mode == "none" {
            return Ok(Some(raw));
        }
        if let (Some(full), "full") = (&full, naming.mode) {
            return Ok(Some(full.clone()));
        }
        let shown = naming.shown.call1((raw, full))?;
        match shown.cast::<PyString>().ok().map(|text| text.to_str().map(str::to_owned)) {
            Some(Ok(text)) => Ok(Some(text)),
            _ => Err(Stop::Fallback),
        }
    }

    /// Forget printed pieces made for another demangle mode or output format.
    fn set_style(&mut self, mode: &str, as_json: bool) {
        if self.style.0 != mode || self.style.1 != as_json {
            self.name_pieces.clear();
            self.file_pieces.clear();
            self.outer_pieces.clear();
            self.style = (mode.to_owned(), as_json);
        }
    }

    /// Name `name_id` as printed: `"..."` or `null` in JSON, the name or `??` in text.
    fn name_piece(&mut self, data: &[u8], name_id: u64, naming: &Naming<'_, '_>, source: usize) -> Result<&str, Stop> {
        if !self.name_pieces.contains_key(&name_id) {
            self.name_pieces.insert(name_id, printed(self.name(data, name_id, naming, source)?, self.style.1));
        }
        Ok(&self.name_pieces[&name_id])
    }

    /// File `file_id` as printed, as [`Self::name_piece`] prints names.
    fn file_piece(&mut self, data: &[u8], file_id: u64, source: usize) -> Result<&str, Stop> {
        if !self.file_pieces.contains_key(&file_id) {
            self.file_pieces.insert(file_id, printed(self.shown(data, file_id, source)?, self.style.1));
        }
        Ok(&self.file_pieces[&file_id])
    }

    /// One frame as printed: `{"function": ..., "file": ..., "line": L, "column": C}` in JSON
    /// (`, ` before it unless it is the first), `function\nfile:line:column\n` in text.
    #[allow(clippy::too_many_arguments)]
    fn push_frame(&mut self, out: &mut String, data: &[u8], frame: Frame, first: bool,
                  naming: &Naming<'_, '_>, source: usize) -> Result<(), Stop> {
        let (name, file, line, column) = frame;
        let as_json = self.style.1;
        if as_json {
            out.push_str(if first { "{\"function\": " } else { ", {\"function\": " });
        }
        out.push_str(self.name_piece(data, name, naming, source)?);
        out.push_str(if as_json { ", \"file\": " } else { "\n" });
        out.push_str(self.file_piece(data, file, source)?);
        text::push_place(out, line, column, as_json);
        Ok(())
    }

    /// `chain`'s calling frames as printed after the innermost one.
    fn outer_piece(&mut self, data: &[u8], chain: u64, naming: &Naming<'_, '_>, source: usize) -> Result<&str, Stop> {
        if !self.outer_pieces.contains_key(&chain) {
            let mut piece = String::with_capacity(256); // a frame or two: grown from empty, it was reallocated per push
            for frame_id in warm_index::outer_frame_ids(&self.layout, data, chain).map_err(|error| (source, error))? {
                let frame = warm_index::outer_frame(&self.layout, data, frame_id).map_err(|error| (source, error))?;
                self.push_frame(&mut piece, data, frame, false, naming, source)?;
            }
            self.outer_pieces.insert(chain, piece);
        }
        Ok(&self.outer_pieces[&chain])
    }
}

/// A name or file as printed: `"..."` or `null` in JSON, the text or `??` in text.
fn printed(shown: Option<String>, as_json: bool) -> String {
    match shown {
        None if as_json => "null".to_owned(),
        Some(text) if as_json => {
            let mut piece = String::with_capacity(text.len() + 2);
            text::push_json_string(&mut piece, &text);
            piece
        }
        Some(text) if !text.is_empty() => text,
        _ => "??".to_owned(),
    }
}

/// The address `text` names when it is plainly one (`0x` and 1-16 hex digits, or 1-19 decimal
/// digits, ASCII spaces around); None when only Python's `parse_address` can say.
fn plain_address(text: &str) -> Option<u64> {
    // Python's str.strip() also strips \x0b and \x1c-\x1f, which trim_matches below does not.
    if !text.is_ascii() || text.bytes().any(|byte| byte == 0x0b || (0x1c..=0x1f).contains(&byte)) {
        return None;
    }
    let text = text.trim_matches(|character| matches!(character, ' ' | '\t' | '\n' | '\r' | '\x0c'));
    if let Some(digits) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        if (1..=16).contains(&digits.len()) && digits.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return u64::from_str_radix(digits, 16).ok();
        }
        return None;
    }
    if (1..=19).contains(&text.len()) && text.bytes().all(|byte| byte.is_ascii_digit()) {
        return text.parse().ok();
    }
    None
}

/// The lines for one batch of texts, or why not.
fn render(
    texts: &Bound<'_, PyList>,
    sources: &mut [PyRefMut<'_, IndexedRuns>],
    as_json: bool,
    inlines: bool,
    naming: &Naming<'_, '_>,
    parse_address: &Bound<'_, PyAny>,
    unnamed_reason: &str,
) -> Result<String, Stop> {
    let datas: Vec<Arc<Section>> = sources.iter().map(|source| Arc::clone(&source.data)).collect();
    let datas: Vec<&[u8]> = datas.iter().map(|data| &data[..]).collect();
    for source in sources.iter_mut() {
        source.set_style(naming.mode, as_json);
    }
    let mut out = String::with_capacity(texts.len() * if as_json { 160 } else { 80 });
    for (done, item) in texts.iter().enumerate() {
        if done == 64 {
            // Grow once, to what the first lines promise (deep inline chains print kilobytes an
            // address): each doubling of a large buffer copies it and faults its pages in again.
            out.reserve((out.len() / 64 + 16) * (texts.len() - 64) + (texts.len() - 64) / 8);
        }
        let Ok(text) = item.cast::<PyString>() else { return Err(Stop::Fallback) };
        let Ok(text_str) = text.to_str() else { return Err(Stop::Fallback) };
        let vaddr = match plain_address(text_str) {
            Some(vaddr) => vaddr,
            None => {
                let parsed = parse_address.call1((text,))?;
                if parsed.is_none() {
                    text::push_echo(&mut out, text_str, as_json);
                    continue;
                }
                // Negative, or past 64 bits: the reference answers.
                parsed.extract::<u64>().map_err(|_| Stop::Fallback)?
            }
        };
        let layouts = sources.iter().zip(&datas).map(|(source, data)| (&source.layout, *data));
        let (position, run, chain) = match warm_index::lookup(layouts, vaddr)? {
            Found::Run { source, run, chain } => (source, run, chain),
            found => {
                let (reason, detail) = match found {
                    Found::Broken { source, error } => {
                        let missing = || (source, IndexError(format!("no text for broken region {error}")));
                        ("damaged-debug-info", sources[source].error_details.get(error - 1).ok_or_else(missing)?.as_str())
                    }
                    _ => (unnamed_reason, ""),
                };
                if as_json {
                    text::push_json_address(&mut out, vaddr);
                    text::push_json_end(&mut out, Some((reason, detail)));
                } else {
                    out.push_str(text::UNNAMED_TEXT);
                }
                continue;
            }
        };
        let (source, data) = (&mut sources[position], datas[position]);
        let fail = |error| (position, error);
        let (name, file, line, column) = warm_index::inner_frame(&source.layout, data, run, chain).map_err(fail)?;
        // FrameShaper with inlines=False: one frame, the outermost function at the innermost place.
        let outermost = if inlines { None } else { warm_index::outer_frame_ids(&source.layout, data, chain).map_err(fail)?.pop() };
        let name = match outermost {
            Some(frame_id) => warm_index::outer_frame(&source.layout, data, frame_id).map_err(fail)?.0,
            None => name,
        };
        if as_json {
            text::push_json_address(&mut out, vaddr);
        }
        source.push_frame(&mut out, data, (name, file, line, column), true, naming, position)?;
        if inlines {
            out.push_str(source.outer_piece(data, chain, naming, position)?);
        }
        if as_json {
            text::push_json_end(&mut out, None);
        } else {
            out.push('\n');
        }
    }
    Ok(out)
}

/// The text `symbolize lookup` prints for `texts` (one line each, as read), every source an
/// [`IndexedRuns`], best first; None where the reference must answer this batch.
///
/// `shown(name, full)` shows a name where the stored full demangling does not do (another
/// `demangle_mode`, or no full name stored); `parse_address(text)` reads a text that is not a
/// plain address; `unnamed_reason` is the reason of an address no source names.
#[pyfunction]
#[pyo3(signature = (texts, sources, *, as_json, inlines, demangle_mode, shown, parse_address, unnamed_reason))]
#[allow(clippy::too_many_arguments)]
fn render_lookup_answers(
    texts: &Bound<'_, PyList>,
    sources: &Bound<'_, PyList>,
    as_json: bool,
    inlines: bool,
    demangle_mode: &str,
    shown: &Bound<'_, PyAny>,
    parse_address: &Bound<'_, PyAny>,
    unnamed_reason: &str,
) -> PyResult<Option<String>> {
    let mut borrowed: Vec<PyRefMut<'_, IndexedRuns>> =
        sources.iter().map(|source| source.extract::<PyRefMut<'_, IndexedRuns>>().map_err(PyErr::from)).collect::<Result<_, _>>()?;
    let naming = Naming { mode: demangle_mode, shown };
    let rendered = unpanicked("lookup", || render(texts, &mut borrowed, as_json, inlines, &naming, parse_address, unnamed_reason));
    match rendered.map_err(|message| IndexInconsistentError::new_err((-1, message)))? {
        Ok(out) => Ok(Some(out)),
        Err(Stop::Fallback) => Ok(None),
        Err(Stop::Raise(error)) => Err(error),
    }
}

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<IndexedRuns>()?;
    module.add_function(wrap_pyfunction!(render_lookup_answers, module)?)?;
    module.add_function(wrap_pyfunction!(crc32, module)?)?;
    module.add_function(wrap_pyfunction!(gather, module)?)?;
    module.add_class::<crate::warm_frames::ProfileAnswers>()?;
    module.add_function(wrap_pyfunction!(crate::warm_frames::profile_answers, module)?)?;
    module.add("IndexInconsistentError", module.py().get_type::<IndexInconsistentError>())?;
    module.add("INDEXED_RUNS_ARRAYS", [&ARRAYS[..], &["str_blob"]].concat())?;
    Ok(())
}
