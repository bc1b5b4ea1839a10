//! sha256 of every file of the known data sets (`<dataset dir>/<file>`), as published
//! with the data sets: `SHA256SUMS` beside this file, in `sha256sum`'s format (`hash  path`
//! a line), one entry per file.

use std::sync::OnceLock;

/// `(relative path, sha256)` of every known file.
pub fn sums() -> &'static [(&'static str, &'static str)] {
    static SUMS: OnceLock<Vec<(&'static str, &'static str)>> = OnceLock::new();
    SUMS.get_or_init(|| {
        include_str!("SHA256SUMS")
            .lines()
            .filter_map(|l| l.split_once("  ").map(|(hash, path)| (path, hash)))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    /// Every line of the table is read: a 64-digit hex hash and a relative path.
    #[test]
    fn every_line_is_a_hash_and_a_path() {
        let lines = include_str!("SHA256SUMS").lines().count();
        assert_eq!(super::sums().len(), lines);
        assert!(lines > 100);
        for (path, hash) in super::sums() {
            assert!(
                hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
                "{path}"
            );
            assert!(!path.is_empty() && !path.starts_with('/'), "{path}");
        }
    }
}
