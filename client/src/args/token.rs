//! `tool-cli token mint|list|revoke`: the grammar and the checks that need no daemon.

use clap::Subcommand;
use tool_cli_protocol::methods::{GatewayMode, MintTokenParams};

use super::Command;
use crate::error::Error;

#[derive(Debug, Subcommand)]
pub(super) enum TokenAction {
    /// Mint a scoped token; prints only the token on stdout (--json: the whole result)
    Mint {
        /// Only servers matching this glob (`*`, `?`); repeatable [default: every server]
        #[arg(long = "server", value_name = "GLOB")]
        servers: Vec<String>,

        /// Only tools matching SERVER/TOOL_GLOB, e.g. `fs/read_*`; repeatable [default: every tool]
        #[arg(long = "tool", value_name = "SERVER/TOOL_GLOB")]
        tools: Vec<String>,

        /// Resources matching SERVER/URI_GLOB, e.g. `fs/file:///home/me/*`; repeatable
        /// [default: no resources at all]
        #[arg(long = "resource", value_name = "SERVER/URI_GLOB")]
        resources: Vec<String>,

        /// Prompts matching SERVER/PROMPT_GLOB, e.g. `everything/*`; repeatable
        /// [default: no prompts at all]
        #[arg(long = "prompt", value_name = "SERVER/PROMPT_GLOB")]
        prompts: Vec<String>,

        /// Only tools annotated read-only (readOnlyHint)
        #[arg(long)]
        read_only: bool,

        /// Lifetime in seconds (at most 30 days) [default: until the daemon stops]
        #[arg(long, value_name = "SECONDS")]
        ttl: Option<u64>,

        /// A label shown by `tool-cli token list`
        #[arg(long, value_name = "TEXT")]
        label: Option<String>,

        /// The MCP gateway's mode for this token's sessions when the host names none:
        /// pass-through or progressive [default: pass-through]
        #[arg(long, value_name = "MODE", value_parser = ["pass-through", "progressive"])]
        gateway_mode: Option<String>,
    },
    /// List live minted tokens (never their secrets)
    List,
    /// Revoke a minted token; exit 1 when no live token has that id
    Revoke {
        /// The token's id, as printed by `mint` and `list` (or the token itself)
        #[arg(value_name = "TOKEN_ID")]
        token_id: String,
    },
}

/// `tool-cli token ...`, with the checks that need no daemon.
pub(super) fn token_command(action: TokenAction) -> Result<Command, Error> {
    match action {
        TokenAction::Mint {
            servers,
            tools,
            resources,
            prompts,
            read_only,
            ttl,
            label,
            gateway_mode,
        } => {
            let well_formed = |glob: &String| {
                glob.split_once('/')
                    .is_some_and(|(server, rest)| !server.is_empty() && !rest.is_empty())
            };
            if let Some(glob) = tools.iter().find(|glob| !well_formed(glob)) {
                return Err(Error::Usage(format!(
                    "--tool takes SERVER/TOOL_GLOB, e.g. `--tool 'fs/read_*'`, got {glob:?}"
                )));
            }
            if let Some(glob) = resources.iter().find(|glob| !well_formed(glob)) {
                return Err(Error::Usage(format!(
                    "--resource takes SERVER/URI_GLOB, e.g. `--resource 'fs/file:///tmp/*'`, \
                     got {glob:?}"
                )));
            }
            if let Some(glob) = prompts.iter().find(|glob| !well_formed(glob)) {
                return Err(Error::Usage(format!(
                    "--prompt takes SERVER/PROMPT_GLOB, e.g. `--prompt 'everything/*'`, got \
                     {glob:?}"
                )));
            }
            if ttl == Some(0) {
                return Err(Error::Usage(
                    "--ttl must be at least 1 second; leave it out for a token that lives \
                     until the daemon stops"
                        .to_owned(),
                ));
            }
            let non_empty = |globs: Vec<String>| (!globs.is_empty()).then_some(globs);
            Ok(Command::MintToken(MintTokenParams {
                servers: non_empty(servers),
                tools: non_empty(tools),
                resources: non_empty(resources),
                prompts: non_empty(prompts),
                read_only,
                ttl_seconds: ttl,
                label,
                gateway_mode: gateway_mode.map(|mode| match mode.as_str() {
                    "progressive" => GatewayMode::Progressive,
                    _ => GatewayMode::PassThrough,
                }),
            }))
        }
        TokenAction::List => Ok(Command::ListTokens),
        TokenAction::Revoke { token_id } => {
            use tool_cli_protocol::identity::is_token_id;
            let token_id = token_id.trim();
            if is_token_id(token_id) {
                return Ok(Command::RevokeToken {
                    token_id: token_id.to_owned(),
                });
            }
            // The token itself names its id, so `tool-cli token revoke "$TOKEN"` works too.
            let is_token = token_id.len() == tool_cli_protocol::TOKEN_BYTES * 2
                && token_id.bytes().all(|byte| byte.is_ascii_hexdigit());
            if is_token {
                return Ok(Command::RevokeToken {
                    token_id: crate::identity::token_id(token_id),
                });
            }
            // Not echoed: a mistyped argument here may well be a secret.
            Err(Error::Usage(format!(
                "expected a token id (16 lowercase hex characters, as printed by `tool-cli \
                 token mint` and `tool-cli token list`) or the token itself, got {} characters \
                 that are neither",
                token_id.chars().count()
            )))
        }
    }
}
