//! What the `sgld sample` tests share: the binary and the reading of summary.json.

#![allow(dead_code, unused_imports)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod reference;
pub use reference::{Reference, mala_reference, mala_reference_of};

/// The `sgld` binary of this build.
pub fn sgld() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sgld"))
}

/// `DIR/summary.json`, parsed.
pub fn summary(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// The parameter names of a summary, in order.
pub fn param_names(s: &Value) -> Vec<&str> {
    s["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect()
}
