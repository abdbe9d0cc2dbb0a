//! `symbolize.formats._kernels`: the compiled answer sources and the few twins of hot loops left.
//!
//! Optional: `symbolize.formats.native` loads this module when it was built and
//! `SYMBOLIZE_PURE_PYTHON` is not set; the Python readers stay the reference and the fallback.
//! What is here, and why it is hand-written where it is:
//! - `dwarf/`: the DWARF answer source, on gimli (the field's reader); it answers whole units for
//!   the index and lazy units for cold lookups, and leaves to the Python reference what it is not
//!   sure of. The fine-grained DWARF kernels it replaced (the DIE walk, skip tables, line program
//!   and header, range lists, the whole-unit sweep) are gone: only the reference's fallback ran them.
//! - `abbrev`: where each abbreviation table ends, which every open walks on every unit (the unit
//!   list and root DIEs are read in Python); gimli's table parser does not say.
//! - `profile_entries`: the entry count of a large pprof message, the cap checked before decoding
//!   it; a walk over the protobuf wire format, which no protobuf crate offers without decoding.
//! - `warm*`: the warm path over our own index format; `pdb_*`: PDB module streams and public
//!   records, where the `pdb` crates do not keep the Python reader's fidelity (bench/RESULTS.md);
//!   `cabinet`: CAB extraction on the `cab` crate.
//!
//! The crate denies `unsafe` but in one function, the one PyO3 needs: `dwarf::Section::bytes`
//! reads a Python buffer (a view of the file's mmap, or `bytes`) as `&[u8]`, so that the DWARF
//! sections are borrowed, not copied. A panic is caught and raised as the typed error the Python
//! reader raises.

#![deny(unsafe_code)]

mod abbrev;
mod cabinet;
pub(crate) mod dwarf;
/// What the cargo-fuzz targets (native/fuzz/) drive: not an API.
#[doc(hidden)]
pub use dwarf::fuzzing;
mod pdb_module;
mod pdb_records;
mod profile_entries;
mod warm;
mod warm_frames;
mod warm_index;
mod warm_text;

use pyo3::prelude::*;

/// `work()`, or where it panics, the message of the typed error raised in its place (`what` names
/// the part that failed).
pub(crate) fn unpanicked<T>(what: &str, work: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).map_err(|payload| {
        let message = payload.downcast_ref::<&str>().copied().or_else(|| payload.downcast_ref::<String>().map(String::as_str));
        format!("the compiled {what} failed ({})", message.unwrap_or("unknown panic"))
    })
}

#[pymodule]
fn _kernels(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(abbrev::abbrev_table_extent, module)?)?;
    module.add_function(wrap_pyfunction!(profile_entries::count_profile_entries, module)?)?;
    dwarf::register(module)?;
    warm::register(module)?;
    pdb_module::register(module)?;
    pdb_records::register(module)?;
    cabinet::register(module)?;
    Ok(())
}
