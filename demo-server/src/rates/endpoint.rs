//! The pure half of the rates client: checking the configured base URL and the tool's arguments,
//! and building the request target, with no I/O so every rule is unit-tested.
//!
//! The request follows the shape most public exchange-rate APIs share (Frankfurter's v1, and the
//! Fixer-style APIs): `GET {base URL}/{YYYY-MM-DD | latest}?base=USD&symbols=EUR`. A query string
//! in the base URL (an API key, say) is kept and the two parameters are appended to it.

use hyper::Uri;

use super::RatesError;

/// Where the rates service lives, checked once at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub(crate) tls: bool,
    /// The host name or address, without IPv6 brackets.
    pub(crate) host: String,
    pub(crate) port: u16,
    /// `host` or `host:port` as written, for the `Host` header.
    pub(crate) authority: String,
    /// The path prefix without a trailing slash (`""` or `/v1`).
    path: String,
    /// The base URL's own query, kept in front of ours.
    query: Option<String>,
}

impl Endpoint {
    /// Parses a base URL such as `http://127.0.0.1:8080` or `https://api.frankfurter.dev/v1`.
    pub(crate) fn parse(url: &str) -> Result<Self, RatesError> {
        let bad = |reason: &str| RatesError::BadUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let uri: Uri = url
            .parse()
            .map_err(|_| bad("it is not a valid absolute URL"))?;
        let tls = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(bad("the scheme must be http or https")),
        };
        let authority = uri
            .authority()
            .ok_or_else(|| bad("it has no host"))?
            .clone();
        if authority.as_str().contains('@') {
            return Err(bad("credentials in the URL are not supported"));
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        if host.is_empty() {
            return Err(bad("it has no host"));
        }
        let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
        Ok(Self {
            tls,
            host,
            port,
            authority: authority.as_str().to_owned(),
            path: uri.path().trim_end_matches('/').to_owned(),
            query: uri
                .query()
                .filter(|query| !query.is_empty())
                .map(str::to_owned),
        })
    }

    /// The request target (path and query) for one lookup.
    pub(crate) fn target(&self, request: &RateRequest) -> String {
        let day = request.date.as_deref().unwrap_or("latest");
        let ours = format!("base={}&symbols={}", request.base, request.quote);
        match &self.query {
            Some(query) => format!("{}/{day}?{query}&{ours}", self.path),
            None => format!("{}/{day}?{ours}", self.path),
        }
    }

    /// The base URL without its query, safe to show (a query may hold an API key).
    pub(crate) fn display(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}{}", self.authority, self.path)
    }
}

/// One checked lookup: upper-case ISO 4217 codes, an optional calendar date, an amount.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RateRequest {
    pub(crate) base: String,
    pub(crate) quote: String,
    /// `YYYY-MM-DD`, or `None` for the latest rates.
    pub(crate) date: Option<String>,
    pub(crate) amount: f64,
}

impl RateRequest {
    /// Checks the tool's arguments; `date` may also be `latest`.
    pub(crate) fn new(
        base: &str,
        quote: &str,
        date: Option<&str>,
        amount: Option<f64>,
    ) -> Result<Self, RatesError> {
        let base = currency_code("base", base)?;
        let quote = currency_code("quote", quote)?;
        let date = match date.map(str::trim) {
            None | Some("") | Some("latest") => None,
            Some(date) if is_calendar_date(date) => Some(date.to_owned()),
            Some(date) => {
                return Err(RatesError::BadArgument(format!(
                    "date {date:?} is not a date; use YYYY-MM-DD (for example 2024-03-15) or \
                     omit it for the latest rates"
                )));
            }
        };
        let amount = amount.unwrap_or(1.0);
        if !(amount.is_finite() && amount > 0.0) {
            return Err(RatesError::BadArgument(format!(
                "amount {amount} must be a positive number"
            )));
        }
        Ok(Self {
            base,
            quote,
            date,
            amount,
        })
    }
}

fn currency_code(field: &str, code: &str) -> Result<String, RatesError> {
    let code = code.trim();
    if code.len() == 3 && code.bytes().all(|byte| byte.is_ascii_alphabetic()) {
        Ok(code.to_ascii_uppercase())
    } else {
        Err(RatesError::BadArgument(format!(
            "{field} {code:?} is not a currency code; use three letters of ISO 4217 such as USD, \
             EUR or JPY"
        )))
    }
}

/// Whether `text` is `YYYY-MM-DD` naming a real day of the proleptic Gregorian calendar.
pub(crate) fn is_calendar_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<u32> {
        bytes[range.clone()]
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| text[range].parse().ok())
            .flatten()
    };
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    year >= 1 && (1..=days_in_month).contains(&day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(date: Option<&str>) -> RateRequest {
        RateRequest::new("usd", " eur", date, None).unwrap()
    }

    #[test]
    fn base_urls_parse() {
        let local = Endpoint::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!(
            (local.tls, local.host.as_str(), local.port),
            (false, "127.0.0.1", 8080)
        );
        assert_eq!(local.target(&request(None)), "/latest?base=USD&symbols=EUR");

        let public = Endpoint::parse("https://api.frankfurter.dev/v1/").unwrap();
        assert_eq!((public.tls, public.port), (true, 443));
        assert_eq!(public.authority, "api.frankfurter.dev");
        assert_eq!(
            public.target(&request(Some("2024-02-29"))),
            "/v1/2024-02-29?base=USD&symbols=EUR"
        );
        assert_eq!(public.display(), "https://api.frankfurter.dev/v1");

        let keyed = Endpoint::parse("http://[::1]:9/api?access_key=secret").unwrap();
        assert_eq!((keyed.host.as_str(), keyed.port), ("::1", 9));
        assert_eq!(
            keyed.target(&request(None)),
            "/api/latest?access_key=secret&base=USD&symbols=EUR"
        );
        assert!(!keyed.display().contains("secret"), "keys are not shown");
    }

    #[test]
    fn unusable_base_urls_say_why() {
        for (url, reason) in [
            ("ftp://example.com", "the scheme must be http or https"),
            ("example.com/rates", "it is not a valid absolute URL"),
            (
                "mailto:rates@example.com",
                "the scheme must be http or https",
            ),
            (
                "http://user:pw@example.com",
                "credentials in the URL are not supported",
            ),
            ("not a url", "it is not a valid absolute URL"),
        ] {
            let error = Endpoint::parse(url).unwrap_err();
            assert_eq!(
                error,
                RatesError::BadUrl {
                    url: url.to_owned(),
                    reason: reason.to_owned()
                },
                "{url}"
            );
        }
    }

    #[test]
    fn arguments_are_checked_before_any_request() {
        assert_eq!(request(Some("latest")).date, None);
        assert_eq!(request(None).amount, 1.0);
        for (base, quote, date, amount) in [
            ("US", "EUR", None, None),
            ("USD", "EURO", None, None),
            ("U$D", "EUR", None, None),
            ("USD", "EUR", Some("2023-02-29"), None),
            ("USD", "EUR", Some("15/03/2024"), None),
            ("USD", "EUR", Some("2024-13-01"), None),
            ("USD", "EUR", None, Some(0.0)),
            ("USD", "EUR", None, Some(f64::NAN)),
        ] {
            let error = RateRequest::new(base, quote, date, amount).unwrap_err();
            assert!(
                matches!(error, RatesError::BadArgument(_)),
                "{base} {quote} {date:?} {amount:?}: {error}"
            );
        }
    }

    #[test]
    fn calendar_dates() {
        for good in ["2024-02-29", "2000-02-29", "1999-01-04", "2025-12-31"] {
            assert!(is_calendar_date(good), "{good}");
        }
        for bad in [
            "1900-02-29",
            "2024-04-31",
            "2024-00-10",
            "2024-1-01",
            "２０２４-01-01",
        ] {
            assert!(!is_calendar_date(bad), "{bad}");
        }
    }
}
