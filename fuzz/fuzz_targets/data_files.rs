//! The file readers on arbitrary bytes: the block-parallel CSV and LIBSVM readers, the
//! `.npy` reader and the Parquet reader either name what is wrong or give a consistent
//! data set whose sha256 is the file's.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sgld_harness::data::{csv_table, libsvm, npy, parquet_table, registry};

#[path = "common/mod.rs"]
mod common;
use common::consistent;

fuzz_target!(|bytes: &[u8]| {
    let dir = std::env::temp_dir().join(format!("sgld-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("data");
    std::fs::write(&path, bytes).unwrap();
    let sha = registry::sha256_file(&path).unwrap();
    if let Ok((d, s)) = csv_table::read_hashed(&path, None) {
        consistent(&d);
        assert_eq!(s, sha);
        assert_eq!(d.lines.len(), d.y.len());
        assert!(d.lines.windows(2).all(|w| w[0] <= w[1]));
    }
    if let Ok((header, values, _)) = csv_table::read_columns_at(&path) {
        assert_eq!(values.len() % header.len(), 0);
    }
    if let Ok((d, s)) = libsvm::read_hashed(&path) {
        consistent(&d);
        assert_eq!(s, sha);
    }
    for response in [npy::Response::Column(None), npy::Response::Column(Some(1))] {
        if let Ok((d, s)) = npy::read_hashed(&path, response) {
            consistent(&d);
            assert_eq!(s, sha);
        }
    }
    if let Ok((d, s)) = parquet_table::read_hashed(&path, None) {
        consistent(&d);
        assert_eq!(s, sha);
    }
});
