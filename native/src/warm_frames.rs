//! The warm profile rewrite's lookups: the frames persistent indexes answer at a batch of
//! addresses, as ids, for `symbolize/indexed_lines.py`. The twin of `Module.lookup` over a
//! module whose every source is an index (`IndexedObject.frames_at`, source by source), with
//! each distinct answer, frame and function key given once, so that the Python side makes one
//! pprof `Function` per distinct function and one `Line` list per distinct answer.
//!
//! [`profile_answers`] returns a [`ProfileAnswers`]; its [`ProfileAnswers::line_bytes`] then
//! writes each answer's `Location.line` entries as protobuf bytes (profile.proto: `Location`
//! field 4, `Line` fields 1 `function_id`, 2 `line`, 3 `column`), for `Location.MergeFromString`.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::unpanicked;
use crate::warm::{IdsMap, IndexInconsistentError, IndexedRuns};
use crate::warm_index::{self, Found, IndexError};

/// A function key: what a pprof `Function` is made of, as string ids of one source: (source
/// position, name, the name's stored full demangling (0: none), file, start line).
type FunctionKey = (usize, u64, u64, u64, u64);

/// The answers of one batch, by id: what `ProfileAnswers` hands to Python.
#[pyclass(module = "symbolize.formats._kernels")]
#[derive(Default)]
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

/// A protobuf varint (ULEB128; gimli's writer, through `io::Write`, cost a fifth more here).
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
            // Location field 4, length-delimited: a Line of fields 1 function_id, 2 line, 3 column,
            // each a varint (proto3 leaves zeros out), at most 33 bytes: a one-byte length.
            let mut entry = Vec::with_capacity(35);
            entry.extend([0x22, 0]);
            for (tag, value) in [(0x08u8, function_id), (0x10, line), (0x18, column)] {
                if value != 0 {
                    entry.push(tag);
                    push_varint(&mut entry, value);
                }
            }
            entry[1] = (entry.len() - 2) as u8;
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

/// The id of `key` in `items`, which `ids` indexes: handed out in order of first sight.
fn intern<K: std::hash::Hash + Eq + Copy>(ids: &mut IdsMap<K, u32>, items: &mut Vec<K>, key: K) -> u32 {
    *ids.entry(key).or_insert_with(|| {
        items.push(key);
        (items.len() - 1) as u32
    })
}

fn collect(sources: &[PyRef<'_, IndexedRuns>], datas: &[&[u8]], vaddrs: &[u64]) -> Result<ProfileAnswers, (usize, IndexError)> {
    let mut out = ProfileAnswers { results: Vec::with_capacity(vaddrs.len()), fits: true, ..Default::default() };
    let mut function_ordered: Vec<bool> = Vec::new();
    let mut answer_ids: IdsMap<(usize, usize), i64> = IdsMap::default();
    let (mut broken_ids, mut functions, mut frames) = (IdsMap::default(), IdsMap::default(), IdsMap::default());
    for &vaddr in vaddrs {
        let layouts = sources.iter().zip(datas).map(|(source, data)| (&source.layout, *data));
        let (position, run, chain) = match warm_index::lookup(layouts, vaddr)? {
            Found::Run { source, run, chain } => (source, run, chain),
            Found::Broken { source, error } => {
                out.results.push(-2 - i64::from(intern(&mut broken_ids, &mut out.broken, (source, error))));
                continue;
            }
            Found::Nothing => {
                out.results.push(-1);
                continue;
            }
        };
        if let Some(&known) = answer_ids.get(&(position, run)) {
            out.results.push(known);
            continue;
        }
        let (layout, data) = (&sources[position].layout, datas[position]);
        let fail = |error: IndexError| (position, error);
        let non_empty = |id: u64| -> Result<bool, (usize, IndexError)> {
            Ok(id != 0 && !warm_index::string_bytes(layout, data, id).map_err(fail)?.is_empty())
        };
        // (frame, start line) of each frame, innermost first.
        let inner = warm_index::inner_frame(layout, data, run, chain).map_err(fail)?;
        let mut chain_frames = vec![(inner, layout.chain_start_line.at(data, chain).map_err(fail)?)];
        for frame_id in warm_index::outer_frame_ids(layout, data, chain).map_err(fail)? {
            let frame = warm_index::outer_frame(layout, data, frame_id).map_err(fail)?;
            chain_frames.push((frame, layout.frame_start_line.at(data, frame_id).map_err(fail)?));
        }
        let mut flags = if chain_frames.len() > 1 { INLINES } else { 0 };
        let mut ids = Vec::with_capacity(chain_frames.len());
        for ((name, file, line, column), start_line) in chain_frames {
            flags |= if non_empty(name)? { FUNCTIONS | COVERED } else { 0 };
            flags |= if non_empty(file)? { FILES | COVERED } else { 0 };
            flags |= if line > 0 { LINES } else { 0 };
            let full = if name == 0 { 0 } else { layout.name_full.at(data, name).map_err(fail)? };
            let key = intern(&mut functions, &mut out.functions, (position, name, full, file, start_line));
            out.fits &= line <= INT64_MAX && column <= INT64_MAX;
            ids.push(intern(&mut frames, &mut out.frames, (key, line, column)));
        }
        if flags & COVERED != 0 {
            function_ordered.resize(out.functions.len(), false); // every key handed out so far
            for key in ids.iter().map(|&frame| out.frames[frame as usize].0) {
                if !std::mem::replace(&mut function_ordered[key as usize], true) {
                    out.function_order.push(key);
                }
            }
        }
        out.answers.push(ids);
        out.flags.push(flags);
        let result = (out.answers.len() - 1) as i64;
        answer_ids.insert((position, run), result);
        out.results.push(result);
    }
    Ok(out)
}

/// The frames `sources` (every source of a module, best first, each an [`IndexedRuns`]) answer at
/// each of `vaddrs`, as `Module.lookup` finds them. An index whose ids do not hold together
/// raises `IndexInconsistentError(source position, message)`.
#[pyfunction]
pub fn profile_answers(sources: &Bound<'_, PyList>, vaddrs: Vec<u64>) -> PyResult<ProfileAnswers> {
    let borrowed: Vec<PyRef<'_, IndexedRuns>> =
        sources.iter().map(|source| source.extract::<PyRef<'_, IndexedRuns>>().map_err(PyErr::from)).collect::<Result<_, _>>()?;
    let datas: Vec<&[u8]> = borrowed.iter().map(|source| &source.data[..]).collect();
    let collected = unpanicked("lookup", || collect(&borrowed, &datas, &vaddrs));
    let inconsistent = |(position, error): (usize, IndexError)| IndexInconsistentError::new_err((position as i64, error.0));
    collected.map_err(|message| IndexInconsistentError::new_err((-1, message)))?.map_err(inconsistent)
}
