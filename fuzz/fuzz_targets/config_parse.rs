//! Arbitrary text as a servers config, through the daemon's pure parser `config::parse` with a
//! small fixed environment. It must never panic, and what it accepts must keep the config's
//! promises: server names are unique, and no child is ever handed a `TOOL_CLI_*` variable (they
//! would leak the daemon's token).

#![no_main]

use std::collections::BTreeSet;
use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use tool_cli_daemon::config::{self, ConfigSource, TransportConfig};

fn environment(name: &str) -> Option<String> {
    match name {
        "HOME" => Some("/home/fuzz".into()),
        "API_KEY" => Some("secret".into()),
        "EMPTY" => Some(String::new()),
        "DOLLAR" => Some("${HOME}".into()),
        "TOOL_CLI_TOKEN" => Some("daemon-token".into()),
        _ => None,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match config::parse(
        text,
        ConfigSource::File(PathBuf::from("/fuzz/servers.json")),
        &environment,
    ) {
        Err(error) => {
            let _ = error.to_string();
        }
        Ok(config) => {
            let mut names = BTreeSet::new();
            for server in &config.servers {
                assert!(
                    names.insert(server.name.clone()),
                    "two servers named {:?} in {text:?}",
                    server.name
                );
                if let TransportConfig::Stdio { env, args, .. } = &server.transport {
                    for key in env.keys() {
                        assert!(
                            !key.starts_with(tool_cli_protocol::env::PREFIX),
                            "a child would get {key} from {text:?}"
                        );
                    }
                    // `${TOOL_CLI_TOKEN}` must never be substituted; the text may of course
                    // contain the same characters literally.
                    if !text.contains("daemon-token") {
                        for value in env.values().chain(args) {
                            assert!(
                                !value.contains("daemon-token"),
                                "a child would get the daemon's token (environment or command \
                                 line) from {text:?}"
                            );
                        }
                    }
                }
            }
        }
    }
});
