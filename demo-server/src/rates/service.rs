//! The small rates service the demo server runs for itself on `127.0.0.1:0` when no rates URL is
//! configured, so `rest_exchange_rate` works offline and gives the same numbers everywhere.
//!
//! It answers the same API and JSON shape as Frankfurter v1 (`GET /latest` or
//! `GET /YYYY-MM-DD`, with `base` and `symbols`), so the tool's client cannot tell it from the
//! real thing and has no special case for it. The table is fixed and documented in
//! `demo://docs/currency-notes` and `docs/toolkit.md`: units of each currency per 1 EUR, the ECB
//! convention; a cross rate is quote / base rounded to 6 decimal places. Routing is a pure
//! function ([`respond`]); the hyper server around it only moves bytes.

use std::{convert::Infallible, net::SocketAddr};

use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode, body::Bytes, header, service::service_fn};
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value, json};
use tokio::{net::TcpListener, task::JoinHandle};

use super::endpoint::is_calendar_date;

/// Units of each currency per 1 EUR.
pub(crate) const RATE_TABLE: [(&str, f64); 10] = [
    ("EUR", 1.0),
    ("USD", 1.08),
    ("GBP", 0.85),
    ("JPY", 160.0),
    ("CHF", 0.95),
    ("CAD", 1.47),
    ("AUD", 1.62),
    ("SEK", 11.5),
    ("INR", 90.0),
    ("BRL", 5.9),
];

/// The date `latest` answers: the last day of the sample order history.
pub(crate) const LATEST_DATE: &str = "2025-06-30";

fn per_euro(code: &str) -> Option<f64> {
    RATE_TABLE
        .iter()
        .find(|(known, _)| *known == code)
        .map(|(_, rate)| *rate)
}

/// The cross rate from `base` to `quote`, rounded to 6 decimal places.
pub(crate) fn cross_rate(base: &str, quote: &str) -> Option<f64> {
    let rate = per_euro(quote)? / per_euro(base)?;
    Some((rate * 1e6).round() / 1e6)
}

/// Answers `GET path?query` with a status and a JSON body.
pub(crate) fn respond(path: &str, query: Option<&str>) -> (StatusCode, Value) {
    let not_found = || (StatusCode::NOT_FOUND, json!({"message": "not found"}));
    let date = match path.trim_end_matches('/') {
        "/latest" => LATEST_DATE,
        day if day.len() == 11 && is_calendar_date(&day[1..]) => &day[1..],
        _ => return not_found(),
    };
    let parameter = |name: &str| {
        query?
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.to_ascii_uppercase())
    };
    let base = parameter("base").unwrap_or_else(|| "EUR".to_owned());
    if per_euro(&base).is_none() {
        return not_found();
    }
    let symbols: Vec<String> = match parameter("symbols") {
        Some(list) => list.split(',').map(str::to_owned).collect(),
        None => RATE_TABLE
            .iter()
            .map(|(code, _)| (*code).to_owned())
            .filter(|code| *code != base)
            .collect(),
    };
    let mut rates = Map::new();
    for symbol in symbols {
        match cross_rate(&base, &symbol) {
            Some(rate) => {
                rates.insert(symbol, json!(rate));
            }
            None => return not_found(),
        }
    }
    (
        StatusCode::OK,
        json!({"amount": 1.0, "base": base, "date": date, "rates": rates}),
    )
}

/// The running service; dropping it stops accepting and ends every connection task.
#[derive(Debug)]
pub(crate) struct LocalRatesService {
    pub(crate) address: SocketAddr,
    task: JoinHandle<()>,
}

impl LocalRatesService {
    /// Binds `127.0.0.1:0` and serves until dropped.
    pub(crate) async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let address = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    // Out of descriptors, say: back off a little rather than spin.
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                };
                connections.spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service_fn(handle))
                        .await;
                });
                // Reap finished connections so the set stays small.
                while connections.try_join_next().is_some() {}
            }
        });
        Ok(Self { address, task })
    }

    /// The base URL to give the client.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.address)
    }
}

impl Drop for LocalRatesService {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every connection task.
        self.task.abort();
    }
}

async fn handle(
    request: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, body) = if request.method() == Method::GET {
        respond(request.uri().path(), request.uri().query())
    } else {
        (
            StatusCode::METHOD_NOT_ALLOWED,
            json!({"message": "only GET is supported"}),
        )
    };
    let response = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a response with valid headers");
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_cross_rates() {
        assert_eq!(cross_rate("USD", "EUR"), Some(0.925926));
        assert_eq!(cross_rate("EUR", "USD"), Some(1.08));
        assert_eq!(cross_rate("USD", "GBP"), Some(0.787037));
        assert_eq!(cross_rate("USD", "JPY"), Some(148.148148));
        assert_eq!(cross_rate("USD", "XYZ"), None);
    }

    #[test]
    fn routes() {
        let (status, body) = respond("/latest", Some("base=usd&symbols=EUR,GBP"));
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            body,
            json!({"amount": 1.0, "base": "USD", "date": LATEST_DATE,
                   "rates": {"EUR": 0.925926, "GBP": 0.787037}})
        );
        let (status, body) = respond("/2024-02-29", None);
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body["base"], "EUR");
        assert_eq!(body["date"], "2024-02-29");
        assert_eq!(
            body["rates"].as_object().unwrap().len(),
            RATE_TABLE.len() - 1
        );
        for (path, query) in [
            ("/latest", Some("base=XYZ")),
            ("/latest", Some("symbols=EUR,XYZ")),
            ("/2023-02-29", None),
            ("/", None),
            ("/rates", None),
        ] {
            let (status, body) = respond(path, query);
            assert_eq!(status, StatusCode::NOT_FOUND, "{path} {query:?}");
            assert_eq!(body, json!({"message": "not found"}));
        }
    }
}
