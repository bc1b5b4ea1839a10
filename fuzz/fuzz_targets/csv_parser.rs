//! The CSV parser on arbitrary bytes: an error, or a rectangular table of finite values
//! with one header name per column and one increasing file line (after the header's)
//! per row.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use sgld_harness::data::csv_table;

fuzz_target!(|bytes: &[u8]| {
    if let Ok((header, values, lines)) = csv_table::parse_columns(Path::new("fuzz.csv"), bytes) {
        assert!(!header.is_empty() && !values.is_empty());
        assert_eq!(values.len() % header.len(), 0);
        assert!(values.iter().all(|v| v.is_finite()));
        assert_eq!(lines.len(), values.len() / header.len());
        assert!(lines.first().is_some_and(|&l| l >= 2));
        assert!(lines.windows(2).all(|w| w[0] < w[1]));
    }
});
