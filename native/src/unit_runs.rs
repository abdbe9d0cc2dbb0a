//! The index builder's sweep over a whole unit, the twin of `UnitRuns._build_all` in
//! `formats/dwarf/answers.py`: sorted disjoint spans (each with its innermost inline node) cut
//! where the line sequence answering changes and where the covering symbol changes, one run per
//! line row, appended to a `RunTable`.
//!
//! The Python method stays the reference. This twin reads the same spans, row pieces, symbol
//! bounds and line rows, asks the reference's `_head` for each chain head it has not seen (so heads
//! are numbered as the reference numbers them), and appends the same runs. Where the reference
//! would take its slow path for rows that are not sorted, or a value is outside what the twin holds
//! (bounds past 128 bits, a row before its sequence), it appends nothing and returns False: the
//! reference then builds the runs (heads it asked for are remembered, so numbering is unchanged).
//! Every index into the rows is checked; sums are 128-bit.

use std::collections::HashMap;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::dwarf::runs::SymbolBounds;

const ADDRESS_MAX: u128 = u64::MAX as u128;
const INT64_MAX: i128 = i64::MAX as i128;

/// Why the twin stopped: the reference decides, or a Python error to pass on.
enum Stop {
    Reference,
    Python(PyErr),
}

impl From<PyErr> for Stop {
    fn from(error: PyErr) -> Self {
        Stop::Python(error)
    }
}

type Built<T> = Result<T, Stop>;

/// The runs appended, column by column.
#[derive(Default)]
struct Runs {
    lows: Vec<u64>,
    highs: Vec<u64>,
    files: Vec<i64>,
    lines: Vec<i64>,
    columns: Vec<i64>,
    heads: Vec<i64>,
    discriminators: Vec<i64>,
}

impl Runs {
    /// `RunTable.append`.
    fn append(&mut self, low: u128, high: u128, file: i64, line: i128, column: i128, head: i64) {
        if low > ADDRESS_MAX {
            return;
        }
        self.lows.push(low as u64);
        self.highs.push(high.min(ADDRESS_MAX) as u64);
        self.files.push(file);
        self.lines.push(line.clamp(0, INT64_MAX) as i64);
        self.columns.push(column.clamp(0, INT64_MAX) as i64);
        self.heads.push(head);
        self.discriminators.push(0);
    }
}

/// The line rows of the unit (`LineTable`), as the reference bisects them.
struct Rows {
    addresses: Vec<u64>,
    files: Vec<i64>,
    lines: Vec<i64>,
    columns: Vec<i64>,
    discriminators: Vec<i64>,
    sequences: Vec<(usize, usize)>,
}

fn machine_words<T: Copy>(table: &Bound<'_, PyAny>, name: &Bound<'_, pyo3::types::PyString>, from: fn([u8; 8]) -> T) -> PyResult<Vec<T>> {
    let array = table.getattr(name)?;
    if array.getattr(intern!(table.py(), "itemsize"))?.extract::<usize>()? != 8 {
        return Err(pyo3::exceptions::PyValueError::new_err("rows are not 64-bit"));
    }
    let bytes = array.call_method0(intern!(table.py(), "tobytes"))?.cast_into::<PyBytes>()?;
    Ok(bytes.as_bytes().chunks_exact(8).map(|chunk| from(chunk.try_into().expect("8 bytes"))).collect())
}

fn bytes_of<'py, T: Copy, const N: usize>(py: Python<'py>, values: &[T], to_bytes: fn(T) -> [u8; N]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, values.len() * N, |buffer| {
        for (chunk, value) in buffer.chunks_exact_mut(N).zip(values) {
            chunk.copy_from_slice(&to_bytes(*value));
        }
        Ok(())
    })
}

struct Sweep<'py, 'a> {
    py: Python<'py>,
    row_pieces: &'a [(u128, u128, i64)],
    symbols: &'a SymbolBounds,
    rows: Option<&'a Rows>,
    head_ids: &'a Bound<'py, PyDict>,
    head_of: &'a Bound<'py, PyAny>,
    heads_seen: HashMap<(i64, i64), i64>,
}

impl Sweep<'_, '_> {
    /// `head_ids.get((leaf, symbol))`, else `_head(leaf, symbol)`, which numbers a new head.
    fn head(&mut self, leaf: i64, symbol: i64) -> Built<i64> {
        if let Some(head) = self.heads_seen.get(&(leaf, symbol)) {
            return Ok(*head);
        }
        let head = match self.head_ids.get_item((leaf, symbol))? {
            Some(head) => head.extract::<i64>()?,
            None => self.head_of.call1((leaf, symbol))?.extract::<i64>()?,
        };
        self.heads_seen.insert((leaf, symbol), head);
        Ok(head)
    }

    /// `UnitRuns._row_parts`: `[low, high)` cut where the line sequence answering changes.
    fn row_parts(&self, low: u128, high: u128, out: &mut Vec<(u128, u128, i64)>) {
        out.clear();
        let pieces = self.row_pieces;
        let mut position = pieces.partition_point(|piece| piece.0 <= low).saturating_sub(1);
        let mut cursor = low;
        while position < pieces.len() && pieces[position].0 < high {
            let (piece_low, piece_high, sequence) = pieces[position];
            position += 1;
            if piece_high <= cursor {
                continue;
            }
            if cursor < piece_low {
                out.push((cursor, piece_low, -1));
                cursor = piece_low;
            }
            let end = piece_high.min(high);
            out.push((cursor, end, sequence));
            cursor = end;
        }
        if cursor < high {
            out.push((cursor, high, -1));
        }
    }

    /// One run per row of `sequence` in `[low, high)` (`_append_rows`, sorted rows).
    fn append_rows(&self, runs: &mut Runs, low: u128, high: u128, sequence: i64, head: i64) -> Built<()> {
        let rows = self.rows.ok_or(Stop::Reference)?;
        let &(first, end) = usize::try_from(sequence).ok().and_then(|at| rows.sequences.get(at)).ok_or(Stop::Reference)?;
        if first > end || end > rows.addresses.len() || high > ADDRESS_MAX {
            return Err(Stop::Reference);
        }
        let addresses = &rows.addresses[first..end];
        // bisect_right(addresses, low, first, end) - 1 and bisect_left(addresses, high, first, end)
        let after = addresses.partition_point(|address| u128::from(*address) <= low);
        if after == 0 {
            return Err(Stop::Reference); // a run before the sequence's first row: not the sweep's case
        }
        let row = first + after - 1;
        let stop = first + addresses.partition_point(|address| u128::from(*address) < high);
        if stop <= row {
            return Err(Stop::Reference);
        }
        runs.lows.push(low as u64);
        runs.lows.extend_from_slice(&rows.addresses[row + 1..stop]);
        runs.highs.extend_from_slice(&rows.addresses[row + 1..stop]);
        runs.highs.push(high as u64);
        runs.files.extend_from_slice(&rows.files[row..stop]);
        runs.lines.extend_from_slice(&rows.lines[row..stop]);
        runs.columns.extend_from_slice(&rows.columns[row..stop]);
        runs.heads.extend(std::iter::repeat_n(head, stop - row));
        runs.discriminators.extend_from_slice(rows.discriminators.get(row..stop).ok_or(Stop::Reference)?);
        Ok(())
    }

    fn run(&mut self, spans: &[(u128, u128, i64)]) -> Built<Runs> {
        let mut runs = Runs::default();
        let pieces = self.row_pieces;
        let (mut row_at, mut symbol_at) = (0usize, 0usize);
        let mut parts = Vec::new();
        let mut symbol_parts = Vec::new();
        for &(low, high, leaf) in spans {
            if low >= high {
                continue; // the gap between two functions that touch
            }
            while row_at < pieces.len() && pieces[row_at].1 <= low {
                row_at += 1;
            }
            if row_at < pieces.len() && pieces[row_at].0 <= low && high <= pieces[row_at].1 {
                parts.clear();
                parts.push((low, high, pieces[row_at].2));
            } else if row_at >= pieces.len() || pieces[row_at].0 >= high {
                if leaf < 0 {
                    continue;
                }
                parts.clear();
                parts.push((low, high, -1));
            } else {
                self.row_parts(low, high, &mut parts);
            }
            for &(part_low, part_high, sequence) in &parts {
                if sequence < 0 && leaf < 0 {
                    continue;
                }
                self.symbols.pieces_in_order(&mut symbol_at, part_low, part_high, &mut symbol_parts);
                for &(symbol_low, symbol_high, symbol) in &symbol_parts {
                    let head = self.head(leaf, symbol)?;
                    if sequence < 0 {
                        runs.append(symbol_low, symbol_high, -1, 0, 0, head);
                    } else {
                        self.append_rows(&mut runs, symbol_low, symbol_high, sequence, head)?;
                    }
                }
            }
        }
        Ok(runs)
    }
}

fn bounds_list(list: &Bound<'_, PyAny>) -> PyResult<Option<Vec<(u128, u128, i64)>>> {
    let list = list.cast::<PyList>()?;
    let mut found = Vec::with_capacity(list.len());
    for item in list.iter() {
        let Ok(item) = item.extract::<(u128, u128, i64)>() else { return Ok(None) };
        found.push(item);
    }
    Ok(Some(found))
}

/// Twin of `UnitRuns._build_all(spans)`: appends to `table` the runs the reference appends and
/// returns True; or appends nothing and returns False where the reference must build them.
/// `runs` is the `UnitRuns`; `symbols` the `SymbolBounds` of its symbol index.
#[pyfunction]
pub fn build_unit_runs(
    py: Python<'_>,
    runs: &Bound<'_, PyAny>,
    table: &Bound<'_, PyAny>,
    spans: &Bound<'_, PyAny>,
    symbols: &Bound<'_, SymbolBounds>,
) -> PyResult<bool> {
    let Some(spans) = bounds_list(spans)? else { return Ok(false) };
    let Some(row_pieces) = bounds_list(&runs.getattr(intern!(py, "_row_pieces"))?)? else { return Ok(false) };
    let lines = runs.getattr(intern!(py, "_state"))?.getattr(intern!(py, "lines"))?;
    let rows = if lines.is_none() {
        None
    } else {
        if !lines.getattr(intern!(py, "increasing"))?.is_truthy()? {
            return Ok(false); // rows not sorted: the reference's slow path
        }
        let mut sequences = Vec::new();
        for sequence in lines.getattr(intern!(py, "sequences"))?.cast_into::<PyList>()?.iter() {
            let Ok((_, _, first, end)) = sequence.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>, usize, usize)>() else {
                return Ok(false);
            };
            sequences.push((first, end));
        }
        Some(Rows {
            addresses: machine_words(&lines, intern!(py, "addresses"), u64::from_ne_bytes)?,
            files: machine_words(&lines, intern!(py, "file_indexes"), i64::from_ne_bytes)?,
            lines: machine_words(&lines, intern!(py, "lines"), i64::from_ne_bytes)?,
            columns: machine_words(&lines, intern!(py, "columns"), i64::from_ne_bytes)?,
            discriminators: machine_words(&lines, intern!(py, "discriminators"), i64::from_ne_bytes)?,
            sequences,
        })
    };
    let head_ids = runs.getattr(intern!(py, "_head_ids"))?.cast_into::<PyDict>()?;
    let head_of = runs.getattr(intern!(py, "_head"))?;
    let symbols = symbols.get();
    let mut sweep = Sweep { py, row_pieces: &row_pieces, symbols, rows: rows.as_ref(), head_ids: &head_ids, head_of: &head_of,
                            heads_seen: HashMap::new() };
    let built = match sweep.run(&spans) {
        Ok(built) => built,
        Err(Stop::Reference) => return Ok(false),
        Err(Stop::Python(error)) => return Err(error),
    };
    let py = sweep.py;
    let frombytes = intern!(py, "frombytes");
    table.getattr(intern!(py, "lows"))?.call_method1(frombytes, (bytes_of(py, &built.lows, u64::to_ne_bytes)?,))?;
    table.getattr(intern!(py, "highs"))?.call_method1(frombytes, (bytes_of(py, &built.highs, u64::to_ne_bytes)?,))?;
    table.getattr(intern!(py, "files"))?.call_method1(frombytes, (bytes_of(py, &built.files, i64::to_ne_bytes)?,))?;
    table.getattr(intern!(py, "lines"))?.call_method1(frombytes, (bytes_of(py, &built.lines, i64::to_ne_bytes)?,))?;
    table.getattr(intern!(py, "columns"))?.call_method1(frombytes, (bytes_of(py, &built.columns, i64::to_ne_bytes)?,))?;
    table.getattr(intern!(py, "heads"))?.call_method1(frombytes, (bytes_of(py, &built.heads, i64::to_ne_bytes)?,))?;
    table
        .getattr(intern!(py, "discriminators"))?
        .call_method1(frombytes, (bytes_of(py, &built.discriminators, i64::to_ne_bytes)?,))?;
    Ok(true)
}
