//! `sgld sample`'s stages depend downward only: every module of `src/sample/` names (in
//! code, not in its docs or tests) only modules of its own stage or earlier ones, and the
//! modules of one stage import each other without a cycle; and no function there is longer
//! than 80 lines. A module may be a directory (`m/mod.rs` and its files, `m/tests.rs` its
//! tests).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The stages in order and their modules.
const STAGES: &[(&str, &[&str])] = &[
    (
        "utilities",
        &[
            "dense", "draws", "files", "kept", "progress", "seeds", "spectrum",
        ],
    ),
    (
        "configuration and target",
        &["options", "config", "records", "target"],
    ),
    ("problem", &["problem", "net_model"]),
    ("warm-up", &["metric_store", "mode", "shear", "warmup"]),
    ("chains", &["chains"]),
    ("diagnostics", &["diagnose"]),
    (
        "runs",
        &[
            "samplers", "adapt", "bias", "hmc", "blocks", "exact", "adaptive", "fixed", "network",
        ],
    ),
    ("output", &["output", "cmdstan", "report"]),
    ("pipeline", &["pipeline", "mod"]),
];

/// Every source file of `src/sample/`: its module, its path, and whether it is test code
/// (a directory module's `tests.rs`).
fn files() -> Vec<(String, PathBuf, bool)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/sample");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            for inner in std::fs::read_dir(&path).unwrap() {
                let inner = inner.unwrap().path();
                let test = inner.file_name().is_some_and(|f| f == "tests.rs");
                out.push((name.clone(), inner, test));
            }
        } else {
            out.push((name, path, false));
        }
    }
    out
}

/// Each module's source up to its tests, without comment lines.
fn sources() -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (name, path, test) in files() {
        if test {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code: Vec<&str> = text
            .lines()
            .take_while(|l| !l.starts_with("#[cfg(test)]"))
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect();
        let all = out.entry(name).or_default();
        all.push_str(&code.join("\n"));
        all.push('\n');
    }
    out
}

/// The sibling modules `code` names as `super::m` or `crate::sample::m` (also inside
/// `super::{a, b}`).
fn imports(code: &str, modules: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for prefix in ["super::", "crate::sample::"] {
        for (at, _) in code.match_indices(prefix) {
            let rest = &code[at + prefix.len()..];
            let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                group[..end].split(',').map(str::trim).collect()
            } else {
                vec![rest]
            };
            for n in names {
                let m: String = n
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if modules.contains(&m.as_str()) && !found.contains(&m) {
                    found.push(m);
                }
            }
        }
    }
    found
}

#[test]
fn every_module_has_a_stage_and_imports_downward_without_cycles() {
    let src = sources();
    let stage_of: BTreeMap<&str, usize> = STAGES
        .iter()
        .enumerate()
        .flat_map(|(k, (_, ms))| ms.iter().map(move |m| (*m, k)))
        .collect();
    let modules: Vec<&str> = stage_of.keys().copied().collect();
    for name in src.keys() {
        assert!(
            stage_of.contains_key(name.as_str()),
            "src/sample/{name}.rs has no stage in tests/layers.rs"
        );
    }
    let mut problems = Vec::new();
    let mut edges: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (name, code) in &src {
        let from = stage_of[name.as_str()];
        for m in imports(code, &modules) {
            if m == *name {
                continue;
            }
            let to = stage_of[m.as_str()];
            if to > from {
                problems.push(format!(
                    "{name} ({}) imports {m}, of a later stage ({})",
                    STAGES[from].0, STAGES[to].0
                ));
            }
            if to == from {
                edges.entry(name.as_str()).or_default().push(m);
            }
        }
    }
    // A cycle within a stage: a module that reaches itself.
    for start in edges.keys() {
        let mut stack: Vec<String> = edges[start].clone();
        let mut seen: Vec<String> = Vec::new();
        while let Some(m) = stack.pop() {
            if m == *start {
                problems.push(format!("{start} imports itself through its stage"));
                break;
            }
            if !seen.contains(&m) {
                stack.extend(edges.get(m.as_str()).cloned().unwrap_or_default());
                seen.push(m);
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The longest a function of `src/sample/` may be.
const MAX_LINES: usize = 80;

#[test]
fn functions_are_short() {
    let mut problems = Vec::new();
    for (module, path, _) in files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let l = lines[i];
            let indent = l.len() - l.trim_start().len();
            let head = l.trim_start();
            let is_fn = ["fn ", "pub fn ", "pub(crate) fn ", "pub(super) fn "]
                .iter()
                .any(|p| head.starts_with(p));
            if !is_fn || head.ends_with(';') {
                i += 1;
                continue;
            }
            let name: String = head[head.find("fn ").unwrap() + 3..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let close = format!("{}}}", " ".repeat(indent));
            let end = (i..lines.len()).find(|&j| lines[j] == close).unwrap_or(i);
            let len = end - i + 1;
            if len > MAX_LINES {
                problems.push(format!(
                    "{module}::{name} is {len} lines (at most {MAX_LINES})"
                ));
            }
            i = end.max(i) + 1;
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
