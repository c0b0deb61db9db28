//! The gate's decisions from a request head: methods, hosts, origins, paths and tokens.

use super::*;
use crate::auth::Token;

fn gate() -> Gate {
    Gate {
        tokens: Arc::new(TokenStore::new(Token::from_text(&"ab".repeat(32)).unwrap())),
        hosts: Gate::hosts(4000, &["host.docker.internal".to_owned()]),
        origins: vec!["http://allowed.example".to_owned()],
        own_origins: Gate::own_origins(4000),
        max_body_bytes: 1024,
        metrics: MetricsPage(Arc::new(|_: &Grant| String::new())),
        mcp: None,
    }
}

fn head(method: &str, uri: &str, headers: &[(&str, &str)]) -> (Method, hyper::Uri, HeaderMap) {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.append(
            header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    (method.parse().unwrap(), uri.parse().unwrap(), map)
}

fn verdict(method: &str, uri: &str, headers: &[(&str, &str)]) -> u16 {
    let (method, uri, headers) = head(method, uri, headers);
    match gate().check(&method, &uri, &headers) {
        Ok(Pass::Rpc(_)) => 200,
        Ok(Pass::Identity) => 0,
        Ok(Pass::Metrics(_)) => 1,
        Ok(Pass::Mcp(_)) => 2,
        Err(code) => refusal(code).status().as_u16(),
    }
}

const BEARER: &str = "Bearer abababababababababababababababababababababababababababababababab";

#[test]
fn each_rule_has_its_status() {
    let ok = [
        ("host", "127.0.0.1:4000"),
        ("content-type", "application/json"),
        ("authorization", BEARER),
    ];
    assert_eq!(verdict("POST", "/", &ok), 200);
    assert_eq!(verdict("GET", "/", &ok), 405);
    // The metrics page: GET only, same host, origin, query and token rules, owner only.
    assert_eq!(verdict("GET", "/metrics", &ok), 1);
    assert_eq!(verdict("POST", "/metrics", &ok), 405);
    assert_eq!(verdict("GET", "/metrics", &ok[..2]), 401);
    assert_eq!(verdict("GET", "/metrics?x=1", &ok), 400);
    assert_eq!(
        verdict(
            "GET",
            "/metrics",
            &[ok[1], ok[2], ("host", "evil.example:4000")]
        ),
        403
    );
    assert_eq!(verdict("OPTIONS", "/", &ok), 405);
    for host in [
        "evil.example",
        "localhost.evil.example",
        "127.0.0.1:4001",
        "127.0.0.1",
        "host.docker.internal",
        "host.docker.internal:4001",
    ] {
        let headers = [ok[1], ok[2], ("host", host)];
        assert_eq!(verdict("POST", "/", &headers), 403, "{host}");
    }
    assert_eq!(verdict("POST", "/", &ok[1..]), 403, "missing host");
    assert_eq!(
        verdict("POST", "/", &[ok[0], ok[0], ok[1], ok[2]]),
        403,
        "two hosts"
    );
    for host in ["LOCALHOST:4000", "[::1]:4000", "Host.Docker.Internal:4000"] {
        assert_eq!(verdict("POST", "/", &[("host", host), ok[1], ok[2]]), 200);
    }
    // An absolute-form target names the host it is for: it must be us, like `Host`.
    for target in [
        "http://evil.example/",
        "http://127.0.0.1:4001/",
        "http://user@127.0.0.1:4000/",
    ] {
        assert_eq!(verdict("POST", target, &ok), 403, "{target}");
    }
    assert_eq!(verdict("POST", "http://127.0.0.1:4000/", &ok), 200);
    for origin in ["http://evil.example", "null", "http://localhost:4001"] {
        let headers = [ok[0], ok[1], ok[2], ("origin", origin)];
        assert_eq!(verdict("POST", "/", &headers), 403, "{origin}");
    }
    let allowed = [ok[0], ok[1], ok[2], ("origin", "http://allowed.example")];
    assert_eq!(verdict("POST", "/", &allowed), 200);
    for coding in ["gzip, chunked", "gzip", "chunked, chunked", "identity"] {
        let headers = [ok[0], ok[1], ok[2], ("transfer-encoding", coding)];
        assert_eq!(verdict("POST", "/", &headers), 501, "{coding}");
    }
    let chunked = [ok[0], ok[1], ok[2], ("transfer-encoding", "Chunked")];
    assert_eq!(verdict("POST", "/", &chunked), 200);
    assert_eq!(verdict("POST", "/?token=x", &ok), 400);
    assert_eq!(verdict("POST", "/other", &ok), 404);
    // Any content type, or none: the body decides.
    for content_type in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/json; charset=utf-16",
    ] {
        let headers = [ok[0], ("content-type", content_type), ok[2]];
        assert_eq!(verdict("POST", "/", &headers), 200, "{content_type}");
    }
    assert_eq!(verdict("POST", "/", &[ok[0], ok[2]]), 200);
    assert_eq!(verdict("POST", "/", &ok[..2]), 401);
    assert_eq!(verdict("POST", "/", &[ok[0], ok[1], ok[2], ok[2]]), 401);
    assert_eq!(
        verdict(
            "POST",
            "/",
            &[ok[0], ok[1], ok[2], ("content-length", "2048")]
        ),
        413
    );
    assert_eq!(verdict("POST", "/identity", &[ok[0], ok[1]]), 0);
    assert_eq!(verdict("POST", "/identity", &[ok[0]]), 0);
}

#[test]
fn identity_proves_the_token_for_the_host_dialed() {
    let gate = gate();
    let token = gate.tokens.owner().clone();
    let nonce = "1".repeat(64);
    let (_, _, headers) = head(
        "POST",
        "/identity",
        &[
            ("host", "127.0.0.1:4000"),
            (identity::NONCE_HEADER, &nonce),
            (identity::TOKEN_ID_HEADER, &token.id()),
        ],
    );
    let response = gate.identity(&headers);
    assert_eq!(response.status(), StatusCode::OK);

    let (_, _, headers) = head(
        "POST",
        "/identity",
        &[
            ("host", "127.0.0.1:4000"),
            (identity::NONCE_HEADER, &nonce),
            (identity::TOKEN_ID_HEADER, "0000000000000000"),
        ],
    );
    let unknown = gate.identity(&headers);
    assert_eq!(unknown.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        unknown.headers().get(header::CONTENT_TYPE).unwrap(),
        "application/json"
    );
    let (_, _, headers) = head(
        "POST",
        "/identity",
        &[
            (identity::NONCE_HEADER, "short"),
            (identity::TOKEN_ID_HEADER, &token.id()),
        ],
    );
    assert_eq!(gate.identity(&headers).status(), StatusCode::BAD_REQUEST);
}

#[test]
fn the_daemons_own_origin_is_accepted_at_the_mcp_gateway_only() {
    let mut gate = gate();
    gate.mcp = None;
    let own = [
        ("host", "127.0.0.1:4000"),
        ("authorization", BEARER),
        ("origin", "http://localhost:4000"),
    ];
    let (method, uri, headers) = head("POST", "/", &own);
    assert_eq!(
        gate.check(&method, &uri, &headers).unwrap_err(),
        StatusCode::FORBIDDEN
    );
    let neighbour = [own[0], own[1], ("origin", "http://localhost:4001")];
    let (method, uri, headers) = head("POST", "/", &neighbour);
    assert_eq!(
        gate.check(&method, &uri, &headers).unwrap_err(),
        StatusCode::FORBIDDEN
    );
}

#[test]
fn an_admitted_request_carries_its_grant_and_a_refused_one_is_answered() {
    let request = |headers: &[(&str, &str)]| {
        let mut request = Request::post("/");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request
            .body(http_body_util::Empty::<hyper::body::Bytes>::new())
            .unwrap()
    };
    let host = ("host", "127.0.0.1:4000");
    match gate().admit(request(&[host, ("authorization", BEARER)])) {
        Admission::Rpc(request) => {
            assert!(request.extensions().get::<Grant>().unwrap().is_owner);
        }
        _ => panic!("a request with the owner token is passed on"),
    }
    match gate().admit(request(&[host])) {
        Admission::Answered(response) => assert_eq!(response.status(), StatusCode::UNAUTHORIZED),
        _ => panic!("a request without a token is refused"),
    }
}
