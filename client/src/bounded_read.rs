//! Reading what the user points the arguments at (`key=@FILE`, `key:=@FILE`, `--args-file FILE`,
//! `-` for stdin) with a ceiling.
//!
//! Without one, `key=@/dev/zero` (or a log file that keeps growing, or `- < /dev/urandom`) made
//! the client read until the kernel killed it. Nothing past the ceiling could be sent anyway: the
//! daemon takes request bodies of 4 MiB by default (`--max-body-bytes`), so the ceiling sits well
//! above any body a daemon is likely to be configured for while keeping memory bounded. A FIFO
//! still blocks until its writer opens it, as `cat` does: `key=@<(command)` needs exactly that.

use std::io::Read;

/// The most bytes read from one file or from stdin.
pub(crate) const MAX_ARGUMENT_BYTES: u64 = 64 * 1024 * 1024;

/// Everything `reader` gives, or an error once it gives more than `limit` bytes.
pub(crate) fn read_within(reader: impl Read, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::other(format!(
            "it is larger than {} MiB, more than the daemon takes in a request (4 MiB unless \
             its --max-body-bytes says otherwise)",
            limit / (1024 * 1024)
        )));
    }
    Ok(bytes)
}

/// The file at `path`, within [`MAX_ARGUMENT_BYTES`].
pub(crate) fn read_file(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    read_within(std::fs::File::open(path)?, MAX_ARGUMENT_BYTES)
}

/// Stdin as text, within [`MAX_ARGUMENT_BYTES`].
pub(crate) fn read_stdin() -> std::io::Result<String> {
    let bytes = read_within(std::io::stdin().lock(), MAX_ARGUMENT_BYTES)?;
    String::from_utf8(bytes).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_source_is_cut_off_at_the_limit() {
        let error = read_within(std::io::repeat(0), 1024).unwrap_err();
        assert!(error.to_string().contains("larger than"), "{error}");
        assert_eq!(read_within(&[7u8; 1024][..], 1024).unwrap().len(), 1024);
        assert!(read_within(&[7u8; 1025][..], 1024).is_err());
    }

    #[test]
    fn dev_zero_is_refused_not_read_forever() {
        let error = read_file(std::path::Path::new("/dev/zero")).unwrap_err();
        assert!(error.to_string().contains("larger than 64 MiB"), "{error}");
    }
}
