//! `--output text|json|raw`, and how it combines with the older `--json`.

use clap::ValueEnum;

use crate::error::Error;

/// The value of `--output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// The human rendering (the default).
    Text,
    /// The method's raw JSON result, like `--json`.
    Json,
    /// A call's content exactly: text parts concatenated, binary content as its bytes.
    Raw,
}

/// `(json, raw)` from `--json` and `--output`; the two may agree but not contradict.
pub(crate) fn resolve(json_flag: bool, output: Option<Format>) -> Result<(bool, bool), Error> {
    match (json_flag, output) {
        (true, Some(format @ (Format::Text | Format::Raw))) => Err(Error::Usage(format!(
            "--json and --output {} contradict each other; --json is --output json, so give \
             one of them",
            if format == Format::Text {
                "text"
            } else {
                "raw"
            }
        ))),
        (json, None) => Ok((json, false)),
        (_, Some(Format::Json)) => Ok((true, false)),
        (false, Some(Format::Text)) => Ok((false, false)),
        (false, Some(Format::Raw)) => Ok((false, true)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_flag_and_output_combine() {
        assert_eq!(resolve(false, None).unwrap(), (false, false));
        assert_eq!(resolve(true, None).unwrap(), (true, false));
        assert_eq!(resolve(false, Some(Format::Json)).unwrap(), (true, false));
        assert_eq!(resolve(true, Some(Format::Json)).unwrap(), (true, false));
        assert_eq!(resolve(false, Some(Format::Raw)).unwrap(), (false, true));
        assert_eq!(resolve(false, Some(Format::Text)).unwrap(), (false, false));
        for contradiction in [Format::Text, Format::Raw] {
            match resolve(true, Some(contradiction)) {
                Err(Error::Usage(message)) => {
                    assert!(message.contains("contradict"), "{message}")
                }
                other => panic!("expected a usage error, got {other:?}"),
            }
        }
    }
}
