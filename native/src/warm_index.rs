//! The persistent index's arrays, read in place: the twin of `IndexedObject.frames_at` in
//! `symbolize/index/indexed.py` (one bisection over the run lows, then the run's chain).
//!
//! The arrays are the index file's own bytes (`symbolize/index/store.py`: each array a run of
//! machine-order unsigned integers of one width, at an offset the header gives). Every read is
//! bounds-checked: an id that points past its array is an [`IndexError`], which the Python side
//! takes for a damaged index, never a panic or a read outside the file.

use std::fmt;

/// The arrays a lookup reads, in the order [`Layout::new`] takes their places.
pub const ARRAYS: [&str; 19] = [
    "run_low",
    "run_file",
    "run_line",
    "run_column",
    "run_chain",
    "chain_name",
    "chain_file",
    "chain_outer",
    "outer_begin",
    "outer_frames",
    "frame_name",
    "frame_file",
    "frame_line",
    "frame_column",
    "error_text",
    "name_full",
    "str_offsets",
    "chain_start_line",
    "frame_start_line",
];

/// An index whose numbers do not hold together (an id past its array, a string past the blob).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexError(pub String);

impl fmt::Display for IndexError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// Where one array lies in the file: `count` items of `width` bytes from byte `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    width: usize,
    start: usize,
    pub count: usize,
}

impl Column {
    /// The array `name` of type `code` ('B', 'H', 'I' or 'Q'), checked to lie inside `data_len` bytes.
    pub fn new(name: &'static str, code: char, start: usize, count: usize, data_len: usize) -> Result<Self, IndexError> {
        let width = match code {
            'B' => 1,
            'H' => 2,
            'I' => 4,
            'Q' => 8,
            _ => return Err(IndexError(format!("index array {name} has type {code:?}, not an unsigned one"))),
        };
        let end = count.checked_mul(width).and_then(|size| size.checked_add(start));
        match end {
            Some(end) if end <= data_len => Ok(Column { name, width, start, count }),
            _ => Err(IndexError(format!("index array {name} runs past the end of the file"))),
        }
    }

    /// Item `index`, or None past the end.
    #[inline]
    pub fn get(&self, data: &[u8], index: usize) -> Option<u64> {
        if index >= self.count {
            return None;
        }
        let at = self.start + index * self.width;
        let bytes = data.get(at..at + self.width)?;
        Some(match *bytes {
            [a] => u64::from(a),
            [a, b] => u64::from(u16::from_ne_bytes([a, b])),
            [a, b, c, d] => u64::from(u32::from_ne_bytes([a, b, c, d])),
            [a, b, c, d, e, f, g, h] => u64::from_ne_bytes([a, b, c, d, e, f, g, h]),
            _ => return None,
        })
    }

    /// Item `index`, or the error naming this array.
    #[inline]
    pub fn at(&self, data: &[u8], index: u64) -> Result<u64, IndexError> {
        usize::try_from(index)
            .ok()
            .and_then(|index| self.get(data, index))
            .ok_or_else(|| IndexError(format!("index array {}: item {index} is out of range", self.name)))
    }
}

/// Every array a lookup reads, plus the string blob.
#[derive(Debug, Clone)]
pub struct Layout {
    pub run_low: Column,
    pub run_file: Column,
    pub run_line: Column,
    pub run_column: Column,
    pub run_chain: Column,
    pub chain_name: Column,
    pub chain_file: Column,
    pub chain_outer: Column,
    pub outer_begin: Column,
    pub outer_frames: Column,
    pub frame_name: Column,
    pub frame_file: Column,
    pub frame_line: Column,
    pub frame_column: Column,
    pub error_text: Column,
    pub name_full: Column,
    pub str_offsets: Column,
    /// The start lines of a chain's innermost function and of a calling frame's (the profile
    /// rewrite's pprof `Function.start_line`).
    pub chain_start_line: Column,
    pub frame_start_line: Column,
    /// `str_blob`: (start, length) in bytes.
    pub blob: (usize, usize),
}

impl Layout {
    /// `columns` in the order of [`ARRAYS`]; `blob` the string blob's bytes.
    pub fn new(columns: &[Column], blob: (usize, usize), data_len: usize) -> Result<Self, IndexError> {
        let [run_low, run_file, run_line, run_column, run_chain, chain_name, chain_file, chain_outer, outer_begin, outer_frames, frame_name, frame_file, frame_line, frame_column, error_text, name_full, str_offsets, chain_start_line, frame_start_line] =
            *columns
        else {
            return Err(IndexError(format!("expected {} arrays, got {}", ARRAYS.len(), columns.len())));
        };
        if blob.0.checked_add(blob.1).is_none_or(|end| end > data_len) {
            return Err(IndexError("index array str_blob runs past the end of the file".to_owned()));
        }
        Ok(Layout {
            run_low,
            run_file,
            run_line,
            run_column,
            run_chain,
            chain_name,
            chain_file,
            chain_outer,
            outer_begin,
            outer_frames,
            frame_name,
            frame_file,
            frame_line,
            frame_column,
            error_text,
            name_full,
            str_offsets,
            chain_start_line,
            frame_start_line,
            blob,
        })
    }
}

/// What one index answers at an address (`IndexedObject.frames_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// No run covers the address, or a gap does: `[]`.
    Nothing,
    /// A broken region: the error with this number (1-based, as chain ids count them) is raised.
    Broken(usize),
    /// Run `position` with chain `chain` answers.
    Run { position: usize, chain: u64 },
}

/// The innermost frame a run answers (Python's `Frame`, before any name is looked up):
/// string ids for the names and files (0 stands for None).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InnerFrame {
    pub name: u64,
    /// The run's own file, and the chain's, used when the run's is None or empty.
    pub file: u64,
    pub default_file: u64,
    pub line: u64,
    pub column: u64,
}

/// A calling frame, by its string ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OuterFrame {
    pub name: u64,
    pub file: u64,
    pub line: u64,
    pub column: u64,
}

/// `bisect_right(run_low, vaddr)`, step for step as Python's `bisect` takes it (so that even
/// unsorted lows give the reference's answer).
pub fn bisect_right(layout: &Layout, data: &[u8], vaddr: u64) -> Result<usize, IndexError> {
    let (mut low, mut high) = (0usize, layout.run_low.count);
    while low < high {
        let middle = low + (high - low) / 2;
        if vaddr < layout.run_low.at(data, middle as u64)? {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    Ok(low)
}

/// What the index answers at `vaddr`, in the order `IndexedObject.frames_at` decides it.
pub fn answer(layout: &Layout, data: &[u8], vaddr: u64) -> Result<Answer, IndexError> {
    let Some(position) = bisect_right(layout, data, vaddr)?.checked_sub(1) else {
        return Ok(Answer::Nothing);
    };
    let chain = layout.run_chain.at(data, position as u64)?;
    if chain == 0 {
        return Ok(Answer::Nothing);
    }
    if chain <= layout.error_text.count as u64 {
        return Ok(Answer::Broken(chain as usize));
    }
    Ok(Answer::Run { position, chain })
}

/// The innermost frame of run `position` under `chain`.
pub fn inner_frame(layout: &Layout, data: &[u8], position: usize, chain: u64) -> Result<InnerFrame, IndexError> {
    let position = position as u64;
    Ok(InnerFrame {
        name: layout.chain_name.at(data, chain)?,
        file: layout.run_file.at(data, position)?,
        default_file: layout.chain_file.at(data, chain)?,
        line: layout.run_line.at(data, position)?,
        column: layout.run_column.at(data, position)?,
    })
}

/// The frame ids of `chain`'s callers, innermost first: `outer_frames[begin:end]`, clamped as a
/// Python slice is.
pub fn outer_frame_ids(layout: &Layout, data: &[u8], chain: u64) -> Result<Vec<u64>, IndexError> {
    let outer = layout.chain_outer.at(data, chain)?;
    let begin = layout.outer_begin.at(data, outer)?;
    let end = layout.outer_begin.at(data, outer.saturating_add(1))?;
    let count = layout.outer_frames.count as u64;
    let (begin, end) = (begin.min(count), end.min(count));
    (begin..end.max(begin)).map(|index| layout.outer_frames.at(data, index)).collect()
}

/// Calling frame `frame_id`.
pub fn outer_frame(layout: &Layout, data: &[u8], frame_id: u64) -> Result<OuterFrame, IndexError> {
    Ok(OuterFrame {
        name: layout.frame_name.at(data, frame_id)?,
        file: layout.frame_file.at(data, frame_id)?,
        line: layout.frame_line.at(data, frame_id)?,
        column: layout.frame_column.at(data, frame_id)?,
    })
}

/// The bytes of string `string_id` (not 0, which stands for None).
pub fn string_bytes<'a>(layout: &Layout, data: &'a [u8], string_id: u64) -> Result<&'a [u8], IndexError> {
    let start = layout.str_offsets.at(data, string_id)?;
    let end = layout.str_offsets.at(data, string_id.saturating_add(1))?;
    let (blob_start, blob_length) = layout.blob;
    // A Python slice of the blob: clamped, and empty when the end comes first.
    let start = usize::try_from(start).unwrap_or(usize::MAX).min(blob_length);
    let end = usize::try_from(end).unwrap_or(usize::MAX).min(blob_length).max(start);
    data.get(blob_start + start..blob_start + end)
        .ok_or_else(|| IndexError(format!("index string {string_id} runs past the blob")))
}

/// The string id of the full demangling of the name with string id `name`; 0 when none is stored.
pub fn full_name_id(layout: &Layout, data: &[u8], name: u64) -> Result<u64, IndexError> {
    layout.name_full.at(data, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index of `arrays` (each as u32 items), laid out one after another.
    fn build(arrays: &[(&'static str, Vec<u64>)], blob: &[u8]) -> (Vec<u8>, Layout) {
        let mut data = Vec::new();
        let mut columns = Vec::new();
        for name in ARRAYS {
            let values = arrays.iter().find(|(array, _)| *array == name).map(|(_, values)| values.clone()).unwrap_or_default();
            let start = data.len();
            for value in &values {
                data.extend_from_slice(&(*value as u32).to_ne_bytes());
            }
            columns.push(Column::new(name, 'I', start, values.len(), usize::MAX).unwrap());
        }
        let blob_start = data.len();
        data.extend_from_slice(blob);
        let layout = Layout::new(&columns, (blob_start, blob.len()), data.len()).unwrap();
        (data, layout)
    }

    fn sample() -> (Vec<u8>, Layout) {
        // Strings: 1 "f", 2 "a.c", 3 "g". Runs: [0x10, 0x20) chain 2, [0x20, ...) gap.
        // Chain 1 is a broken region's (one error text), chain 2 is f called from frame 0 (g).
        build(
            &[
                ("run_low", vec![0x10, 0x20, 0x30]),
                ("run_file", vec![2, 0, 0]),
                ("run_line", vec![7, 0, 0]),
                ("run_column", vec![3, 0, 0]),
                ("run_chain", vec![2, 0, 1]),
                ("chain_name", vec![0, 0, 1]),
                ("chain_file", vec![0, 0, 2]),
                ("chain_outer", vec![0, 0, 1]),
                ("outer_begin", vec![0, 0, 1]),
                ("outer_frames", vec![0]),
                ("frame_name", vec![3]),
                ("frame_file", vec![2]),
                ("frame_line", vec![40]),
                ("frame_column", vec![9]),
                ("error_text", vec![1]),
                ("name_full", vec![0, 0, 0, 0]),
                ("str_offsets", vec![0, 0, 1, 4, 5]),
            ],
            b"fa.cg",
        )
    }

    #[test]
    fn answers_runs_gaps_and_broken_regions() {
        let (data, layout) = sample();
        assert_eq!(answer(&layout, &data, 0x0f), Ok(Answer::Nothing));
        assert_eq!(answer(&layout, &data, 0x10), Ok(Answer::Run { position: 0, chain: 2 }));
        assert_eq!(answer(&layout, &data, 0x1f), Ok(Answer::Run { position: 0, chain: 2 }));
        assert_eq!(answer(&layout, &data, 0x20), Ok(Answer::Nothing));
        assert_eq!(answer(&layout, &data, u64::MAX), Ok(Answer::Broken(1)));
    }

    #[test]
    fn reads_frames_and_strings() {
        let (data, layout) = sample();
        let inner = inner_frame(&layout, &data, 0, 2).unwrap();
        assert_eq!(inner, InnerFrame { name: 1, file: 2, default_file: 2, line: 7, column: 3 });
        assert_eq!(outer_frame_ids(&layout, &data, 2), Ok(vec![0]));
        assert_eq!(outer_frame(&layout, &data, 0), Ok(OuterFrame { name: 3, file: 2, line: 40, column: 9 }));
        assert_eq!(string_bytes(&layout, &data, 2), Ok(&b"a.c"[..]));
        assert_eq!(string_bytes(&layout, &data, 3), Ok(&b"g"[..]));
    }

    #[test]
    fn out_of_range_ids_are_errors() {
        let (data, layout) = sample();
        assert!(outer_frame(&layout, &data, 1).is_err());
        assert!(string_bytes(&layout, &data, 4).is_err());
        assert!(inner_frame(&layout, &data, 9, 2).is_err());
        assert!(Column::new("x", 'Q', 8, usize::MAX / 4, 100).is_err());
        assert!(Column::new("x", 'q', 0, 1, 100).is_err());
    }

    #[test]
    fn bisects_as_python_does_on_unsorted_lows() {
        // CPython 3.11: bisect_right([5, 1, 9], 4) == 2, bisect_right([5, 1, 9], 0) == 0,
        // bisect_right([9, 1, 5], 6) == 3.
        let (data, layout) = build(&[("run_low", vec![5, 1, 9])], b"");
        assert_eq!(bisect_right(&layout, &data, 4), Ok(2));
        assert_eq!(bisect_right(&layout, &data, 0), Ok(0));
        let (data, layout) = build(&[("run_low", vec![9, 1, 5])], b"");
        assert_eq!(bisect_right(&layout, &data, 6), Ok(3));
    }
}
