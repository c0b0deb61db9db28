//! Reading a rates service's answer: the HTTP status and the JSON body, turned into one rate or a
//! clear error. Pure, so each documented shape and each failure is unit-tested.
//!
//! The accepted body is the shape Frankfurter (v1) and the Fixer-style APIs share:
//! `{"amount": 1.0, "base": "USD", "date": "2024-05-10", "rates": {"EUR": 0.92}}`. `amount` is
//! optional (1 when absent); `"success": false` with an `error` object is how Fixer-style APIs
//! refuse with status 200, and is reported as a refusal.

use serde_json::Value;

use super::{RatesError, endpoint::RateRequest};

/// Most bytes of an answer we read; a rates answer is a few hundred bytes.
pub(crate) const MAX_BODY_BYTES: usize = 256 * 1024;

/// One rate as the service gave it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Quote {
    pub(crate) rate: f64,
    pub(crate) date: String,
}

/// Reads an answer with HTTP status `status` to `request`.
pub(crate) fn read_answer(
    status: u16,
    location: Option<&str>,
    body: &[u8],
    request: &RateRequest,
) -> Result<Quote, RatesError> {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let message = json.as_ref().and_then(remote_message);
    match status {
        200..=299 => {}
        300..=399 => {
            return Err(RatesError::Redirected {
                status,
                location: location.unwrap_or("nowhere").to_owned(),
            });
        }
        404 | 422 => {
            return Err(RatesError::NotFound {
                base: request.base.clone(),
                quote: request.quote.clone(),
                date: request.date.clone().unwrap_or_else(|| "latest".to_owned()),
                status,
                message: message.unwrap_or_else(|| "not found".to_owned()),
            });
        }
        400..=499 => {
            return Err(RatesError::Refused {
                status,
                message: message.unwrap_or_else(|| "no reason given".to_owned()),
            });
        }
        _ => {
            return Err(RatesError::ServerFailed {
                status,
                message: message.unwrap_or_else(|| "no reason given".to_owned()),
            });
        }
    }
    let Some(Value::Object(object)) = json else {
        return Err(RatesError::BadAnswer(format!(
            "the body is not a JSON object (it starts {:?})",
            String::from_utf8_lossy(&body[..body.len().min(40)])
        )));
    };
    if object.get("success") == Some(&Value::Bool(false)) {
        return Err(RatesError::Refused {
            status,
            message: message.unwrap_or_else(|| "success: false".to_owned()),
        });
    }
    if let Some(base) = object.get("base") {
        let matches = base
            .as_str()
            .is_some_and(|base| base.eq_ignore_ascii_case(&request.base));
        if !matches {
            return Err(RatesError::BadAnswer(format!(
                "it answered for base {base}, not {}",
                request.base
            )));
        }
    }
    let rates = object
        .get("rates")
        .and_then(Value::as_object)
        .ok_or_else(|| RatesError::BadAnswer("it has no \"rates\" object".to_owned()))?;
    let value = rates
        .iter()
        .find(|(code, _)| code.eq_ignore_ascii_case(&request.quote))
        .map(|(_, value)| value)
        .ok_or_else(|| RatesError::NotFound {
            base: request.base.clone(),
            quote: request.quote.clone(),
            date: request.date.clone().unwrap_or_else(|| "latest".to_owned()),
            status,
            message: format!(
                "the answer has no rate for {} (it has: {})",
                request.quote,
                rates.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        })?;
    let amount = match object.get("amount") {
        None => 1.0,
        Some(amount) => amount
            .as_f64()
            .filter(|amount| amount.is_finite() && *amount > 0.0)
            .ok_or_else(|| RatesError::BadAnswer(format!("its amount {amount} is not positive")))?,
    };
    let rate = value
        .as_f64()
        .filter(|rate| rate.is_finite() && *rate > 0.0)
        .ok_or_else(|| {
            RatesError::BadAnswer(format!(
                "its rate for {} is {value}, not a positive number",
                request.quote
            ))
        })?
        / amount;
    let date = match object.get("date") {
        Some(Value::String(date)) => date.clone(),
        Some(other) => {
            return Err(RatesError::BadAnswer(format!(
                "its date {other} is not a string"
            )));
        }
        None => request.date.clone().unwrap_or_else(|| "latest".to_owned()),
    };
    Ok(Quote { rate, date })
}

/// The human-readable reason in an error body: `message`, `error` as text, or Fixer's
/// `error.info` / `error.type`.
fn remote_message(json: &Value) -> Option<String> {
    let text = |value: &Value| value.as_str().map(|text| text.chars().take(200).collect());
    json.get("message")
        .and_then(text)
        .or_else(|| json.get("error").and_then(text))
        .or_else(|| json.pointer("/error/info").and_then(text))
        .or_else(|| json.pointer("/error/type").and_then(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> RateRequest {
        RateRequest::new("USD", "EUR", None, None).unwrap()
    }

    fn read(status: u16, body: &str) -> Result<Quote, RatesError> {
        read_answer(status, None, body.as_bytes(), &request())
    }

    #[test]
    fn the_frankfurter_shape() {
        let quote = read(
            200,
            r#"{"amount":1.0,"base":"USD","date":"2024-05-10","rates":{"EUR":0.92822}}"#,
        )
        .unwrap();
        assert_eq!(
            quote,
            Quote {
                rate: 0.92822,
                date: "2024-05-10".into()
            }
        );
        // An amount other than 1 scales every rate; a missing amount and date are tolerated.
        let quote = read(200, r#"{"amount":10,"base":"usd","rates":{"EUR":9.5}}"#).unwrap();
        assert_eq!(
            quote,
            Quote {
                rate: 0.95,
                date: "latest".into()
            }
        );
    }

    #[test]
    fn remote_refusals() {
        let error = read(404, r#"{"message":"not found"}"#).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the rates service has no rate from USD to EUR for latest (HTTP 404: not found); \
             check that both are ISO 4217 codes it knows and that the date is a business day"
        );
        let error = read(503, "<html>busy</html>").unwrap_err();
        assert_eq!(
            error.to_string(),
            "the rates service failed (HTTP 503: no reason given); try again later"
        );
        let error = read(
            200,
            r#"{"success":false,"error":{"code":101,"type":"missing_access_key","info":"You have not supplied an API Access Key."}}"#,
        )
        .unwrap_err();
        assert!(
            matches!(&error, RatesError::Refused { message, .. } if message.contains("Access Key")),
            "{error}"
        );
        let error = read_answer(301, Some("https://x/"), b"", &request()).unwrap_err();
        assert!(error.to_string().contains("https://x/"), "{error}");
    }

    #[test]
    fn malformed_answers() {
        for body in [
            "not json",
            "[1,2]",
            r#"{"base":"USD"}"#,
            r#"{"base":"GBP","rates":{"EUR":1}}"#,
            r#"{"base":"USD","rates":{"EUR":"0.9"}}"#,
            r#"{"base":"USD","rates":{"EUR":-1}}"#,
            r#"{"base":"USD","amount":0,"rates":{"EUR":1}}"#,
            r#"{"base":"USD","date":7,"rates":{"EUR":1}}"#,
        ] {
            let error = read(200, body).unwrap_err();
            assert!(matches!(error, RatesError::BadAnswer(_)), "{body}: {error}");
        }
        let error = read(200, r#"{"base":"USD","rates":{"GBP":0.8}}"#).unwrap_err();
        assert!(
            error.to_string().contains("(it has: GBP)"),
            "a missing quote names what was there: {error}"
        );
    }
}
