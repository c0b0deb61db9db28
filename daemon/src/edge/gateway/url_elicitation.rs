//! URL-mode elicitation for hosts that cannot be asked about a URL. A server with
//! `"elicitation": "ask"` is told (in the handshake) that the daemon takes URL-mode elicitations:
//! the server asks to send its user to a web page (a sign-in, a payment) whose data never passes
//! through the client. A host that declared `elicitation.url` is asked as the server asked
//! (`stream.rs`). A host that declared form elicitation only cannot be asked, but its user can
//! still open the page: the server's request is declined with that reason (so the server does
//! not wait for a consent that cannot come), and the URL goes back to the host in the call's
//! result, never silently dropped: a text item naming the page in a `tools/call` result (what
//! a model and its user read), and every such request under `_meta["tool-cli/urlElicitations"]`
//! of any result (what a program reads). This module is that rewrite, pure and unit-tested.

use serde_json::{Value, json};

use crate::provider::UrlQuestion;

/// Where a result lists the URL-mode elicitations its host could not be asked about.
pub(crate) const META_KEY: &str = "tool-cli/urlElicitations";

/// `answer` (one encoded JSON-RPC response) with `urls` put in its result; unchanged when there
/// are none, or when it is an error or not a response.
pub(crate) fn with_urls(answer: String, urls: &[UrlQuestion]) -> String {
    if urls.is_empty() {
        return answer;
    }
    let Ok(mut response) = serde_json::from_str::<Value>(&answer) else {
        return answer;
    };
    let Some(result) = response.get_mut("result").and_then(Value::as_object_mut) else {
        return answer;
    };
    if let Some(content) = result.get_mut("content").and_then(Value::as_array_mut) {
        content.extend(
            urls.iter()
                .map(|question| json!({"type": "text", "text": said(question)})),
        );
    }
    let meta = result
        .entry("_meta")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    if let Some(meta) = meta {
        meta.insert(META_KEY.to_owned(), json!(urls));
    }
    response.to_string()
}

/// What the host's user reads about one page to open.
fn said(question: &UrlQuestion) -> String {
    let message = question.message.trim();
    let message = if message.is_empty() {
        String::new()
    } else {
        format!(" It says: {message}")
    };
    format!(
        "The server asked to send you to a web page, which this MCP host cannot open for you: \
         {}.{message} Open it to continue; the server was told the request was declined, so \
         ask again once you have.",
        question.url
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign_in() -> UrlQuestion {
        UrlQuestion {
            message: "Sign in to GitHub".to_owned(),
            url: "https://example.com/sign-in?state=1".to_owned(),
            elicitation_id: "e-42".to_owned(),
        }
    }

    #[test]
    fn a_tool_result_names_the_page_in_its_content_and_meta() {
        let answer = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"declined"}],"_meta":{"kept":true}}}"#;
        let rewritten: Value =
            serde_json::from_str(&with_urls(answer.to_owned(), &[sign_in()])).unwrap();
        let content = rewritten["result"]["content"].as_array().unwrap();
        assert_eq!(content.len(), 2, "the server's own content stays first");
        assert_eq!(content[0]["text"], "declined");
        let text = content[1]["text"].as_str().unwrap();
        assert!(
            text.contains("https://example.com/sign-in?state=1"),
            "{text}"
        );
        assert!(text.contains("Sign in to GitHub"), "{text}");
        assert_eq!(rewritten["result"]["_meta"]["kept"], true);
        assert_eq!(
            rewritten["result"]["_meta"][META_KEY],
            json!([{"message": "Sign in to GitHub", "url": "https://example.com/sign-in?state=1",
                    "elicitationId": "e-42"}])
        );
        assert_eq!(rewritten["id"], 3);
    }

    #[test]
    fn other_results_get_the_meta_and_errors_nothing() {
        let read = r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[]}}"#;
        let rewritten: Value =
            serde_json::from_str(&with_urls(read.to_owned(), &[sign_in()])).unwrap();
        assert_eq!(rewritten["result"]["contents"], json!([]));
        assert_eq!(
            rewritten["result"]["_meta"][META_KEY][0]["elicitationId"],
            "e-42"
        );
        let error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}"#;
        assert_eq!(with_urls(error.to_owned(), &[sign_in()]), error);
        assert_eq!(with_urls(read.to_owned(), &[]), read, "nothing to add");
        assert_eq!(with_urls("not json".to_owned(), &[sign_in()]), "not json");
    }
}
