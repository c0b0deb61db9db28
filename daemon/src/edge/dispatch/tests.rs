//! The dispatch's answers, byte for byte as jsonrpsee's server (behind our shape layer) gave them
//! before the dispatch replaced both: each body below was sent through that stack once and its
//! status, content type and body recorded here. Then the HTTP-level refusals of a body.

use std::sync::atomic::{AtomicUsize, Ordering};

use http_body_util::BodyExt as _;
use hyper::header;

use super::*;
use crate::edge::shape::BatchLen;

fn cases() -> Vec<(&'static str, Vec<u8>)> {
    let big: String = format!(
        "[{}]",
        vec![r#"{"jsonrpc":"2.0","id":1,"method":"echo"}"#; 101].join(",")
    );
    let spaces = format!(
        "{}{}",
        " ".repeat(200),
        r#"{"jsonrpc":"2.0","id":1,"method":"echo"}"#
    );
    vec![
        ("echo", br#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":[1,2]}}"#.to_vec()),
        ("echo_str_id", br#"{"jsonrpc":"2.0","id":"x-1","method":"echo","params":[1]}"#.to_vec()),
        ("echo_no_params", br#"{"jsonrpc":"2.0","id":2,"method":"echo"}"#.to_vec()),
        ("echo_null_id", br#"{"jsonrpc":"2.0","id":null,"method":"echo"}"#.to_vec()),
        ("echo_max_id", br#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"echo"}"#.to_vec()),
        ("echo_ws", b" \n\t{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"echo\"} \n".to_vec()),
        ("echo_extra", br#"{"jsonrpc":"2.0","id":4,"method":"echo","extra":true}"#.to_vec()),
        ("echo_escaped_id", br#"{"jsonrpc":"2.0","id":"a\"b\u00e9","method":"echo"}"#.to_vec()),
        ("fail", br#"{"jsonrpc":"2.0","id":5,"method":"fail"}"#.to_vec()),
        ("batch_len", br#"{"jsonrpc":"2.0","id":6,"method":"batch_len"}"#.to_vec()),
        ("unknown", br#"{"jsonrpc":"2.0","id":7,"method":"nope"}"#.to_vec()),
        ("panic", br#"{"jsonrpc":"2.0","id":"p","method":"panic"}"#.to_vec()),
        ("notification", br#"{"jsonrpc":"2.0","method":"echo"}"#.to_vec()),
        ("notification_params", br#"{"jsonrpc":"2.0","method":"panic","params":{}}"#.to_vec()),
        ("not_request_obj", br#"{"hello":"world"}"#.to_vec()),
        ("number", b"42".to_vec()),
        ("string", br#""text""#.to_vec()),
        ("null", b"null".to_vec()),
        ("jsonrpc_1", br#"{"jsonrpc":"1.0","id":1,"method":"echo"}"#.to_vec()),
        ("no_jsonrpc", br#"{"id":1,"method":"echo"}"#.to_vec()),
        ("method_number", br#"{"jsonrpc":"2.0","id":1,"method":7}"#.to_vec()),
        ("only_id", br#"{"id":1}"#.to_vec()),
        ("id_float", br#"{"jsonrpc":"2.0","id":1.5,"method":"echo"}"#.to_vec()),
        ("id_neg", br#"{"jsonrpc":"2.0","id":-1,"method":"echo"}"#.to_vec()),
        ("id_object", br#"{"jsonrpc":"2.0","id":{"a":1},"method":"echo"}"#.to_vec()),
        ("id_surrogate", br#"{"jsonrpc":"2.0","id":"\ud800","method":"echo"}"#.to_vec()),
        ("dup_id", br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"echo"}"#.to_vec()),
        ("dup_params", br#"{"jsonrpc":"2.0","id":1,"method":"echo","params":1,"params":2}"#.to_vec()),
        ("params_number", br#"{"jsonrpc":"2.0","id":1,"method":"echo","params":5}"#.to_vec()),
        ("truncated", br#"{"jsonrpc":"2.0","id":1,"#.to_vec()),
        ("not_json", b"not json".to_vec()),
        ("empty", b"".to_vec()),
        ("whitespace", b"   ".to_vec()),
        ("trailing", br#"{"jsonrpc":"2.0","id":1,"method":"echo"} x"#.to_vec()),
        ("two_objects", br#"{"jsonrpc":"2.0","id":1,"method":"echo"}{"a":1}"#.to_vec()),
        ("not_utf8", b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}".to_vec()),
        ("lots_of_space", spaces.into_bytes()),
        ("empty_batch", b"[]".to_vec()),
        ("broken_batch", b"[1, 2".to_vec()),
        ("batch_mixed", br#"[{"jsonrpc":"2.0","id":1,"method":"nope"},{"jsonrpc":"2.0","method":"n"},42,[],[1],{"id":7},{"jsonrpc":"2.0","id":2,"method":"echo","params":{}},{"jsonrpc":"2.0","id":3,"method":"batch_len"},{"jsonrpc":"2.0","id":4,"method":"fail"},{"hello":1},{"jsonrpc":"2.0","id":"\ud800","method":"echo"},{"jsonrpc":"2.0","id":5,"method":"panic"}]"#.to_vec()),
        ("batch_notifications", br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]"#.to_vec()),
        ("batch_notification_and_invalid", br#"[{"jsonrpc":"2.0","method":"a"}, 5]"#.to_vec()),
        ("batch_one", br#" [ {"jsonrpc":"2.0","id":9,"method":"echo","params":[true]} ] "#.to_vec()),
        ("batch_too_large", big.into_bytes()),
        ("nested_array", b"[[]]".to_vec()),
    ]
}

/// What jsonrpsee's server and our shape layer answered each body of [`cases`]: status, content
/// type, body.
fn answers_before() -> Vec<(&'static str, u16, Option<&'static str>, &'static str)> {
    vec![
        (
            "echo",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":[1,2]}}"#,
        ),
        (
            "echo_str_id",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":"x-1","result":[1]}"#,
        ),
        (
            "echo_no_params",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":2,"result":null}"#,
        ),
        (
            "echo_null_id",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":null,"result":null}"#,
        ),
        (
            "echo_max_id",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":null}"#,
        ),
        (
            "echo_ws",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":3,"result":null}"#,
        ),
        (
            "echo_extra",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":4,"result":null}"#,
        ),
        (
            "echo_escaped_id",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":"a\"bé","result":null}"#,
        ),
        (
            "fail",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32001,"message":"it failed","data":{"kind":"x","why":"\"quoted\""}}}"#,
        ),
        (
            "batch_len",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":6,"result":null}"#,
        ),
        (
            "unknown",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}"#,
        ),
        (
            "panic",
            200,
            Some("application/json"),
            r#"{"jsonrpc":"2.0","id":"p","error":{"code":-32603,"message":"Internal error: the daemon failed while handling this request; see its log","data":{"kind":"internal","message":"handler panicked"}}}"#,
        ),
        ("notification", 204, None, r#""#),
        ("notification_params", 204, None, r#""#),
        (
            "not_request_obj",
            200,
            Some("application/json"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ...} or a batch of them"}}"#,
        ),
        (
            "number",
            200,
            Some("application/json"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ...} or a batch of them"}}"#,
        ),
        (
            "string",
            200,
            Some("application/json"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ...} or a batch of them"}}"#,
        ),
        (
            "null",
            200,
            Some("application/json"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ...} or a batch of them"}}"#,
        ),
        (
            "jsonrpc_1",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request"}}"#,
        ),
        (
            "no_jsonrpc",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request"}}"#,
        ),
        (
            "method_number",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request"}}"#,
        ),
        (
            "only_id",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request"}}"#,
        ),
        (
            "id_float",
            200,
            Some("application/json"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ...} or a batch of them"}}"#,
        ),
        (
            "id_neg",
            200,
            Some("application/json"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ...} or a batch of them"}}"#,
        ),
        (
            "id_object",
            200,
            Some("application/json"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ...} or a batch of them"}}"#,
        ),
        (
            "id_surrogate",
            200,
            Some("application/json"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ...} or a batch of them"}}"#,
        ),
        (
            "dup_id",
            200,
            Some("application/json"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ...} or a batch of them"}}"#,
        ),
        (
            "dup_params",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request"}}"#,
        ),
        (
            "params_number",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":1,"result":5}"#,
        ),
        (
            "truncated",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        ),
        (
            "not_json",
            400,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        ),
        (
            "empty",
            400,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        ),
        (
            "whitespace",
            400,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        ),
        (
            "trailing",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        ),
        (
            "two_objects",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        ),
        (
            "not_utf8",
            200,
            Some("application/json"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the body is not UTF-8, so it is not JSON"}}"#,
        ),
        (
            "lots_of_space",
            400,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        ),
        (
            "empty_batch",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}}"#,
        ),
        (
            "broken_batch",
            200,
            Some("application/json; charset=utf-8"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        ),
        (
            "batch_mixed",
            200,
            Some("application/json"),
            r#"[{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ...} or a batch of them"}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ...} or a batch of them"}},{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid request"}},{"jsonrpc":"2.0","id":2,"result":{}},{"jsonrpc":"2.0","id":3,"result":12},{"jsonrpc":"2.0","id":4,"error":{"code":-32001,"message":"it failed","data":{"kind":"x","why":"\"quoted\""}}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ...} or a batch of them"}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ...} or a batch of them"}},{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"Internal error: the daemon failed while handling this request; see its log","data":{"kind":"internal","message":"handler panicked"}}}]"#,
        ),
        ("batch_notifications", 204, None, r#""#),
        (
            "batch_notification_and_invalid",
            200,
            Some("application/json"),
            r#"[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: expected a JSON-RPC 2.0 request object {\"jsonrpc\": \"2.0\", \"id\": ..., \"method\": ...} or a batch of them"}}]"#,
        ),
        (
            "batch_one",
            200,
            Some("application/json"),
            r#"[{"jsonrpc":"2.0","id":9,"result":[true]}]"#,
        ),
        (
            "batch_too_large",
            200,
            Some("application/json"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: this batch holds 101 requests, and a batch holds at most 100; none of it ran: send it as several batches of at most 100"}}"#,
        ),
        (
            "nested_array",
            200,
            Some("application/json"),
            r#"[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}}]"#,
        ),
    ]
}

fn module() -> jsonrpsee::RpcModule<()> {
    let mut module = jsonrpsee::RpcModule::new(());
    module
        .register_async_method("echo", |params, _, _| async move {
            let raw: Box<serde_json::value::RawValue> = serde_json::value::RawValue::from_string(
                params.as_str().unwrap_or("null").to_owned(),
            )
            .unwrap();
            Ok::<_, jsonrpsee::types::ErrorObjectOwned>(raw)
        })
        .unwrap();
    module
        .register_async_method("fail", |_, _, _| async move {
            Err::<(), _>(jsonrpsee::types::ErrorObjectOwned::owned(
                -32001,
                "it failed",
                Some(serde_json::json!({"kind":"x","why":"\"quoted\""})),
            ))
        })
        .unwrap();
    module
        .register_async_method("batch_len", |_, _, extensions| async move {
            Ok::<_, jsonrpsee::types::ErrorObjectOwned>(
                extensions.get::<BatchLen>().map(|len| len.0),
            )
        })
        .unwrap();
    module
        .register_async_method("panic", |_, _, _| async move {
            if true {
                panic!("test panic");
            }
            Ok::<(), jsonrpsee::types::ErrorObjectOwned>(())
        })
        .unwrap();
    module
}

async fn answer_of(table: &MethodTable, body: Vec<u8>) -> (u16, Option<String>, String) {
    let response = table
        .answer(
            Bytes::from(body),
            jsonrpsee::Extensions::new(),
            ConnectionId(1),
        )
        .await;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|value| value.to_str().unwrap().to_owned());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        content_type,
        String::from_utf8(bytes.to_vec()).unwrap(),
    )
}

#[tokio::test]
async fn every_body_gets_the_answer_jsonrpsee_s_server_gave_it() {
    let table = MethodTable::new(module());
    let expected = answers_before();
    let cases = cases();
    assert_eq!(cases.len(), expected.len());
    for ((name, body), (expected_name, status, content_type, answer)) in
        cases.into_iter().zip(expected)
    {
        assert_eq!(name, expected_name);
        let got = answer_of(&table, body).await;
        assert_eq!(
            got,
            (status, content_type.map(str::to_owned), answer.to_owned()),
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_notification_is_never_run_alone_or_in_a_batch() {
    let runs = std::sync::Arc::new(AtomicUsize::new(0));
    let mut module = jsonrpsee::RpcModule::new(());
    let counted = std::sync::Arc::clone(&runs);
    module
        .register_async_method("count", move |_, _, _| {
            let counted = std::sync::Arc::clone(&counted);
            async move {
                Ok::<_, jsonrpsee::types::ErrorObjectOwned>(counted.fetch_add(1, Ordering::SeqCst))
            }
        })
        .unwrap();
    let table = MethodTable::new(module);
    let notification = br#"{"jsonrpc":"2.0","method":"count"}"#.to_vec();
    assert_eq!(answer_of(&table, notification).await.0, 204);
    let batch =
        br#"[{"jsonrpc":"2.0","method":"count"},{"jsonrpc":"2.0","id":1,"method":"count"}]"#;
    let (status, _, answer) = answer_of(&table, batch.to_vec()).await;
    assert_eq!(
        (status, answer.as_str()),
        (200, r#"[{"jsonrpc":"2.0","id":1,"result":0}]"#)
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "only the request ran");
}

#[tokio::test]
async fn a_batch_s_entries_run_at_once_and_answer_in_request_order() {
    let mut module = jsonrpsee::RpcModule::new(());
    // `wait` ends only once `release` has run: one after the other, the batch never ends.
    let released = std::sync::Arc::new(tokio::sync::Notify::new());
    let waiter = std::sync::Arc::clone(&released);
    module
        .register_async_method("wait", move |_, _, _| {
            let waiter = std::sync::Arc::clone(&waiter);
            async move {
                waiter.notified().await;
                Ok::<_, jsonrpsee::types::ErrorObjectOwned>("waited")
            }
        })
        .unwrap();
    let releaser = std::sync::Arc::clone(&released);
    module
        .register_async_method("release", move |_, _, _| {
            let releaser = std::sync::Arc::clone(&releaser);
            async move {
                releaser.notify_one();
                Ok::<_, jsonrpsee::types::ErrorObjectOwned>("released")
            }
        })
        .unwrap();
    let table = MethodTable::new(module);
    let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"wait"},{"jsonrpc":"2.0","id":2,"method":"release"}]"#;
    let (status, _, answer) = answer_of(&table, batch.to_vec()).await;
    assert_eq!(status, 200);
    assert_eq!(
        answer,
        r#"[{"jsonrpc":"2.0","id":1,"result":"waited"},{"jsonrpc":"2.0","id":2,"result":"released"}]"#
    );
}

#[tokio::test]
async fn methods_see_the_request_s_extensions_and_a_batch_s_length() {
    let mut module = jsonrpsee::RpcModule::new(());
    module
        .register_async_method("who", |_, _, extensions| async move {
            Ok::<_, jsonrpsee::types::ErrorObjectOwned>((
                extensions.get::<&'static str>().copied(),
                extensions.get::<BatchLen>().map(|len| len.0),
            ))
        })
        .unwrap();
    let table = MethodTable::new(module);
    let mut extensions = jsonrpsee::Extensions::new();
    extensions.insert("the grant");
    let single = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"who"}"#);
    let response = table
        .answer(single, extensions.clone(), ConnectionId(1))
        .await;
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        bytes,
        r#"{"jsonrpc":"2.0","id":1,"result":["the grant",null]}"#
    );
    let batch = Bytes::from_static(
        br#"[{"jsonrpc":"2.0","id":1,"method":"who"},{"jsonrpc":"2.0","id":2,"method":"who"}]"#,
    );
    let response = table.answer(batch, extensions, ConnectionId(1)).await;
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        bytes,
        r#"[{"jsonrpc":"2.0","id":1,"result":["the grant",2]},{"jsonrpc":"2.0","id":2,"result":["the grant",2]}]"#
    );
}

#[tokio::test]
async fn a_body_over_the_cap_is_413_and_one_within_it_is_read_whole() {
    let within = http_body_util::Full::new(Bytes::from(vec![b' '; 1024]));
    assert_eq!(read_body(within, 1024).await.unwrap().len(), 1024);
    let over = http_body_util::Full::new(Bytes::from(vec![b' '; 1025]));
    let refusal = read_body(over, 1024).await.unwrap_err();
    assert_eq!(refusal.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(refusal.headers()[header::CONNECTION], "close");
    let bytes = refusal.into_body().collect().await.unwrap().to_bytes();
    let answer: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(answer["error"]["code"], -32600);
}

#[tokio::test(start_paused = true)]
async fn a_body_that_never_finishes_arriving_is_408_and_closes_the_connection() {
    // One byte, then nothing ever again (paused time runs the clock forward).
    let first = futures_util::stream::once(async {
        Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(Bytes::from_static(b"{")))
    });
    let trickle = futures_util::StreamExt::chain(first, futures_util::stream::pending());
    let refusal = read_body(http_body_util::StreamBody::new(trickle), 1024)
        .await
        .unwrap_err();
    assert_eq!(refusal.status(), StatusCode::REQUEST_TIMEOUT);
    assert_eq!(refusal.headers()[header::CONNECTION], "close");
    let bytes = refusal.into_body().collect().await.unwrap().to_bytes();
    assert!(bytes.is_empty(), "a refusal has an empty body");
}
