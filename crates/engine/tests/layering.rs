//! The engine's floor plan, checked. Its faces are not in its tree (no MCP, no napi, no
//! JSON-schema crate), and inside it no two modules import each other, directly or around a
//! circle: parts (locking, a job's pieces, the platform layer) sit below the verbs that use them.
//!
//! A module here is a top-level module of the engine (a `mod` line of `lib.rs`); what a submodule
//! names counts for its top-level module, and `super::` stays inside it. Unit tests
//! (`#[cfg(test)]` items and the files of `#[cfg(test)] mod x;`) may use any floor: they are not
//! part of the library. Run
//! `cargo test -p ptyjobs-engine --test layering -- --nocapture` to see the graph, floor by floor;
//! `PTYJOBS_LAYERING_SRC=<dir>` reads another copy of `src/` (an older tree, for a before/after).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn the_engine_does_not_depend_on_rmcp_napi_or_schemars() {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "-p",
            "ptyjobs-engine",
            "-e",
            "normal,build",
            "--prefix",
            "none",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(
        tree.contains("vt100"),
        "cargo tree printed something unexpected:\n{tree}"
    );
    for face in ["rmcp", "napi", "schemars"] {
        let found: Vec<&str> = tree.lines().filter(|l| l.starts_with(face)).collect();
        assert!(found.is_empty(), "the engine depends on {face}: {found:?}");
    }
}

#[test]
fn no_two_engine_modules_import_each_other() {
    let src = std::env::var_os("PTYJOBS_LAYERING_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let mut files = Vec::new();
    read_sources(&src, &src, &mut files);
    let graph = Graph::from_sources(&files);
    eprintln!("{}", graph.render());
    assert!(
        graph.modules.len() > 10,
        "found too few modules in {}: {:?}",
        src.display(),
        graph.modules.keys()
    );
    if let Some(cycle) = graph.cycle() {
        panic!(
            "engine modules import each other around a circle: {}\n\
             (a part belongs below the verbs that use it; see the graph above)",
            cycle.join(" -> ")
        );
    }
}

/// The checker itself: grouped and inline paths count, comments and strings do not, root
/// re-exports resolve to their module, and an upward import is named as a circle.
#[test]
fn the_module_check_sees_grouped_inline_and_reexported_paths_and_names_a_circle() {
    let lib = "//! see crate::c\nmod a;\nmod b;\nmod c;\nmod d;\npub use d::{Thing, other::Deep as Alias};\npub use regex::Regex;\n";
    let a = "use crate::{b, c::x::Y};\n/// [`crate::d`] in a doc comment\nfn f() { let _ = crate::Regex::new; let s = \"crate::d\"; /* crate::d */ }\n";
    let b = "fn g() -> crate::Alias { todo!() }\nfn h(_: &'static str, _: char) { let _ = ('\"', r#\"crate::a\"#); }\n\
             #[cfg(test)]\nmod tests { use crate::a; fn t() { crate::c::x() } }\n\
             #[cfg(all(test, unix))]\n#[allow(unused)]\nfn t() { crate::a::f() }\n#[cfg(test)]\nmod more;\n";
    let files = |d: &str| {
        vec![
            (PathBuf::from("lib.rs"), lib.to_string()),
            (PathBuf::from("a.rs"), a.to_string()),
            (PathBuf::from("b/mod.rs"), b.to_string()),
            (PathBuf::from("b/inner.rs"), "use super::x;".to_string()),
            (PathBuf::from("b/more.rs"), "use crate::a;".to_string()),
            (PathBuf::from("c.rs"), String::new()),
            (PathBuf::from("d/deep.rs"), d.to_string()),
        ]
    };
    let graph = Graph::from_sources(&files("use crate::d::x; // crate::a"));
    let deps = |m: &str| graph.modules[m].iter().cloned().collect::<Vec<_>>();
    assert_eq!(deps("a"), ["b", "c"]);
    assert_eq!(deps("b"), ["d"], "unit tests do not count");
    assert!(deps("d").is_empty(), "self and comments do not count");
    assert_eq!(graph.cycle(), None);
    let graph = Graph::from_sources(&files("fn up() { crate::a::f() }"));
    assert_eq!(
        graph.cycle(),
        Some(vec!["a".into(), "b".into(), "d".into(), "a".into()])
    );
    assert!(graph.render().contains("(circle)"), "{}", graph.render());
}

/// Every `.rs` file under `dir`, with its path relative to `root`.
fn read_sources(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            read_sources(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("a source file reads");
            out.push((
                path.strip_prefix(root)
                    .expect("under the root")
                    .to_path_buf(),
                text,
            ));
        }
    }
}

/// Top-level modules and the other top-level modules each names through `crate::`.
struct Graph {
    modules: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    /// `files` are paths relative to `src/` with their text; `lib.rs` gives the module list
    /// and the re-exports a `crate::Name` path may go through.
    fn from_sources(files: &[(PathBuf, String)]) -> Self {
        let lib = files
            .iter()
            .find(|(p, _)| p == Path::new("lib.rs"))
            .map(|(_, t)| code_only(t))
            .expect("src/lib.rs is among the sources");
        let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for statement in lib.split(';') {
            let words: Vec<&str> = statement.split_whitespace().collect();
            if let [.., "mod", name] = words.as_slice() {
                modules.insert(name.to_string(), BTreeSet::new());
            }
        }
        let (reexports, external) = root_reexports(&lib, &modules);
        let mut code = BTreeMap::new();
        let mut test_files = BTreeSet::new();
        for (path, text) in files {
            let (kept, test_mods) = without_tests(&code_only(text));
            let dir = match path.file_stem().and_then(|s| s.to_str()) {
                Some("mod" | "lib") => path.parent().expect("a file has a directory").to_path_buf(),
                _ => path.with_extension(""),
            };
            for m in test_mods {
                test_files.insert(dir.join(format!("{m}.rs")));
                test_files.insert(dir.join(&m).join("mod.rs"));
            }
            code.insert(path.clone(), kept);
        }
        for (path, code) in &code {
            let Some(module) = top_module(path) else {
                continue;
            };
            if test_files.contains(path) {
                continue;
            }
            assert!(
                modules.contains_key(&module),
                "{} is not under a `mod` line of lib.rs",
                path.display()
            );
            for name in crate_paths(code) {
                let target = if modules.contains_key(&name) {
                    name
                } else if let Some(m) = reexports.get(&name) {
                    m.clone()
                } else if external.contains(&name) {
                    continue;
                } else {
                    panic!(
                        "{}: cannot tell which module crate::{name} is",
                        path.display()
                    );
                };
                if target != module {
                    modules.entry(module.clone()).or_default().insert(target);
                }
            }
        }
        Graph { modules }
    }

    fn reaches(&self, from: &str, to: &str) -> bool {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(m) = todo.pop() {
            for d in &self.modules[m] {
                if d == to {
                    return true;
                }
                if seen.insert(d.as_str()) {
                    todo.push(d);
                }
            }
        }
        false
    }

    /// A circle of imports, as `a -> b -> ... -> a`, if there is one.
    fn cycle(&self) -> Option<Vec<String>> {
        for start in self.modules.keys() {
            if !self.reaches(start, start) {
                continue;
            }
            // Walk from `start`, always to the first dependency that leads back to it.
            let mut path = vec![start.clone()];
            loop {
                let here = path.last().expect("the path starts with one module");
                let next = self.modules[here]
                    .iter()
                    .find(|d| *d == start || (!path.contains(d) && self.reaches(d, start)))
                    .expect("a module on a circle has a next step");
                path.push(next.clone());
                if next == start {
                    return Some(path);
                }
            }
        }
        None
    }

    /// One line per module, `module -> deps`, lowest floor first; floor 0 imports no other
    /// module, floor n imports something on floor n-1. Modules on a circle share a floor and
    /// are marked.
    fn render(&self) -> String {
        let mut floor: BTreeMap<&str, usize> =
            self.modules.keys().map(|m| (m.as_str(), 0)).collect();
        for _ in 0..=self.modules.len() {
            for (m, deps) in &self.modules {
                let mut f = floor[m.as_str()];
                for d in deps {
                    let above = usize::from(!(self.reaches(m, d) && self.reaches(d, m)));
                    f = f.max(floor[d.as_str()] + above);
                }
                floor.insert(m, f);
            }
        }
        let mut rows: Vec<(usize, &str)> = floor.iter().map(|(m, f)| (*f, *m)).collect();
        rows.sort();
        let mut out = String::new();
        for (f, m) in rows {
            let deps: Vec<&str> = self.modules[m].iter().map(String::as_str).collect();
            let circle = if self.reaches(m, m) { "  (circle)" } else { "" };
            out += &format!("floor {f:>2}: {m} -> {}{circle}\n", deps.join(", "));
        }
        out
    }
}

/// The top-level module a file belongs to (`kill/batch.rs` -> `kill`); `None` for `lib.rs`.
fn top_module(path: &Path) -> Option<String> {
    let first = path.components().next()?.as_os_str().to_str()?;
    if path.components().count() > 1 {
        return Some(first.to_string());
    }
    let stem = first.strip_suffix(".rs")?;
    (stem != "lib").then(|| stem.to_string())
}

/// Names `lib.rs` re-exports from its modules (`pub use store::{Store, x::Y as Z}` gives
/// `Store` and `Z` -> `store`), and names it re-exports from other crates.
fn root_reexports(
    lib: &str,
    modules: &BTreeMap<String, BTreeSet<String>>,
) -> (BTreeMap<String, String>, BTreeSet<String>) {
    let mut from_modules = BTreeMap::new();
    let mut external = BTreeSet::new();
    for statement in lib.split(';') {
        let Some(rest) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((first, items)) = rest.split_once("::") else {
            continue;
        };
        let items = items.replace(['{', '}'], "");
        for item in items.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let name = match item.split_once(" as ") {
                Some((_, alias)) => alias.trim(),
                None => item.rsplit("::").next().unwrap_or(item).trim(),
            };
            if modules.contains_key(first.trim()) {
                from_modules.insert(name.to_string(), first.trim().to_string());
            } else {
                external.insert(name.to_string());
            }
        }
    }
    (from_modules, external)
}

/// The first segment of every `crate::` path in `code` (comments and literals already gone):
/// `crate::a::b` gives `a`, `crate::{a, b::c}` gives `a` and `b`.
fn crate_paths(code: &str) -> Vec<String> {
    let s: Vec<char> = code.chars().collect();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let skip_ws = |mut i: usize| {
        while i < s.len() && s[i].is_whitespace() {
            i += 1;
        }
        i
    };
    let word_at = |i: usize| -> (String, usize) {
        let mut j = i;
        while j < s.len() && ident(s[j]) {
            j += 1;
        }
        (s[i..j].iter().collect(), j)
    };
    let mut found = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if !ident(s[i]) || (i > 0 && (ident(s[i - 1]) || s[i - 1] == '$')) {
            i += 1;
            continue;
        }
        let (word, end) = word_at(i);
        i = end;
        if word != "crate" {
            continue;
        }
        let j = skip_ws(end);
        if !(j + 1 < s.len() && s[j] == ':' && s[j + 1] == ':') {
            continue;
        }
        let j = skip_ws(j + 2);
        if j < s.len() && s[j] == '{' {
            // A group: the first segment of each item at depth one.
            let (mut depth, mut k, mut item_start) = (1, j + 1, true);
            while k < s.len() && depth > 0 {
                match s[k] {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 1 => item_start = true,
                    c if item_start && depth == 1 && ident(c) => {
                        let (name, e) = word_at(k);
                        if name != "self" {
                            found.push(name);
                        }
                        item_start = false;
                        k = e;
                        continue;
                    }
                    _ => {}
                }
                k += 1;
            }
            i = k;
        } else if j < s.len() && ident(s[j]) {
            let (name, e) = word_at(j);
            found.push(name);
            i = e;
        }
    }
    found
}

/// `code` (comments and literals already gone) without its unit tests: every item under
/// `#[cfg(test)]` or `#[cfg(all(test, ...))]` is blanked out. Also returns the names of the
/// modules such an attribute declares as files (`#[cfg(test)] mod tests;`).
fn without_tests(code: &str) -> (String, Vec<String>) {
    let mut s: Vec<char> = code.chars().collect();
    let mut test_mods = Vec::new();
    // The end (exclusive) of the attribute or item that starts at `i`.
    let close = |s: &[char], i: usize, open: char, shut: char| {
        let mut depth = 0;
        for (k, &c) in s.iter().enumerate().skip(i) {
            if c == open {
                depth += 1;
            } else if c == shut {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
        }
        s.len()
    };
    let mut i = 0;
    while i < s.len() {
        if !(s[i] == '#' && s.get(i + 1) == Some(&'[')) {
            i += 1;
            continue;
        }
        let end = close(&s, i + 1, '[', ']');
        let attr: String = s[i + 2..end - 1]
            .iter()
            .filter(|c| !c.is_whitespace())
            .collect();
        if attr != "cfg(test)" && !attr.starts_with("cfg(all(test,") {
            i = end;
            continue;
        }
        // Further attributes, then the item: up to its `;`, or its `{ ... }`.
        let mut j = end;
        loop {
            while j < s.len() && s[j].is_whitespace() {
                j += 1;
            }
            if s.get(j) == Some(&'#') && s.get(j + 1) == Some(&'[') {
                j = close(&s, j + 1, '[', ']');
            } else {
                break;
            }
        }
        let mut k = j;
        while k < s.len() && s[k] != ';' && s[k] != '{' {
            k += 1;
        }
        let item_end = if s.get(k) == Some(&'{') {
            close(&s, k, '{', '}')
        } else {
            let head: String = s[j..k].iter().collect();
            if let [.., "mod", name] = head.split_whitespace().collect::<Vec<_>>().as_slice() {
                test_mods.push(name.to_string());
            }
            (k + 1).min(s.len())
        };
        for c in &mut s[i..item_end] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        i = item_end;
    }
    (s.into_iter().collect(), test_mods)
}

/// `text` with comments (line, doc, nested block) and the insides of string and char
/// literals (plain, byte, raw) blanked out, so only code is left to search.
fn code_only(text: &str) -> String {
    let s: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < s.len() {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && matches!(next, Some('"' | '#'))
            && (i == 0 || !ident(s[i - 1]) || (s[i - 1] == 'b' && (i == 1 || !ident(s[i - 2]))))
        {
            let mut j = i + 1;
            while j < s.len() && s[j] == '#' {
                j += 1;
            }
            if s.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            j += 1;
            while j < s.len() && !(s[j] == '"' && (1..=hashes).all(|h| s.get(j + h) == Some(&'#')))
            {
                j += 1;
            }
            i = j + 1 + hashes;
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < s.len() && s[i] != '"' {
                i += if s[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && next == Some('\\') {
            // An escaped char literal: `'\n'`, `'\''`, `'\u{..}'`.
            i += 3;
            while i < s.len() && s[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else if c == '\'' && s.get(i + 2) == Some(&'\'') {
            i += 3;
            out.push_str("' '");
        } else {
            // Code, or the quote of a lifetime.
            out.push(c);
            i += 1;
        }
    }
    out
}
