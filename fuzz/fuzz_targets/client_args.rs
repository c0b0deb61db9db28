//! Fuzzes the `tool-cli` argument parser: any argv (split on NUL bytes), any
//! `TOOL_CLI_TIMEOUT_MS`, any stdin must give a command or a usage error, never a panic.

#![no_main]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt as _;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Layout: <timeout env>\x01<stdin>\x01<arg>\0<arg>\0...
    let mut parts = data.splitn(3, |&b| b == 1);
    let timeout = parts
        .next()
        .filter(|t| !t.is_empty())
        .map(|t| String::from_utf8_lossy(t).into_owned());
    let stdin = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let mut argv = vec![OsString::from("tool-cli")];
    argv.extend(
        parts
            .next()
            .unwrap_or_default()
            .split(|&b| b == 0)
            .map(|arg| OsString::from_vec(arg.to_vec())),
    );
    tool_cli::fuzz_parse_args(argv, timeout, &stdin);
});
