//! The warm lookup kernel: `symbolize lookup`'s answers to a batch of address texts, from
//! persistent indexes, as the text the command prints. The twin of `symbolize/answer_text.py`'s
//! `answer_text` over a module whose every source is an index (`IndexedObject`), with the
//! module's `lookup`, `FrameShaper.shape` and the line formatting in one pass.
//!
//! Where the Python path would take a turn this kernel does not (a text that is not a plain
//! address, a number past 64 bits, a string that is not valid UTF-8), it returns None and the
//! caller runs the reference for the batch. An index whose ids do not hold together raises
//! `IndexInconsistentError(source, message)`; a panic raises it with source -1.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use crate::panic_message;
use crate::warm_index::{self, Answer, Column, IndexError, Layout, ARRAYS};
use crate::warm_text as text;

create_exception!(
    _kernels,
    IndexInconsistentError,
    PyException,
    "An index whose numbers do not hold together: args are (source position, message)."
);

/// CRC-32 (zlib's) of `data[start:start + length]`: the index's per-array checksum.
#[pyfunction]
fn crc32(data: &Bound<'_, PyBytes>, start: usize, length: usize) -> PyResult<u32> {
    let bytes = data.as_bytes();
    let part = start
        .checked_add(length)
        .and_then(|end| bytes.get(start..end))
        .ok_or_else(|| IndexInconsistentError::new_err((-1, "checksummed range runs past the data")))?;
    Ok(crc32fast::hash(part))
}

/// Hashes the index's own ids (string, chain numbers) with one multiplication: they are not
/// chosen by anyone who gains from collisions (a hostile index only slows its own lookups), and
/// SipHash was a twentieth of a lookup.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = (self.0 ^ id).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write_usize(&mut self, id: usize) {
        self.write_u64(id as u64);
    }

    fn write_u32(&mut self, id: u32) {
        self.write_u64(u64::from(id));
    }
}

type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;
/// A map keyed by the index's own ids or tuples of them, hashed with [`IdHasher`].
pub(crate) type IdsMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// A string of the index as the output needs it.
#[derive(Debug, Clone)]
enum Shown {
    /// String id 0: Python's None.
    Missing,
    Text(String),
    /// Not valid UTF-8: the Python path decodes it with surrogateescape; this kernel gives up.
    Undecodable,
}

/// One index's arrays (the file's bytes, checked by the caller against their CRC32s) and what
/// lookups have decoded and printed from it.
#[pyclass(module = "symbolize.formats._kernels")]
pub struct IndexedRuns {
    data: Py<PyBytes>,
    layout: Layout,
    /// `str(MalformedInputError(text, path))` of each broken region, by error number - 1.
    error_details: Vec<String>,
    files: IdMap<Shown>,
    /// Names as shown under `style.0` (the demangle mode).
    names: IdMap<Shown>,
    /// What the pieces below are printed for: demangle mode, JSON or text.
    style: (String, bool),
    /// A name or file as printed (JSON string or `null`; text, or `??`), by string id.
    name_pieces: IdMap<String>,
    file_pieces: IdMap<String>,
    /// A chain's calling frames as printed, by chain id: every address under one inlined call
    /// shares them.
    outer_pieces: IdMap<String>,
}

#[pymethods]
impl IndexedRuns {
    /// `arrays` maps each name of `ARRAYS` and `str_blob` to `(type code, byte offset, count)`.
    /// An index whose arrays do not hold together ([`Layout::validate`]) raises
    /// `IndexInconsistentError`: no lookup then meets an id past its array.
    #[new]
    #[pyo3(signature = (data, arrays, error_details=Vec::new()))]
    fn new(data: Bound<'_, PyBytes>, arrays: &Bound<'_, PyDict>, error_details: Vec<String>) -> PyResult<Self> {
        let data_len = data.as_bytes().len();
        let inconsistent = |error: IndexError| IndexInconsistentError::new_err((-1, error.0));
        let place = |name: &str| -> PyResult<(char, usize, usize)> {
            arrays
                .get_item(name)?
                .ok_or_else(|| IndexInconsistentError::new_err((-1, format!("index has no array {name}"))))?
                .extract()
        };
        let mut columns = Vec::with_capacity(ARRAYS.len());
        for name in ARRAYS {
            let (code, start, count) = place(name)?;
            columns.push(Column::new(name, code, start, count, data_len).map_err(inconsistent)?);
        }
        let (blob_code, blob_start, blob_length) = place("str_blob")?;
        if blob_code != 'B' {
            return Err(IndexInconsistentError::new_err((-1, format!("index array str_blob has type {blob_code:?}, not bytes"))));
        }
        let layout = Layout::new(&columns, (blob_start, blob_length), data_len).map_err(inconsistent)?;
        layout.validate(data.as_bytes()).map_err(inconsistent)?;
        Ok(IndexedRuns {
            data: data.unbind(),
            layout,
            error_details,
            files: IdMap::default(),
            names: IdMap::default(),
            style: (String::new(), false),
            name_pieces: IdMap::default(),
            file_pieces: IdMap::default(),
            outer_pieces: IdMap::default(),
        })
    }

    /// `str(MalformedInputError(text, path))` of each broken region, by error number - 1: made
    /// in Python from the strings this object gives back ([`Self::strings`]) once it has checked them.
    fn set_error_details(&mut self, error_details: Vec<String>) {
        self.error_details = error_details;
    }

    /// The bytes of each string of `ids` (None for id 0, which stands for None), as
    /// `IndexedObject._string` cuts them from the blob before decoding.
    fn strings<'py>(&self, py: Python<'py>, ids: Vec<u64>) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        let data = self.data.bind(py).as_bytes();
        ids.into_iter()
            .map(|id| {
                if id == 0 {
                    return Ok(None);
                }
                let bytes = warm_index::string_bytes(&self.layout, data, id)
                    .map_err(|error| IndexInconsistentError::new_err((-1, error.0)))?;
                Ok(Some(PyBytes::new(py, bytes)))
            })
            .collect()
    }
}

/// How names are shown: a `demangle` mode, and the Python function that shows a name under it
/// (`shown(name, full)`, `full` the stored full demangling or None) where this kernel cannot.
struct Naming<'a, 'py> {
    mode: &'a str,
    shown: &'a Bound<'py, PyAny>,
}

fn decode(bytes: &[u8]) -> Shown {
    match std::str::from_utf8(bytes) {
        Ok(text) => Shown::Text(text.to_owned()),
        Err(_) => Shown::Undecodable,
    }
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

/// An index error in source `source`, raised as the caller expects it.
fn inconsistent(source: usize) -> impl Fn(IndexError) -> Stop {
    move |error| Stop::Raise(IndexInconsistentError::new_err((source as i64, error.0)))
}

impl IndexedRuns {
    /// Where the arrays lie in [`Self::data`].
    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The index file's bytes.
    pub(crate) fn data(&self, py: Python<'_>) -> Py<PyBytes> {
        self.data.clone_ref(py)
    }

    fn file(&mut self, data: &[u8], string_id: u64) -> Result<&Shown, IndexError> {
        if string_id == 0 {
            return Ok(&Shown::Missing);
        }
        if !self.files.contains_key(&string_id) {
            let shown = decode(warm_index::string_bytes(&self.layout, data, string_id)?);
            self.files.insert(string_id, shown);
        }
        Ok(&self.files[&string_id])
    }

    /// The name with string id `name_id` as `FrameShaper` shows it under `naming.mode`.
    fn name(&mut self, py: Python<'_>, data: &[u8], name_id: u64, naming: &Naming<'_, '_>, source: usize) -> Result<Shown, Stop> {
        if name_id == 0 {
            return Ok(Shown::Missing);
        }
        if let Some(shown) = self.names.get(&name_id) {
            return Ok(shown.clone());
        }
        let shown = self.compute_name(data, name_id, naming).map_err(|stop| match stop {
            Stop::Raise(error) if error.is_instance_of::<IndexInconsistentError>(py) => {
                Stop::Raise(IndexInconsistentError::new_err((source as i64, error.to_string())))
            }
            other => other,
        })?;
        self.names.insert(name_id, shown.clone());
        Ok(shown)
    }

    fn compute_name(&self, data: &[u8], name_id: u64, naming: &Naming<'_, '_>) -> Result<Shown, Stop> {
        let index_error = |error: IndexError| Stop::Raise(IndexInconsistentError::new_err((-1, error.0)));
        let Shown::Text(raw) = decode(warm_index::string_bytes(&self.layout, data, name_id).map_err(index_error)?) else {
            return Err(Stop::Fallback);
        };
        // IndexedObject._name: the stored full demangling (the name itself when it is empty) goes
        // to the demangler's memo; FrameShaper then demangles every non-empty name.
        let full_id = warm_index::full_name_id(&self.layout, data, name_id).map_err(index_error)?;
        let full = if full_id == 0 {
            None
        } else {
            match decode(warm_index::string_bytes(&self.layout, data, full_id).map_err(index_error)?) {
                Shown::Text(full) if full.is_empty() => Some(raw.clone()),
                Shown::Text(full) => Some(full),
                _ => return Err(Stop::Fallback),
            }
        };
        if raw.is_empty() || naming.mode == "none" {
            return Ok(Shown::Text(raw));
        }
        if naming.mode == "full" {
            if let Some(full) = full {
                return Ok(Shown::Text(full));
            }
        }
        let shown = naming.shown.call1((raw, full))?;
        match shown.cast::<PyString>().ok().map(|text| text.to_str().map(str::to_owned)) {
            Some(Ok(text)) => Ok(Shown::Text(text)),
            _ => Err(Stop::Fallback),
        }
    }
}

impl IndexedRuns {
    /// Forget printed pieces made for another demangle mode or output format.
    fn set_style(&mut self, mode: &str, as_json: bool) {
        if self.style.0 != mode {
            self.names.clear();
        }
        if self.style.0 != mode || self.style.1 != as_json {
            self.name_pieces.clear();
            self.file_pieces.clear();
            self.outer_pieces.clear();
            self.style = (mode.to_owned(), as_json);
        }
    }

    /// Name `name_id` as printed: `"..."` or `null` in JSON, the name or `??` in text.
    fn name_piece(&mut self, py: Python<'_>, data: &[u8], name_id: u64, naming: &Naming<'_, '_>, source: usize) -> Result<&str, Stop> {
        if !self.name_pieces.contains_key(&name_id) {
            let shown = self.name(py, data, name_id, naming, source)?;
            let piece = printed(&shown, self.style.1)?;
            self.name_pieces.insert(name_id, piece);
        }
        Ok(&self.name_pieces[&name_id])
    }

    /// File `file_id` as printed, as [`Self::name_piece`] prints names.
    fn file_piece(&mut self, data: &[u8], file_id: u64, source: usize) -> Result<&str, Stop> {
        if !self.file_pieces.contains_key(&file_id) {
            let as_json = self.style.1;
            let shown = self.file(data, file_id).map_err(inconsistent(source))?;
            let piece = printed(shown, as_json)?;
            self.file_pieces.insert(file_id, piece);
        }
        Ok(&self.file_pieces[&file_id])
    }

    /// The file the innermost frame of a run prints: the run's own unless it is None or empty
    /// (`IndexedObject._frames_of`: ``self._string(run_file) or self._string(chain_file)``).
    fn inner_file_id(&mut self, data: &[u8], own: u64, default: u64, source: usize) -> Result<u64, Stop> {
        match self.file(data, own).map_err(inconsistent(source))? {
            Shown::Text(text) if !text.is_empty() => Ok(own),
            Shown::Undecodable => Err(Stop::Fallback),
            _ => Ok(default),
        }
    }

    /// `chain`'s calling frames as printed after the innermost one: `, {...}` each in JSON,
    /// `function\nfile:line:column\n` each in text.
    fn outer_piece(&mut self, py: Python<'_>, data: &[u8], chain: u64, naming: &Naming<'_, '_>, source: usize) -> Result<&str, Stop> {
        if !self.outer_pieces.contains_key(&chain) {
            let ids = warm_index::outer_frame_ids(&self.layout, data, chain).map_err(inconsistent(source))?;
            let mut piece = String::new();
            for frame_id in ids {
                let frame = warm_index::outer_frame(&self.layout, data, frame_id).map_err(inconsistent(source))?;
                let as_json = self.style.1;
                if as_json {
                    piece.push_str(", {\"function\": ");
                }
                piece.push_str(self.name_piece(py, data, frame.name, naming, source)?);
                piece.push_str(if as_json { ", \"file\": " } else { "\n" });
                piece.push_str(self.file_piece(data, frame.file, source)?);
                text::push_place(&mut piece, frame.line, frame.column, as_json);
            }
            self.outer_pieces.insert(chain, piece);
        }
        Ok(&self.outer_pieces[&chain])
    }
}

/// A name or file as printed, or why the reference should print it.
fn printed(shown: &Shown, as_json: bool) -> Result<String, Stop> {
    Ok(match shown {
        Shown::Undecodable => return Err(Stop::Fallback),
        Shown::Missing if as_json => "null".to_owned(),
        Shown::Text(text) if as_json => {
            let mut piece = String::with_capacity(text.len() + 2);
            text::push_json_string(&mut piece, text);
            piece
        }
        Shown::Text(text) if !text.is_empty() => text.clone(),
        _ => "??".to_owned(),
    })
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
#[allow(clippy::too_many_arguments)]
fn render(
    py: Python<'_>,
    texts: &Bound<'_, PyList>,
    sources: &mut [PyRefMut<'_, IndexedRuns>],
    as_json: bool,
    inlines: bool,
    naming: &Naming<'_, '_>,
    parse_address: &Bound<'_, PyAny>,
    unnamed_reason: &str,
) -> Result<String, Stop> {
    let datas: Vec<Py<PyBytes>> = sources.iter().map(|source| source.data.clone_ref(py)).collect();
    let datas: Vec<&[u8]> = datas.iter().map(|data| data.bind(py).as_bytes()).collect();
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
                match parsed.extract::<u64>() {
                    Ok(vaddr) => vaddr,
                    Err(_) => return Err(Stop::Fallback), // negative, or past 64 bits
                }
            }
        };
        // Module._lookup_one: the first source that names the address; else the first error.
        let mut first_error: Option<(usize, usize)> = None;
        let mut named = false;
        for (position, source) in sources.iter_mut().enumerate() {
            let data = datas[position];
            let (run, chain) = match warm_index::answer(&source.layout, data, vaddr).map_err(inconsistent(position))? {
                Answer::Nothing => continue,
                Answer::Broken(error) => {
                    first_error.get_or_insert((position, error));
                    continue;
                }
                Answer::Run { position: run, chain } => (run, chain),
            };
            let inner = warm_index::inner_frame(&source.layout, data, run, chain).map_err(inconsistent(position))?;
            let file_id = source.inner_file_id(data, inner.file, inner.default_file, position)?;
            // FrameShaper with inlines=False: one frame, the outermost function at the innermost place.
            let name_id = if inlines {
                inner.name
            } else {
                let outer = warm_index::outer_frame_ids(&source.layout, data, chain).map_err(inconsistent(position))?;
                match outer.last() {
                    Some(&outermost) => {
                        warm_index::outer_frame(&source.layout, data, outermost).map_err(inconsistent(position))?.name
                    }
                    None => inner.name,
                }
            };
            if as_json {
                text::push_json_address(&mut out, vaddr);
                out.push_str("{\"function\": ");
            }
            out.push_str(source.name_piece(py, data, name_id, naming, position)?);
            out.push_str(if as_json { ", \"file\": " } else { "\n" });
            out.push_str(source.file_piece(data, file_id, position)?);
            text::push_place(&mut out, inner.line, inner.column, as_json);
            if inlines {
                out.push_str(source.outer_piece(py, data, chain, naming, position)?);
            }
            if as_json {
                text::push_json_end(&mut out, None);
            } else {
                out.push('\n');
            }
            named = true;
            break;
        }
        if named {
            continue;
        }
        let (reason, detail) = match first_error {
            Some((position, error)) => {
                let detail = sources[position].error_details.get(error - 1).ok_or_else(|| {
                    Stop::Raise(IndexInconsistentError::new_err((position as i64, format!("no text for broken region {error}"))))
                })?;
                ("damaged-debug-info", detail.as_str())
            }
            None => (unnamed_reason, ""),
        };
        if as_json {
            text::push_json_address(&mut out, vaddr);
            text::push_json_end(&mut out, Some((reason, detail)));
        } else {
            out.push_str(text::UNNAMED_TEXT);
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
    py: Python<'_>,
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
    let rendered = catch_unwind(AssertUnwindSafe(|| {
        render(py, texts, &mut borrowed, as_json, inlines, &naming, parse_address, unnamed_reason)
    }));
    match rendered {
        Ok(Ok(out)) => Ok(Some(out)),
        Ok(Err(Stop::Fallback)) => Ok(None),
        Ok(Err(Stop::Raise(error))) => Err(error),
        Err(payload) => Err(IndexInconsistentError::new_err((
            -1,
            format!("the compiled lookup failed ({})", panic_message(payload.as_ref())),
        ))),
    }
}

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<IndexedRuns>()?;
    module.add_function(wrap_pyfunction!(render_lookup_answers, module)?)?;
    module.add_function(wrap_pyfunction!(crc32, module)?)?;
    module.add_class::<crate::warm_frames::ProfileAnswers>()?;
    module.add_function(wrap_pyfunction!(crate::warm_frames::profile_answers, module)?)?;
    module.add("IndexInconsistentError", module.py().get_type::<IndexInconsistentError>())?;
    let mut arrays: Vec<&str> = ARRAYS.to_vec();
    arrays.push("str_blob");
    module.add("INDEXED_RUNS_ARRAYS", arrays)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::plain_address;

    #[test]
    fn reads_plain_addresses_and_leaves_the_rest_to_python() {
        assert_eq!(plain_address("0x1F"), Some(0x1f));
        assert_eq!(plain_address(" 0Xffffffffffffffff\t"), Some(u64::MAX));
        assert_eq!(plain_address("4096"), Some(4096));
        assert_eq!(plain_address("0x"), None);
        assert_eq!(plain_address("0x1_0"), None);
        assert_eq!(plain_address("0x-5"), None);
        assert_eq!(plain_address("0x00000000000000001"), None);
        assert_eq!(plain_address("99999999999999999999"), None);
        assert_eq!(plain_address("\u{b}12"), None);
        assert_eq!(plain_address("١٢"), None);
        assert_eq!(plain_address("main"), None);
    }
}
