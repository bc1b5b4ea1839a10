//! LIBSVM / svmlight sparse text: one row per line, `label idx:value idx:value …`, indices
//! 1-based and strictly increasing. Labels are ±1 or 0/1 (0 is read as −1).
//!
//! When every value is 1 the rows are kept sparse (binary, as a9a); otherwise they are
//! made dense.

use std::path::Path;

use super::{DataError, Dataset, Features};

/// Reads a LIBSVM file. Errors name the file, the line and what was wrong: a bad token,
/// index 0, a duplicate or unsorted index, a non-numeric value or label, an empty file.
pub fn read(path: &Path) -> Result<Dataset, DataError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| DataError::new(path, 0, format!("cannot read: {e}")))?;
    parse(path, &text)
}

/// Parses LIBSVM text (`path` only names the source in errors).
pub fn parse(path: &Path, text: &str) -> Result<Dataset, DataError> {
    let mut y = Vec::new();
    let mut offsets = vec![0usize];
    let mut indices: Vec<u32> = Vec::new();
    let mut values: Vec<f32> = Vec::new();
    let mut d = 0usize;
    let mut binary = true;
    let mut lines = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let lineno = k + 1;
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut tokens = line.split_ascii_whitespace();
        let label_tok = tokens.next().unwrap_or_default();
        let label: f32 = label_tok
            .parse()
            .ok()
            .filter(|v: &f32| v.is_finite())
            .ok_or_else(|| {
                DataError::new(path, lineno, format!("label {label_tok:?} is not a number"))
            })?;
        y.push(label);
        let mut last = 0u64;
        for tok in tokens {
            let (i, v) = tok.split_once(':').ok_or_else(|| {
                DataError::new(path, lineno, format!("token {tok:?} is not index:value"))
            })?;
            let idx: u64 = i.parse().map_err(|_| {
                DataError::new(
                    path,
                    lineno,
                    format!("index {i:?} in {tok:?} is not a positive integer"),
                )
            })?;
            if idx == 0 {
                return Err(DataError::new(
                    path,
                    lineno,
                    format!("index 0 in {tok:?}: LIBSVM indices start at 1"),
                ));
            }
            if idx > super::MAX_FEATURES as u64 {
                return Err(DataError::new(
                    path,
                    lineno,
                    format!(
                        "index {idx} is too large (at most {} features)",
                        super::MAX_FEATURES
                    ),
                ));
            }
            if idx == last {
                return Err(DataError::new(
                    path,
                    lineno,
                    format!("duplicate index {idx}"),
                ));
            }
            if idx < last {
                return Err(DataError::new(
                    path,
                    lineno,
                    format!("index {idx} after {last}: indices must increase"),
                ));
            }
            last = idx;
            let val: f32 = v
                .parse()
                .ok()
                .filter(|x: &f32| x.is_finite())
                .ok_or_else(|| {
                    DataError::new(
                        path,
                        lineno,
                        format!("value {v:?} in {tok:?} is not a finite number"),
                    )
                })?;
            if val != 1.0 {
                binary = false;
            }
            indices.push((idx - 1) as u32);
            values.push(val);
            d = d.max(idx as usize);
        }
        offsets.push(indices.len());
        lines.push(lineno);
    }
    if y.is_empty() {
        return Err(DataError::new(path, 0, "no data rows (empty file)"));
    }
    if !binary {
        let values = y
            .len()
            .checked_mul(d)
            .filter(|&v| v <= super::MAX_DENSE_VALUES);
        if values.is_none() {
            return Err(DataError::new(
                path,
                0,
                format!(
                    "{} rows x {d} features with non-binary values would need a dense matrix of more than {} values",
                    y.len(),
                    super::MAX_DENSE_VALUES
                ),
            ));
        }
    }
    let names = (1..=d).map(|j| j.to_string()).collect();
    let features = if binary {
        Features::SparseBinary {
            offsets,
            indices,
            d,
        }
    } else {
        let mut x = vec![0.0f32; y.len() * d];
        for (i, w) in offsets.windows(2).enumerate() {
            for k in w[0]..w[1] {
                x[i * d + indices[k] as usize] = values[k];
            }
        }
        Features::Dense { x, d }
    };
    Ok(Dataset {
        features,
        y,
        names,
        lines,
    })
}
