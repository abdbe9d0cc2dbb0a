//! The file names of a line program's header, the twin of `_file_names` in
//! `formats/dwarf/lines.py`: DWARF 5, 6.2.4 items 20-26 (directory and file name entries, each
//! described by its entry formats) and DWARF 2-4, 6.2.4 items 11-12 (`include_directories` and
//! `file_names`, NUL-terminated lists), joined as llvm-symbolizer joins them (`join_path`).
//!
//! The Python function stays the reference. This twin returns the same list of names or None,
//! having decided nothing, wherever the reference would raise (a read past the section, a count
//! the bytes cannot hold, a form it does not read), meets a form it leaves to the reference
//! (`DW_FORM_strx*`, which go through the unit's string offsets) or a name that is not UTF-8
//! (the reference decodes with replacement characters). So errors, and every name, stay the
//! reference's. Every read is checked against the section's length; offsets are 128 bits wide.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

const FORM_BLOCK: u64 = 0x09;
const FORM_DATA1: u64 = 0x0B;
const FORM_DATA2: u64 = 0x05;
const FORM_DATA4: u64 = 0x06;
const FORM_DATA8: u64 = 0x07;
const FORM_DATA16: u64 = 0x1E;
const FORM_STRING: u64 = 0x08;
const FORM_STRP: u64 = 0x0E;
const FORM_LINE_STRP: u64 = 0x1F;
const FORM_UDATA: u64 = 0x0F;

const LNCT_PATH: u64 = 0x1;
const LNCT_DIRECTORY_INDEX: u64 = 0x2;

/// The reference decides (it raises, or reads what this twin does not).
struct Reference;

type Read<T> = Result<T, Reference>;

struct Bytes<'a> {
    data: &'a [u8],
}

impl<'a> Bytes<'a> {
    fn byte(&self, offset: u128) -> Read<u8> {
        let at = usize::try_from(offset).map_err(|_| Reference)?;
        self.data.get(at).copied().ok_or(Reference)
    }

    /// `read_uleb`: (value, next offset); a value past 64 bits saturates, which no caller can
    /// tell from the reference's larger number (each compares it with a count or an index below
    /// 2^64, or ignores it).
    fn uleb(&self, mut offset: u128) -> Read<(u64, u128)> {
        let mut value: u64 = 0;
        let mut shift: u32 = 0;
        loop {
            let byte = self.byte(offset)?;
            offset += 1;
            let bits = u64::from(byte & 0x7F);
            if bits != 0 {
                if shift >= 64 || (bits << shift) >> shift != bits {
                    value = u64::MAX;
                } else if value != u64::MAX {
                    value |= bits << shift;
                }
            }
            if byte < 0x80 {
                return Ok((value, offset));
            }
            shift = shift.saturating_add(7);
        }
    }

    fn fixed(&self, offset: u128, size: usize, little_endian: bool) -> Read<u64> {
        let start = usize::try_from(offset).map_err(|_| Reference)?;
        let stop = start.checked_add(size).ok_or(Reference)?;
        let bytes = self.data.get(start..stop).ok_or(Reference)?;
        let mut value = 0u64;
        for index in 0..bytes.len() {
            let byte = if little_endian { bytes[bytes.len() - 1 - index] } else { bytes[index] };
            value = value << 8 | u64::from(byte);
        }
        Ok(value)
    }

    /// `data.index(0, offset)`: the offset of the next NUL at or after `offset`.
    fn nul_from(&self, offset: u128) -> Read<usize> {
        let start = usize::try_from(offset).map_err(|_| Reference)?;
        let rest = self.data.get(start..).ok_or(Reference)?;
        rest.iter().position(|&byte| byte == 0).map(|found| start + found).ok_or(Reference)
    }

    /// The UTF-8 text of `data[start:stop]`; not UTF-8: the reference decodes it.
    fn text(&self, start: usize, stop: usize) -> Read<&'a str> {
        let data: &'a [u8] = self.data;
        std::str::from_utf8(data.get(start..stop).ok_or(Reference)?).map_err(|_| Reference)
    }
}

/// `join_path`: absolute names win; the separator follows the directory's style.
fn join_path(directory: Option<&str>, name: &str) -> String {
    let directory = match directory {
        Some(directory) if !directory.is_empty() => directory,
        _ => return name.to_owned(),
    };
    let mut characters = name.chars();
    let second = characters.nth(1);
    let drive = second == Some(':') && characters.next().is_some();
    if name.starts_with('/') || drive || name.starts_with('\\') {
        return name.to_owned();
    }
    let separator = if directory.contains('\\') && !directory.contains('/') { '\\' } else { '/' };
    let mut joined = directory.trim_end_matches(['/', '\\']).to_owned();
    joined.push(separator);
    joined.push_str(name);
    joined
}

/// An entry's value, as far as its content type cares.
enum Value<'a> {
    Text(&'a str),
    Number(u64),
}

struct Header<'a> {
    data: Bytes<'a>,
    line_str: Bytes<'a>,
    str: Bytes<'a>,
    offset_size: usize,
    little_endian: bool,
}

impl<'a> Header<'a> {
    /// `_read_entries`: (path, directory index) of each DWARF 5 entry before `limit`.
    fn entries(&self, mut offset: u128, limit: u128) -> Read<(Vec<(&'a str, u64)>, u128)> {
        let data = &self.data;
        let format_count = data.byte(offset)?;
        offset += 1;
        if 2 * i128::from(format_count) > limit as i128 - offset as i128 {
            return Err(Reference);
        }
        let mut formats = Vec::with_capacity(usize::from(format_count));
        for _ in 0..format_count {
            let (content_type, next) = data.uleb(offset)?;
            let (form, next) = data.uleb(next)?;
            offset = next;
            formats.push((content_type, form));
        }
        let (count, next) = data.uleb(offset)?;
        offset = next;
        let per_entry = formats.len().max(1) as u128;
        if (u128::from(count) * per_entry) as i128 > limit as i128 - offset as i128 {
            return Err(Reference);
        }
        let mut entries = Vec::with_capacity(usize::try_from(count).map_err(|_| Reference)?);
        for _ in 0..count {
            let mut path: &'a str = "";
            let mut directory: u64 = 0;
            for &(content_type, form) in &formats {
                let value = match form {
                    FORM_STRING => {
                        let end = data.nul_from(offset)?;
                        let start = usize::try_from(offset).map_err(|_| Reference)?;
                        offset = end as u128 + 1;
                        Value::Text(self.data.text(start, end)?)
                    }
                    FORM_LINE_STRP | FORM_STRP => {
                        let section = if form == FORM_LINE_STRP { &self.line_str } else { &self.str };
                        let position = data.fixed(offset, self.offset_size, self.little_endian)?;
                        offset += self.offset_size as u128;
                        let start = usize::try_from(position).map_err(|_| Reference)?;
                        if start > section.data.len() {
                            return Err(Reference);
                        }
                        let end = section.nul_from(u128::from(position))?;
                        Value::Text(section.text(start, end)?)
                    }
                    FORM_UDATA => {
                        let (value, next) = data.uleb(offset)?;
                        offset = next;
                        Value::Number(value)
                    }
                    FORM_DATA1 | FORM_DATA2 | FORM_DATA4 | FORM_DATA8 | FORM_DATA16 => {
                        let size = match form {
                            FORM_DATA1 => 1,
                            FORM_DATA2 => 2,
                            FORM_DATA4 => 4,
                            FORM_DATA8 => 8,
                            _ => 16,
                        };
                        let value = if size <= 8 { data.fixed(offset, size, self.little_endian)? } else { 0 };
                        offset += size as u128;
                        Value::Number(value)
                    }
                    FORM_BLOCK => {
                        let (length, next) = data.uleb(offset)?;
                        offset = next + u128::from(length);
                        Value::Number(0)
                    }
                    // DW_FORM_strx* read through the unit's string offsets; any other form raises.
                    _ => return Err(Reference),
                };
                match (content_type, value) {
                    (LNCT_PATH, Value::Text(text)) => path = text,
                    (LNCT_DIRECTORY_INDEX, Value::Number(number)) => directory = number,
                    _ => {}
                }
            }
            entries.push((path, directory));
        }
        Ok((entries, offset))
    }

    /// `_file_names` for DWARF 5.
    fn files_v5(&self, position: u128, end: u128, comp_dir: Option<&str>) -> Read<Vec<Option<String>>> {
        let (directories, position) = self.entries(position, end)?;
        let (file_entries, _) = self.entries(position, end)?;
        let first = directories.first().map(|(name, _)| *name).or(comp_dir);
        let mut files = Vec::with_capacity(file_entries.len());
        for (name, dir_index) in file_entries {
            let directory = usize::try_from(dir_index).ok().and_then(|at| directories.get(at)).map(|(directory, _)| {
                if dir_index != 0 {
                    join_path(first, directory)
                } else {
                    (*directory).to_owned()
                }
            });
            files.push(Some(join_path(directory.as_deref(), name)));
        }
        Ok(files)
    }

    /// `_file_names` for DWARF 2-4.
    fn files_v4(&self, mut position: u128, comp_dir: Option<&str>) -> Read<Vec<Option<String>>> {
        let data = &self.data;
        let mut directories = vec![comp_dir.unwrap_or("").to_owned()];
        while data.byte(position)? != 0 {
            let end = data.nul_from(position)?;
            let start = usize::try_from(position).map_err(|_| Reference)?;
            directories.push(join_path(comp_dir, data.text(start, end)?));
            position = end as u128 + 1;
        }
        position += 1;
        let mut files = vec![None];
        while data.byte(position)? != 0 {
            let end = data.nul_from(position)?;
            let start = usize::try_from(position).map_err(|_| Reference)?;
            let name = data.text(start, end)?;
            position = end as u128 + 1;
            let (dir_index, next) = data.uleb(position)?;
            let (_, next) = data.uleb(next)?; // mtime
            let (_, next) = data.uleb(next)?; // length
            position = next;
            let directory = usize::try_from(dir_index).ok().and_then(|at| directories.get(at));
            files.push(Some(join_path(directory.map(String::as_str), name)));
        }
        Ok(files)
    }
}

/// Twin of `_file_names` in `formats/dwarf/lines.py`: the same arguments but the unit, of which
/// it takes the comp_dir and the string sections; the same list of names, or None where the
/// reference must decide (see the module docstring).
#[pyfunction]
#[pyo3(signature = (data, position, end, offset_size, version, comp_dir, little_endian, line_str, str_section))]
#[allow(clippy::too_many_arguments)]
pub fn line_file_names<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    position: u128,
    end: u128,
    offset_size: u8,
    version: u64,
    comp_dir: Option<Bound<'py, PyString>>,
    little_endian: bool,
    line_str: &Bound<'py, PyAny>,
    str_section: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyList>>> {
    // Sections held as other buffers (a memoryview) are left to the reference.
    let (Ok(data), Ok(line_str), Ok(str_section)) =
        (data.cast::<PyBytes>(), line_str.cast::<PyBytes>(), str_section.cast::<PyBytes>())
    else {
        return Ok(None);
    };
    if offset_size != 4 && offset_size != 8 {
        return Ok(None);
    }
    // A directory that is not valid UTF-8 text (a lone surrogate) is left to the reference too.
    let comp_dir = match &comp_dir {
        Some(text) => match text.to_str() {
            Ok(text) => Some(text),
            Err(_) => return Ok(None),
        },
        None => None,
    };
    let header = Header {
        data: Bytes { data: data.as_bytes() },
        line_str: Bytes { data: line_str.as_bytes() },
        str: Bytes { data: str_section.as_bytes() },
        offset_size: usize::from(offset_size),
        little_endian,
    };
    let files = if version >= 5 { header.files_v5(position, end, comp_dir) } else { header.files_v4(position, comp_dir) };
    let Ok(files) = files else {
        return Ok(None);
    };
    let list = PyList::empty(py);
    for file in files {
        match file {
            Some(name) => list.append(PyString::new(py, &name))?,
            None => list.append(py.None())?,
        }
    }
    Ok(Some(list))
}
