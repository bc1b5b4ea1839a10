//! The README's sample outputs are what its commands print: every ```` ```sh ```` block
//! that runs `sgld sample` and is followed by a ```` ```text ```` block is run as written
//! (with this build's binary for `cargo run … --`), and each shown line must have the
//! shape of the printed line in its place — the same words and columns, any numbers (the
//! clocks differ run to run). A `…` line stands for printed lines left out.
//!
//! `SGLD_UPDATE_README=1 cargo test --release -p sgld-harness --test readme` writes the
//! printed lines into the README instead (keeping each block's `…` and as many lines
//! around it as it had).

use std::path::Path;
use std::process::Command;

const RUN: &str = "cargo run --release -p sgld-harness --";

/// A fenced block: its language, its lines, and the line range of its body.
struct Block {
    lang: String,
    body: Vec<String>,
    lines: std::ops::Range<usize>,
}

fn blocks(text: &[&str]) -> Vec<Block> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if let Some(lang) = text[i].strip_prefix("```") {
            let start = i + 1;
            let mut end = start;
            while end < text.len() && !text[end].starts_with("```") {
                end += 1;
            }
            out.push(Block {
                lang: lang.trim().to_string(),
                body: text[start..end].iter().map(|s| s.to_string()).collect(),
                lines: start..end,
            });
            i = end + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// A line with every number replaced by `#` and runs of spaces by one.
fn shape(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.trim_end().chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|&d| d.is_ascii_digit() || d == '.' || d == 'e')
            {
                chars.next();
            }
            if out.ends_with('-') || out.ends_with('−') {
                out.pop();
            }
            out.push('#');
        } else if c == ' ' {
            if !out.ends_with(' ') {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `shown` (with `…` for left-out lines) matches `printed`, line by line in
/// shape; the first line that does not, if any.
fn mismatch(shown: &[String], printed: &[String]) -> Option<String> {
    let mut at = 0;
    let mut skipping = false;
    for s in shown {
        if s.trim() == "…" {
            skipping = true;
            continue;
        }
        let want = shape(s);
        loop {
            let Some(p) = printed.get(at) else {
                return Some(format!("shown but not printed: {s}"));
            };
            at += 1;
            if shape(p) == want {
                break;
            }
            if !skipping {
                return Some(format!("shown: {s}\nprinted: {p}"));
            }
        }
        skipping = false;
    }
    (!skipping && at < printed.len()).then(|| format!("printed but not shown: {}", printed[at]))
}

/// The printed lines in a block's layout: each shown line replaced by the printed line
/// it stands for, its `…` kept; all the printed lines where the shown ones do not match
/// (to be cut by hand).
fn regenerate(shown: &[String], printed: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut skipping = false;
    for s in shown {
        if s.trim() == "…" {
            skipping = true;
            out.push(s.clone());
            continue;
        }
        let want = shape(s);
        let found = printed[at.min(printed.len())..]
            .iter()
            .take(if skipping { usize::MAX } else { 1 })
            .position(|p| shape(p) == want);
        match found {
            Some(k) => {
                out.push(printed[at + k].clone());
                at += k + 1;
            }
            None => return printed.to_vec(),
        }
        skipping = false;
    }
    if !skipping && at < printed.len() {
        return printed.to_vec();
    }
    out
}

fn run(script: &str, dir: &Path) -> Vec<String> {
    let script = script.replace(RUN, env!("CARGO_BIN_EXE_sgld"));
    let out = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}\nfailed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout.lines().map(str::to_string).collect()
}

#[test]
fn the_readme_shows_what_its_commands_print() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    let found = blocks(&lines);
    let update = std::env::var_os("SGLD_UPDATE_README").is_some();
    let dir = tempfile::tempdir().unwrap();
    let mut replaced: Vec<(std::ops::Range<usize>, Vec<String>)> = Vec::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for pair in found.windows(2) {
        let (cmd, shown) = (&pair[0], &pair[1]);
        if cmd.lang != "sh" || shown.lang != "text" || !cmd.body.join("\n").contains(" sample ") {
            continue;
        }
        let printed = run(&cmd.body.join("\n"), dir.path());
        checked += 1;
        if update {
            replaced.push((shown.lines.clone(), regenerate(&shown.body, &printed)));
        } else if let Some(m) = mismatch(&shown.body, &printed) {
            failures.push(format!("README line {}: {m}", shown.lines.start));
        }
    }
    assert!(checked >= 2, "the README's two sample runs were not found");
    if update {
        let mut out: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        for (range, new) in replaced.into_iter().rev() {
            out.splice(range, new);
        }
        std::fs::write(&path, out.join("\n") + "\n").unwrap();
        return;
    }
    assert!(
        failures.is_empty(),
        "the README's outputs are not what its commands print (regenerate with SGLD_UPDATE_README=1):\n{}",
        failures.join("\n\n")
    );
}

#[test]
fn shapes_ignore_numbers_and_alignment() {
    assert_eq!(shape("bias    1.5104  -0.0096 1.4e0"), "bias # # #");
    assert_eq!(shape("beta[x1]  2.0"), shape("beta[x1]     -12.25"));
    let printed: Vec<String> = ["a 1", "b 2", "c 3", "d 4"].map(String::from).to_vec();
    let shown: Vec<String> = ["a 9", "…", "d 0"].map(String::from).to_vec();
    assert_eq!(mismatch(&shown, &printed), None);
    assert!(mismatch(&shown[..1], &printed).is_some());
    assert_eq!(regenerate(&shown, &printed), ["a 1", "…", "d 4"]);
    let two_gaps: Vec<String> = ["…", "b 0", "…"].map(String::from).to_vec();
    assert_eq!(mismatch(&two_gaps, &printed), None);
    assert_eq!(regenerate(&two_gaps, &printed), ["…", "b 2", "…"]);
}
