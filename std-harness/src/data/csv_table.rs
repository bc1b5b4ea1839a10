//! Headed CSV of numeric columns; one column (named by `--target`, default the last) is
//! the response.
//!
//! Files without quotes (what numeric exports write) are read by [`chunked`]: blocks of
//! whole lines parsed in parallel straight into the design, hashed in the same pass. A
//! file with a quote anywhere is read again by the `csv` crate, which knows quoting.

use std::path::Path;

use rayon::prelude::*;

use super::chunked;
use super::{DataError, Dataset, Features};

/// Which column is the response.
#[derive(Clone, Copy)]
enum Response<'a> {
    /// None: every column is a value.
    None,
    /// The last column.
    Last,
    /// The column of this name.
    Named(&'a str),
}

/// A parsed table: the header, the values without the response (row-major), the
/// response, each row's file line, and the file's sha256.
struct Parsed {
    header: Vec<String>,
    response: Option<usize>,
    x: Vec<f32>,
    y: Vec<f32>,
    lines: Vec<usize>,
    sha256: String,
}

/// Why the fast path stopped.
enum Fail {
    /// The file's fault, as it will be reported.
    Data(DataError),
    /// A quote: the `csv` crate reads this file.
    Quoted,
}

/// Reads a headed numeric CSV. `target`: the response column (default: the last
/// column); for data with no response use [`read_columns`]. Errors name the file, the
/// line and what was wrong.
pub fn read(path: &Path, target: Option<&str>) -> Result<Dataset, DataError> {
    read_hashed(path, target).map(|(d, _)| d)
}

/// [`read`] and the file's sha256 (lowercase hex), computed in the same pass.
pub fn read_hashed(path: &Path, target: Option<&str>) -> Result<(Dataset, String), DataError> {
    let p = parse(path, target.map_or(Response::Last, Response::Named))?;
    let t = p.response.expect("a response was asked for");
    let names = p
        .header
        .iter()
        .enumerate()
        .filter(|&(j, _)| j != t)
        .map(|(_, h)| h.clone())
        .collect();
    let d = p.header.len() - 1;
    let data = Dataset {
        features: Features::Dense { x: p.x, d },
        y: p.y,
        names,
        lines: p.lines,
    };
    Ok((data, p.sha256))
}

/// The name of the response column [`read`] takes for `target`: that name, checked to be
/// in the header, or the header's last.
pub fn target_name(path: &Path, target: Option<&str>) -> Result<String, DataError> {
    let file = std::fs::File::open(path)
        .map_err(|e| DataError::new(path, 0, format!("cannot read: {e}")))?;
    let (header, _) = headed(path, file)?;
    match target {
        Some(name) if header.iter().any(|h| h == name) => Ok(name.to_string()),
        Some(name) => Err(no_column(path, name, &header)),
        None => Ok(header[header.len() - 1].clone()),
    }
}

fn no_column(path: &Path, name: &str, header: &[String]) -> DataError {
    DataError::new(
        path,
        1,
        format!("no column named {name:?} (columns: {})", header.join(", ")),
    )
}

/// The index of the response column in `header`, if one is asked for.
fn response_column(
    path: &Path,
    header: &[String],
    response: Response<'_>,
) -> Result<Option<usize>, DataError> {
    let t = match response {
        Response::None => return Ok(None),
        Response::Last => header.len() - 1,
        Response::Named(name) => header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| no_column(path, name, header))?,
    };
    if header.len() < 2 {
        return Err(DataError::new(
            path,
            1,
            "a target column and at least one feature column are needed",
        ));
    }
    Ok(Some(t))
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
    parse(path, Response::None).map(|p| (p.header, p.x, p.lines))
}

/// Reads `path` by the fast path, or by the `csv` crate when it holds a quote.
fn parse(path: &Path, response: Response<'_>) -> Result<Parsed, DataError> {
    match parse_unquoted(path, response) {
        Ok(p) => Ok(p),
        Err(Fail::Data(e)) => Err(e),
        Err(Fail::Quoted) => parse_quoted(path, response),
    }
}

/// The fast path: blocks of lines parsed in parallel pieces, hashed beside.
fn parse_unquoted(path: &Path, response: Response<'_>) -> Result<Parsed, Fail> {
    let mut head: Option<(Vec<String>, Option<usize>)> = None;
    let (mut x, mut y, mut lines) = (Vec::new(), Vec::new(), Vec::new());
    // Values of `x` parsed so far; past them, zeros (fresh pages until written).
    let mut filled = 0usize;
    let size = std::fs::metadata(path).map_or(0.0, |m| m.len() as f64);
    let mut reserved = false;
    let sha256 = chunked::read_blocks(
        path,
        |mut block, mut first| {
            if head.is_none() {
                let end = memchr::memchr(b'\n', block).map_or(block.len(), |i| i + 1);
                if memchr::memchr(b'"', &block[..end]).is_some() {
                    return Err(Fail::Quoted);
                }
                let (header, _) = headed(path, &block[..end]).map_err(Fail::Data)?;
                let t = response_column(path, &header, response).map_err(Fail::Data)?;
                head = Some((header, t));
                (block, first) = (&block[end..], first + 1);
            }
            let (header, t) = head.as_ref().expect("read above");
            let pieces = chunked::par_pieces(block, first, |p, l| piece(path, p, l, header, *t))?;
            let values: usize = pieces.iter().map(|p| p.x.len()).sum();
            if !reserved {
                reserved = true;
                // The rest of the file at the first block's bytes a row, and a little
                // over (room for a bias column too): zeros the allocator takes from
                // fresh pages, so the design is not copied as it grows and pages it
                // does not reach are never resident.
                let more = 1.02 * (size - block.len() as f64).max(0.0) / block.len() as f64;
                x = vec![0.0f32; values + (values as f64 * more) as usize];
                let rows: usize = pieces.iter().map(|p| p.y.len()).sum();
                y.reserve(rows + (rows as f64 * more) as usize);
                lines.reserve(rows + (rows as f64 * more) as usize);
            }
            if x.len() < filled + values {
                x.resize(filled + values, 0.0);
            }
            // Each piece's values into their place, in parallel (the first write to a
            // page is the costly part).
            let mut rest = &mut x[filled..filled + values];
            let mut places = Vec::with_capacity(pieces.len());
            for p in &pieces {
                let (this, after) = std::mem::take(&mut rest).split_at_mut(p.x.len());
                places.push(this);
                rest = after;
            }
            places
                .into_par_iter()
                .zip(&pieces)
                .for_each(|(place, p)| place.copy_from_slice(&p.x));
            filled += values;
            for p in pieces {
                y.extend_from_slice(&p.y);
                lines.extend_from_slice(&p.lines);
            }
            Ok(())
        },
        Fail::Data,
    )?;
    x.truncate(filled);
    let Some((header, response)) = head else {
        return Err(Fail::Data(DataError::new(
            path,
            0,
            "empty file (no header line)",
        )));
    };
    if lines.is_empty() {
        return Err(Fail::Data(DataError::new(path, 0, "no data rows")));
    }
    Ok(Parsed {
        header,
        response,
        x,
        y,
        lines,
        sha256,
    })
}

/// One piece's rows: values, responses and file lines.
struct Piece {
    x: Vec<f32>,
    y: Vec<f32>,
    lines: Vec<usize>,
}

/// Parses the whole lines of `text`, the first being file line `first`.
fn piece(
    path: &Path,
    text: &[u8],
    first: usize,
    header: &[String],
    response: Option<usize>,
) -> Result<Piece, Fail> {
    if memchr::memchr(b'"', text).is_some() {
        return Err(Fail::Quoted);
    }
    let cols = header.len();
    let mut out = Piece {
        x: Vec::with_capacity(text.len() / 8),
        y: Vec::with_capacity(text.len() / (8 * cols)),
        lines: Vec::with_capacity(text.len() / (8 * cols)),
    };
    for (line, row) in chunked::numbered_lines(text, first) {
        if row.is_empty() {
            continue;
        }
        // A row of the wrong width is reported as such, before any cell in it.
        let width = |row: &[u8]| {
            let len = memchr::memchr_iter(b',', row).count() + 1;
            (len != cols).then(|| {
                let what = format!("{len} columns, expected {cols}");
                Fail::Data(DataError::new(path, line, what))
            })
        };
        let mut rest = row;
        for (j, name) in header.iter().enumerate() {
            let Some((v, after)) = chunked::next_f32(rest) else {
                return Err(width(row).unwrap_or_else(|| {
                    let cell = rest.split(|&b| b == b',').next().unwrap_or_default();
                    let cell = String::from_utf8_lossy(cell.trim_ascii());
                    let what = format!("column {name:?}: {cell:?} is not a finite number");
                    Fail::Data(DataError::new(path, line, what))
                }));
            };
            rest = after;
            if Some(j) == response {
                out.y.push(v);
            } else {
                out.x.push(v);
            }
        }
        // More cells after the last column (the last cell's comma was taken with it).
        if !rest.is_empty() || row.trim_ascii_end().ends_with(b",") {
            let what = format!("more than {cols} columns");
            return Err(width(row).unwrap_or(Fail::Data(DataError::new(path, line, what))));
        }
        out.lines.push(line);
    }
    Ok(out)
}

/// The `csv` crate's path, for files with quotes; the hash read beside.
fn parse_quoted(path: &Path, response: Response<'_>) -> Result<Parsed, DataError> {
    let file = std::fs::File::open(path)
        .map_err(|e| DataError::new(path, 0, format!("cannot read: {e}")))?;
    let (header, values, lines) = parse_columns(path, file)?;
    let response = response_column(path, &header, response)?;
    let (mut x, mut y) = (Vec::with_capacity(values.len()), Vec::new());
    for row in values.chunks_exact(header.len()) {
        for (j, &v) in row.iter().enumerate() {
            if Some(j) == response {
                y.push(v);
            } else {
                x.push(v);
            }
        }
    }
    let sha256 = chunked::sha256_file(path)
        .map_err(|e| DataError::new(path, 0, format!("cannot read: {e}")))?;
    Ok(Parsed {
        header,
        response,
        x,
        y,
        lines,
        sha256,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of several blocks whose later rows are shorter than the first block's
    /// (so the design outgrows the room the first block reserved) reads every row in
    /// order, each value in place, with the hash of its bytes.
    #[test]
    fn rows_past_the_first_blocks_estimate_land_in_order() {
        use sha2::Digest;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("blocks.csv");
        let long = chunked::BLOCK / 40 + 1_000;
        let short = 2_000_000;
        let mut text = String::from("a,b,y\n");
        for i in 0..long {
            text.push_str(&format!("{:.14},-0.00000000001234,1\n", i as f64 * 1e-6));
        }
        for i in 0..short {
            text.push_str(&format!("{},{},0\n", i % 7, i % 5));
        }
        std::fs::write(&path, &text).unwrap();
        let (data, sha) = read_hashed(&path, None).unwrap();
        assert_eq!(
            sha,
            super::super::registry::hex(&sha2::Sha256::digest(&text))
        );
        assert_eq!(data.len(), long + short);
        assert_eq!(data.lines[long + short - 1], long + short + 1);
        let Features::Dense { x, d } = &data.features else {
            panic!("a dense design");
        };
        assert_eq!((*d, x.len()), (2, 2 * (long + short)));
        for i in (0..long).step_by(997) {
            assert_eq!(x[2 * i], (i as f64 * 1e-6) as f32, "row {i}");
            assert_eq!(data.y[i], 1.0);
        }
        for i in (0..short).step_by(991) {
            let r = long + i;
            assert_eq!((x[2 * r], x[2 * r + 1]), ((i % 7) as f32, (i % 5) as f32));
            assert_eq!(data.y[r], 0.0);
        }
    }
}
