//! Country names and codes, for columns that hold ISO codes where a task names the country.

/// Country names and their ISO 3166 alpha-2 codes, for columns that hold codes.
const COUNTRIES: [(&str, &str); 40] = [
    ("germany", "DE"),
    ("france", "FR"),
    ("japan", "JP"),
    ("brazil", "BR"),
    ("india", "IN"),
    ("netherlands", "NL"),
    ("holland", "NL"),
    ("sweden", "SE"),
    ("australia", "AU"),
    ("canada", "CA"),
    ("america", "US"),
    ("usa", "US"),
    ("britain", "GB"),
    ("england", "GB"),
    ("uk", "GB"),
    ("italy", "IT"),
    ("spain", "ES"),
    ("china", "CN"),
    ("mexico", "MX"),
    ("norway", "NO"),
    ("denmark", "DK"),
    ("finland", "FI"),
    ("poland", "PL"),
    ("switzerland", "CH"),
    ("austria", "AT"),
    ("belgium", "BE"),
    ("ireland", "IE"),
    ("portugal", "PT"),
    ("korea", "KR"),
    ("singapore", "SG"),
    ("argentina", "AR"),
    ("chile", "CL"),
    ("turkey", "TR"),
    ("greece", "GR"),
    ("nigeria", "NG"),
    ("kenya", "KE"),
    ("egypt", "EG"),
    ("israel", "IL"),
    ("zealand", "NZ"),
    ("africa", "ZA"),
];

/// The ISO code of a country named by this word.
pub(crate) fn country_code(word: &str) -> Option<&'static str> {
    let word = word.to_lowercase();
    COUNTRIES
        .iter()
        .find(|(name, _)| *name == word)
        .map(|(_, code)| *code)
}
