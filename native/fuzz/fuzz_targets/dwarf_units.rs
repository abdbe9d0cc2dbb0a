//! The compiled DWARF answer source over a fixture's sections with one of them from the input:
//! byte 0 says which (`.debug_info`, `.debug_abbrev`, `.debug_line`, `.debug_str`,
//! `.debug_line_str`, `.debug_str_offsets`, `.debug_addr`, `.debug_ranges`, `.debug_rnglists`) and
//! whether rows answer only inside functions; the rest is that section. Every unit is built or
//! deferred; a panic (which the Python module would turn into its typed error) is a finding.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use object::{Object, ObjectSection};
use _kernels::fuzzing::{build_every_unit, SECTION_NAMES};

fn template() -> &'static Vec<Vec<u8>> {
    static TEMPLATE: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let path = std::env::var("DWARF_TEMPLATE").unwrap_or_else(|_| {
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/bin/cppdemo-gcc-dwarf5-pie").to_owned()
        });
        let data = std::fs::read(&path).unwrap_or_else(|error| panic!("template {path}: {error}"));
        let file = object::File::parse(&*data).expect("the template is an object file");
        SECTION_NAMES
            .iter()
            .map(|name| file.section_by_name(name).and_then(|section| section.data().ok()).unwrap_or(&[]).to_vec())
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, section)) = data.split_first() else { return };
    let mut sections = template().clone();
    let which = usize::from(selector) % SECTION_NAMES.len();
    sections[which] = section.to_vec();
    build_every_unit(&sections, true, 8, selector & 0x80 != 0);
});
