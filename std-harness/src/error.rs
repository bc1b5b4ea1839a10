//! The harness's error: what stopped a run, by kind, with the message the command prints
//! as its `Display`.

use std::fmt;
use std::path::PathBuf;

/// Why a run gave no result. `Display` is the one line `sgld` prints after `error: `;
/// the kind says what to fix.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An option out of its domain, options that conflict, or an option the target
    /// cannot take; the message names the option.
    Options(String),
    /// The target disagrees with itself or with the options: a name per parameter, a
    /// batch within its rows.
    Target(String),
    /// The command's data could not be read into a model.
    Data(String),
    /// A file or directory could not be created, read, written, renamed or removed.
    Io {
        /// What was tried, e.g. "create", "rename a.csv.partial to".
        action: String,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The warm-up could not start the chains: no mode, or no finite density.
    Warmup(String),
    /// The sampling stopped, or left nothing to summarise.
    Run(String),
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(action: impl Into<String>, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            action: action.into(),
            path: path.into(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Options(m)
            | Error::Target(m)
            | Error::Data(m)
            | Error::Warmup(m)
            | Error::Run(m) => f.write_str(m),
            Error::Io {
                action,
                path,
                source,
            } => write!(f, "cannot {action} {}: {source}", path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A run stage's message: [`Error::Run`].
impl From<String> for Error {
    fn from(m: String) -> Self {
        Error::Run(m)
    }
}

/// The message, for callers that keep `String` errors.
impl From<Error> for String {
    fn from(e: Error) -> Self {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_the_message_and_io_keeps_its_source() {
        assert_eq!(
            Error::Options("--batch must be at least 1".into()).to_string(),
            "--batch must be at least 1"
        );
        let e = Error::io(
            "create",
            "/no/such",
            std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        );
        assert!(e.to_string().starts_with("cannot create /no/such: "), "{e}");
        let source = std::error::Error::source(&e).unwrap();
        let io = source.downcast_ref::<std::io::Error>().unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::PermissionDenied);
        let s: String = Error::Run("no draws".into()).into();
        assert_eq!(s, "no draws");
    }
}
