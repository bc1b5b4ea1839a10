//! Headed CSV of numeric columns; one column (named by `--target`, default the last) is
//! the response.

use std::path::Path;

use super::{DataError, Dataset, Features};

/// Reads a headed numeric CSV. `target`: the response column (default: the last
/// column); for data with no response use [`read_columns`]. Errors name the file, the
/// line and what was wrong.
pub fn read(path: &Path, target: Option<&str>) -> Result<Dataset, DataError> {
    let (header, rows, lines) = read_columns_at(path)?;
    let d_all = header.len();
    let t = match target {
        None => d_all - 1,
        Some(name) => header.iter().position(|h| h == name).ok_or_else(|| {
            DataError::new(
                path,
                1,
                format!("no column named {name:?} (columns: {})", header.join(", ")),
            )
        })?,
    };
    if d_all < 2 {
        return Err(DataError::new(
            path,
            1,
            "a target column and at least one feature column are needed",
        ));
    }
    let n = rows.len() / d_all;
    let d = d_all - 1;
    let mut x = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for row in rows.chunks_exact(d_all) {
        for (j, &v) in row.iter().enumerate() {
            if j == t {
                y.push(v);
            } else {
                x.push(v);
            }
        }
    }
    let names = header
        .iter()
        .enumerate()
        .filter(|&(j, _)| j != t)
        .map(|(_, h)| h.clone())
        .collect();
    Ok(Dataset {
        features: Features::Dense { x, d },
        y,
        names,
        lines,
    })
}

/// The name of the response column [`read`] takes for `target`: that name, checked to be
/// in the header, or the header's last.
pub fn target_name(path: &Path, target: Option<&str>) -> Result<String, DataError> {
    let file = std::fs::File::open(path)
        .map_err(|e| DataError::new(path, 0, format!("cannot read: {e}")))?;
    let (header, _) = headed(path, file)?;
    match target {
        Some(name) if header.iter().any(|h| h == name) => Ok(name.to_string()),
        Some(name) => Err(DataError::new(
            path,
            1,
            format!("no column named {name:?} (columns: {})", header.join(", ")),
        )),
        None => Ok(header[header.len() - 1].clone()),
    }
}

/// A CSV reader of `input` (trimmed cells) and its header, which must name a column.
fn headed<R: std::io::Read>(
    path: &Path,
    input: R,
) -> Result<(Vec<String>, csv::Reader<R>), DataError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_reader(input);
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| DataError::new(path, 1, format!("bad header: {e}")))?
        .iter()
        .map(str::to_string)
        .collect();
    if header.is_empty() || header.iter().all(|h| h.is_empty()) {
        return Err(DataError::new(path, 0, "empty file (no header line)"));
    }
    Ok((header, reader))
}

/// A headed numeric table: the header, the values (row-major) and each row's file line.
pub type Table = (Vec<String>, Vec<f32>, Vec<usize>);

/// Reads a headed numeric CSV into its header and its values (row-major).
pub fn read_columns(path: &Path) -> Result<(Vec<String>, Vec<f32>), DataError> {
    read_columns_at(path).map(|(h, v, _)| (h, v))
}

/// [`read_columns`] and the file line of each row.
pub fn read_columns_at(path: &Path) -> Result<Table, DataError> {
    let file = std::fs::File::open(path)
        .map_err(|e| DataError::new(path, 0, format!("cannot read: {e}")))?;
    parse_columns(path, file)
}

/// Parses headed numeric CSV from any reader (`path` only names the source in errors):
/// the header, the values (row-major) and the file line of each row.
pub fn parse_columns(path: &Path, input: impl std::io::Read) -> Result<Table, DataError> {
    let (header, mut reader) = headed(path, input)?;
    let (mut values, mut lines) = (Vec::new(), Vec::new());
    for (k, rec) in reader.records().enumerate() {
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(k + 2, |p| p.line() as usize);
            match e.kind() {
                csv::ErrorKind::UnequalLengths {
                    expected_len, len, ..
                } => DataError::new(
                    path,
                    line,
                    format!("{len} columns, expected {expected_len}"),
                ),
                _ => DataError::new(path, line, e.to_string()),
            }
        })?;
        let line = rec.position().map_or(k + 2, |p| p.line() as usize);
        lines.push(line);
        for (j, cell) in rec.iter().enumerate() {
            let v: f32 = cell
                .parse()
                .ok()
                .filter(|v: &f32| v.is_finite())
                .ok_or_else(|| {
                    DataError::new(
                        path,
                        line,
                        format!("column {:?}: {cell:?} is not a finite number", header[j]),
                    )
                })?;
            values.push(v);
        }
    }
    if values.is_empty() {
        return Err(DataError::new(path, 0, "no data rows"));
    }
    Ok((header, values, lines))
}
