//! `rest_exchange_rate`: an exchange rate fetched over HTTP from a REST service.
//!
//! The base URL is configurable (`--rates-url` / `DEMO_RATES_URL`); without one, the demo server
//! starts its own fixed-table service (`service.rs`) on loopback and points the client at it, so
//! the tool is offline and deterministic by default and a public API such as
//! `https://api.frankfurter.dev/v1` works unchanged. The parts: `endpoint` (checking the URL and
//! the arguments, building the request), `transport` (one hyper GET over TCP or rustls),
//! `answer` (status and JSON to a rate or an error), `service` (the local service). Every remote
//! failure is a [`RatesError`] whose message says what went wrong and what to try; the MCP layer
//! turns it into a tool result with `isError: true`.

mod answer;
mod endpoint;
pub(crate) mod service;
mod transport;

use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Serialize;

pub(crate) use endpoint::{Endpoint, RateRequest};

/// How long one lookup may take, connection and TLS handshake included.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a rate could not be given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RatesError {
    #[error(
        "the rates URL {url:?} is not usable: {reason}; give an http:// or https:// base URL such as https://api.frankfurter.dev/v1"
    )]
    BadUrl { url: String, reason: String },
    #[error("{0}")]
    BadArgument(String),
    #[error(
        "cannot reach the rates service at {url}: {reason}; check that it is running and that the rates URL is right"
    )]
    Unreachable { url: String, reason: String },
    #[error("the rates service at {url} did not answer within {waited}; try again later")]
    TimedOut { url: String, waited: String },
    #[error(
        "the rates service has no rate from {base} to {quote} for {date} (HTTP {status}: {message}); check that both are ISO 4217 codes it knows and that the date is a business day"
    )]
    NotFound {
        base: String,
        quote: String,
        date: String,
        status: u16,
        message: String,
    },
    #[error("the rates service refused the request (HTTP {status}: {message})")]
    Refused { status: u16, message: String },
    #[error("the rates service failed (HTTP {status}: {message}); try again later")]
    ServerFailed { status: u16, message: String },
    #[error(
        "the rates service redirected (HTTP {status}) to {location}; set the rates URL to the new address"
    )]
    Redirected { status: u16, location: String },
    #[error(
        "the rates service's answer is not the expected JSON ({{\"base\", \"date\", \"rates\": {{CODE: rate}}}}): {0}"
    )]
    BadAnswer(String),
}

/// The structured result of `rest_exchange_rate`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct ExchangeRate {
    /// The currency converted from (ISO 4217, upper case).
    pub(crate) base: String,
    /// The currency converted to (ISO 4217, upper case).
    pub(crate) quote: String,
    /// The day the rate is for, as the service reported it (YYYY-MM-DD).
    pub(crate) date: String,
    /// Units of quote per one unit of base.
    pub(crate) rate: f64,
    /// The amount converted (1 unless given).
    pub(crate) amount: f64,
    /// amount × rate, rounded to 6 decimal places.
    pub(crate) converted: f64,
    /// The rates service asked (its base URL without any query string).
    pub(crate) source: String,
}

/// The client: a checked base URL and a time limit.
#[derive(Debug, Clone)]
pub(crate) struct RatesClient {
    endpoint: Endpoint,
    timeout: Duration,
}

impl RatesClient {
    pub(crate) fn new(url: &str, timeout: Duration) -> Result<Self, RatesError> {
        Ok(Self {
            endpoint: Endpoint::parse(url)?,
            timeout,
        })
    }

    /// The base URL, safe to show.
    pub(crate) fn source(&self) -> String {
        self.endpoint.display()
    }

    /// Looks one rate up.
    pub(crate) async fn rate(&self, request: &RateRequest) -> Result<ExchangeRate, RatesError> {
        let target = self.endpoint.target(request);
        let started = Instant::now();
        let answer = tokio::time::timeout(self.timeout, transport::get(&self.endpoint, &target))
            .await
            .map_err(|_| RatesError::TimedOut {
                url: self.source(),
                waited: if self.timeout.subsec_millis() == 0 {
                    format!("{} s", self.timeout.as_secs())
                } else {
                    format!("{} ms", self.timeout.as_millis())
                },
            })?
            .map_err(|error| RatesError::Unreachable {
                url: self.source(),
                reason: error.to_string(),
            })?;
        tracing::debug!(
            tool = "rest_exchange_rate",
            status = answer.status,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "rates service answered"
        );
        let quote = answer::read_answer(
            answer.status,
            answer.location.as_deref(),
            &answer.body,
            request,
        )?;
        Ok(ExchangeRate {
            base: request.base.clone(),
            quote: request.quote.clone(),
            date: quote.date,
            rate: quote.rate,
            amount: request.amount,
            converted: ((request.amount * quote.rate) * 1e6).round() / 1e6,
            source: self.source(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_client_reads_the_local_service() {
        let service = service::LocalRatesService::start().await.unwrap();
        let client = RatesClient::new(&service.url(), DEFAULT_TIMEOUT).unwrap();
        let request = RateRequest::new("USD", "EUR", None, Some(250.0)).unwrap();
        let rate = client.rate(&request).await.unwrap();
        assert_eq!(
            rate,
            ExchangeRate {
                base: "USD".into(),
                quote: "EUR".into(),
                date: service::LATEST_DATE.into(),
                rate: 0.925926,
                amount: 250.0,
                converted: 231.4815,
                source: service.url(),
            }
        );
        let unknown = RateRequest::new("USD", "XYZ", Some("2024-01-02"), None).unwrap();
        let error = client.rate(&unknown).await.unwrap_err();
        assert!(
            matches!(&error, RatesError::NotFound { status: 404, .. }),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_service_that_is_down_is_a_clear_error() {
        // Bind and release a port so nothing listens on it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let client =
            RatesClient::new(&format!("http://127.0.0.1:{port}"), DEFAULT_TIMEOUT).unwrap();
        let request = RateRequest::new("USD", "EUR", None, None).unwrap();
        let error = client.rate(&request).await.unwrap_err();
        assert!(
            error.to_string().starts_with(&format!(
                "cannot reach the rates service at http://127.0.0.1:{port}: cannot connect:"
            )),
            "{error}"
        );
    }
}
