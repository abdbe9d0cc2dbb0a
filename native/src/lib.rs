//! `symbolize.formats._kernels`: the compiled DWARF answer source (`dwarf/`, on gimli), the warm
//! lookup and PDB kernels, and compiled twins of hot loops in symbolize's readers.
//!
//! Optional: `symbolize.formats.native` loads this module when it was built and
//! `SYMBOLIZE_PURE_PYTHON` is not set; the Python readers stay the reference and the fallback.
//! Each kernel answers what its Python twin answers, or leaves the question to it. The kernels are
//! safe Rust (the crate forbids `unsafe`; PyO3's own is in PyO3); a panic is caught and raised as a
//! typed error the Python reader turns into its own.

#![forbid(unsafe_code)]

pub(crate) mod dwarf;
/// What the cargo-fuzz targets (native/fuzz/) drive: not an API.
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::dwarf::fuzzing::{build_every_unit, SECTION_NAMES};
}
mod pdb_module;
mod pdb_records;
mod profile_entries;
mod warm;
mod warm_frames;
mod warm_index;
mod warm_text;

use pyo3::prelude::*;

/// The message of a caught panic, for the error raised in its place.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

#[pymodule]
fn _kernels(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(profile_entries::count_profile_entries, module)?)?;
    dwarf::register(module)?;
    warm::register(module)?;
    pdb_module::register(module)?;
    pdb_records::register(module)?;
    Ok(())
}
