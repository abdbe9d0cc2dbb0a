"""Write the benchmark's generated Rust program: one ``main.rs``, the same bytes for the same arguments.

The program is shaped to give rustc's optimizer a lot to inline, so the DWARF carries deep trees of
``DW_TAG_inlined_subroutine`` (DWARF 5, section 3.3.8.2) the way real Rust does: iterator adapter
chains, closures, ``#[inline(always)]`` helper chains, trait methods and std collections
instantiated for each module's own types (every ``HashMap<u64, RecN>`` is a fresh monomorphization).
Each module's entry points are ``#[inline(never)]`` so they stay functions of their own, and
``main`` calls all of them with a value the optimizer cannot see, so none of it folds away.

    python bench/gen_rust.py OUT_DIR [--modules N] [--entries K] [--seed S]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

DEFAULT_MODULES = 180
DEFAULT_ENTRIES = 6
DEFAULT_SEED = 20240611
HELPER_DEPTH = 6

# Bodies for entry points; each uses {m} (module), {k} (entry), {c} (a constant) and the module's types.
ENTRY_BODIES = [
    """\
    let recs: Vec<Rec{m}> = (0..(seed % 7 + 3)).map(|i| Rec{m}::new(i.wrapping_mul({c}), i)).collect();
    let mut table: HashMap<u64, Rec{m}> = HashMap::new();
    for rec in &recs {{
        table.entry(rec.id % 17).or_insert_with(|| rec.clone()).weight += rec.weight;
    }}
    let mut keys: Vec<u64> = table.keys().copied().collect();
    keys.sort_unstable();
    ranked(&recs, seed) ^ ranked(&keys, seed ^ {k}) ^ mix_{m}_{depth}(keys.len() as u64)""",
    """\
    let words: Vec<String> = (0..(seed % 5 + 4)).map(|i| format!("m{m}-{k}-{{}}", i * {c})).collect();
    let joined = words.join(",");
    let counts: BTreeMap<char, usize> = joined.chars().fold(BTreeMap::new(), |mut acc, ch| {{
        *acc.entry(ch).or_insert(0) += 1;
        acc
    }});
    counts.iter().map(|(ch, n)| (*ch as u64).score(*n as u64)).filter(|v| v % 3 != 0).fold(seed, |a, v| mix_{m}_3(a ^ v))""",  # noqa: E501
    """\
    let mut recs: Vec<Rec{m}> = (0..(seed % 9 + 2)).map(|i| Rec{m}::new(seed ^ i, i + {k})).collect();
    recs.sort_by(|a, b| a.weight.partial_cmp(&b.weight).unwrap_or(std::cmp::Ordering::Equal));
    recs.dedup_by_key(|r| r.id % 5);
    let best = recs.iter().max_by_key(|r| r.tags.len()).map(|r| r.score(seed)).unwrap_or({c});
    best.wrapping_add(recs.iter().flat_map(|r| r.tags.iter()).map(|t| *t as u64).sum::<u64>())""",
    """\
    let pairs: Vec<(u32, u32)> = (0..(seed % 11 + 3) as u32).map(|i| (i, i.wrapping_mul({c} as u32))).collect();
    let set: HashSet<(u32, u32)> = pairs.iter().copied().filter(|p| p.0 % 2 == 0).collect();
    let text: String = pairs.iter().map(|p| p.1.to_string()).collect::<Vec<_>>().concat();
    let parsed: u64 = text.bytes().take(12).filter(u8::is_ascii_digit).map(|b| (b - b'0') as u64).sum();
    ranked(&pairs, seed) ^ set.len() as u64 ^ parsed ^ mix_{m}_{depth}(seed)""",
    """\
    let mut queue: VecDeque<Rec{m}> = VecDeque::new();
    for i in 0..(seed % 6 + 2) {{
        queue.push_back(Rec{m}::new(i * {c}, i));
        if i % 3 == 0 {{
            queue.rotate_left(1);
        }}
    }}
    let names: Vec<String> = queue.iter().map(|r| r.describe()).collect();
    let longest = names.iter().map(String::len).max().unwrap_or(0) as u64;
    queue.iter().map(|r| r.score(longest)).fold({k}, |a, v| mix_{m}_2(a.wrapping_add(v)))""",
    """\
    let opt: Option<Rec{m}> = if seed % 2 == 0 {{ Some(Rec{m}::new(seed, {k})) }} else {{ None }};
    let chained = opt.as_ref().map(|r| r.tags.clone()).unwrap_or_default();
    let windows: u64 = chained.windows(2).map(|w| (w[0] ^ w[1]) as u64).sum();
    let chunks: Vec<u64> = chained.chunks(3).map(|c| c.iter().map(|v| *v as u64).product::<u64>()).collect();
    ranked(&chunks, windows) ^ mix_{m}_{depth}(windows ^ {c})""",
]

MODULE_TEMPLATE = """\
pub mod m{m} {{
    use std::collections::{{BTreeMap, HashMap, HashSet, VecDeque}};

    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct Rec{m} {{
        pub id: u64,
        pub name: String,
        pub weight: f64,
        pub tags: Vec<u32>,
    }}

    impl Rec{m} {{
        #[inline]
        pub fn new(id: u64, count: u64) -> Self {{
            let tags = (0..(count % 13) as u32).map(|t| t.wrapping_mul({c1})).collect();
            Rec{m} {{ id, name: format!("rec{m}-{{id}}"), weight: (id % 97) as f64 * {w}, tags }}
        }}

        #[inline]
        pub fn describe(&self) -> String {{
            format!("{{}}:{{:.2}}:{{:?}}", self.name, self.weight, self.tags.first())
        }}
    }}

    pub trait Score {{
        fn score(&self, k: u64) -> u64;
    }}

    impl Score for Rec{m} {{
        #[inline]
        fn score(&self, k: u64) -> u64 {{
            mix_{m}_2(self.id.wrapping_mul(k) ^ self.tags.len() as u64)
        }}
    }}

    impl Score for u64 {{
        #[inline]
        fn score(&self, k: u64) -> u64 {{
            self.rotate_left((k % 63) as u32) ^ {c2}
        }}
    }}

    impl Score for (u32, u32) {{
        #[inline]
        fn score(&self, k: u64) -> u64 {{
            mix_{m}_1(((self.0 as u64) << 32 | self.1 as u64) ^ k)
        }}
    }}

    #[inline(always)]
    fn mix_{m}_0(x: u64) -> u64 {{
        x ^ (x >> {s0})
    }}
{helpers}
    #[inline]
    fn ranked<T: Score>(items: &[T], k: u64) -> u64 {{
        items
            .iter()
            .enumerate()
            .map(|(i, item)| item.score(k.wrapping_add(i as u64)))
            .filter(|v| v % 3 != 0)
            .fold(0u64, |acc, v| mix_{m}_{depth}(acc ^ v))
    }}
{entries}
    pub fn run(seed: u64) -> u64 {{
        let mut total = 0u64;
{calls}
        total
    }}
}}
"""

HELPER_TEMPLATE = """
    #[inline(always)]
    fn mix_{m}_{j}(x: u64) -> u64 {{
        mix_{m}_{prev}(x.wrapping_mul({c}) ^ {d}).rotate_left({r})
    }}
"""

ENTRY_TEMPLATE = """
    #[inline(never)]
    pub fn entry_{m}_{k}(seed: u64) -> u64 {{
{body}
    }}
"""


def odd_constant(rng: random.Random) -> int:
    return rng.randrange(1 << 20, 1 << 31) | 1


def module_source(m: int, entries: int, rng: random.Random) -> str:
    helpers = "".join(
        HELPER_TEMPLATE.format(
            m=m, j=j, prev=j - 1, c=odd_constant(rng), d=rng.randrange(1 << 16), r=rng.randrange(1, 63)
        )
        for j in range(1, HELPER_DEPTH + 1)
    )
    entry_sources = []
    for k in range(entries):
        body = rng.choice(ENTRY_BODIES).format(m=m, k=k, c=rng.randrange(3, 1 << 12), depth=HELPER_DEPTH)
        entry_sources.append(ENTRY_TEMPLATE.format(m=m, k=k, body=_indent(body, 4)))
    calls = "\n".join(f"        total ^= entry_{m}_{k}(seed.wrapping_add({k}));" for k in range(entries))
    return MODULE_TEMPLATE.format(
        m=m,
        c1=rng.randrange(3, 1 << 16),
        c2=odd_constant(rng),
        w=f"{rng.uniform(0.1, 9.9):.3f}",
        s0=rng.randrange(7, 40),
        depth=HELPER_DEPTH,
        helpers=helpers,
        entries="".join(entry_sources),
        calls=calls,
    )


def _indent(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line if line else line for line in text.splitlines())


def program_source(modules: int, entries: int, seed: int) -> str:
    rng = random.Random(seed)
    parts = [
        f"// Generated by bench/gen_rust.py --modules {modules} --entries {entries} --seed {seed}; do not edit.\n",
        "#![allow(clippy::all, dead_code, unused_imports)]\n",
    ]
    parts += [module_source(m, entries, rng) for m in range(modules)]
    calls = "\n".join(f"    total ^= m{m}::run(seed.wrapping_add({m}));" for m in range(modules))
    parts.append(
        "fn main() {\n"
        "    // The argument count is unknown at compile time, so no entry point can be const-folded.\n"
        "    let seed = std::env::args().count() as u64;\n"
        "    let mut total = 0u64;\n"
        f"{calls}\n"
        '    println!("{total}");\n'
        "}\n"
    )
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--modules", type=int, default=DEFAULT_MODULES)
    parser.add_argument("--entries", type=int, default=DEFAULT_ENTRIES, help="entry points per module")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    source = program_source(args.modules, args.entries, args.seed)
    target = args.out_dir / "main.rs"
    # Rewrite only on change so the build script can skip an up-to-date binary.
    if not target.is_file() or target.read_text(encoding="utf-8") != source:
        target.write_text(source, encoding="utf-8")
    print(f"wrote {target}: {args.modules} modules x {args.entries} entry points")


if __name__ == "__main__":
    main()
