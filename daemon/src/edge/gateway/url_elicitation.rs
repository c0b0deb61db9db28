//! URL-mode elicitation for hosts that cannot be asked about a URL. A server with
//! `"elicitation": "ask"` is told (in the handshake) that the daemon takes URL-mode elicitations:
//! the server asks to send its user to a web page (a sign-in, a payment) whose data never passes
//! through the client. A host that declared `elicitation.url` is asked as the server asked
//! (`stream.rs`). A host that declared form elicitation only cannot be asked, but its user can
//! still open the page: the server's request is declined with that reason (so the server does
//! not wait for a consent that cannot come), and the URL goes back to the host in the call's
//! result, never silently dropped: a text item naming the page in a `tools/call` result (what
//! a model and its user read), and every such request under `_meta["tool-cli/urlElicitations"]`
//! of any result (what a program reads).
//!
//! A server may also ask by error: `-32042` (`URLElicitationRequiredError`), whose
//! `data.elicitations` lists the pages to open before the request is sent again. The pool turns
//! an upstream error into an `isError` result with the error under `_meta["tool-cli/error"]`;
//! [`settle`] gives a host that declared URL mode the JSON-RPC error back, as its SDK expects,
//! and puts the pages in a form-only host's result as above. These are rewrites of a call
//! stream's answer, pure and unit-tested here.

use serde_json::{Value, json};

use crate::provider::UrlQuestion;

/// Where a result lists the URL-mode elicitations its host could not be asked about.
pub(crate) const META_KEY: &str = "tool-cli/urlElicitations";

/// MCP's `URLElicitationRequiredError` code.
const URL_ELICITATION_REQUIRED: i64 = -32042;

/// Most pages named from one `-32042` error.
const MAX_ERROR_URLS: usize = 8;

/// A call stream's `answer` settled for its host: a server's `-32042` error given back as that
/// error to a host that opens URLs (`host_opens_urls`), its pages put in the result of one that
/// does not, and the URL-mode elicitations the host could not be asked about (`shown`) put in
/// the result ([`with_urls`]).
pub(crate) fn settle(answer: String, shown: &[UrlQuestion], host_opens_urls: bool) -> String {
    let Some((id, error)) = url_elicitation_error(&answer) else {
        return with_urls(answer, shown);
    };
    if host_opens_urls {
        return json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string();
    }
    let mut urls = shown.to_vec();
    urls.extend(
        error
            .pointer("/data/elicitations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|elicitation| elicitation["mode"] == "url")
            .filter_map(|elicitation| {
                Some(UrlQuestion {
                    url: elicitation.get("url")?.as_str()?.to_owned(),
                    message: elicitation
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    elicitation_id: elicitation
                        .get("elicitationId")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                })
            })
            .take(MAX_ERROR_URLS),
    );
    with_urls(answer, &urls)
}

/// The id of `answer` and the server's `-32042` error it carries as an `isError` result (the
/// code, the message and the data, as the server sent them), if it does.
fn url_elicitation_error(answer: &str) -> Option<(Value, Value)> {
    let response: Value = serde_json::from_str(answer).ok()?;
    let error = response.pointer("/result/_meta/tool-cli~1error")?;
    if error.get("kind")? != "upstream" || error.get("code")?.as_i64()? != URL_ELICITATION_REQUIRED
    {
        return None;
    }
    let data = error
        .get("data")
        .filter(|data| data.get("elicitations").is_some())?;
    let message = error.get("message").cloned().unwrap_or_else(|| json!(""));
    let error = json!({"code": URL_ELICITATION_REQUIRED, "message": message, "data": data});
    Some((response.get("id").cloned().unwrap_or(Value::Null), error))
}

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

    /// What the pool makes of a server's `-32042` answer to a `tools/call`.
    fn required_by_error() -> String {
        json!({"jsonrpc": "2.0", "id": 5, "result": {
        "content": [{"type": "text", "text": "server \"a\" returned an error"}],
        "isError": true,
        "_meta": {"tool-cli/error": {"kind": "upstream", "server": "a", "code": -32042,
            "message": "This request requires browser-based authorization.",
            "data": {"elicitations": [
                {"mode": "url", "url": "https://example.com/auth", "message": "Authorize",
                 "elicitationId": "e-9"},
                {"mode": "form", "message": "not a page"},
            ]}}}}})
        .to_string()
    }

    #[test]
    fn a_url_required_error_goes_back_as_the_error_to_a_url_host() {
        let settled: Value = serde_json::from_str(&settle(required_by_error(), &[], true)).unwrap();
        assert_eq!(settled["id"], 5);
        assert!(settled.get("result").is_none(), "{settled}");
        assert_eq!(settled["error"]["code"], -32042);
        assert_eq!(
            settled["error"]["message"],
            "This request requires browser-based authorization."
        );
        assert_eq!(
            settled["error"]["data"]["elicitations"][0]["url"],
            "https://example.com/auth"
        );
    }

    #[test]
    fn a_url_required_error_names_its_pages_in_a_form_only_hosts_result() {
        let settled: Value =
            serde_json::from_str(&settle(required_by_error(), &[sign_in()], false)).unwrap();
        assert_eq!(settled["result"]["isError"], true, "still the error it was");
        let texts: Vec<&str> = settled["result"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|item| item["text"].as_str())
            .collect();
        assert_eq!(texts.len(), 3, "{texts:?}");
        assert!(texts[2].contains("https://example.com/auth"), "{texts:?}");
        let named = &settled["result"]["_meta"][META_KEY];
        assert_eq!(
            named.as_array().unwrap().len(),
            2,
            "a form entry is no page"
        );
        assert_eq!(named[1]["elicitationId"], "e-9");
        // Other upstream errors and plain results pass as they are.
        let other = required_by_error().replace("-32042", "-32000");
        assert_eq!(settle(other.clone(), &[], true), other);
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
