//! LIBSVM / svmlight sparse text: one row per line, `label idx:value idx:value …`, indices
//! 1-based and strictly increasing. Labels are ±1 or 0/1 (0 is read as −1).
//!
//! When every value is 1 the rows are kept sparse and binary (as a9a). Rows with other
//! values are made dense when at least a sixteenth of the matrix is filled (a row's SIMD
//! product over all its features then costs no more than gathering its non-zeros) and
//! it fits; otherwise they stay sparse with their values (tf-idf text as rcv1).

use std::path::Path;

use super::{DataError, Dataset, Features, chunked};

/// Reads a LIBSVM file. Errors name the file, the line and what was wrong: a bad token,
/// index 0, a duplicate or unsorted index, a non-numeric value or label, an empty file.
pub fn read(path: &Path) -> Result<Dataset, DataError> {
    read_hashed(path).map(|(d, _)| d)
}

/// [`read`] and the file's sha256 (lowercase hex): the file read once, in blocks of lines
/// parsed in parallel and hashed beside.
pub fn read_hashed(path: &Path) -> Result<(Dataset, String), DataError> {
    let mut rows = Rows::new();
    let sha256 = chunked::read_blocks(
        path,
        |block, first| {
            for piece in chunked::par_pieces(block, first, |p, l| parse_piece(path, p, l))? {
                rows.append(piece);
            }
            Ok(())
        },
        |e| e,
    )?;
    Ok((rows.finish(path)?, sha256))
}

/// Parses LIBSVM text (`path` only names the source in errors).
pub fn parse(path: &Path, text: &str) -> Result<Dataset, DataError> {
    parse_piece(path, text.as_bytes(), 1)?.finish(path)
}

/// Rows as read: compressed indices with their values.
struct Rows {
    y: Vec<f32>,
    offsets: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f32>,
    lines: Vec<usize>,
    d: usize,
    binary: bool,
}

impl Rows {
    fn new() -> Self {
        Self {
            y: Vec::new(),
            offsets: vec![0],
            indices: Vec::new(),
            values: Vec::new(),
            lines: Vec::new(),
            d: 0,
            binary: true,
        }
    }

    /// Appends the rows of `other` (read after these).
    fn append(&mut self, other: Rows) {
        let base = self.indices.len();
        self.offsets
            .extend(other.offsets[1..].iter().map(|&o| o + base));
        self.indices.extend_from_slice(&other.indices);
        self.values.extend_from_slice(&other.values);
        self.y.extend_from_slice(&other.y);
        self.lines.extend_from_slice(&other.lines);
        self.d = self.d.max(other.d);
        self.binary &= other.binary;
    }

    /// The data set: binary rows stay sparse, others are made dense where
    /// [`keep_dense`] says so.
    fn finish(self, path: &Path) -> Result<Dataset, DataError> {
        let Rows {
            y,
            offsets,
            indices,
            values,
            lines,
            d,
            binary,
        } = self;
        if y.is_empty() {
            return Err(DataError::new(path, 0, "no data rows (empty file)"));
        }
        let names = (1..=d).map(|j| j.to_string()).collect();
        let features = if binary {
            Features::SparseBinary {
                offsets,
                indices,
                d,
            }
        } else if keep_dense(y.len(), d, indices.len()) {
            let x = super::densify(&offsets, &indices, &values, y.len(), d);
            Features::Dense { x, d }
        } else {
            Features::SparseValued {
                offsets,
                indices,
                values,
                d,
            }
        };
        Ok(Dataset {
            features,
            y,
            names,
            lines,
        })
    }
}

/// Whether `n` rows of `d` features with `nnz` non-zeros are made dense: at least a
/// sixteenth filled, within [`super::MAX_DENSE_VALUES`].
fn keep_dense(n: usize, d: usize, nnz: usize) -> bool {
    n.checked_mul(d)
        .is_some_and(|cells| cells <= super::MAX_DENSE_VALUES && nnz.saturating_mul(16) >= cells)
}

/// Parses the lines of `text`, the first being file line `first`.
fn parse_piece(path: &Path, text: &[u8], first: usize) -> Result<Rows, DataError> {
    let mut rows = Rows::new();
    for (lineno, line) in chunked::numbered_lines(text, first) {
        let line = line.split(|&b| b == b'#').next().unwrap_or_default();
        let mut tokens = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|t| !t.is_empty());
        let Some(label_tok) = tokens.next() else {
            continue;
        };
        let text = |t: &[u8]| String::from_utf8_lossy(t).into_owned();
        let label = chunked::finite_f32(label_tok).ok_or_else(|| {
            let what = format!("label {:?} is not a number", text(label_tok));
            DataError::new(path, lineno, what)
        })?;
        rows.y.push(label);
        let mut last = 0u64;
        for tok in tokens {
            let err = |what: String| DataError::new(path, lineno, what);
            let colon = memchr::memchr(b':', tok)
                .ok_or_else(|| err(format!("token {:?} is not index:value", text(tok))))?;
            let (i, v) = (&tok[..colon], &tok[colon + 1..]);
            let idx: u64 = std::str::from_utf8(i)
                .ok()
                .and_then(|i| i.parse().ok())
                .ok_or_else(|| {
                    err(format!(
                        "index {:?} in {:?} is not a positive integer",
                        text(i),
                        text(tok)
                    ))
                })?;
            if idx == 0 {
                return Err(err(format!(
                    "index 0 in {:?}: LIBSVM indices start at 1",
                    text(tok)
                )));
            }
            if idx > super::MAX_FEATURES as u64 {
                return Err(err(format!(
                    "index {idx} is too large (at most {} features)",
                    super::MAX_FEATURES
                )));
            }
            if idx == last {
                return Err(err(format!("duplicate index {idx}")));
            }
            if idx < last {
                return Err(err(format!(
                    "index {idx} after {last}: indices must increase"
                )));
            }
            last = idx;
            let val = chunked::finite_f32(v).ok_or_else(|| {
                err(format!(
                    "value {:?} in {:?} is not a finite number",
                    text(v),
                    text(tok)
                ))
            })?;
            rows.binary &= val == 1.0;
            rows.indices.push((idx - 1) as u32);
            rows.values.push(val);
            rows.d = rows.d.max(idx as usize);
        }
        rows.offsets.push(rows.indices.len());
        rows.lines.push(lineno);
    }
    Ok(rows)
}
