//! The warm profile rewrite's lookups: the frames persistent indexes answer at a batch of
//! addresses, as ids, for `symbolize/indexed_lines.py`. The twin of `Module.lookup` over a
//! module whose every source is an index (`IndexedObject.frames_at`, source by source), with
//! each distinct answer, frame and function key given once, so that the Python side makes one
//! pprof `Function` per distinct function and one `Line` list per distinct answer.
//!
//! [`profile_answers`] returns a [`ProfileAnswers`]; its [`ProfileAnswers::line_bytes`] then
//! writes each answer's `Location.line` entries as protobuf bytes (profile.proto: `Location`
//! field 4, `Line` fields 1 `function_id`, 2 `line`, 3 `column`), for `Location.MergeFromString`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::panic_message;
use crate::warm::{IdsMap, IndexInconsistentError, IndexedRuns};
use crate::warm_index::{self, Answer, IndexError, Layout};

/// A function key: what a pprof `Function` is made of, as string ids of one source: (source
/// position, name, the name's stored full demangling (0: none), file, start line).
type FunctionKey = (usize, u64, u64, u64, u64);

/// The answers of one batch, by id: what `ProfileAnswers` hands to Python.
#[pyclass(module = "symbolize.formats._kernels")]
pub struct ProfileAnswers {
    /// One per address: an answer id (>= 0); -1 where no source names it and none is broken;
    /// `-2 - k` where the first broken region met is `broken[k]`.
    #[pyo3(get)]
    results: Vec<i64>,
    /// `(source position, error number)` of each broken region met (error numbers count from 1).
    #[pyo3(get)]
    broken: Vec<(usize, usize)>,
    /// Each distinct answer's frames, innermost first, as frame ids.
    #[pyo3(get)]
    answers: Vec<Vec<u32>>,
    /// Each distinct frame: (function key id, line, column).
    #[pyo3(get)]
    frames: Vec<(u32, u64, u64)>,
    /// Each distinct function key: (source position, name id, full name id, file id, start line).
    #[pyo3(get)]
    functions: Vec<FunctionKey>,
    /// Each answer's facts, as bits: [`COVERED`] (a frame has a non-empty function or file: the
    /// rewrite names only those), [`FUNCTIONS`], [`FILES`], [`LINES`] (a line > 0), [`INLINES`].
    #[pyo3(get)]
    flags: Vec<u8>,
    /// The function keys in the order the rewrite first attaches them: answer by answer in the
    /// order of `results`, covered answers only, frames innermost first.
    #[pyo3(get)]
    function_order: Vec<u32>,
    /// Whether every line and column fits a pprof `Line` (int64); where one does not, the Python
    /// path raises as protobuf does, so it takes the batch.
    #[pyo3(get)]
    fits: bool,
}

pub const COVERED: u8 = 1;
pub const FUNCTIONS: u8 = 2;
pub const FILES: u8 = 4;
pub const LINES: u8 = 8;
pub const INLINES: u8 = 16;

/// The largest value a pprof `Line.line` or `Line.column` (int64) holds.
const INT64_MAX: u64 = i64::MAX as u64;

fn push_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

#[pymethods]
impl ProfileAnswers {
    /// Each answer's `Location.line` entries as protobuf bytes, `function_ids[key]` the pprof
    /// `Function` id of function key `key` (0 for a key no named answer uses).
    fn line_bytes<'py>(&self, py: Python<'py>, function_ids: Vec<u64>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let mut frame_bytes: Vec<Vec<u8>> = Vec::with_capacity(self.frames.len());
        for &(key, line, column) in &self.frames {
            let function_id = *function_ids.get(key as usize).ok_or_else(|| {
                IndexInconsistentError::new_err((-1, format!("no function id for function key {key}")))
            })?;
            // Line: field 1 function_id, 2 line, 3 column, each a varint; proto3 leaves zeros out.
            let mut fields = Vec::with_capacity(24);
            for (tag, value) in [(0x08u8, function_id), (0x10, line), (0x18, column)] {
                if value != 0 {
                    fields.push(tag);
                    push_varint(&mut fields, value);
                }
            }
            // Location: field 4, length-delimited.
            let mut entry = Vec::with_capacity(fields.len() + 3);
            entry.push(0x22);
            push_varint(&mut entry, fields.len() as u64);
            entry.extend_from_slice(&fields);
            frame_bytes.push(entry);
        }
        let mut out = Vec::with_capacity(self.answers.len());
        for frames in &self.answers {
            let mut answer = Vec::new();
            for &frame in frames {
                answer.extend_from_slice(&frame_bytes[frame as usize]);
            }
            out.push(PyBytes::new(py, &answer));
        }
        Ok(out)
    }
}

/// Ids handed out in order of first sight.
struct Interner<K> {
    ids: IdsMap<K, u32>,
}

impl<K: std::hash::Hash + Eq + Copy> Interner<K> {
    fn new() -> Self {
        Interner { ids: IdsMap::default() }
    }

    fn id(&mut self, key: K, items: &mut Vec<K>) -> u32 {
        *self.ids.entry(key).or_insert_with(|| {
            items.push(key);
            (items.len() - 1) as u32
        })
    }
}

/// The stored full demangling of name `name` (0: none, or no name).
fn full_name(layout: &Layout, data: &[u8], name: u64) -> Result<u64, IndexError> {
    if name == 0 {
        return Ok(0);
    }
    warm_index::full_name_id(layout, data, name)
}

fn collect(sources: &[PyRef<'_, IndexedRuns>], datas: &[&[u8]], vaddrs: &[u64]) -> Result<ProfileAnswers, (usize, IndexError)> {
    let mut out = ProfileAnswers {
        results: Vec::with_capacity(vaddrs.len()),
        broken: Vec::new(),
        answers: Vec::new(),
        frames: Vec::new(),
        functions: Vec::new(),
        flags: Vec::new(),
        function_order: Vec::new(),
        fits: true,
    };
    let mut function_ordered: Vec<bool> = Vec::new();
    let mut answer_ids: IdsMap<(usize, usize), i64> = IdsMap::default();
    let mut broken_ids: IdsMap<(usize, usize), i64> = IdsMap::default();
    let mut functions = Interner::new();
    let mut frames = Interner::new();
    for &vaddr in vaddrs {
        // Module._lookup_one: the first source that names the address; else the first error.
        let mut result = -1i64;
        let mut first_broken: Option<(usize, usize)> = None;
        for (position, source) in sources.iter().enumerate() {
            let (layout, data) = (source.layout(), datas[position]);
            let fail = |error: IndexError| (position, error);
            let (run, chain) = match warm_index::answer(layout, data, vaddr).map_err(fail)? {
                Answer::Nothing => continue,
                Answer::Broken(error) => {
                    first_broken.get_or_insert((position, error));
                    continue;
                }
                Answer::Run { position: run, chain } => (run, chain),
            };
            if let Some(&known) = answer_ids.get(&(position, run)) {
                result = known;
                break;
            }
            let inner = warm_index::inner_frame(layout, data, run, chain).map_err(fail)?;
            let start_line = layout.chain_start_line.at(data, chain).map_err(fail)?;
            let non_empty = |id: u64| -> Result<bool, (usize, IndexError)> {
                Ok(id != 0 && !warm_index::string_bytes(layout, data, id).map_err(fail)?.is_empty())
            };
            // IndexedObject._frames_of: the run's own file unless it is None or empty.
            let file = if non_empty(inner.file)? { inner.file } else { inner.default_file };
            let mut flags = 0u8;
            let mut note = |name: u64, file: u64, line: u64| -> Result<(), (usize, IndexError)> {
                let (has_name, has_file) = (non_empty(name)?, non_empty(file)?);
                flags |= if has_name { FUNCTIONS | COVERED } else { 0 };
                flags |= if has_file { FILES | COVERED } else { 0 };
                flags |= if line > 0 { LINES } else { 0 };
                Ok(())
            };
            note(inner.name, file, inner.line)?;
            let full = full_name(layout, data, inner.name).map_err(fail)?;
            let key = functions.id((position, inner.name, full, file, start_line), &mut out.functions);
            out.fits &= inner.line <= INT64_MAX && inner.column <= INT64_MAX;
            let mut ids = vec![frames.id((key, inner.line, inner.column), &mut out.frames)];
            for frame_id in warm_index::outer_frame_ids(layout, data, chain).map_err(fail)? {
                let frame = warm_index::outer_frame(layout, data, frame_id).map_err(fail)?;
                let start_line = layout.frame_start_line.at(data, frame_id).map_err(fail)?;
                note(frame.name, frame.file, frame.line)?;
                let full = full_name(layout, data, frame.name).map_err(fail)?;
                let key = functions.id((position, frame.name, full, frame.file, start_line), &mut out.functions);
                out.fits &= frame.line <= INT64_MAX && frame.column <= INT64_MAX;
                ids.push(frames.id((key, frame.line, frame.column), &mut out.frames));
            }
            if ids.len() > 1 {
                flags |= INLINES;
            }
            out.answers.push(ids);
            out.flags.push(flags);
            result = (out.answers.len() - 1) as i64;
            answer_ids.insert((position, run), result);
            if flags & COVERED != 0 {
                let keys = out.answers[result as usize].iter().map(|&frame| out.frames[frame as usize].0);
                for key in keys {
                    let key_index = key as usize;
                    if function_ordered.len() <= key_index {
                        function_ordered.resize(key_index + 1, false);
                    }
                    if !function_ordered[key_index] {
                        function_ordered[key_index] = true;
                        out.function_order.push(key);
                    }
                }
            }
            break;
        }
        if result < 0 {
            if let Some(broken) = first_broken {
                let next = -2 - out.broken.len() as i64;
                result = *broken_ids.entry(broken).or_insert_with(|| {
                    out.broken.push(broken);
                    next
                });
            }
        }
        out.results.push(result);
    }
    Ok(out)
}

/// The frames `sources` (every source of a module, best first, each an [`IndexedRuns`]) answer at
/// each of `vaddrs`, as `Module.lookup` finds them. An index whose ids do not hold together
/// raises `IndexInconsistentError(source position, message)`.
#[pyfunction]
pub fn profile_answers(py: Python<'_>, sources: &Bound<'_, PyList>, vaddrs: Vec<u64>) -> PyResult<ProfileAnswers> {
    let borrowed: Vec<PyRef<'_, IndexedRuns>> =
        sources.iter().map(|source| source.extract::<PyRef<'_, IndexedRuns>>().map_err(PyErr::from)).collect::<Result<_, _>>()?;
    let datas: Vec<Py<PyBytes>> = borrowed.iter().map(|source| source.data(py)).collect();
    let datas: Vec<&[u8]> = datas.iter().map(|data| data.bind(py).as_bytes()).collect();
    match catch_unwind(AssertUnwindSafe(|| collect(&borrowed, &datas, &vaddrs))) {
        Ok(Ok(answers)) => Ok(answers),
        Ok(Err((position, error))) => Err(IndexInconsistentError::new_err((position as i64, error.0))),
        Err(payload) => Err(IndexInconsistentError::new_err((
            -1,
            format!("the compiled lookup failed ({})", panic_message(payload.as_ref())),
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::push_varint;

    #[test]
    fn writes_varints_as_protobuf_does() {
        let mut out = Vec::new();
        for value in [0, 1, 127, 128, 300, u64::MAX] {
            push_varint(&mut out, value);
        }
        let mut expected = vec![0x00, 0x01, 0x7f, 0x80, 0x01, 0xac, 0x02];
        expected.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert_eq!(out, expected);
    }
}
