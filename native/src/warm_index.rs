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

    /// The largest item (0 for an empty array): one pass over the array's bytes.
    pub fn max(&self, data: &[u8]) -> u64 {
        let Some(bytes) = data.get(self.start..self.start + self.count * self.width) else {
            return u64::MAX; // never: `new` checked the array lies inside the data
        };
        match self.width {
            1 => bytes.iter().copied().max().map_or(0, u64::from),
            2 => bytes.chunks_exact(2).map(|item| u16::from_ne_bytes([item[0], item[1]])).max().map_or(0, u64::from),
            4 => bytes
                .chunks_exact(4)
                .map(|item| u32::from_ne_bytes([item[0], item[1], item[2], item[3]]))
                .max()
                .map_or(0, u64::from),
            _ => bytes
                .chunks_exact(8)
                .map(|item| u64::from_ne_bytes([item[0], item[1], item[2], item[3], item[4], item[5], item[6], item[7]]))
                .max()
                .unwrap_or(0),
        }
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

impl Layout {
    /// Whether the arrays hold together as the builder lays them out, so that no lookup meets an
    /// id past its array: the twin of `check_index_arrays` in `symbolize/index/indexed.py`, check
    /// for check. The arrays that describe one thing (a run, a chain, a frame, a string) are
    /// equally long, the offset tables start at 0 and end at their array's end, and every id is
    /// below the length of the array it indexes. One pass over the id arrays: a CRC32's cost.
    pub fn validate(&self, data: &[u8]) -> Result<(), IndexError> {
        let groups: [&[Column]; 3] = [
            &[self.run_low, self.run_file, self.run_line, self.run_column, self.run_chain],
            &[self.chain_name, self.chain_start_line, self.chain_file, self.chain_outer],
            &[self.frame_name, self.frame_file, self.frame_line, self.frame_column, self.frame_start_line],
        ];
        for group in groups {
            if let Some(other) = group.iter().find(|column| column.count != group[0].count) {
                return Err(IndexError(format!(
                    "index array {} has {} items, {} has {}",
                    other.name, other.count, group[0].name, group[0].count
                )));
            }
        }
        let strings = self.name_full.count;
        if self.str_offsets.count != strings + 1 {
            return Err(IndexError(format!(
                "index array str_offsets has {} items for {strings} strings",
                self.str_offsets.count
            )));
        }
        if self.chain_name.count <= self.error_text.count {
            return Err(IndexError(format!(
                "index has {} chains for {} broken regions and the gap",
                self.chain_name.count, self.error_text.count
            )));
        }
        for (offsets, end) in [(self.outer_begin, self.outer_frames.count as u64), (self.str_offsets, self.blob.1 as u64)] {
            let first = offsets.get(data, 0);
            let last = offsets.count.checked_sub(1).and_then(|last| offsets.get(data, last));
            if first != Some(0) || last != Some(end) {
                return Err(IndexError(format!("index array {} does not run from 0 to {end}", offsets.name)));
            }
        }
        let bounds = [
            (self.run_chain, self.chain_name.count),
            (self.chain_outer, self.outer_begin.count - 1),
            (self.outer_frames, self.frame_name.count),
            (self.run_file, strings),
            (self.chain_name, strings),
            (self.chain_file, strings),
            (self.frame_name, strings),
            (self.frame_file, strings),
            (self.error_text, strings),
            (self.name_full, strings),
        ];
        for (column, bound) in bounds {
            if column.count > 0 && column.max(data) >= bound as u64 {
                return Err(IndexError(format!("index array {} holds an id past {bound}", column.name)));
            }
        }
        Ok(())
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

    /// Strings: 1 "f", 2 "a.c", 3 "g". Runs: [0x10, 0x20) chain 2, [0x20, ...) gap.
    /// Chain 1 is a broken region's (one error text), chain 2 is f called from frame 0 (g).
    fn sample_arrays() -> Vec<(&'static str, Vec<u64>)> {
        vec![
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
            ("chain_start_line", vec![0, 0, 5]),
            ("frame_start_line", vec![38]),
            ("error_text", vec![1]),
            ("name_full", vec![0, 0, 0, 0]),
            ("str_offsets", vec![0, 0, 1, 4, 5]),
        ]
    }

    fn sample() -> (Vec<u8>, Layout) {
        build(&sample_arrays(), b"fa.cg")
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
    fn the_builders_layout_validates() {
        let (data, layout) = sample();
        assert_eq!(layout.validate(&data), Ok(()));
    }

    /// `sample()` with the array `name` replaced by `values`.
    fn sample_with(name: &str, values: Vec<u64>) -> (Vec<u8>, Layout) {
        let mut arrays = sample_arrays();
        for (array, stored) in arrays.iter_mut() {
            if *array == name {
                *stored = values.clone();
            }
        }
        build(&arrays, b"fa.cg")
    }

    #[test]
    fn ids_past_their_arrays_and_uneven_arrays_do_not_validate() {
        for (name, values) in [
            ("run_chain", vec![2, 0, 3]),
            ("run_file", vec![4, 0, 0]),
            ("chain_name", vec![0, 0, 4]),
            ("chain_file", vec![0, 0, 9]),
            ("chain_outer", vec![0, 0, 2]),
            ("outer_frames", vec![1]),
            ("frame_name", vec![4]),
            ("frame_file", vec![7]),
            ("error_text", vec![4]),
            ("error_text", vec![1, 1, 1]),
            ("name_full", vec![0, 0, 0, 5]),
            ("name_full", vec![0, 0, 0]),
            ("run_line", vec![7, 0]),
            ("chain_start_line", vec![]),
            ("frame_column", vec![]),
            ("outer_begin", vec![0, 0]),
            ("outer_begin", vec![]),
            ("str_offsets", vec![0, 0, 1, 4, 4]),
            ("str_offsets", vec![1, 0, 1, 4, 5]),
        ] {
            let (data, layout) = sample_with(name, values.clone());
            assert!(layout.validate(&data).is_err(), "{name} = {values:?} validated");
        }
    }

    #[test]
    fn max_reads_every_width() {
        for code in ['B', 'H', 'I', 'Q'] {
            let width = match code { 'B' => 1, 'H' => 2, 'I' => 4, _ => 8 };
            let data: Vec<u8> = [3u64, 9, 4].iter().flat_map(|value| value.to_ne_bytes()[..width].to_vec()).collect();
            assert_eq!(Column::new("x", code, 0, 3, data.len()).unwrap().max(&data), 9);
            assert_eq!(Column::new("x", code, 0, 0, data.len()).unwrap().max(&data), 0);
        }
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
