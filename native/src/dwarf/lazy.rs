//! A unit kept decoded between a cold lookup's addresses: its tree and line table decoded once in
//! Rust, the runs of each span built when an address lands in it, one inline level at a time
//! along the chain that holds it (`UnitRuns.run_at` in `formats/dwarf/answers.py`). A batch of
//! lookups touches a few spans of a unit; building the whole unit's runs (`DwarfUnits.unit_runs`)
//! and its Python tables cost more than the Python reference's own lazy walk on a large binary.
//!
//! A file's lazy units borrow its sections; `self_cell` keeps the sections and every lazy unit's
//! state in one `LazyFile` without `unsafe` here. Anything the compiled source leaves to the reference (`Defer`) raises
//! `CompiledDwarfDeferred`: the reader then answers that unit with the Python runs from then on.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use rustc_hash::FxHashMap;
use self_cell::self_cell;

use super::names::{NamerCaches, Reached};
use super::runs::{self, Kept, Run, SymbolBounds};
use super::tree::Tree;
use super::{chain_tuple, CompiledDwarfError, Decided, Defer, Sections};
use crate::unpanicked;

pyo3::create_exception!(
    _kernels,
    CompiledDwarfDeferred,
    pyo3::exceptions::PyException,
    "The compiled DWARF source leaves this unit to the Python reference (the reason is the message)."
);

/// One lazy unit's decoded parts, what its lookups keep, and, once it was left to the
/// reference, why: every later call says so again.
struct Held<'a> {
    decoded: Reached<'a>,
    /// The unit's own copy of its tree where a function waits for `Tree::expand`.
    tree: Option<Tree<'a>>,
    kept: Kept,
    deferred: Option<&'static str>,
}

/// A file's lazy units (by slot) and what naming keeps for the file (`names`: the units decoded
/// for them and their name chains, and each DIE's name), shared with its whole-unit builds.
#[derive(Default)]
pub(crate) struct Units<'a> {
    pub names: NamerCaches<'a>,
    held: FxHashMap<u64, Held<'a>>,
    next_slot: u64,
}

self_cell!(
    /// The lazy units of one file, borrowing its sections (`DwarfUnits.lazy_unit`).
    pub(crate) struct LazyFile {
        owner: Arc<Sections>,
        #[not_covariant]
        dependent: Units,
    }
);

impl LazyFile {
    pub(crate) fn shared(sections: Arc<Sections>) -> Arc<Mutex<LazyFile>> {
        Arc::new(Mutex::new(LazyFile::new(sections, |_| Units::default())))
    }

    /// `work` on the file's sections and units under its lock, a panic caught (`unpanicked`).
    pub(crate) fn work<T>(file: &Mutex<LazyFile>, work: impl for<'a> FnOnce(&'a Arc<Sections>, &mut Units<'a>) -> T) -> Result<T, String> {
        unpanicked("DWARF reader", || locked(file).with_dependent_mut(work))
    }
}

fn locked(file: &Mutex<LazyFile>) -> std::sync::MutexGuard<'_, LazyFile> {
    file.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One unit of a file's DWARF, answering addresses span by span (see the module docstring). Its
/// state is in its file's `LazyFile`, behind a lock: a long-lived reader (`symbolize serve`)
/// answers from several threads.
#[pyclass(frozen, module = "symbolize.formats._kernels")]
pub struct LazyUnit {
    file: Arc<Mutex<LazyFile>>,
    slot: u64,
    units: Arc<Vec<(u64, u64)>>,
    symbols: Py<SymbolBounds>,
    functions_only: bool,
    #[pyo3(get)]
    file_names: Py<PyList>,
    strings: Mutex<FxHashMap<usize, (super::runs::Text, Py<PyString>)>>,
}

impl LazyUnit {
    pub(crate) fn open(
        py: Python<'_>, file: &Arc<Mutex<LazyFile>>, units: &Arc<Vec<(u64, u64)>>, symbols: &Py<SymbolBounds>,
        offset: u64, functions_only: bool,
    ) -> PyResult<Option<Self>> {
        let opened = LazyFile::work(file, |sections, state| -> Decided<(u64, PyResult<Bound<'_, PyList>>)> {
            let decoded = state.names.reached(sections, offset)?;
            let tree = decoded.tree()?;
            let file_names = match &decoded.lines {
                Some(lines) => PyList::new(py, lines.files.iter().map(Option::as_deref)),
                None => Ok(PyList::empty(py)),
            };
            let kept = Kept::new(tree, decoded.lines.as_ref());
            let slot = state.next_slot;
            state.next_slot += 1;
            let tree = (!tree.deferred.is_empty()).then(|| tree.clone());
            state.held.insert(slot, Held { tree, decoded, kept, deferred: None });
            Ok((slot, file_names))
        })
        .map_err(CompiledDwarfError::new_err)?;
        let Ok((slot, file_names)) = opened else { return Ok(None) };
        Ok(Some(LazyUnit {
            file: Arc::clone(file),
            slot,
            units: Arc::clone(units),
            symbols: symbols.clone_ref(py),
            functions_only,
            file_names: file_names?.unbind(),
            strings: Mutex::new(FxHashMap::default()),
        }))
    }

    /// The run holding `vaddr` (what `run_at` and `runs_at` answer), or the reason the unit is left
    /// to the reference from now on: once deferred, a unit answers nothing more.
    fn step(&self, state: &mut Units<'_>, vaddr: u128) -> Decided<Option<Run>> {
        let held = state.held.get_mut(&self.slot).expect("a lazy unit's state lives as long as it");
        if let Some(reason) = held.deferred {
            return Err(Defer(reason));
        }
        let (unit, tree, lines) = (&held.decoded.unit, held.decoded.tree()?, &held.decoded.lines);
        let (units, symbols) = (&self.units[..], self.symbols.get());
        let found = runs::lazy_run_at(
            unit, held.tree.as_mut(), tree, lines.as_ref(), units, symbols, self.functions_only, &mut held.kept, &mut state.names, vaddr,
        );
        if let Err(defer) = &found {
            held.deferred = Some(defer.0);
        }
        found
    }
}

impl Drop for LazyUnit {
    /// The unit's state goes with it; the units it reached stay for the file's other lazy units.
    /// (Dropped while its file is locked, as a collection during `chain` may, the state stays.)
    fn drop(&mut self) {
        if let Ok(mut file) = self.file.try_lock() {
            file.with_dependent_mut(|_, state| {
                state.held.remove(&self.slot);
            });
        }
    }
}

#[pymethods]
impl LazyUnit {
    /// The run holding `vaddr`: (low, high, file, line, column, discriminator, chain or -1,
    /// symbol or -1); None where the unit gives none. Raises `CompiledDwarfDeferred` where the
    /// reference must answer the unit.
    fn run_at(&self, vaddr: u128) -> PyResult<Option<Run>> {
        let found = LazyFile::work(&self.file, |_, state| self.step(state, vaddr)).map_err(CompiledDwarfError::new_err)?;
        found.map_err(|defer| CompiledDwarfDeferred::new_err(defer.0))
    }

    /// `run_at` of each of `vaddrs`, in order, under one lock (a cold lookup asks a unit for all
    /// its addresses at once): what `run_at` returns for each, but where it would raise, the list
    /// ends with that exception instance and the later addresses are not asked.
    fn runs_at<'py>(&self, py: Python<'py>, vaddrs: Vec<u128>) -> PyResult<Bound<'py, PyList>> {
        let answers = PyList::empty(py);
        let asked = LazyFile::work(&self.file, |_, state| -> PyResult<Option<PyErr>> {
            for &vaddr in &vaddrs {
                match self.step(state, vaddr) {
                    Ok(run) => answers.append(run)?,
                    Err(defer) => return Ok(Some(CompiledDwarfDeferred::new_err(defer.0))),
                }
            }
            Ok(None)
        });
        let stopped = match asked {
            Ok(stopped) => stopped?,
            Err(message) => Some(CompiledDwarfError::new_err(message)),
        };
        if let Some(error) = stopped {
            answers.append(error.into_value(py))?;
        }
        Ok(answers)
    }

    /// Chain `chain` as `UnitColumns.chain` gives it.
    fn chain<'py>(&self, py: Python<'py>, chain: usize) -> PyResult<Bound<'py, PyTuple>> {
        let file = locked(&self.file);
        file.with_dependent(|_, state| {
            let held = state.held.get(&self.slot).expect("a lazy unit's state lives as long as it");
            chain_tuple(py, &held.kept.built.columns.chains, chain, &self.strings)
        })
    }
}
