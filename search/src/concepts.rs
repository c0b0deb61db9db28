//! The concept table: groups of words that tool catalogs and the people searching them use for
//! the same action or object, for query expansion.
//!
//! A user asks to "fetch", "grab" or "pull up" what a tool calls `get_*`; asks for "folders" where
//! the server says "directory". Plain BM25 sees no overlap there. Each group below is a set of
//! interchangeable words in the vocabulary of tool catalogs (generic software, productivity and
//! commerce words, not any one catalog's names); a query word expands to the other members of its
//! groups, scored below an exact match (see `EXPANSION_WEIGHT` in `search.rs`). Words are stemmed
//! with the same stemmer as the index when the table is built, so inflections need no entries.
//! Keep groups tight: a loose group ("change" with "convert") turns every query into noise.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::text;

/// The groups, one line each. A word may sit in several groups (`post` is both sending and a
/// blog entry); its expansions are the union.
#[rustfmt::skip]
const GROUPS: &[&[&str]] = &[
    // Actions.
    &["get", "fetch", "retrieve", "read", "obtain", "grab", "view", "show", "display", "see", "load", "open", "look"],
    &["list", "enumerate", "browse", "listing", "all", "every"],
    &["create", "add", "new", "make", "insert", "register", "open", "start", "compose", "draft", "generate", "write"],
    &["delete", "remove", "drop", "erase", "destroy", "purge", "discard", "trash", "wipe", "unlink", "rm", "clear"],
    &["update", "edit", "modify", "change", "alter", "patch", "amend", "revise", "adjust", "set", "replace", "rename"],
    &["search", "find", "query", "lookup", "locate", "seek", "discover", "filter", "grep", "match", "look"],
    &["send", "post", "deliver", "dispatch", "transmit", "notify", "message", "ping", "dm", "text", "email", "mail"],
    &["reply", "respond", "answer", "comment", "react"],
    &["convert", "transform", "transcode", "translate", "export", "format", "encode"],
    &["translate", "translation", "localize", "language"],
    &["download", "save", "export", "pull", "fetch"],
    &["upload", "attach", "import", "push", "put"],
    &["run", "execute", "invoke", "call", "trigger", "launch", "perform", "fire"],
    &["stop", "halt", "kill", "terminate", "abort", "end", "shutdown", "cancel"],
    &["start", "begin", "launch", "boot", "spin", "resume", "kick"],
    &["pause", "suspend", "hold", "freeze", "mute", "snooze"],
    &["schedule", "book", "reserve", "plan", "arrange", "calendar"],
    &["count", "number", "total", "tally", "how", "many", "amount", "quantity"],
    &["summarize", "summary", "overview", "digest", "recap", "brief", "tldr", "gist", "condense"],
    &["analyze", "analyse", "analysis", "inspect", "examine", "assess", "evaluate", "audit", "review", "diagnose"],
    &["compare", "comparison", "diff", "difference", "contrast", "versus", "vs"],
    &["merge", "combine", "join", "unify", "consolidate", "squash"],
    &["copy", "duplicate", "clone", "replicate", "fork"],
    &["move", "rename", "relocate", "transfer", "mv"],
    &["check", "verify", "validate", "confirm", "test", "lint", "ensure"],
    &["monitor", "watch", "track", "observe", "follow", "subscribe", "tail"],
    &["calculate", "compute", "estimate", "sum", "math", "calculator"],
    &["assign", "allocate", "delegate", "reassign", "give", "hand", "owner"],
    &["approve", "accept", "authorize", "grant", "allow", "sign"],
    &["reject", "decline", "deny", "refuse", "block", "ban"],
    &["archive", "store", "backup", "snapshot", "preserve"],
    &["restore", "recover", "undo", "revert", "rollback", "undelete"],
    &["sort", "order", "rank", "arrange", "top", "best"],
    &["tag", "label", "categorize", "classify", "category"],
    &["invite", "onboard", "welcome", "add", "include"],
    &["login", "signin", "authenticate", "auth", "logon", "oauth"],
    &["logout", "signout", "revoke"],
    &["pay", "payment", "charge", "checkout", "purchase", "buy"],
    &["refund", "reimburse", "chargeback", "reimbursement"],
    &["enable", "activate", "turn", "switch", "on"],
    &["disable", "deactivate", "turn", "switch", "off"],
    &["connect", "link", "pair", "attach", "bind"],
    &["sync", "synchronize", "refresh", "reload", "mirror"],
    &["resize", "crop", "scale", "shrink", "thumbnail"],
    &["deploy", "release", "ship", "rollout", "publish", "promote"],
    &["build", "compile", "bundle", "package"],
    &["play", "stream", "listen", "queue"],
    &["record", "log", "capture", "journal", "track"],
    &["lock", "unlock", "secure"],
    &["share", "distribute", "publish", "forward"],
    &["print", "printer", "render"],
    &["remind", "reminder", "alert", "alarm", "notification", "notify"],
    &["explain", "describe", "description", "detail", "info", "information", "metadata", "about", "property", "properties", "stat"],
    &["extract", "parse", "scrape", "crawl", "harvest"],
    &["ask", "question", "prompt", "chat", "completion"],
    &["transcribe", "transcript", "transcription", "caption", "subtitle", "speech"],
    &["speak", "tts", "voice", "speech", "audio", "narrate"],
    &["draw", "generate", "image", "illustration", "picture"],
    &["forecast", "predict", "prediction", "projection", "outlook"],
    &["geocode", "coordinate", "latitude", "longitude", "lat", "lng", "lon"],
    &["current", "latest", "recent", "newest", "now", "today", "live", "realtime"],
    &["history", "historical", "past", "previous", "old", "archive", "log"],
    &["bulk", "batch", "multiple", "many", "several", "mass"],
    &["size", "dimension", "big", "large", "bytes", "disk", "usage", "space"],
    &["unread", "inbox", "pending", "outstanding", "open"],
    // Objects.
    &["file", "document", "doc", "attachment"],
    &["folder", "directory", "dir", "path"],
    &["repository", "repo", "project", "codebase"],
    &["issue", "ticket", "bug", "defect", "problem", "incident", "case", "request"],
    &["pull", "pr", "merge", "request"],
    &["message", "chat", "dm", "conversation", "thread", "post", "text"],
    &["channel", "room", "group", "space", "chatroom"],
    &["email", "mail", "inbox", "gmail", "outlook", "e-mail"],
    &["meeting", "event", "appointment", "calendar", "invite", "call"],
    &["user", "account", "member", "person", "profile", "people", "username"],
    &["contact", "lead", "prospect", "person", "phonebook", "address"],
    &["customer", "client", "buyer", "shopper", "account"],
    &["team", "group", "org", "organization", "organisation", "workspace", "company"],
    &["image", "photo", "picture", "screenshot", "pic", "png", "jpg", "jpeg"],
    &["video", "clip", "movie", "film", "recording", "youtube"],
    &["music", "song", "track", "audio", "playlist", "album", "artist"],
    &["weather", "forecast", "temperature", "rain", "climate", "wind", "humidity"],
    &["location", "place", "address", "map", "geo", "position", "poi", "venue", "where"],
    &["route", "direction", "navigation", "navigate", "distance", "travel", "commute", "trip"],
    &["price", "cost", "quote", "rate", "fee", "pricing", "expensive", "cheap"],
    &["stock", "share", "equity", "ticker", "market", "nasdaq", "nyse"],
    &["currency", "money", "exchange", "fx", "forex", "usd", "eur", "dollar", "euro"],
    &["database", "db", "table", "sql", "schema", "postgres", "mysql", "sqlite"],
    &["record", "row", "entry", "item", "document"],
    &["column", "field", "attribute", "property"],
    &["container", "docker", "pod", "image"],
    &["cluster", "kubernetes", "k8s", "kubectl", "namespace", "deployment"],
    &["server", "host", "instance", "machine", "vm", "node", "ec2"],
    &["log", "logs", "logging", "trace", "event"],
    &["error", "exception", "failure", "crash", "fault", "stacktrace"],
    &["metric", "measurement", "statistic", "stat", "analytics", "kpi", "telemetry", "usage"],
    &["cost", "spend", "spending", "billing", "bill", "expense", "budget"],
    &["invoice", "bill", "receipt", "billing"],
    &["payment", "transaction", "charge", "transfer", "payout"],
    &["order", "purchase", "cart", "basket"],
    &["product", "item", "sku", "merchandise", "catalog", "inventory", "goods"],
    &["shipment", "delivery", "package", "parcel", "tracking", "shipping", "courier"],
    &["employee", "staff", "worker", "personnel", "colleague", "hire", "headcount"],
    &["salary", "payroll", "wage", "compensation", "paycheck"],
    &["leave", "vacation", "holiday", "pto", "absence", "sick", "timeoff"],
    &["job", "position", "vacancy", "opening", "role", "posting", "career"],
    &["candidate", "applicant", "application", "resume", "cv"],
    &["note", "memo", "notebook", "jot"],
    &["page", "webpage", "website", "site", "url", "link", "web"],
    &["bookmark", "favorite", "favourite", "star", "pin", "save"],
    &["password", "credential", "secret", "key", "token", "apikey", "passphrase"],
    &["permission", "access", "role", "privilege", "acl", "rights"],
    &["config", "configuration", "setting", "preference", "option", "env"],
    &["status", "state", "health", "uptime", "alive", "up", "down"],
    &["time", "clock", "hour", "date", "datetime", "timestamp", "day"],
    &["timezone", "zone", "tz", "utc", "gmt"],
    &["word", "term", "phrase", "text", "string"],
    &["device", "sensor", "thermostat", "appliance", "gadget", "iot", "smart"],
    &["light", "lamp", "bulb", "lighting", "brightness"],
    &["temperature", "thermostat", "heat", "heating", "cooling", "degree", "celsius", "fahrenheit"],
    &["door", "lock", "gate", "garage"],
    &["camera", "webcam", "cctv", "footage"],
    &["flight", "airline", "plane", "airport", "fly"],
    &["hotel", "lodging", "accommodation", "stay", "room", "airbnb"],
    &["recipe", "dish", "meal", "cooking", "cook", "food", "ingredient"],
    &["news", "headline", "article", "story", "press"],
    &["article", "post", "blog", "story", "entry"],
    &["review", "rating", "feedback", "star", "score", "comment"],
    &["dependency", "package", "library", "module", "crate", "npm", "pypi"],
    &["commit", "revision", "changeset", "sha", "history"],
    &["branch", "ref", "head"],
    &["tag", "release", "version"],
    &["bucket", "storage", "blob", "object", "s3"],
    &["dns", "domain", "hostname", "nameserver"],
    &["certificate", "cert", "ssl", "tls", "https"],
    &["alert", "alarm", "incident", "page", "oncall", "outage"],
    &["dashboard", "chart", "graph", "visualization", "plot", "report"],
    &["spreadsheet", "sheet", "excel", "workbook", "csv", "xlsx", "cell"],
    &["presentation", "slide", "deck", "powerpoint", "slideshow"],
    &["contract", "agreement", "signature", "esign"],
    &["wiki", "knowledge", "documentation", "doc", "manual", "guide", "kb"],
    &["task", "todo", "chore", "assignment", "card", "item"],
    &["board", "sprint", "epic", "backlog", "milestone", "roadmap", "kanban"],
    &["deal", "opportunity", "pipeline", "sale", "sales"],
    &["campaign", "newsletter", "mailing", "blast"],
    &["subscriber", "follower", "audience", "subscription"],
    &["phone", "sms", "call", "mobile", "telephone", "text"],
    &["coupon", "discount", "promo", "voucher", "promotion", "code"],
    &["tax", "vat", "gst", "sales"],
    &["balance", "fund", "funds", "wallet", "account"],
    &["crypto", "bitcoin", "btc", "ethereum", "eth", "token", "coin", "blockchain"],
    &["secret", "vault", "credential"],
    &["function", "lambda", "serverless"],
    &["queue", "topic", "kafka", "sqs", "pubsub", "broker", "stream"],
    &["workflow", "pipeline", "automation", "job", "action", "ci", "cd"],
    &["code", "source", "snippet", "script", "program"],
    &["translation", "translate", "language", "locale", "multilingual"],
    &["graph", "node", "edge", "relation", "relationship", "entity", "knowledge"],
    &["memory", "remember", "recall", "memorize", "forget"],
    &["environment", "env", "variable", "variables"],
    &["sum", "add", "plus", "addition", "total"],
    &["echo", "repeat", "parrot", "back"],
    &["compress", "zip", "gzip", "archive", "tar", "unzip", "decompress"],
    &["tree", "hierarchy", "structure", "recursive", "nested"],
    &["week", "weekly", "month", "monthly", "year", "yearly", "annual", "daily", "tomorrow", "yesterday"],
    // Everyday words for what tool catalogs name technically.
    &["weather", "umbrella", "rain", "raining", "snow", "sunny", "storm", "wind", "jacket", "cloudy"],
    &["uv", "sunscreen", "sunburn", "sun", "ultraviolet"],
    &["direction", "route", "drive", "driving", "walk", "walking", "bike", "cycling", "commute", "navigate", "way"],
    &["distance", "far", "travel", "km", "miles", "duration"],
    &["estimate", "worth", "value", "valuation", "appraisal", "price"],
    &["house", "home", "apartment", "condo", "property", "flat", "real", "estate"],
    &["rent", "tenant", "lease", "landlord", "rental"],
    &["refund", "reverse", "money", "back", "return", "reimburse"],
    &["compress", "shrink", "smaller", "reduce", "minify", "zip"],
    &["audio", "sound", "soundtrack", "mp3", "wav", "voice", "recording"],
    &["lyrics", "words", "song"],
    &["identifier", "id", "uuid", "guid", "unique"],
    &["shorten", "short", "shorter", "shortener", "tiny"],
    &["trim", "cut", "clip", "crop", "segment"],
    &["ride", "car", "taxi", "cab", "lift", "driver"],
    &["food", "meal", "dinner", "lunch", "takeout", "restaurant", "delivery", "eat", "hungry"],
    &["subscribe", "subscriber", "signup", "sign", "enroll", "join", "optin"],
    &["visitor", "traffic", "pageview", "session", "audience", "user"],
    &["retention", "churn", "return", "returning", "cohort", "come", "back"],
    &["manager", "report", "hierarchy", "org", "chart", "reporting", "supervisor"],
    &["similar", "like", "related", "alike", "comparable", "alternative"],
    &["summary", "intro", "introduction", "overview", "abstract", "lead"],
    &["full", "complete", "entire", "whole", "text", "content", "contents"],
    &["language", "english", "spanish", "french", "german", "japanese", "chinese", "italian", "portuguese", "russian", "arabic", "korean", "dutch"],
    &["quantity", "stock", "inventory", "level", "units"],
    &["dollar", "euro", "pound", "yen", "currency", "usd", "eur", "gbp", "jpy"],
    &["contract", "nda", "agreement", "esignature", "sign", "signature"],
    &["approve", "ok", "okay", "accept", "greenlight", "approval"],
    &["sleep", "rest", "bedtime", "nap"],
    &["step", "steps", "walked", "activity", "exercise", "workout", "run", "ride"],
    &["website", "site", "domain", "url", "link", "page"],
];

/// What a tool does to its object, as far as retrieval cares: reading leaves things as they
/// were; the other classes change something.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    Read,
    Create,
    Update,
    Delete,
    Send,
    Run,
}

impl Action {
    /// Whether the action changes something (anything but reading).
    pub(crate) fn mutates(self) -> bool {
        self != Action::Read
    }
}

/// The verbs (and verb-like nouns) of each action class, as they appear in tool names and in
/// requests. A tool's class is that of the first word of its name found here; a request's
/// classes are those of all its words.
#[rustfmt::skip]
const ACTIONS: &[(Action, &[&str])] = &[
    (Action::Read, &[
        "get", "fetch", "retrieve", "read", "show", "display", "view", "see", "load", "look",
        "list", "enumerate", "browse", "search", "find", "query", "lookup", "locate", "describe",
        "info", "inspect", "check", "count", "download", "export", "monitor", "watch", "analyze",
        "compare", "summarize", "explain", "which", "what", "who", "whos", "where", "when", "how",
        "status", "history", "preview", "probe", "tail", "grep", "diff", "blame", "verify",
        "validate", "lint", "estimate", "calculate", "evaluate", "convert", "translate", "detect",
        "extract", "scrape", "crawl", "transcribe", "define", "track",
    ]),
    (Action::Create, &[
        "create", "add", "new", "make", "insert", "register", "generate", "compose", "draft",
        "write", "open", "book", "schedule", "reserve", "upload", "import", "fork", "clone", "copy",
        "duplicate", "init", "log", "record", "raise", "invite", "commit",
    ]),
    (Action::Update, &[
        "update", "edit", "modify", "change", "alter", "patch", "amend", "revise", "adjust", "set",
        "rename", "move", "assign", "reassign", "replace", "toggle", "enable", "disable", "mark",
        "complete", "close", "resolve", "merge", "transition", "approve", "reject", "lock",
        "unlock", "pin", "star", "label", "tag", "mute", "snooze", "restore", "sync", "scale",
        "resize", "rotate", "crop", "reset", "upgrade", "grade", "acknowledge",
    ]),
    (Action::Delete, &[
        "delete", "remove", "drop", "erase", "destroy", "purge", "discard", "trash", "wipe",
        "clear", "unlink", "cancel", "revoke", "void", "archive", "unsubscribe", "ban", "block",
        "kill", "forget", "uninstall", "rm",
    ]),
    (Action::Send, &[
        "send", "post", "publish", "notify", "reply", "respond", "forward", "share", "email",
        "mail", "sms", "tweet", "announce", "broadcast", "dm", "ping", "submit", "push",
    ]),
    (Action::Run, &[
        "run", "execute", "invoke", "trigger", "launch", "start", "stop", "restart", "reboot",
        "deploy", "apply", "install", "rollout", "rollback", "rerun", "abort", "halt", "pause",
        "resume", "play", "kick", "fire", "spin", "call", "build",
    ]),
];

fn actions() -> &'static HashMap<String, Vec<Action>> {
    static ACTION_OF: OnceLock<HashMap<String, Vec<Action>>> = OnceLock::new();
    ACTION_OF.get_or_init(|| {
        let mut map: HashMap<String, Vec<Action>> = HashMap::new();
        let mut stemmed = String::new();
        for (action, words) in ACTIONS {
            for word in *words {
                text::stem(word, &mut stemmed);
                let classes = map.entry(stemmed.clone()).or_default();
                if !classes.contains(action) {
                    classes.push(*action);
                }
            }
        }
        map
    })
}

/// The action classes of a term (stemmed word); empty for a word that is no action.
pub(crate) fn actions_of(term: &str) -> &'static [Action] {
    actions().get(term).map(Vec::as_slice).unwrap_or_default()
}

/// The words of a tool name that say it enumerates many things.
pub(crate) fn is_listing(term: &str) -> bool {
    matches!(term, "list" | "enumerat" | "brows")
}

/// The table, built once: a term's groups, and each group's member terms.
struct Table {
    groups_of_term: HashMap<String, Vec<u16>>,
    members: Vec<Vec<String>>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = Table {
            groups_of_term: HashMap::new(),
            members: Vec::with_capacity(GROUPS.len()),
        };
        let mut stemmed = String::new();
        for (group_id, words) in GROUPS.iter().enumerate() {
            let group_id = u16::try_from(group_id).expect("fewer than 65,536 concept groups");
            let mut members: Vec<String> = Vec::with_capacity(words.len());
            for word in *words {
                text::stem(word, &mut stemmed);
                if !members.contains(&stemmed) {
                    members.push(stemmed.clone());
                }
            }
            for member in &members {
                let groups = table.groups_of_term.entry(member.clone()).or_default();
                if !groups.contains(&group_id) {
                    groups.push(group_id);
                }
            }
            table.members.push(members);
        }
        table
    })
}

/// The concept groups `term` belongs to (empty when it is in none).
pub(crate) fn groups_of(term: &str) -> &'static [u16] {
    table()
        .groups_of_term
        .get(term)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// Abbreviations and the words they stand for. Unlike a concept group, these are exact
/// equivalents: the query word is searched as what it abbreviates, at full weight, each word
/// of a phrase (`pr` → `pull request`) as a query word of its own.
#[rustfmt::skip]
const ABBREVIATIONS: &[(&str, &[&str])] = &[
    ("pr", &["pull", "request"]), ("mr", &["merge", "request"]), ("repo", &["repository"]),
    ("db", &["database"]), ("k8s", &["kubernetes"]), ("dir", &["directory"]),
    ("msg", &["message"]), ("doc", &["document"]), ("config", &["configuration"]),
    ("cfg", &["configuration"]), ("info", &["information"]), ("env", &["environment"]),
    ("auth", &["authentication"]), ("app", &["application"]), ("org", &["organization"]),
    ("vm", &["virtual", "machine"]), ("dm", &["direct", "message"]), ("tz", &["timezone"]),
    ("img", &["image"]), ("pic", &["picture"]), ("txt", &["text"]), ("pwd", &["password"]),
    ("qty", &["quantity"]), ("addr", &["address"]), ("perm", &["permission"]),
    ("stat", &["statistic"]), ("ci", &["continuous", "integration"]), ("kb", &["knowledge", "base"]),
    ("2fa", &["otp"]), ("mfa", &["otp"]), ("eta", &["estimated", "arrival"]),
];

/// What `term` abbreviates, as terms (empty when it abbreviates nothing).
pub(crate) fn expansion_of_abbreviation(term: &str) -> &'static [String] {
    static TABLE: OnceLock<HashMap<String, Vec<String>>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut stemmed = String::new();
        ABBREVIATIONS
            .iter()
            .map(|(short, long)| {
                text::stem(short, &mut stemmed);
                let key = stemmed.clone();
                let words = long
                    .iter()
                    .map(|word| {
                        text::stem(word, &mut stemmed);
                        stemmed.clone()
                    })
                    .collect();
                (key, words)
            })
            .collect()
    });
    table.get(term).map(Vec::as_slice).unwrap_or_default()
}

/// Two-word expressions (phrasal verbs, fixed phrases) and the words a tool catalog would use for
/// them: "sign up" means subscribe or register, "turn off" means disable, "how many" means count.
/// Matched on adjacent words of the request, stop words included.
#[rustfmt::skip]
const PHRASES: &[(&str, &str, &[&str])] = &[
    ("how", "many", &["count"]), ("how", "much", &["amount", "price"]),
    ("sign", "up", &["subscribe", "register"]), ("sign", "in", &["login"]),
    ("log", "in", &["login"]), ("log", "out", &["logout"]),
    ("turn", "on", &["enable"]), ("turn", "off", &["disable"]),
    ("switch", "on", &["enable"]), ("switch", "off", &["disable"]),
    ("turn", "down", &["decrease", "reject"]), ("turn", "up", &["increase"]),
    ("look", "up", &["lookup", "search"]), ("find", "out", &["get"]),
    ("set", "up", &["create", "configure"]), ("spin", "up", &["create", "start"]),
    ("shut", "down", &["stop"]), ("back", "up", &["backup"]),
    ("come", "back", &["return"]), ("day", "off", &["holiday", "leave"]),
    ("time", "off", &["leave", "vacation"]), ("on", "call", &["oncall"]),
    ("out", "office", &["vacation"]), ("check", "in", &["checkin"]),
    ("clean", "up", &["delete"]), ("get", "rid", &["delete"]),
    ("write", "down", &["note"]), ("jot", "down", &["note"]), ("fill", "in", &["fill"]),
];

/// The words that the expression `first second` (terms, stemmed) stands for; empty when none.
pub(crate) fn phrase_meaning(first: &str, second: &str) -> &'static [String] {
    // Keyed by the first word, so a lookup borrows the query's words instead of allocating.
    type Meanings = HashMap<String, Vec<(String, Vec<String>)>>;
    static TABLE: OnceLock<Meanings> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut stemmed = String::new();
        let mut stem = |word: &str| {
            text::stem(word, &mut stemmed);
            stemmed.clone()
        };
        let mut table: Meanings = HashMap::new();
        for (a, b, meaning) in PHRASES {
            let meaning = meaning.iter().map(|w| stem(w)).collect();
            let second = stem(b);
            table.entry(stem(a)).or_default().push((second, meaning));
        }
        table
    });
    table
        .get(first)
        .and_then(|seconds| seconds.iter().find(|(word, _)| word == second))
        .map(|(_, meaning)| meaning.as_slice())
        .unwrap_or_default()
}

/// The terms that share a group with `term`, without `term` itself and without duplicates.
pub(crate) fn expansions(term: &str) -> Vec<&'static str> {
    let table = table();
    let mut out: Vec<&'static str> = Vec::new();
    for &group in groups_of(term) {
        for member in &table.members[usize::from(group)] {
            if member != term && !out.contains(&member.as_str()) {
                out.push(member);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inflected_query_words_expand_to_their_synonyms() {
        let mut stemmed = String::new();
        text::stem("fetching", &mut stemmed);
        let expanded = expansions(&stemmed);
        assert!(expanded.contains(&"get"), "{expanded:?}");
        assert!(expanded.contains(&"retriev"), "{expanded:?}");
        assert!(!expanded.contains(&stemmed.as_str()));
    }

    #[test]
    fn abbreviations_stand_for_their_words() {
        assert_eq!(expansion_of_abbreviation("pr"), ["pull", "request"]);
        assert_eq!(expansion_of_abbreviation("repo"), ["repository"]);
        assert!(expansion_of_abbreviation("issue").is_empty());
    }

    #[test]
    fn phrases_stand_for_catalog_words() {
        assert_eq!(phrase_meaning("sign", "up"), ["subscrib", "register"]);
        assert!(phrase_meaning("sign", "contract").is_empty());
    }

    #[test]
    fn words_outside_every_group_expand_to_nothing() {
        assert!(expansions("zyzzyva").is_empty());
        assert!(groups_of("zyzzyva").is_empty());
    }
}
