//! The sample documents served as resources beside the database: a returns policy that defines
//! the order statuses, a shipping-rate sheet and notes on currencies.
//!
//! They are fixed text compiled into the binary, so every machine serves the same bytes and an
//! agent task ("what does completed mean?", "convert to EUR") has a document to read through the
//! resource tools. Their words must agree with `sample_data.rs` and the rates table in
//! `rates/service.rs`; the tests below hold them to that.

/// One fixed document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Document {
    pub(crate) uri: &'static str,
    pub(crate) name: &'static str,
    pub(crate) title: &'static str,
    pub(crate) description: &'static str,
    pub(crate) mime_type: &'static str,
    pub(crate) text: &'static str,
}

/// Every sample document, in listing order.
pub(crate) const DOCUMENTS: [Document; 3] = [
    Document {
        uri: "demo://docs/returns-policy",
        name: "returns-policy",
        title: "Returns policy and order statuses",
        description: "What each order status means (which count as completed revenue) and the return window",
        mime_type: "text/markdown",
        text: include_str!("documents/returns-policy.md"),
    },
    Document {
        uri: "demo://docs/shipping",
        name: "shipping",
        title: "Shipping rates",
        description: "Shipping prices in US dollars by destination country",
        mime_type: "text/plain",
        text: include_str!("documents/shipping.txt"),
    },
    Document {
        uri: "demo://docs/currency-notes",
        name: "currency-notes",
        title: "Currencies",
        description: "Prices are US dollars; how to convert them with rest_exchange_rate, and the local rate table",
        mime_type: "text/markdown",
        text: include_str!("documents/currency-notes.md"),
    },
];

/// The document with this URI, if any.
pub(crate) fn find(uri: &str) -> Option<&'static Document> {
    DOCUMENTS.iter().find(|document| document.uri == uri)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_unique_and_found() {
        for document in &DOCUMENTS {
            assert_eq!(find(document.uri), Some(document));
            assert!(document.uri.ends_with(document.name));
            assert!(!document.text.is_empty());
        }
        assert_eq!(find("demo://docs/nothing"), None);
    }

    #[test]
    fn the_returns_policy_names_every_status() {
        for status in ["pending", "shipped", "completed", "cancelled", "returned"] {
            assert!(
                DOCUMENTS[0].text.contains(&format!("`{status}`")),
                "{status}"
            );
        }
    }

    #[test]
    fn the_currency_notes_match_the_rate_table() {
        let notes = DOCUMENTS[2].text;
        for (currency, per_euro) in crate::rates::service::RATE_TABLE {
            let row = notes
                .lines()
                .find(|line| line.contains(&format!("| {currency} ")))
                .unwrap_or_else(|| panic!("{currency} is not in the notes"));
            assert!(
                row.contains(&format!(" {per_euro} ")),
                "{currency}: {per_euro} not in {row:?}"
            );
        }
    }
}
