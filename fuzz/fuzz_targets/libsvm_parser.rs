//! The LIBSVM parser on arbitrary text: an error naming a line within the text, or a data
//! set whose rows are consistent (increasing in-range indices, finite labels).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use sgld_harness::data::libsvm;

#[path = "common/mod.rs"]
mod common;

fuzz_target!(|text: &str| {
    match libsvm::parse(Path::new("fuzz.txt"), text) {
        Err(e) => assert!(e.line <= text.lines().count(), "{e}"),
        Ok(d) => common::consistent(&d),
    }
});
