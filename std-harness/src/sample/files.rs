//! The output directory's files: written under temporary names and renamed into place
//! when the run ends, so a file under its final name is whole; and a previous run's
//! files removed before a run writes its own, so that no chain file of another run
//! stays beside them.

use std::path::{Path, PathBuf};

use crate::error::Error;

/// Where `path` is written until the run ends: `.NAME.partial` beside it.
pub fn partial(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.partial"))
}

/// Renames each of `paths`' partial files into place.
pub fn publish(paths: &[PathBuf]) -> Result<(), Error> {
    for p in paths {
        let from = partial(p);
        if from.exists() {
            std::fs::rename(&from, p)
                .map_err(|e| Error::io(format!("rename {} to", from.display()), p, e))?;
        }
    }
    Ok(())
}

/// Whether `name` is a file `sgld sample` writes: `summary.json`, `draws.csv`,
/// `unconstrained.csv`, `chain_N.csv`, `chain_N.npy`, or one of their partial files.
fn ours(name: &str) -> bool {
    let name = name
        .strip_prefix('.')
        .and_then(|n| n.strip_suffix(".partial"))
        .unwrap_or(name);
    if name == "summary.json" || name == "draws.csv" || name == "unconstrained.csv" {
        return true;
    }
    let Some(rest) = name.strip_prefix("chain_") else {
        return false;
    };
    let number = rest
        .strip_suffix(".csv")
        .or_else(|| rest.strip_suffix(".npy"));
    number.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The files of a previous run in `dir` (none if it does not exist), sorted.
pub fn previous_run(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return vec![];
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| ours(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Refuses `dir` when it holds a previous run, unless `overwrite`: the error names the
/// run's files and `--overwrite`. With `overwrite` the run's files go later, in
/// [`remove_previous`], and nothing else in `dir` is touched.
pub fn refuse_previous(dir: &Path, found: &[PathBuf], overwrite: bool) -> Result<(), Error> {
    if overwrite || found.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = found
        .iter()
        .take(3)
        .map(|p| match p.strip_prefix(dir) {
            Ok(rel) => rel.display().to_string(),
            Err(_) => p.display().to_string(),
        })
        .collect();
    let more = match found.len() {
        n if n > 3 => format!(" and {} more", n - 3),
        _ => String::new(),
    };
    Err(Error::Options(format!(
        "--out {} holds a previous run ({}{more}): pass --overwrite to replace it (only the files sgld writes are removed), or choose another directory",
        dir.display(),
        names.join(", ")
    )))
}

/// Removes a previous run's files from `dir` (only the files `sgld sample` writes).
pub fn remove_previous(dir: &Path) -> Result<(), Error> {
    for p in previous_run(dir) {
        std::fs::remove_file(&p).map_err(|e| Error::io("remove", &p, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_files_count() {
        for n in [
            "summary.json",
            "draws.csv",
            "chain_1.csv",
            "chain_12.npy",
            ".draws.csv.partial",
            ".chain_3.npy.partial",
        ] {
            assert!(ours(n), "{n}");
        }
        for n in [
            "data.csv",
            "chain_.csv",
            "chain_x.npy",
            "chain_1.txt",
            "summary.json.bak",
            ".notes.partial",
        ] {
            assert!(!ours(n), "{n}");
        }
        let dir = Path::new("/r");
        let found: Vec<PathBuf> = ["summary.json", "draws.csv", "chain_1.csv", "chain_2.csv"]
            .iter()
            .map(|n| dir.join(n))
            .collect();
        assert!(refuse_previous(dir, &found, true).is_ok());
        assert!(refuse_previous(dir, &[], false).is_ok());
        let e = refuse_previous(dir, &found, false).unwrap_err().to_string();
        assert!(
            e.contains(
                "--out /r holds a previous run (summary.json, draws.csv, chain_1.csv and 1 more)"
            ) && e.contains("--overwrite"),
            "{e}"
        );
        assert_eq!(
            partial(Path::new("/a/b/draws.csv")),
            Path::new("/a/b/.draws.csv.partial")
        );
    }
}
