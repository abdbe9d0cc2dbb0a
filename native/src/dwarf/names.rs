//! Names of functions and call sites as the reference gives them (`DwarfInfo._die_name`,
//! `_resolve_name`, `_qualify`, `call_site` in `formats/dwarf/info.py`).
//!
//! The rule is llvm-symbolizer's and the reference's, not a library's: the linkage name, through
//! `DW_AT_abstract_origin` and `DW_AT_specification` when the DIE itself lacks one, else the
//! qualified name (enclosing namespaces and types; `(anonymous namespace)`; an unnamed type ends
//! the prefix), and the declaration line from the first DIE of that chain that has one. A chain
//! that leaves the unit (`DW_FORM_ref_addr` into another unit, dwz references) or runs as deep as
//! the reference's cut-off is left to the reference.

use rustc_hash::FxHashMap;
use std::sync::{Arc, OnceLock};

use gimli::constants as dw;
use gimli::AttributeValue;

use super::lines::LineTable;
use super::tree::{NodeAttrs, Tree};
use super::unit::{source_line, Attr, UnitData};
use super::{Decided, Defer, Sections};

const MAX_REFERENCE_DEPTH: u32 = 16;

/// A name or file name, shared: a unit's chains and calling frames repeat a few thousand of them.
pub(crate) type Text = Arc<str>;

/// (name, decl line, decl file): `info.Name`.
pub(crate) type Name = (Option<Text>, i64, Option<Text>);

/// (file, line, column, discriminator) an inlined call was called from.
pub(crate) type CallSite = (Option<Text>, i64, i64, i64);

/// A node's name, entry and, for an inlined call, call site (`Namer::node_facts`).
pub(crate) type NodeFacts = (Name, Option<u64>, Option<CallSite>);

/// A unit another's name chain reaches (`DW_FORM_ref_addr`), or a lazy unit: decoded once a file.
pub(crate) type Reached<'a> = Arc<Decoded<'a>>;

/// A unit's DIEs and line table, and its tree as a lookup scans it (`tree::scanned`), on first use:
/// as in the reference, a unit reached for names is scanned only to qualify one (`_qualify`), and a
/// large Rust binary names its inlined functions by linkage names from a hundred units it never scans.
pub(crate) struct Decoded<'a> {
    pub unit: UnitData<'a>,
    pub lines: Option<LineTable>,
    tree: OnceLock<Decided<Tree<'a>>>,
}

impl<'a> Decoded<'a> {
    pub(crate) fn tree(&self) -> Decided<&Tree<'a>> {
        let scanned = self.tree.get_or_init(|| super::tree::scanned(&self.unit, true));
        scanned.as_ref().map_err(|defer| Defer(defer.0))
    }
}

/// `DwarfInfo._file_of`: the name of file number `attr` (a DW_AT_decl_file or DW_AT_call_file, any
/// constant form but a flag) in `lines`, None for a number no entry has or no line table;
/// `other_form` for another form.
#[inline(always)]
fn file_of(lines: Option<&LineTable>, attr: &Attr<'_>, other_form: Decided<Option<Text>>) -> Decided<Option<Text>> {
    let index: i128 = match (attr.0, &attr.1) {
        (dw::DW_FORM_sdata | dw::DW_FORM_implicit_const, AttributeValue::Sdata(v)) => i128::from(*v),
        (dw::DW_FORM_data1 | dw::DW_FORM_data2 | dw::DW_FORM_data4 | dw::DW_FORM_data8 | dw::DW_FORM_udata, value) => {
            i128::from(super::unit::int_value(value)?)
        }
        _ => return other_form,
    };
    Ok(lines.and_then(|lines| usize::try_from(index).ok().and_then(|at| lines.files.get(at))).cloned().flatten())
}

/// (decl line, decl file) of a DIE's DW_AT_decl_line and DW_AT_decl_file: 0 and None without.
#[inline(always)]
fn declaration(lines: Option<&LineTable>, line: Option<&Attr<'_>>, file: Option<&Attr<'_>>) -> Decided<(i64, Option<Text>)> {
    let line = line.map(source_line).transpose()?.unwrap_or(0);
    let file = file.map(|attr| file_of(lines, attr, Ok(None))).transpose()?.flatten();
    Ok((line, file))
}

/// The unit at `offset` as `_index_for` decodes it: its DIEs and line table, its tree when asked.
pub(crate) fn decode_unit<'a>(sections: &'a Sections, offset: u64) -> Decided<Reached<'a>> {
    let unit = UnitData::load(sections, offset)?;
    let lines = match unit.stmt_list {
        Some(stmt_list) => Some(super::lines::decode(&unit, stmt_list)?),
        None => None,
    };
    Ok(Arc::new(Decoded { unit, lines, tree: OnceLock::new() }))
}

/// What naming keeps for a whole file (`lazy::Units`), as the reference's `DwarfInfo._names`: the
/// units decoded for it (`reached`) and each DIE's name, by .debug_info offset.
#[derive(Default)]
pub(crate) struct NamerCaches<'a> {
    reached: FxHashMap<u64, Reached<'a>>,
    cache: FxHashMap<u64, Name>,
}

impl<'a> NamerCaches<'a> {
    /// The unit at `offset` (`decode_unit`), decoded on first use.
    pub(crate) fn reached(&mut self, sections: &'a Sections, offset: u64) -> Decided<Reached<'a>> {
        if let Some(found) = self.reached.get(&offset) {
            return Ok(found.clone());
        }
        let found = decode_unit(sections, offset)?;
        self.reached.insert(offset, found.clone());
        Ok(found)
    }
}

pub(crate) struct Namer<'u, 'a> {
    pub unit: &'u UnitData<'a>,
    pub tree: &'u Tree<'a>,
    pub lines: Option<&'u LineTable>,
    /// (offset, end) of every unit of the file, in order.
    pub units: &'u [(u64, u64)],
    pub caches: &'u mut NamerCaches<'a>,
}

impl<'u, 'a> Namer<'u, 'a> {
    /// `_unit_for_reference` into another unit: that unit, decoded as `_index_for` decodes it (its
    /// line table and DIEs); any doubt about it leaves the unit asking to the reference.
    fn reach(&mut self, target: u64) -> Decided<Reached<'a>> {
        let position = self.units.partition_point(|(offset, _)| *offset <= target);
        let &(offset, end) = position.checked_sub(1).and_then(|at| self.units.get(at)).ok_or(Defer("a reference outside every unit"))?;
        if target >= end {
            return Err(Defer("a reference outside every unit"));
        }
        self.caches.reached(self.unit.sections, offset)
    }

    /// What a chain takes of a node, from one read of its DIE: `DwarfInfo.node_name` (name, decl
    /// line, decl file), `node_entry` (its own DW_AT_low_pc, None without one or in a form that is
    /// not an address's) and, for an inlined call, `call_site` (the file, line, column and
    /// discriminator it was called from). A chain asks all three of each of its nodes, so reading
    /// the DIE once for each was three reads of every node of a large Rust unit's chains.
    pub(crate) fn node_facts(&mut self, node: usize) -> Decided<NodeFacts> {
        let (unit, tree) = (self.unit, self.tree);
        let (found, die) = (&tree.nodes[node], unit.offset + u64::from(tree.nodes[node].die));
        let attrs = NodeAttrs::of_die(unit, die)?;
        let entry = match &attrs.low_pc {
            Some(attr @ (_, AttributeValue::Addr(_) | AttributeValue::DebugAddrIndex(_))) => Some(u64::try_from(unit.address(attr)?).map_err(|_| Defer("an entry past 64 bits"))?),
            _ => None,
        };
        let call_site = if found.parent >= 0 { Some(self.call_site(&attrs)?) } else { None };
        let decl = declaration(self.lines, attrs.decl_line.as_ref(), attrs.decl_file.as_ref())?;
        let reference = attrs.abstract_origin.as_ref().or(attrs.specification.as_ref());
        let (linkage, name) = (attrs.linkage_name.as_ref(), attrs.name.as_ref());
        let name = self.resolve_name(unit, Some(tree), die, linkage, name, decl, reference, 0)?;
        Ok((name, entry, call_site))
    }

    /// `DwarfInfo.call_site` of an inlined call's attributes.
    fn call_site(&self, attrs: &NodeAttrs<'a>) -> Decided<CallSite> {
        let file = match &attrs.call_file {
            Some(attr) => file_of(self.lines, attr, Err(Defer("a call file in an unexpected form")))?,
            None => None,
        };
        let line = attrs.call_line.as_ref().map(source_line).transpose()?.unwrap_or(0);
        let column = attrs.call_column.as_ref().map(source_line).transpose()?.unwrap_or(0);
        let discriminator = attrs.call_discriminator.as_ref().map(source_line).transpose()?.unwrap_or(0);
        Ok((file, line, column, discriminator))
    }

    #[allow(clippy::too_many_arguments)]
    fn resolve_name(
        &mut self,
        unit: &UnitData<'a>,
        tree: Option<&Tree<'a>>,
        die: u64,
        linkage: Option<&Attr<'a>>,
        name: Option<&Attr<'a>>,
        (mut decl, mut decl_file): (i64, Option<Text>),
        reference: Option<&Attr<'a>>,
        depth: u32,
    ) -> Decided<Name> {
        let mut linkage = match linkage {
            Some(attr) => unit.string(attr)?.filter(|text| !text.is_empty()).map(Text::from),
            None => None,
        };
        let mut name = match name {
            Some(attr) => unit.string(attr)?,
            None => None,
        };
        if let (true, Some(reference)) = (linkage.is_none() || decl == 0 || decl_file.is_none(), reference) {
            if depth >= MAX_REFERENCE_DEPTH {
                return Err(Defer("a chain of abstract origins as deep as the reference follows"));
            }
            if let Some((origin_name, origin_decl, origin_file)) = self.origin_name(unit, reference, depth)? {
                if decl == 0 {
                    decl = origin_decl;
                }
                if decl_file.is_none() {
                    decl_file = origin_file;
                }
                if linkage.is_none() && (name.is_none() || origin_name.is_some()) {
                    name = None;
                    linkage = origin_name;
                }
            }
        }
        if let (None, Some(name)) = (&linkage, name) {
            let reached; // the tree of a unit reached for names, scanned now
            let tree = match tree {
                Some(tree) => tree,
                None => {
                    reached = self.reach(die)?;
                    reached.tree()?
                }
            };
            linkage = Some(qualify(tree, die, name).into());
        }
        Ok((linkage, decl, decl_file))
    }

    /// `_origin_name`: the name of the DIE a reference points to; None where none can be reached.
    fn origin_name(&mut self, unit: &UnitData<'a>, reference: &Attr<'a>, depth: u32) -> Decided<Option<Name>> {
        let target = match reference.1 {
            AttributeValue::UnitRef(offset) => unit.offset + offset.0 as u64,
            AttributeValue::DebugInfoRef(offset) => offset.0 as u64,
            AttributeValue::DebugInfoRefSup(_) => return Err(Defer("a dwz reference")),
            _ if reference.0 == dw::DW_FORM_ref_sup4 || reference.0 == dw::DW_FORM_ref_sup8 => {
                return Err(Defer("a supplementary-file reference"))
            }
            _ => return Ok(None),
        };
        if let Some(found) = self.caches.cache.get(&target) {
            return Ok(Some(found.clone()));
        }
        if self.unit.offset <= target && target < self.unit.end {
            return self.die_name(self.unit, Some(self.tree), self.lines, target, depth + 1).map(Some);
        }
        let reached = self.reach(target)?;
        self.die_name(&reached.unit, None, reached.lines.as_ref(), target, depth + 1).map(Some)
    }

    /// `_die_name`: (name, decl line, decl file) of the DIE at `die`, every attribute of it read;
    /// `lines`: the line table of its unit; `tree`: its tree, None for a unit reached for names.
    fn die_name(
        &mut self, unit: &UnitData<'a>, tree: Option<&Tree<'a>>, lines: Option<&LineTable>, die: u64, depth: u32,
    ) -> Decided<Name> {
        if let Some(found) = self.caches.cache.get(&die) {
            return Ok(found.clone());
        }
        // A node's slots, but DW_AT_linkage_name wins over DW_AT_MIPS_linkage_name wherever it is.
        let (mut attrs, mut mips) = (NodeAttrs::default(), None);
        let read = unit.read_die(die, |name, value| match name {
            dw::DW_AT_MIPS_linkage_name => mips = Some(value),
            _ => attrs.keep(name, value),
        })?;
        if read.is_none() {
            self.caches.cache.insert(die, (None, 0, None));
            return Ok((None, 0, None));
        }
        let linkage = attrs.linkage_name.as_ref().or(mips.as_ref());
        let reference = attrs.abstract_origin.as_ref().or(attrs.specification.as_ref());
        let decl = declaration(lines, attrs.decl_line.as_ref(), attrs.decl_file.as_ref())?;
        let result = self.resolve_name(unit, tree, die, linkage, attrs.name.as_ref(), decl, reference, depth)?;
        self.caches.cache.insert(die, result.clone());
        Ok(result)
    }
}

/// `_qualify`: `name` prefixed with its enclosing namespaces and types.
fn qualify(tree: &Tree<'_>, die: u64, name: &str) -> String {
    let mut parts = vec![name];
    let mut scope = tree.scope_of(die);
    while scope >= 0 {
        let found = &tree.scopes[scope as usize];
        match found.name {
            Some(text) if !text.is_empty() => parts.push(text),
            _ if found.is_namespace => parts.push("(anonymous namespace)"),
            _ => break,
        }
        scope = found.parent;
    }
    parts.reverse();
    parts.join("::")
}
