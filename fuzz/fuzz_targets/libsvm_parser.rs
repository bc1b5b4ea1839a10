//! The LIBSVM parser on arbitrary text: an error naming a line within the text, or a data
//! set whose rows are consistent (increasing in-range indices, finite labels).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use sgld_harness::data::{Features, libsvm};

fuzz_target!(|text: &str| {
    match libsvm::parse(Path::new("fuzz.txt"), text) {
        Err(e) => assert!(e.line <= text.lines().count(), "{e}"),
        Ok(d) => {
            assert!(!d.y.is_empty() && d.y.iter().all(|y| y.is_finite()));
            match &d.features {
                Features::SparseBinary {
                    offsets,
                    indices,
                    d: dim,
                } => {
                    assert_eq!(offsets.len(), d.y.len() + 1);
                    for w in offsets.windows(2) {
                        let row = &indices[w[0]..w[1]];
                        assert!(
                            row.windows(2).all(|p| p[0] < p[1])
                                && row.iter().all(|&j| (j as usize) < *dim)
                        );
                    }
                }
                Features::Dense { x, d: dim } => {
                    assert_eq!(x.len(), d.y.len() * dim);
                    assert!(x.iter().all(|v| v.is_finite()));
                }
            }
        }
    }
});
