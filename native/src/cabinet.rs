//! The compiled twin of `formats/cab/`'s decoders: the one file of a symstore `_` cabinet,
//! decompressed by the `cab` crate (MSZIP through flate2, LZX through lzxd).
//!
//! The Python side has already parsed and checked the header, the folder and the file entry
//! (counts, spanning flags, declared sizes against the caller's cap): this function only
//! decompresses. Any failure of the crate (a bad block checksum, a corrupt stream, a block that
//! does not decode to its declared size) is raised as ValueError with the crate's message, as is a
//! panic, which is caught; the Python side raises MalformedInputError naming the cabinet. The crate
//! reads through a bounded `Cursor`, and the output is bounded by the size the caller passes.

use std::io::{Cursor, Read};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::unpanicked;

/// Decompress the cabinet's single file, reading at most `max_bytes + 1` bytes of it.
fn decode(data: &[u8], max_bytes: u64) -> Result<Vec<u8>, String> {
    let mut cabinet = cab::Cabinet::new(Cursor::new(data)).map_err(|error| error.to_string())?;
    let name = {
        let mut files = cabinet.folder_entries().flat_map(|folder| folder.file_entries());
        match (files.next(), files.next()) {
            (Some(file), None) => file.name().to_owned(),
            _ => return Err("the cabinet does not hold exactly one file".to_owned()),
        }
    };
    let reader = cabinet.read_file(&name).map_err(|error| error.to_string())?;
    let mut contents = Vec::new();
    reader
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut contents)
        .map_err(|error| error.to_string())?;
    Ok(contents)
}

/// Twin of `formats/cab/folder.py`'s `decode_file`: the contents of the cabinet's one file (its
/// name is the Python side's, read from the same entry). ValueError with the crate's message
/// where the cabinet does not decode, or the caught panic's.
#[pyfunction]
fn cab_extract_single<'py>(py: Python<'py>, data: &[u8], max_bytes: u64) -> PyResult<Bound<'py, PyBytes>> {
    match py.detach(|| unpanicked("decoder", || decode(data, max_bytes))) {
        Ok(Ok(contents)) => Ok(PyBytes::new(py, &contents)),
        Ok(Err(message)) | Err(message) => Err(PyValueError::new_err(message)),
    }
}

pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(cab_extract_single, module)?)?;
    Ok(())
}
