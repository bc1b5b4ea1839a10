//! `sgld data fetch NAME`: download a known data set from its public source into the data
//! directory, verifying every file's sha256 before it is moved into place.
//!
//! `SGLD_DATA_MIRROR=URL` fetches `URL/<relative path>` instead of the public addresses
//! (a local mirror; the tests use a server on 127.0.0.1).

use std::io::Read;
use std::path::Path;

use super::registry::{Known, hex};
use sha2::{Digest, Sha256};

/// Largest file accepted (the biggest known file is 3.7 MB).
const MAX_BYTES: u64 = 64 << 20;

/// Downloads every file of `known` that is missing or corrupt in `dir`; returns the files
/// written. Fails on a file with no verbatim public source, a download error or a
/// checksum mismatch (nothing is written for that file).
pub fn fetch(known: &Known, dir: &Path, mirror: Option<&str>) -> Result<Vec<String>, String> {
    let mut written = Vec::new();
    for (rel, sum) in known.files() {
        let dest = dir.join(rel);
        if super::registry::sha256_file(&dest).is_ok_and(|h| h == sum) {
            continue;
        }
        let url = match mirror {
            Some(m) => format!("{}/{rel}", m.trim_end_matches('/')),
            None => known.source_url(rel).ok_or_else(|| {
                format!(
                    "{rel} has no verbatim public copy (this collection re-serialised it); get it from: {}",
                    known.published
                )
            })?,
        };
        let bytes = download(&url)?;
        let got = hex(&Sha256::digest(&bytes));
        if got != sum {
            return Err(format!(
                "{rel}: checksum mismatch from {url}: got {got}, expected {sum}"
            ));
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        let tmp = dest.with_extension("part");
        std::fs::write(&tmp, &bytes).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &dest)
            .map_err(|e| format!("cannot move {} into place: {e}", dest.display()))?;
        written.push(rel.to_string());
    }
    Ok(written)
}

fn download(url: &str) -> Result<Vec<u8>, String> {
    let resp = ureq::get(url)
        .call()
        .map_err(|e| format!("download of {url} failed: {e}"))?;
    let mut bytes = Vec::new();
    resp.into_body()
        .into_reader()
        .take(MAX_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("download of {url} failed: {e}"))?;
    Ok(bytes)
}
