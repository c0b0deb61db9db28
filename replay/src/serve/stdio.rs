//! Serving a replay over stdio: one JSON-RPC message per line in, the recorded answers out.
//!
//! Messages the server sent unprompted in the recording go out when their place comes; a line
//! that is not JSON gets a parse error; a JSON array (an old-style batch) is taken message by
//! message. The session ends when the client closes its side.

use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};

use crate::engine::{Replay, Step};

/// Serves `replay` to the client on `input`/`output` until `input` ends; `log` gets the
/// operator's notes. Returns the recorded requests the client never sent.
pub async fn serve<R, W>(
    replay: Arc<Replay>,
    input: R,
    mut output: W,
    log: impl Fn(&str),
) -> std::io::Result<Vec<String>>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut session = replay.session();
    write_step(&mut output, session.start(), &log).await?;
    let mut lines = BufReader::new(input).lines();
    while let Some(line) = lines.next_line().await? {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let messages = match serde_json::from_str::<Value>(line) {
            Ok(Value::Array(batch)) => batch,
            Ok(message) => vec![message],
            Err(error) => {
                let answer = super::parse_error(&error.to_string());
                output.write_all(format!("{answer}\n").as_bytes()).await?;
                output.flush().await?;
                continue;
            }
        };
        for message in messages {
            write_step(&mut output, session.receive(&message), &log).await?;
        }
    }
    Ok(session.unreplayed())
}

async fn write_step<W: AsyncWrite + Unpin>(
    output: &mut W,
    step: Step,
    log: &impl Fn(&str),
) -> std::io::Result<()> {
    for note in &step.notes {
        log(note);
    }
    if step.outgoing.is_empty() {
        return Ok(());
    }
    let mut text = String::new();
    for outgoing in step.outgoing {
        text.push_str(&outgoing.message.to_string());
        text.push('\n');
    }
    output.write_all(text.as_bytes()).await?;
    output.flush().await
}
