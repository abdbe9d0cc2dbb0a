//! The persistent index's arrays, read in place: the twin of `IndexedObject.frames_at` in
//! `symbolize/index/indexed.py` (one bisection over the run lows, then the run's chain).
//!
//! The arrays are the index file's own bytes (`symbolize/index/store.py`: each array a run of
//! machine-order unsigned integers of one width, at an offset the header gives). Every read is
//! bounds-checked: an id that points past its array is an [`IndexError`], which the Python side
//! takes for a damaged index, never a panic or a read outside the file.

/// An index whose numbers do not hold together (an id past its array, a string past the blob).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexError(pub String);

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
        // The maximum in the items' own type: it vectorizes where one in u64 does not.
        fn widest<const N: usize, T: Ord + Into<u64>>(bytes: &[u8], read: fn([u8; N]) -> T) -> u64 {
            bytes.chunks_exact(N).map(|item| read(item.try_into().unwrap_or([0; N]))).max().map_or(0, Into::into)
        }
        match self.width {
            1 => widest(bytes, u8::from_ne_bytes),
            2 => widest(bytes, u16::from_ne_bytes),
            4 => widest(bytes, u32::from_ne_bytes),
            _ => widest(bytes, u64::from_ne_bytes),
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

/// `Layout`, with a `Column` field for each array a lookup reads, and `ARRAYS`, their names in
/// the order [`Layout::new`] takes their places.
macro_rules! layout {
    ($($name:ident),*) => {
        pub const ARRAYS: [&str; [$(stringify!($name)),*].len()] = [$(stringify!($name)),*];

        /// Every array a lookup reads (`chain_start_line` and `frame_start_line`: the start lines
        /// of a chain's innermost function and of a calling frame's, pprof's `Function.start_line`),
        /// plus the string blob, `str_blob`: (start, length) in bytes.
        #[derive(Debug, Clone)]
        pub struct Layout {
            $(pub $name: Column,)*
            pub blob: (usize, usize),
        }

        impl Layout {
            /// `columns` in the order of [`ARRAYS`]; `blob` the string blob's bytes.
            pub fn new(columns: &[Column], blob: (usize, usize), data_len: usize) -> Result<Self, IndexError> {
                let [$($name),*] = *columns else {
                    return Err(IndexError(format!("expected {} arrays, got {}", ARRAYS.len(), columns.len())));
                };
                if blob.0.checked_add(blob.1).is_none_or(|end| end > data_len) {
                    return Err(IndexError("index array str_blob runs past the end of the file".to_owned()));
                }
                Ok(Layout { $($name,)* blob })
            }
        }
    };
}

layout!(
    run_low, run_file, run_line, run_column, run_chain, chain_name, chain_file, chain_outer, outer_begin,
    outer_frames, frame_name, frame_file, frame_line, frame_column, error_text, name_full, str_offsets,
    chain_start_line, frame_start_line
);

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
                let (first, name, count) = (group[0], other.name, other.count);
                return Err(IndexError(format!("index array {name} has {count} items, {} has {}", first.name, first.count)));
            }
        }
        let strings = self.name_full.count;
        if self.str_offsets.count != strings + 1 {
            let count = self.str_offsets.count;
            return Err(IndexError(format!("index array str_offsets has {count} items for {strings} strings")));
        }
        if self.chain_name.count <= self.error_text.count {
            let (chains, broken) = (self.chain_name.count, self.error_text.count);
            return Err(IndexError(format!("index has {chains} chains for {broken} broken regions and the gap")));
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

/// What a module of indexes answers at an address: `Module._lookup_one` over each source's
/// `IndexedObject.frames_at`, best source first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// No source has a run there (a gap answers `[]`), and none a broken region.
    Nothing,
    /// No source has a run there; `source`'s broken region numbered `error` (from 1, as chain
    /// ids count them) is the first met.
    Broken { source: usize, error: usize },
    /// Run `run` of source `source`, with chain `chain`, answers.
    Run { source: usize, run: usize, chain: u64 },
}

/// A frame by its string ids (0 stands for None): (name, file, line, column).
pub type Frame = (u64, u64, u64, u64);

/// `bisect_right(run_low, vaddr)`, step for step as Python's `bisect` takes it (so that even
/// unsorted lows give the reference's answer).
pub fn bisect_right(layout: &Layout, data: &[u8], vaddr: u64) -> Result<usize, IndexError> {
    let (mut low, mut high) = (0usize, layout.run_low.count);
    while low < high {
        let middle = low + (high - low) / 2;
        (low, high) = if vaddr < layout.run_low.at(data, middle as u64)? { (low, middle) } else { (middle + 1, high) };
    }
    Ok(low)
}

/// What `sources` (each an index's layout and bytes) answer at `vaddr`; an error names its source.
pub fn lookup<'a>(sources: impl IntoIterator<Item = (&'a Layout, &'a [u8])>, vaddr: u64) -> Result<Found, (usize, IndexError)> {
    let mut found = Found::Nothing;
    for (source, (layout, data)) in sources.into_iter().enumerate() {
        let fail = |error| (source, error);
        let Some(run) = bisect_right(layout, data, vaddr).map_err(fail)?.checked_sub(1) else { continue };
        let chain = layout.run_chain.at(data, run as u64).map_err(fail)?;
        if chain > layout.error_text.count as u64 {
            return Ok(Found::Run { source, run, chain });
        }
        if chain > 0 && found == Found::Nothing {
            found = Found::Broken { source, error: chain as usize };
        }
    }
    Ok(found)
}

/// The innermost frame of run `run` under `chain`: the run's own file unless it is None or empty,
/// then the chain's (`IndexedObject._frames_of`).
pub fn inner_frame(layout: &Layout, data: &[u8], run: usize, chain: u64) -> Result<Frame, IndexError> {
    let (name, run) = (layout.chain_name.at(data, chain)?, run as u64);
    let own = layout.run_file.at(data, run)?;
    let file = if own != 0 && !string_bytes(layout, data, own)?.is_empty() { own } else { layout.chain_file.at(data, chain)? };
    Ok((name, file, layout.run_line.at(data, run)?, layout.run_column.at(data, run)?))
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
pub fn outer_frame(layout: &Layout, data: &[u8], frame_id: u64) -> Result<Frame, IndexError> {
    let (name, file) = (layout.frame_name.at(data, frame_id)?, layout.frame_file.at(data, frame_id)?);
    Ok((name, file, layout.frame_line.at(data, frame_id)?, layout.frame_column.at(data, frame_id)?))
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
