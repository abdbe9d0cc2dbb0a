//! The persistent index's interned tables (strings, frames, calling-frame lists, chains) built in
//! compiled memory: `IndexTables`, the twin of `symbolize/index/build.py`'s `_Builder`, which
//! stays the reference. Hand-written because the tables are the index's own format: ids are given
//! in the order the reference gives them, so the file written is byte for byte the reference's.
//!
//! A compiled unit's chains (`UnitColumns`) are named and interned here without a Python object
//! per frame (`unit_chains`, applying `formats/dwarf/answers.py`'s `chain_head` policy); any other
//! table's heads come as Python tuples (`chains`). What this cannot keep identical to the reference
//! (a string that is not UTF-8 text, an integer past 128 bits, an entry of -1) raises
//! `IndexTablesDeferred`, and the reference builds the index instead.

use hashbrown::hash_table::{Entry, HashTable, VacantEntry};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};
use rustc_hash::{FxBuildHasher, FxHashMap};

use super::runs::Frame;
use super::UnitColumns;

pyo3::create_exception!(
    _kernels,
    IndexTablesDeferred,
    PyException,
    "The compiled index tables cannot build this index as the reference does: the reference builds it."
);

/// A frame with its strings interned: (function, file, line, column, start line, start file,
/// stored entry, discriminator).
type FrameKey = (u32, u32, i64, i64, i64, u32, u64, i64);
/// A chain: (function, start line, default file, calling frames, start file, stored entry).
type ChainKey = (u32, i64, u32, u32, u32, u64);

fn deferred(why: &str) -> PyErr {
    IndexTablesDeferred::new_err(why.to_owned())
}

/// Where `item` is among `ids` (its id), or the slot for its id: `ids` holds the ids alone, each
/// standing for the item `stored` gives (a map's keys would hold every item a second time).
fn find<'t, 's, T: std::hash::Hash + Eq + ?Sized + 's>(ids: &'t mut HashTable<u32>, item: &T, stored: impl Fn(u32) -> &'s T) -> Result<u32, VacantEntry<'t, u32>> {
    let hash = |item: &T| std::hash::BuildHasher::hash_one(&FxBuildHasher, item);
    match ids.entry(hash(item), |&id| stored(id) == item, |&id| hash(stored(id))) {
        Entry::Occupied(found) => Ok(*found.get()),
        Entry::Vacant(slot) => Err(slot),
    }
}

/// The id of `key` in `list`, appended on first sight (`ids` finds it).
fn interned<K: Copy + Eq + std::hash::Hash>(ids: &mut HashTable<u32>, list: &mut Vec<K>, key: K) -> u32 {
    find(ids, &key, |id| &list[id as usize]).unwrap_or_else(|slot| {
        list.push(key);
        *slot.insert(list.len() as u32 - 1).get()
    })
}

/// An entry as the index stores it: + 1, so that 0 stands for none (`_stored_address`).
fn stored(address: Option<u64>) -> PyResult<u64> {
    match address {
        None => Ok(0),
        Some(address) => address.checked_add(1).ok_or_else(|| deferred("an entry past 64 bits")),
    }
}

/// A Python int as the compiled tables hold it: 64 bits, signed.
fn int64(value: PyResult<Bound<'_, PyAny>>) -> PyResult<i64> {
    value?.extract::<i64>().map_err(|_| deferred("an integer past 64 bits"))
}

/// A Python entry (None or an address) as the index stores it.
fn py_entry(value: PyResult<Bound<'_, PyAny>>) -> PyResult<u64> {
    stored(value?.extract::<Option<u64>>().map_err(|_| deferred("an entry below 0 or past 64 bits"))?)
}

/// The interned tables of one index being built (see `_Builder` in symbolize/index/build.py).
#[pyclass(module = "symbolize.formats._kernels")]
#[derive(Default)]
pub struct IndexTables {
    string_ids: HashTable<u32>,
    blob: Vec<u8>,
    offsets: Vec<u64>,
    frame_ids: HashTable<u32>,
    frames: Vec<FrameKey>,
    outer_ids: HashTable<u32>,
    outer_frames: Vec<u32>,
    outer_begin: Vec<u32>,
    chain_ids: HashTable<u32>,
    chains: Vec<ChainKey>,
    error_text: Vec<u32>,
}

impl IndexTables {
    fn intern(&mut self, text: Option<&str>) -> u32 {
        let (Some(text), blob, offsets) = (text.map(str::as_bytes), &mut self.blob, &mut self.offsets) else { return 0 };
        find(&mut self.string_ids, text, |id| &blob[offsets[id as usize] as usize..offsets[id as usize + 1] as usize]).unwrap_or_else(|slot| {
            blob.extend_from_slice(text);
            offsets.push(blob.len() as u64);
            *slot.insert(offsets.len() as u32 - 2).get()
        })
    }

    fn intern_object(&mut self, text: &Bound<'_, PyAny>) -> PyResult<u32> {
        if text.is_none() {
            return Ok(0);
        }
        let text = text.cast::<PyString>()?;
        Ok(self.intern(Some(text.to_str().map_err(|_| deferred("a string that is not UTF-8 text"))?)))
    }

    fn outer(&mut self, frames: &[u32]) -> u32 {
        let (listed, begins) = (&mut self.outer_frames, &mut self.outer_begin);
        find(&mut self.outer_ids, frames, |id| &listed[begins[id as usize] as usize..begins[id as usize + 1] as usize]).unwrap_or_else(|slot| {
            listed.extend_from_slice(frames);
            begins.push(listed.len() as u32);
            *slot.insert(begins.len() as u32 - 2).get()
        })
    }

    /// A compiled frame, its function and file replaced where a symbol renames it.
    fn compiled_frame(&mut self, frame: &Frame, renamed: Option<(Option<&str>, Option<&str>)>) -> PyResult<u32> {
        let (function, file, line, column, start_line, start_file, start_address, discriminator) = frame;
        let (function, file) = match renamed {
            Some(names) => names,
            None => (function.as_deref(), file.as_deref()),
        };
        let key = (self.intern(function), self.intern(file), *line, *column, *start_line,
                   self.intern(start_file.as_deref()), stored(*start_address)?, *discriminator);
        Ok(interned(&mut self.frame_ids, &mut self.frames, key))
    }
}

/// `values` in the smallest unsigned type that holds them, clamped to 64 bits (`_narrowest`); read
/// twice (their largest, then their bytes), never collected.
fn narrowest<'py, T: Into<i128>>(
    py: Python<'py>, values: impl ExactSizeIterator<Item = T> + Clone,
) -> PyResult<(char, Bound<'py, PyBytes>)> {
    let clamp = |value: T| value.into().clamp(0, i128::from(u64::MAX)) as u64;
    let largest = values.clone().map(clamp).max().unwrap_or(0);
    let (code, size) = match largest {
        0..=0xff => ('B', 1),
        0x100..=0xffff => ('H', 2),
        0x1_0000..=0xffff_ffff => ('I', 4),
        _ => ('Q', 8),
    };
    let bytes = PyBytes::new_with(py, values.len() * size, |buffer| {
        // A loop per size, each over items of a size known when compiled (not a match per item).
        let items = values.map(clamp);
        match size {
            1 => buffer.iter_mut().zip(items).for_each(|(item, value)| *item = value as u8),
            2 => buffer.chunks_exact_mut(2).zip(items).for_each(|(item, value)| item.copy_from_slice(&(value as u16).to_ne_bytes())),
            4 => buffer.chunks_exact_mut(4).zip(items).for_each(|(item, value)| item.copy_from_slice(&(value as u32).to_ne_bytes())),
            _ => buffer.chunks_exact_mut(8).zip(items).for_each(|(item, value)| item.copy_from_slice(&value.to_ne_bytes())),
        }
        Ok(())
    })?;
    Ok((code, bytes))
}

/// Each of `columns` (an array's name and the field of `rows` it holds) narrowed into `out`.
fn add_columns<K>(out: &Bound<'_, PyDict>, rows: &[K], columns: &[(&str, fn(&K) -> i128)]) -> PyResult<()> {
    for &(name, at) in columns {
        out.set_item(name, narrowest(out.py(), rows.iter().map(at))?)?;
    }
    Ok(())
}

#[pymethods]
impl IndexTables {
    #[new]
    fn new() -> Self {
        IndexTables { offsets: vec![0, 0], outer_begin: vec![0], ..Default::default() }
    }

    /// `_narrowest` of a column of native-endian 64-bit integers (`signed`: int64, else uint64).
    #[staticmethod]
    fn narrowest_column<'py>(py: Python<'py>, data: &[u8], signed: bool) -> PyResult<(char, Bound<'py, PyBytes>)> {
        let values = data.chunks_exact(8).map(|item| {
            let bytes = item.try_into().expect("chunks of 8");
            if signed { i128::from(i64::from_ne_bytes(bytes)) } else { i128::from(u64::from_ne_bytes(bytes)) }
        });
        narrowest(py, values)
    }

    /// The string id of each of `texts` (0 for None), each interned on first sight: one call for
    /// a table's file names, one for the full names (a large file has thousands of each).
    fn intern_all(&mut self, texts: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
        texts.try_iter()?.map(|text| self.intern_object(&text?)).collect()
    }

    /// The string ids the chains and frames name functions by, sorted, 0 left out, each with its
    /// text: read at once, not a call per name.
    fn names(&self) -> Vec<(u32, String)> {
        let mut names: Vec<u32> = self.chains.iter().map(|chain| chain.0).chain(self.frames.iter().map(|frame| frame.0)).collect();
        names.sort_unstable();
        names.dedup();
        names.retain(|&name| name != 0);
        let text = |name: u32| &self.blob[self.offsets[name as usize] as usize..self.offsets[name as usize + 1] as usize];
        names.into_iter().map(|name| (name, String::from_utf8_lossy(text(name)).into_owned())).collect()
    }

    /// Chains 0 to `count - 1`: the gap and the broken regions' errors, no frames (`reserve_chains`).
    fn reserve_chains(&mut self, count: usize) {
        let outer = self.outer(&[]);
        self.chains.extend(std::iter::repeat_n((0, 0, 0, outer, 0, 0), count));
    }

    /// A broken region's error text, the next error's.
    fn add_error_text(&mut self, text: &Bound<'_, PyAny>) -> PyResult<()> {
        let id = self.intern_object(text)?;
        self.error_text.push(id);
        Ok(())
    }

    /// The chain id of each of `heads` (tuples as `ChainHead`), in order.
    fn chains(&mut self, heads: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
        let mut found = Vec::new();
        let mut outer_by_identity: FxHashMap<usize, u32> = FxHashMap::default();
        for head in heads.try_iter()? {
            let head = head?.cast_into::<PyTuple>()?;
            let outer = head.get_item(2)?;
            let outer_id = match outer_by_identity.get(&(outer.as_ptr() as usize)) {
                Some(&id) => id,
                None => {
                    let mut frame_ids = Vec::new();
                    for frame in outer.try_iter()? {
                        let frame = frame?.cast_into::<PyTuple>()?;
                        let key = (self.intern_object(&frame.get_item(0)?)?, self.intern_object(&frame.get_item(1)?)?,
                                   int64(frame.get_item(2))?, int64(frame.get_item(3))?, int64(frame.get_item(4))?,
                                   self.intern_object(&frame.get_item(5)?)?, py_entry(frame.get_item(6))?,
                                   int64(frame.get_item(7))?);
                        frame_ids.push(interned(&mut self.frame_ids, &mut self.frames, key));
                    }
                    let id = self.outer(&frame_ids);
                    outer_by_identity.insert(outer.as_ptr() as usize, id);
                    id
                }
            };
            let key = (self.intern_object(&head.get_item(0)?)?, int64(head.get_item(1))?,
                       self.intern_object(&head.get_item(3)?)?, outer_id, self.intern_object(&head.get_item(4)?)?,
                       py_entry(head.get_item(5))?);
            found.push(interned(&mut self.chain_ids, &mut self.chains, key));
        }
        Ok(found)
    }

    /// The chain id of each head of compiled unit `columns`, named as `chain_head` names it with
    /// `symbols` (the symbol table's `Symbol`s, by the heads' symbol numbers).
    fn unit_chains(&mut self, columns: &UnitColumns, symbols: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
        let mut found = Vec::with_capacity(columns.head_key_list.len());
        let mut symbol_names: FxHashMap<i64, (Option<String>, Option<String>)> = FxHashMap::default();
        // The index's id of each of the unit's calling frames, once interned (not renamed by a symbol).
        let mut frame_ids_of_unit: Vec<Option<u32>> = vec![None; columns.chains.frames.len()];
        for &(chain, symbol) in &columns.head_key_list {
            let covering = if symbol >= 0 {
                if !symbol_names.contains_key(&symbol) {
                    let item = symbols.get_item(symbol as usize)?;
                    let text = |name: &str| -> PyResult<Option<String>> {
                        item.getattr(name)?.extract().map_err(|_| deferred("a string that is not UTF-8 text"))
                    };
                    symbol_names.insert(symbol, (text("name")?, text("source_file")?));
                }
                symbol_names.get(&symbol)
            } else {
                None
            };
            let key = if chain < 0 {
                let (name, source) = covering.map(|(name, source)| (name.as_deref(), source.as_deref())).unwrap_or((None, None));
                let outer = self.outer(&[]);
                (self.intern(name), 0, self.intern(source), outer, 0, 0)
            } else {
                let chains = &columns.chains;
                let ((name, start_line, start_file), entry, (first, end)) = chains
                    .list
                    .get(chain as usize)
                    .ok_or_else(|| PyException::new_err(format!("chain {chain} of {}", chains.list.len())))?;
                let outer = &chains.outer[*first as usize..*end as usize];
                let mut frame_ids = Vec::with_capacity(outer.len());
                for (position, &frame) in outer.iter().enumerate() {
                    let calling = &chains.frames[frame as usize];
                    let id = match covering {
                        Some((symbol_name, source)) if position + 1 == outer.len() => {
                            let file = calling.1.as_deref().filter(|file| !file.is_empty()).or(source.as_deref());
                            self.compiled_frame(calling, Some((symbol_name.as_deref(), file)))?
                        }
                        _ => match frame_ids_of_unit[frame as usize] {
                            Some(id) => id,
                            None => {
                                let id = self.compiled_frame(calling, None)?;
                                frame_ids_of_unit[frame as usize] = Some(id);
                                id
                            }
                        },
                    };
                    frame_ids.push(id);
                }
                let outer_id = self.outer(&frame_ids);
                let (function, default_file) = match covering {
                    Some((symbol_name, source)) if outer.is_empty() => (symbol_name.as_deref(), source.as_deref()),
                    _ => (name.as_deref(), None),
                };
                (self.intern(function), *start_line, self.intern(default_file), outer_id,
                 self.intern(start_file.as_deref()), stored(*entry)?)
            };
            found.push(interned(&mut self.chain_ids, &mut self.chains, key));
        }
        Ok(found)
    }

    /// The tables as the index stores them: name -> (type code, bytes), each array narrowed
    /// (`_narrowest`); the strings as `str_blob` and `str_offsets`.
    fn arrays<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        add_columns(&out, &self.chains, &[
            ("chain_name", |chain| chain.0.into()),
            ("chain_start_line", |chain| chain.1.into()),
            ("chain_file", |chain| chain.2.into()),
            ("chain_outer", |chain| chain.3.into()),
            ("chain_start_file", |chain| chain.4.into()),
            ("chain_start_address", |chain| chain.5.into()),
        ])?;
        add_columns(&out, &self.frames, &[
            ("frame_name", |frame| frame.0.into()),
            ("frame_file", |frame| frame.1.into()),
            ("frame_line", |frame| frame.2.into()),
            ("frame_column", |frame| frame.3.into()),
            ("frame_start_line", |frame| frame.4.into()),
            ("frame_start_file", |frame| frame.5.into()),
            ("frame_start_address", |frame| frame.6.into()),
            ("frame_discriminator", |frame| frame.7.into()),
        ])?;
        for (name, values) in [("outer_begin", &self.outer_begin), ("outer_frames", &self.outer_frames),
                               ("error_text", &self.error_text)] {
            out.set_item(name, narrowest(py, values.iter().copied())?)?;
        }
        out.set_item("str_offsets", narrowest(py, self.offsets.iter().copied())?)?;
        out.set_item("str_blob", ('B', PyBytes::new(py, &self.blob)))?;
        Ok(out)
    }
}
