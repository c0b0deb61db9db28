//! Country names, adjectives and codes, for columns that hold ISO codes where a task names the
//! country ("Germany", "German customers", "the UK", "the United States").

/// Country names and adjectives (lowercase, words separated by spaces) and their ISO 3166
/// alpha-2 codes.
const COUNTRIES: [(&str, &str); 84] = [
    ("germany", "DE"),
    ("german", "DE"),
    ("france", "FR"),
    ("french", "FR"),
    ("japan", "JP"),
    ("japanese", "JP"),
    ("brazil", "BR"),
    ("brazilian", "BR"),
    ("india", "IN"),
    ("indian", "IN"),
    ("netherlands", "NL"),
    ("the netherlands", "NL"),
    ("holland", "NL"),
    ("dutch", "NL"),
    ("sweden", "SE"),
    ("swedish", "SE"),
    ("australia", "AU"),
    ("australian", "AU"),
    ("canada", "CA"),
    ("canadian", "CA"),
    ("america", "US"),
    ("american", "US"),
    ("usa", "US"),
    ("united states", "US"),
    ("united states of america", "US"),
    ("u s", "US"),
    ("britain", "GB"),
    ("great britain", "GB"),
    ("british", "GB"),
    ("england", "GB"),
    ("english", "GB"),
    ("uk", "GB"),
    ("u k", "GB"),
    ("united kingdom", "GB"),
    ("italy", "IT"),
    ("italian", "IT"),
    ("spain", "ES"),
    ("spanish", "ES"),
    ("china", "CN"),
    ("chinese", "CN"),
    ("mexico", "MX"),
    ("mexican", "MX"),
    ("norway", "NO"),
    ("norwegian", "NO"),
    ("denmark", "DK"),
    ("danish", "DK"),
    ("finland", "FI"),
    ("finnish", "FI"),
    ("poland", "PL"),
    ("polish", "PL"),
    ("switzerland", "CH"),
    ("swiss", "CH"),
    ("austria", "AT"),
    ("austrian", "AT"),
    ("belgium", "BE"),
    ("belgian", "BE"),
    ("ireland", "IE"),
    ("irish", "IE"),
    ("portugal", "PT"),
    ("portuguese", "PT"),
    ("korea", "KR"),
    ("south korea", "KR"),
    ("korean", "KR"),
    ("singapore", "SG"),
    ("argentina", "AR"),
    ("argentinian", "AR"),
    ("chile", "CL"),
    ("chilean", "CL"),
    ("turkey", "TR"),
    ("turkish", "TR"),
    ("greece", "GR"),
    ("greek", "GR"),
    ("nigeria", "NG"),
    ("nigerian", "NG"),
    ("kenya", "KE"),
    ("egypt", "EG"),
    ("israel", "IL"),
    ("new zealand", "NZ"),
    ("south africa", "ZA"),
    ("russia", "RU"),
    ("russian", "RU"),
    ("ukraine", "UA"),
    ("vietnam", "VN"),
    ("indonesia", "ID"),
];

/// The ISO code of a country named by this word.
pub(crate) fn country_code(word: &str) -> Option<&'static str> {
    let word = word.to_lowercase();
    COUNTRIES
        .iter()
        .find(|(name, _)| *name == word)
        .map(|(_, code)| *code)
}

/// Every name or adjective with its code (names of several words separated by spaces).
pub(crate) fn names() -> impl Iterator<Item = (&'static str, &'static str)> {
    COUNTRIES.iter().copied()
}

/// A name for a code, for answers ("DE (Germany)").
pub(crate) fn name_of(code: &str) -> Option<String> {
    COUNTRIES
        .iter()
        .find(|(name, c)| *c == code && !name.contains(' ') && name.len() > 3)
        .map(|(name, _)| {
            let mut chars = name.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect())
                .unwrap_or_default()
        })
}
