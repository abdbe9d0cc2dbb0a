//! The walk over a unit's DIEs that keeps what naming needs, as the reference's whole-unit scan
//! (`formats/dwarf/scan.py`, DWARF 5, 3.3 and 3.3.8) keeps it.
//!
//! gimli parses the abbreviations and the attributes the walk uses, but for the forms `Plan::pass`
//! reads, or steps over by sizes worked out once per abbreviation (a call into gimli per DIE was
//! most of the walk over a Rust unit). What this module decides is the reference's: which DIEs are
//! *nodes* (a subprogram with non-empty ranges, an inlined call with an address attribute under a
//! node), how nodes nest (a nested subprogram is a top-level function), which namespaces and types
//! are *scopes* (outside functions only), and where the reference jumps over a subtree by its
//! `DW_AT_sibling` instead of looking inside (types, declarations, a type's members): what lies
//! behind such a jump is not seen by the reference, so it is not seen here.
//! A subtree the reference's skipper steps over without a sibling link holds nothing it records
//! (it stops where something would be), so walking into it finds the same, as long as every link
//! taken inside it agrees with the null entries the skipper counts: one that does not (damaged
//! data, a fuzz finding in tests/data/) leaves the unit to the reference.
//!
//! A lazy unit's scan (`scanned(unit, true)`) keeps the reference's rule for a lookup
//! (`scan_unit(unit)`): a top-level function's children are not read until an address lands in the
//! function, so damage there is seen by neither until then; the reference then breaks that
//! function's spans, and the compiled unit leaves itself to the reference (tests/test_lazy_walk.py,
//! on damaged fixture copies). It jumps only by a sibling link (GCC's): without one the reference's
//! skipper steps over every DIE, which costs about as much as the walk, and most functions of a
//! 10k-address lookup of a Rust binary are asked anyway. `Tree::expand` walks a function's subtree
//! as the whole scan does.

use gimli::constants as dw;
use gimli::{Reader, UnitOffset};
use rustc_hash::FxHashMap;

use super::unit::{Attr, UnitData};
use super::{Decided, Defer};

/// The attributes a node keeps (`scan._SLOTS`), the last of each slot winning.
#[derive(Default, Clone)]
pub(crate) struct NodeAttrs<'a> {
    pub name: Option<Attr<'a>>,
    pub linkage_name: Option<Attr<'a>>,
    pub low_pc: Option<Attr<'a>>,
    pub high_pc: Option<Attr<'a>>,
    pub ranges: Option<Attr<'a>>,
    pub abstract_origin: Option<Attr<'a>>,
    pub specification: Option<Attr<'a>>,
    pub call_file: Option<Attr<'a>>,
    pub call_line: Option<Attr<'a>>,
    pub call_column: Option<Attr<'a>>,
    pub decl_line: Option<Attr<'a>>,
    pub decl_file: Option<Attr<'a>>,
    /// DW_AT_GNU_discriminator: the discriminator of the place an inlined call was made.
    pub call_discriminator: Option<Attr<'a>>,
}

impl<'a> NodeAttrs<'a> {
    /// Keeps `value` of attribute `name` in its slot (none keeps most).
    pub(crate) fn keep(&mut self, name: dw::DwAt, value: Attr<'a>) {
        *match name {
            dw::DW_AT_name => &mut self.name,
            dw::DW_AT_linkage_name | dw::DW_AT_MIPS_linkage_name => &mut self.linkage_name,
            dw::DW_AT_low_pc => &mut self.low_pc,
            dw::DW_AT_high_pc => &mut self.high_pc,
            dw::DW_AT_ranges => &mut self.ranges,
            dw::DW_AT_abstract_origin => &mut self.abstract_origin,
            dw::DW_AT_specification => &mut self.specification,
            dw::DW_AT_call_file => &mut self.call_file,
            dw::DW_AT_call_line => &mut self.call_line,
            dw::DW_AT_call_column => &mut self.call_column,
            dw::DW_AT_decl_line => &mut self.decl_line,
            dw::DW_AT_decl_file => &mut self.decl_file,
            dw::DW_AT_GNU_discriminator => &mut self.call_discriminator,
            _ => return,
        } = Some(value);
    }

    /// The attributes of the node whose DIE is at `die`, read again as the scan read them: a node
    /// keeps only its DIE's offset, since its attributes (13 slots of about 40 bytes) held every
    /// node of a large Rust unit at once where a lookup names a few of them.
    pub(crate) fn of_die(unit: &UnitData<'a>, die: u64) -> Decided<Self> {
        let mut attrs = NodeAttrs::default();
        let read = unit.read_die(die, |name, value| attrs.keep(name, value))?;
        read.map(|_| attrs).ok_or(Defer("a node whose DIE reads as null"))
    }
}

/// A node, its ranges and children as positions in its tree's flat lists (`Tree::ranges_of`,
/// `Tree::children_of`): a large unit has tens of thousands of nodes, most with one range and no
/// children, and a lazy unit keeps them for the whole run (20 bytes each).
#[derive(Clone)]
pub(crate) struct Node {
    /// Offset of the node's DIE from its unit's start (a unit past 32 bits is the reference's).
    pub die: u32,
    /// The enclosing node of an inlined call; -1 for a function.
    pub parent: i32,
    /// Where its ranges start; they end where the next node's start, as nodes and their ranges are
    /// appended together.
    ranges: u32,
    children: (u32, u32),
}

#[derive(Clone)]
pub(crate) struct Scope<'a> {
    pub start: u64,
    pub end: u64,
    pub name: Option<&'a str>,
    pub parent: i64,
    pub is_namespace: bool,
}

#[derive(Default, Clone)]
pub(crate) struct Tree<'a> {
    pub nodes: Vec<Node>,
    /// Every node's ranges, and (once the scan ends) every node's children in DIE order, each
    /// node's together.
    ranges: Vec<(u64, u64)>,
    children: Vec<u32>,
    /// (low, high, node) of every range of every function node.
    pub function_ranges: Vec<(u64, u64, usize)>,
    pub scopes: Vec<Scope<'a>>,
    /// A lazy scan's top-level functions whose children wait for `expand`: (first child, bound).
    pub(crate) deferred: FxHashMap<usize, (u64, u64)>,
    /// Kept for the walks of `expand`.
    plans: Plans,
}

#[derive(Clone, Copy, PartialEq)]
enum Role {
    Skip,
    Function,
    Scope,
    Container,
    NoCode,
}

enum Kind {
    /// A function or inlined call (node -1: one without code, which hides the nodes around it).
    Function(i64),
    Scope(usize),
    Other,
}

struct Frame {
    kind: Kind,
    saved_node: i64,
    saved_scope: i64,
    /// A node's DW_AT_sibling: where its children must end.
    sibling: Option<u64>,
    /// The reference steps over this subtree by its null entries alone (`skip.SubtreeSkipper`)
    /// where nothing inside stops its skipper: no DIE had a sibling link to jump by.
    skipped: bool,
}

fn role_of(abbrev: &gimli::Abbreviation) -> Role {
    match abbrev.tag() {
        dw::DW_TAG_subprogram | dw::DW_TAG_inlined_subroutine => {
            let has_code =
                abbrev.attributes().iter().any(|spec| spec.name() == dw::DW_AT_low_pc || spec.name() == dw::DW_AT_ranges);
            if has_code {
                Role::Function
            } else {
                Role::NoCode
            }
        }
        dw::DW_TAG_namespace | dw::DW_TAG_class_type | dw::DW_TAG_structure_type | dw::DW_TAG_union_type
        | dw::DW_TAG_enumeration_type => Role::Scope,
        dw::DW_TAG_lexical_block | dw::DW_TAG_compile_unit | dw::DW_TAG_partial_unit | dw::DW_TAG_skeleton_unit => {
            Role::Container
        }
        _ => Role::Skip,
    }
}

/// What the scan reads of the DIEs of one abbreviation, worked out on its first DIE: the
/// attributes the walk uses (the rest skipped in runs, as the reference's scan skips them; a node's
/// others are read when it is named, `NodeAttrs::of_die`).
#[derive(Clone)]
struct Plan {
    role: Role,
    indirect: bool,
    /// The attributes in order (a node's bounds, a scope's name, every sibling link read).
    steps: Vec<Step>,
}

/// How the walk passes one attribute, or a row of fixed-size ones (their bytes): gimli's
/// `skip_attributes` works out each form's size at every DIE, a third of the walk over a Rust unit.
#[derive(Clone, Copy)]
enum Step {
    Bytes(usize),
    /// A LEB128 (DW_FORM_udata, sdata), or a block its ULEB128 length leads (exprloc, block).
    Leb,
    Block,
    /// An attribute gimli reads: one the walk uses, or one of another variable-size form.
    Read(gimli::AttributeSpecification),
}

impl Plan {
    fn of(unit: &UnitData<'_>, abbrev: &gimli::Abbreviation) -> Self {
        let role = role_of(abbrev);
        let mut steps: Vec<Step> = Vec::new();
        for &spec in abbrev.attributes().iter() {
            let step = match (role, spec.name(), spec.size(&unit.header)) {
                (_, dw::DW_AT_sibling, _) | (Role::Scope, dw::DW_AT_name, _) => Step::Read(spec),
                (Role::Function, dw::DW_AT_low_pc | dw::DW_AT_high_pc | dw::DW_AT_ranges, _) => Step::Read(spec),
                (_, _, None) if matches!(spec.form(), dw::DW_FORM_udata | dw::DW_FORM_sdata) => Step::Leb,
                (_, _, None) if matches!(spec.form(), dw::DW_FORM_exprloc | dw::DW_FORM_block) => Step::Block,
                (_, _, None) => Step::Read(spec),
                (_, _, Some(size)) => Step::Bytes(size),
            };
            match (steps.last_mut(), step) {
                (Some(Step::Bytes(run)), Step::Bytes(size)) => *run += size,
                _ => steps.push(step),
            }
        }
        let indirect = abbrev.attributes().iter().any(|spec| spec.form() == dw::DW_FORM_indirect);
        Plan { role, indirect, steps }
    }

    /// Passes `input` over a DIE's attributes, `read` taking each one gimli read (its spec, value).
    #[inline(always)]
    fn pass<'a>(
        &self, unit: &UnitData<'a>, input: &mut super::R<'a>, mut read: impl FnMut(gimli::AttributeSpecification, Attr<'a>),
    ) -> Decided<()> {
        for &step in &self.steps {
            match step {
                Step::Bytes(size) => input.skip(size)?,
                Step::Leb => input.skip_leb128()?,
                Step::Block => {
                    let length = input.read_uleb128()?;
                    input.skip(usize::try_from(length).map_err(|_| Defer("a block past the address space"))?)?;
                }
                Step::Read(spec) => read(spec, (spec.form(), unit.read_value(input, spec)?)),
            }
        }
        Ok(())
    }
}

/// The plans of one unit's abbreviations, by code (one table serves the whole unit, so a code
/// names one abbreviation throughout; a code too large to index by is planned per DIE).
#[derive(Default, Clone)]
struct Plans {
    by_code: Vec<Option<Plan>>,
    unplanned: Option<Plan>,
}

impl Plans {
    /// The plan of `abbrev`, worked out on its first DIE: this is asked at every DIE.
    #[inline(always)]
    fn of(&mut self, unit: &UnitData<'_>, abbrev: &gimli::Abbreviation) -> &Plan {
        let code = usize::try_from(abbrev.code()).unwrap_or(usize::MAX);
        if code >= 1 << 16 {
            return self.unplanned.insert(Plan::of(unit, abbrev));
        }
        if self.by_code.len() <= code {
            self.by_code.resize_with(code + 1, || None);
        }
        self.by_code[code].get_or_insert_with(|| Plan::of(unit, abbrev))
    }
}

/// `Unit.reference` of a sibling link: its .debug_info offset, 0 for a form that names none.
fn sibling_offset(unit: &UnitData<'_>, attr: &Attr<'_>) -> u64 {
    match attr.1 {
        gimli::AttributeValue::UnitRef(offset) => unit.offset + offset.0 as u64,
        gimli::AttributeValue::DebugInfoRef(offset) => offset.0 as u64,
        _ => 0,
    }
}

/// Where the children starting at `offset` end by their null entries (past the null closing
/// them, or the unit's end if they run to it), as the reference's skipper counts them.
fn children_end<'a>(unit: &UnitData<'a>, offset: u64) -> Decided<u64> {
    let mut raw = unit.header.entries_raw(&unit.abbrevs, Some(UnitOffset((offset - unit.offset) as usize)))?;
    let mut depth = 1usize;
    while !raw.is_empty() {
        match raw.read_abbreviation()? {
            None => {
                depth -= 1;
                if depth == 0 {
                    return Ok(unit.offset + raw.next_offset().0 as u64);
                }
            }
            Some(abbrev) => {
                if abbrev.attributes().iter().any(|spec| spec.form() == dw::DW_FORM_indirect) {
                    return Err(Defer("DW_FORM_indirect"));
                }
                raw.skip_attributes(abbrev.attributes())?;
                depth += usize::from(abbrev.has_children());
            }
        }
    }
    Ok(unit.end)
}

/// `scan_unit(unit, whole)`: the unit's nodes and scopes; `lazy` (not whole): each top-level
/// function's subtree waits for `Tree::expand` where its sibling link allows (module docstring).
pub(crate) fn scanned<'a>(unit: &UnitData<'a>, lazy: bool) -> Decided<Tree<'a>> {
    let mut tree = Tree::default();
    let input = unit.header.range_from(unit.header.root_offset()..)?;
    // Where bytes follow the root's children, the reference's walk reads on and may refuse the
    // unit for them (fuzz/findings/): deferred to it.
    if walk(unit, &mut tree, input, Vec::new(), -1, lazy)? != unit.end {
        return Err(Defer("entries after the root's children"));
    }
    tree.link(0, 0);
    Ok(tree)
}

/// The DIEs from `input` on until the subtree `stack` describes closes (`scan._walk`): where that
/// was, or the unit's end if it ran out first. `lazy`: a top-level function's children are
/// jumped over and noted in `tree.deferred`.
fn walk<'a>(
    unit: &UnitData<'a>, tree: &mut Tree<'a>, mut input: super::R<'a>, mut stack: Vec<Frame>, mut current_node: i64,
    lazy: bool,
) -> Decided<u64> {
    let end = unit.end;
    let here = |input: &super::R<'a>| end - input.len() as u64;
    let mut current_scope = -1i64;
    let mut functions_open = stack.len();
    // How many open subtrees the reference would have stepped over by their null entries.
    let mut skipped_open = 0usize;
    loop {
        if input.is_empty() {
            // The unit ends with subtrees open (damaged data, or an assembler's unit): they end
            // there, as in the reference, unless a node's sibling link said otherwise.
            let open_node_elsewhere = stack
                .iter()
                .any(|frame| matches!(frame.kind, Kind::Function(node) if node >= 0) && frame.sibling.is_some_and(|to| to != end));
            if open_node_elsewhere {
                return Err(Defer("children that run past their DW_AT_sibling"));
            }
            return Ok(end);
        }
        let die = here(&input);
        // Most codes are one byte: read here, not by gimli's LEB128 reader (a call per DIE).
        let code = if input.first().is_some_and(|&byte| byte < 0x80) { input.read_u8()?.into() } else { input.read_uleb128()? };
        if code == 0 {
            let Some(frame) = stack.pop() else { return Ok(here(&input)) };
            skipped_open -= usize::from(frame.skipped);
            current_node = frame.saved_node;
            current_scope = frame.saved_scope;
            let after = here(&input);
            match frame.kind {
                Kind::Function(node) => {
                    functions_open -= 1;
                    if node >= 0 && frame.sibling.is_some_and(|sibling| sibling != after) {
                        return Err(Defer("children that do not end at their DW_AT_sibling"));
                    }
                }
                Kind::Scope(scope) => tree.scopes[scope].end = after,
                Kind::Other => {}
            }
            if stack.is_empty() {
                return Ok(after);
            }
            continue;
        }
        let abbrev = unit.abbrevs.get(code).ok_or(Defer("gimli cannot read it"))?;
        let plan = tree.plans.of(unit, abbrev);
        if plan.indirect {
            return Err(Defer("DW_FORM_indirect"));
        }
        let (role, has_children) = (plan.role, abbrev.has_children());
        if role == Role::Skip && !has_children {
            plan.pass(unit, &mut input, |_, _| ())?;
            continue;
        }
        let mut attrs = NodeAttrs::default();
        let mut sibling = 0u64;
        plan.pass(unit, &mut input, |spec, value| {
            if spec.name() == dw::DW_AT_sibling {
                sibling = sibling_offset(unit, &value);
            } else {
                attrs.keep(spec.name(), value);
            }
        })?;
        let after = here(&input);
        let sibling = (after < sibling && sibling <= end).then_some(sibling);
        if !has_children && role != Role::Function {
            continue;
        }
        // Where the reference jumps over the subtree by its sibling link (`scan._walk`). Inside a
        // subtree it may have stepped over by the null entries, the two must agree.
        let jump = |input: &mut super::R<'a>, to: u64| -> Decided<()> {
            if skipped_open > 0 && children_end(unit, after)? != to {
                return Err(Defer("a DW_AT_sibling that disagrees with the null entries"));
            }
            *input = unit.header.range_from(UnitOffset((to - unit.offset) as usize)..)?;
            Ok(())
        };
        match role {
            Role::NoCode => {
                if let Some(to) = sibling {
                    jump(&mut input, to)?;
                    continue;
                }
                stack.push(Frame { kind: Kind::Function(-1), saved_node: current_node, saved_scope: current_scope, sibling: None, skipped: true });
                skipped_open += 1;
                functions_open += 1;
                current_node = -1;
            }
            Role::Function => {
                let mut node = -1i64;
                let tag = abbrev.tag();
                if (attrs.low_pc.is_some() || attrs.ranges.is_some())
                    && (tag == dw::DW_TAG_subprogram || current_node >= 0)
                {
                    let inlined = tag == dw::DW_TAG_inlined_subroutine;
                    let first = tree.ranges.len();
                    node_ranges(unit, &attrs, &mut tree.ranges)?;
                    if inlined || tree.ranges.len() > first {
                        node = tree.nodes.len() as i64;
                        let parent = if inlined { current_node } else { -1 };
                        if parent < 0 {
                            for &(low, high) in &tree.ranges[first..] {
                                tree.function_ranges.push((low, high, node as usize));
                            }
                        }
                        let too_many = |_| Defer("more nodes or ranges than a lazy unit keeps");
                        u32::try_from(tree.ranges.len().max(tree.nodes.len())).map_err(too_many)?; // `first`, and node ids in `children`
                        let (die, parent) = (u32::try_from(die - unit.offset).map_err(too_many)?, i32::try_from(parent).map_err(too_many)?);
                        tree.nodes.push(Node { die, parent, ranges: first as u32, children: (0, 0) });
                    }
                }
                if has_children {
                    // A lookup's scan jumps over a top-level function's children by its sibling
                    // link, as the reference does (see the module docstring).
                    let deferred = lazy && node >= 0 && abbrev.tag() == dw::DW_TAG_subprogram;
                    if let Some(to) = sibling.filter(|_| node < 0 || deferred) {
                        jump(&mut input, to)?;
                        if node >= 0 {
                            tree.deferred.insert(node as usize, (after, to));
                        }
                        continue;
                    }
                    // A node's subtree is walked whole by the reference; another's, skipped if it can.
                    let skipped = node < 0;
                    stack.push(Frame {
                        kind: Kind::Function(node),
                        saved_node: current_node,
                        saved_scope: current_scope,
                        sibling: if node >= 0 { sibling } else { None },
                        skipped,
                    });
                    skipped_open += usize::from(skipped);
                    functions_open += 1;
                    current_node = node;
                }
            }
            Role::Scope => {
                if functions_open > 0 {
                    if let Some(to) = sibling {
                        jump(&mut input, to)?;
                        continue;
                    }
                    stack.push(Frame { kind: Kind::Other, saved_node: current_node, saved_scope: current_scope, sibling: None, skipped: true });
                    skipped_open += 1;
                } else {
                    let scope = tree.scopes.len();
                    let name = match &attrs.name {
                        Some(name) => unit.string(name)?,
                        None => None,
                    };
                    let is_namespace = abbrev.tag() == dw::DW_TAG_namespace;
                    tree.scopes.push(Scope { start: die, end, name, parent: current_scope, is_namespace });
                    if !is_namespace {
                        if let Some(to) = sibling {
                            tree.scopes[scope].end = to;
                            jump(&mut input, to)?;
                            continue;
                        }
                    }
                    // A namespace is walked into by the reference; a type, skipped if it can.
                    let skipped = !is_namespace;
                    stack.push(Frame { kind: Kind::Scope(scope), saved_node: current_node, saved_scope: current_scope, sibling: None, skipped });
                    skipped_open += usize::from(skipped);
                    current_scope = scope as i64;
                }
            }
            Role::Skip => {
                if let Some(to) = sibling {
                    jump(&mut input, to)?;
                    continue;
                }
                stack.push(Frame { kind: Kind::Other, saved_node: current_node, saved_scope: current_scope, sibling: None, skipped: true });
                skipped_open += 1;
            }
            Role::Container => {
                stack.push(Frame { kind: Kind::Other, saved_node: current_node, saved_scope: current_scope, sibling: None, skipped: false });
            }
        }
    }
}

/// `scan.node_ranges`: `DW_AT_ranges`, else `DW_AT_low_pc` and `DW_AT_high_pc`, appended to `out`
/// (a large unit has hundreds of thousands of nodes, most with one range: no list of their own).
fn node_ranges<'a>(unit: &UnitData<'a>, attrs: &NodeAttrs<'a>, out: &mut Vec<(u64, u64)>) -> Decided<()> {
    if let Some(ranges) = &attrs.ranges {
        return unit.decode_ranges(ranges, out);
    }
    match unit.pc_bounds(attrs.low_pc.as_ref(), attrs.high_pc.as_ref())? {
        Some((low, high)) if high > low => out.push((low as u64, high as u64)), // high clamped: 64 bits
        _ => {}
    }
    Ok(())
}

impl<'a> Tree<'a> {
    /// The children lists of the nodes from `first` on and of `root` (whose subtree they are, if
    /// any), each in DIE order: nodes are numbered in DIE order, an expanded subtree's after the rest.
    fn link(&mut self, first: usize, root: usize) {
        // Slot 0 holds `root`'s children, slot 1 + k those of node `first + k`.
        let slot_of = |parent: i32| usize::try_from(parent).ok().map(|parent| (parent + 1).saturating_sub(first));
        let owner = |slot: usize| if slot == 0 { root } else { first + slot - 1 };
        let mut counts = vec![0u32; self.nodes.len() + 1 - first];
        for slot in self.nodes[first..].iter().filter_map(|node| slot_of(node.parent)) {
            counts[slot] += 1;
        }
        let mut start = self.children.len() as u32;
        for (slot, &count) in counts.iter().enumerate().filter(|(_, &count)| count > 0) {
            self.nodes[owner(slot)].children = (start, start);
            start += count;
        }
        self.children.resize(start as usize, 0);
        for child in first..self.nodes.len() {
            if let Some(slot) = slot_of(self.nodes[child].parent) {
                let end = &mut self.nodes[owner(slot)].children.1;
                self.children[*end as usize] = child as u32; // below u32::MAX: the walk checks each node
                *end += 1;
            }
        }
    }

    /// The subtree of top-level function `node` if a lazy scan deferred it, walked as the whole
    /// scan walks it; anything it finds that the whole scan would place otherwise (children that
    /// do not end at the bound the scan jumped to, a function nested in it) is left to the reference.
    pub(crate) fn expand(&mut self, unit: &UnitData<'a>, node: usize) -> Decided<()> {
        let Some((from, bound)) = self.deferred.remove(&node) else { return Ok(()) };
        let (first, functions) = (self.nodes.len(), self.function_ranges.len());
        let input = unit.header.range_from(UnitOffset((from - unit.offset) as usize)..)?;
        let root = Frame { kind: Kind::Function(node as i64), saved_node: -1, saved_scope: -1, sibling: None, skipped: false };
        if walk(unit, self, input, vec![root], node as i64, false)? != bound {
            return Err(Defer("children that do not end where the scan jumped to"));
        }
        if self.function_ranges.len() != functions {
            return Err(Defer("a function nested in a deferred subtree"));
        }
        self.link(first, node);
        Ok(())
    }

    /// Node `node`'s ranges.
    pub(crate) fn ranges_of(&self, node: usize) -> &[(u64, u64)] {
        let end = self.nodes.get(node + 1).map_or(self.ranges.len(), |next| next.ranges as usize);
        &self.ranges[self.nodes[node].ranges as usize..end]
    }

    /// Node `node`'s children, in DIE order.
    pub(crate) fn children_of(&self, node: usize) -> &[u32] {
        let (first, end) = self.nodes[node].children;
        &self.children[first as usize..end as usize]
    }

    /// `UnitIndex.scope_of`: the innermost scope whose subtree holds `die`, -1 for none.
    pub(crate) fn scope_of(&self, die: u64) -> i64 {
        let mut scope = self.scopes.partition_point(|scope| scope.start <= die) as i64 - 1;
        while scope >= 0 {
            let found = &self.scopes[scope as usize];
            if found.start < die && die < found.end {
                break;
            }
            scope = found.parent;
        }
        scope
    }
}
