//! A unit kept decoded between a cold lookup's addresses: its tree and line table decoded once in
//! Rust, the runs of each span built when an address lands in it, one inline level at a time
//! along the chain that holds it (`UnitRuns.run_at` in `formats/dwarf/answers.py`). A batch of
//! lookups touches a few spans of a unit; building the whole unit's runs (`DwarfUnits.unit_runs`)
//! and its Python tables cost more than the Python reference's own lazy walk on a large binary.
//!
//! The unit borrows the file's sections; `self_cell` keeps both in one Python object without
//! `unsafe` here. Anything the compiled source leaves to the reference (`Defer`) raises
//! `CompiledDwarfDeferred`: the reader then answers that unit with the Python runs from then on.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use rustc_hash::FxHashMap;
use self_cell::self_cell;

use super::lines::{self, LineTable};
use super::runs::{self, Kept, Run, SymbolBounds};
use super::tree::{self, Tree};
use super::unit::UnitData;
use super::{chain_tuple, CompiledDwarfError, Decided, Sections};
use crate::panic_message;

pyo3::create_exception!(
    _kernels,
    CompiledDwarfDeferred,
    pyo3::exceptions::PyException,
    "The compiled DWARF source leaves this unit to the Python reference (the reason is the message)."
);

struct Decoded<'a> {
    unit: UnitData<'a>,
    tree: Tree<'a>,
    lines: Option<LineTable>,
    kept: Kept<'a>,
}

self_cell!(
    struct UnitCell {
        owner: Arc<Sections>,
        #[not_covariant]
        dependent: Decoded,
    }
);

/// The unit and, once it was left to the reference, why: every later call says so again.
struct Held {
    cell: UnitCell,
    deferred: Option<&'static str>,
}

/// One unit of a file's DWARF, answering addresses span by span (see the module docstring). Behind
/// a lock: a long-lived reader (`symbolize serve`) answers from several threads.
#[pyclass(frozen, module = "symbolize.formats._kernels")]
pub struct LazyUnit {
    held: Mutex<Held>,
    units: Arc<Vec<(u64, u64)>>,
    symbols: Py<SymbolBounds>,
    functions_only: bool,
    #[pyo3(get)]
    file_names: Py<PyList>,
    strings: Mutex<FxHashMap<String, Py<PyString>>>,
}

fn failed(payload: &(dyn std::any::Any + Send)) -> PyErr {
    CompiledDwarfError::new_err(format!("the compiled DWARF reader failed ({})", panic_message(payload)))
}

impl LazyUnit {
    pub(crate) fn open(
        py: Python<'_>, sections: &Arc<Sections>, units: &Arc<Vec<(u64, u64)>>, symbols: &Py<SymbolBounds>,
        offset: u64, functions_only: bool,
    ) -> PyResult<Option<Self>> {
        let built = catch_unwind(AssertUnwindSafe(|| {
            UnitCell::try_new(Arc::clone(sections), |sections| -> Decided<Decoded<'_>> {
                let unit = UnitData::load(sections, offset)?;
                let lines = match unit.stmt_list {
                    Some(stmt_list) => Some(lines::decode(&unit, stmt_list)?),
                    None => None,
                };
                let tree = tree::scan(&unit)?;
                let kept = Kept::new(&tree, lines.as_ref());
                Ok(Decoded { unit, tree, lines, kept })
            })
        }))
        .map_err(|payload| failed(payload.as_ref()))?;
        let Ok(cell) = built else { return Ok(None) };
        let file_names = cell.with_dependent(|_, decoded| match &decoded.lines {
            Some(lines) => PyList::new(py, &lines.files),
            None => Ok(PyList::empty(py)),
        })?;
        Ok(Some(LazyUnit {
            held: Mutex::new(Held { cell, deferred: None }),
            units: Arc::clone(units),
            symbols: symbols.clone_ref(py),
            functions_only,
            file_names: file_names.unbind(),
            strings: Mutex::new(FxHashMap::default()),
        }))
    }
}

#[pymethods]
impl LazyUnit {
    /// The run holding `vaddr`: (low, high, file, line, column, discriminator, chain or -1,
    /// symbol or -1); None where the unit gives none. Raises `CompiledDwarfDeferred` where the
    /// reference must answer the unit.
    fn run_at(&self, vaddr: u128) -> PyResult<Option<Run>> {
        let mut held = self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(reason) = held.deferred {
            return Err(CompiledDwarfDeferred::new_err(reason));
        }
        let (units, symbols, functions_only) = (&self.units[..], self.symbols.get(), self.functions_only);
        let found = catch_unwind(AssertUnwindSafe(|| {
            held.cell.with_dependent_mut(|_, decoded| {
                let Decoded { unit, tree, lines, kept } = decoded;
                runs::lazy_run_at(unit, tree, lines.as_ref(), units, symbols, functions_only, kept, vaddr)
            })
        }))
        .map_err(|payload| failed(payload.as_ref()))?;
        match found {
            Ok(run) => Ok(run),
            Err(defer) => {
                held.deferred = Some(defer.0);
                Err(CompiledDwarfDeferred::new_err(defer.0))
            }
        }
    }

    /// Chain `chain` as `UnitColumns.chain` gives it.
    fn chain<'py>(&self, py: Python<'py>, chain: usize) -> PyResult<Bound<'py, PyTuple>> {
        let held = self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        held.cell.with_dependent(|_, decoded| chain_tuple(py, &decoded.kept.chains, chain, &self.strings))
    }
}
