//! The CSV parser on arbitrary bytes: an error, or a rectangular table of finite values
//! with one header name per column and one file line per row, never decreasing.
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
        // Lines as the csv crate counts them (by '\n'; records ended by a lone '\r' share
        // a line number): from 1, never decreasing.
        assert!(lines.iter().all(|&l| l >= 1));
        assert!(lines.windows(2).all(|w| w[0] <= w[1]));
    }
});
