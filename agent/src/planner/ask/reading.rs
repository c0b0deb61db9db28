//! The reading of a question: every token is placed, or the question is not understood.
//!
//! Recognizers take spans of tokens in a fixed order, each only tokens no earlier one took:
//! periods (and the relative and future ones, to be refused), comparisons with a number, ids
//! ("order #42"), target currencies, values found in the data (whole names, categories,
//! statuses, countries; a country's name for its code), the words of the schema and of
//! questions (longest phrase first), numbers, then the last resorts: part of a name ("Okafor"),
//! a misspelt value or word (stated as an assumption), and words that carry no meaning of their
//! own. A capitalised name or a quoted text that nothing matched becomes an `Unknown` (the
//! answer will say nothing in the data is named so); any other word left is *unplaced*, and
//! the planner answers "cannot", naming it. This is the structural coverage check: what a
//! question means is never decided by ignoring part of it. Pure.

use super::super::{countries, rates};
use super::periods::{self, Found, Period};
use super::schema::{Concept, Schema};
use super::text::{self, Kind, Token};
use super::values::{Values, near_word, same_word};

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
}

impl Op {
    pub(crate) fn sql(self) -> &'static str {
        match self {
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Eq => "=",
        }
    }

    pub(crate) fn words(self) -> &'static str {
        match self {
            Op::Gt => "more than",
            Op::Ge => "at least",
            Op::Lt => "less than",
            Op::Le => "at most",
            Op::Eq => "exactly",
        }
    }
}

/// An aggregate function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Agg {
    Sum,
    Avg,
    Median,
    Min,
    Max,
}

/// A part of a date to group by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    Day,
    Week,
    Month,
    Quarter,
    Year,
    Weekday,
}

/// What a superlative ranks by when its word says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ranked {
    /// "most", "highest", "best", "top": by whatever measure the question names.
    Measure,
    Price,
    Date,
    Units,
    Revenue,
    /// How many rows ("busiest", "most common").
    Count,
}

/// What a span of tokens means.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Claim {
    /// A word that carries no meaning of its own here.
    Filler,
    Who,
    When,
    Where,
    Which,
    HowMany,
    HowMuch,
    Table {
        table: usize,
        plural: bool,
    },
    /// A column named; several candidates when tables share the word ("name").
    Column {
        candidates: Vec<(usize, usize)>,
    },
    /// Values of a column, found in the data (or, for a country, a real one the data lacks).
    Value {
        table: usize,
        column: usize,
        values: Vec<String>,
        present: bool,
    },
    /// Part of a name that fits several values.
    Ambiguous {
        text: String,
        table: usize,
        column: usize,
        matches: Vec<String>,
    },
    /// A name or quoted text nothing in the data matches.
    Unknown {
        text: String,
    },
    Id {
        table: Option<usize>,
        id: i64,
    },
    Number {
        value: f64,
        money: bool,
        percent: bool,
    },
    Compare {
        op: Op,
        value: f64,
        upper: Option<f64>,
        money: bool,
        percent: bool,
    },
    Period(Period),
    Relative,
    Future,
    Currency(String),
    Revenue,
    Sold,
    Worth,
    Count,
    Aggregate(Agg),
    Rank {
        descending: bool,
        by: Ranked,
    },
    Percent,
    Distinct,
    /// "per", "each", "broken down by".
    Group,
    /// "by": a grouping or what to rank by.
    By,
    Part(Part),
    Negation,
    /// "placed", "ordered", "bought": the relation between people and what they order.
    Relation,
    /// "times" after a number: how many rows.
    Times,
    Single,
    OutOfStock,
    Adjust {
        percent: f64,
        up: bool,
    },
    /// "including": a value added to what counts ("revenue including returned orders"), or
    /// a plain "with".
    Include,
    /// "excluding", "except": a value left out.
    Exclude,
    /// "if", "suppose": a hypothetical change to a figure.
    Hypothetical,
    /// "second", "third": a place in a ranking.
    Ordinal(usize),
}

/// A claim and the tokens it took.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Claimed {
    pub(crate) first: usize,
    pub(crate) last: usize,
    pub(crate) claim: Claim,
}

/// A question read against the schema and the data's values.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reading {
    pub(crate) tokens: Vec<Token>,
    /// In the order of the tokens.
    pub(crate) claims: Vec<Claimed>,
    /// Runs of tokens nothing placed, as written.
    pub(crate) unplaced: Vec<String>,
    /// What was assumed to place a token (a misspelt name, part of a name), for the answer.
    pub(crate) assumptions: Vec<String>,
}

impl Reading {
    /// The task's own words for a claim.
    pub(crate) fn said(&self, task: &str, claimed: &Claimed) -> String {
        text::said(task, &self.tokens[claimed.first..=claimed.last])
    }

    /// Whether any claim is this one.
    pub(crate) fn has(&self, wanted: impl Fn(&Claim) -> bool) -> bool {
        self.claims.iter().any(|c| wanted(&c.claim))
    }
}

/// Words that carry no meaning of their own in a question about data.
const FILLERS: [&str; 158] = [
    "a",
    "an",
    "the",
    "of",
    "for",
    "in",
    "on",
    "at",
    "to",
    "from",
    "with",
    "into",
    "onto",
    "about",
    "as",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "am",
    "do",
    "does",
    "did",
    "done",
    "doing",
    "have",
    "has",
    "had",
    "having",
    "can",
    "could",
    "would",
    "should",
    "may",
    "might",
    "must",
    "i",
    "me",
    "my",
    "mine",
    "we",
    "us",
    "our",
    "ours",
    "you",
    "your",
    "it",
    "its",
    "they",
    "them",
    "their",
    "there",
    "here",
    "this",
    "that",
    "these",
    "those",
    "please",
    "kindly",
    "tell",
    "show",
    "give",
    "list",
    "display",
    "print",
    "find",
    "get",
    "fetch",
    "return",
    "know",
    "want",
    "need",
    "like",
    "let",
    "see",
    "look",
    "up",
    "check",
    "and",
    "also",
    "just",
    "quick",
    "quickly",
    "question",
    "hey",
    "hi",
    "hello",
    "thanks",
    "thank",
    "so",
    "then",
    "now",
    "right",
    "actually",
    "really",
    "exactly",
    "approximately",
    "roughly",
    "around",
    "some",
    "any",
    "all",
    "ever",
    "yet",
    "still",
    "only",
    "data",
    "database",
    "db",
    "dataset",
    "shop",
    "store",
    "business",
    "company",
    "records",
    "record",
    "entries",
    "entry",
    "rows",
    "row",
    "info",
    "information",
    "details",
    "exist",
    "exists",
    "existing",
    "got",
    "gets",
    "getting",
    "receive",
    "received",
    "come",
    "came",
    "comes",
    "currently",
    "name",
    "named",
    "called",
    "figure",
    "figures",
    "amount",
    "result",
    "anyone",
    "anybody",
    "someone",
    "something",
    "anything",
    "altogether",
    "both",
    "either",
    "whole",
    "entire",
    "much",
    "many",
    "very",
];

/// Question words and phrases, and the words of operations, in one table: (phrase, claim).
fn vocabulary() -> Vec<(&'static str, Claim)> {
    use Claim::*;
    let rank = |descending: bool, by: Ranked| Rank { descending, by };
    let mut list: Vec<(&'static str, Claim)> = vec![
        ("who", Who),
        ("whom", Who),
        ("whose", Who),
        ("when", When),
        ("what date", When),
        ("which date", When),
        ("what day", When),
        ("what time", When),
        ("where", Where),
        ("what", Which),
        ("which", Which),
        ("whats", Which),
        ("how many", HowMany),
        ("how often", HowMany),
        ("how much", HowMuch),
        ("number of", Count),
        ("total number of", Count),
        ("count", Count),
        ("counts", Count),
        ("count of", Count),
        ("tally", Count),
        ("total", Aggregate(Agg::Sum)),
        ("totals", Aggregate(Agg::Sum)),
        ("sum", Aggregate(Agg::Sum)),
        ("sum of", Aggregate(Agg::Sum)),
        ("in total", Aggregate(Agg::Sum)),
        ("all together", Aggregate(Agg::Sum)),
        ("combined", Aggregate(Agg::Sum)),
        ("overall", Aggregate(Agg::Sum)),
        ("cumulative", Aggregate(Agg::Sum)),
        ("grand total", Aggregate(Agg::Sum)),
        ("add up", Aggregate(Agg::Sum)),
        ("adds up", Aggregate(Agg::Sum)),
        ("added up", Aggregate(Agg::Sum)),
        ("in all", Aggregate(Agg::Sum)),
        ("average", Aggregate(Agg::Avg)),
        ("averages", Aggregate(Agg::Avg)),
        ("avg", Aggregate(Agg::Avg)),
        ("mean", Aggregate(Agg::Avg)),
        ("on average", Aggregate(Agg::Avg)),
        ("median", Aggregate(Agg::Median)),
        ("minimum", Aggregate(Agg::Min)),
        ("min", Aggregate(Agg::Min)),
        ("maximum", Aggregate(Agg::Max)),
        ("max", Aggregate(Agg::Max)),
        ("most", rank(true, Ranked::Measure)),
        ("highest", rank(true, Ranked::Measure)),
        ("greatest", rank(true, Ranked::Measure)),
        ("largest", rank(true, Ranked::Measure)),
        ("biggest", rank(true, Ranked::Measure)),
        ("best", rank(true, Ranked::Measure)),
        ("top", rank(true, Ranked::Measure)),
        ("leading", rank(true, Ranked::Measure)),
        ("popular", rank(true, Ranked::Measure)),
        ("most popular", rank(true, Ranked::Measure)),
        ("valuable", rank(true, Ranked::Measure)),
        ("most valuable", rank(true, Ranked::Measure)),
        ("important", rank(true, Ranked::Measure)),
        ("most important", rank(true, Ranked::Measure)),
        ("loyal", rank(true, Ranked::Measure)),
        ("most loyal", rank(true, Ranked::Measure)),
        ("favourite", rank(true, Ranked::Measure)),
        ("favorite", rank(true, Ranked::Measure)),
        ("successful", rank(true, Ranked::Measure)),
        ("most successful", rank(true, Ranked::Measure)),
        ("profitable", rank(true, Ranked::Measure)),
        ("most profitable", rank(true, Ranked::Measure)),
        ("strongest", rank(true, Ranked::Measure)),
        ("least", rank(false, Ranked::Measure)),
        ("lowest", rank(false, Ranked::Measure)),
        ("smallest", rank(false, Ranked::Measure)),
        ("fewest", rank(false, Ranked::Measure)),
        ("worst", rank(false, Ranked::Measure)),
        ("bottom", rank(false, Ranked::Measure)),
        ("weakest", rank(false, Ranked::Measure)),
        ("least popular", rank(false, Ranked::Measure)),
        ("most expensive", rank(true, Ranked::Price)),
        ("priciest", rank(true, Ranked::Price)),
        ("dearest", rank(true, Ranked::Price)),
        ("highest priced", rank(true, Ranked::Price)),
        ("costliest", rank(true, Ranked::Price)),
        ("most costly", rank(true, Ranked::Price)),
        ("cheapest", rank(false, Ranked::Price)),
        ("least expensive", rank(false, Ranked::Price)),
        ("lowest priced", rank(false, Ranked::Price)),
        ("most affordable", rank(false, Ranked::Price)),
        ("least costly", rank(false, Ranked::Price)),
        ("latest", rank(true, Ranked::Date)),
        ("newest", rank(true, Ranked::Date)),
        ("most recent", rank(true, Ranked::Date)),
        ("most recently", rank(true, Ranked::Date)),
        ("last", rank(true, Ranked::Date)),
        ("oldest", rank(false, Ranked::Date)),
        ("earliest", rank(false, Ranked::Date)),
        ("first", rank(false, Ranked::Date)),
        ("longest standing", rank(false, Ranked::Date)),
        ("best selling", rank(true, Ranked::Units)),
        ("bestselling", rank(true, Ranked::Units)),
        ("best seller", rank(true, Ranked::Units)),
        ("best sellers", rank(true, Ranked::Units)),
        ("bestseller", rank(true, Ranked::Units)),
        ("bestsellers", rank(true, Ranked::Units)),
        ("top selling", rank(true, Ranked::Units)),
        ("most sold", rank(true, Ranked::Units)),
        ("sells the most", rank(true, Ranked::Units)),
        ("sold the most", rank(true, Ranked::Units)),
        ("sell the most", rank(true, Ranked::Units)),
        ("selling the most", rank(true, Ranked::Units)),
        ("sells best", rank(true, Ranked::Units)),
        ("sold best", rank(true, Ranked::Units)),
        ("sell best", rank(true, Ranked::Units)),
        ("worst selling", rank(false, Ranked::Units)),
        ("least sold", rank(false, Ranked::Units)),
        ("sold the least", rank(false, Ranked::Units)),
        ("sells the least", rank(false, Ranked::Units)),
        ("sold the fewest", rank(false, Ranked::Units)),
        ("sell the least", rank(false, Ranked::Units)),
        ("slowest selling", rank(false, Ranked::Units)),
        ("highest grossing", rank(true, Ranked::Revenue)),
        ("top grossing", rank(true, Ranked::Revenue)),
        ("highest earning", rank(true, Ranked::Revenue)),
        ("top earning", rank(true, Ranked::Revenue)),
        ("most lucrative", rank(true, Ranked::Revenue)),
        ("busiest", rank(true, Ranked::Count)),
        ("most common", rank(true, Ranked::Count)),
        ("most frequent", rank(true, Ranked::Count)),
        ("most frequently", rank(true, Ranked::Count)),
        ("most often", rank(true, Ranked::Count)),
        ("least common", rank(false, Ranked::Count)),
        ("rarest", rank(false, Ranked::Count)),
        ("least frequent", rank(false, Ranked::Count)),
        ("least often", rank(false, Ranked::Count)),
        ("quietest", rank(false, Ranked::Count)),
        ("percentage", Percent),
        ("percentages", Percent),
        ("percent", Percent),
        ("per cent", Percent),
        ("%", Percent),
        ("share", Percent),
        ("proportion", Percent),
        ("fraction", Percent),
        ("ratio", Percent),
        ("portion", Percent),
        ("what part", Percent),
        ("different", Distinct),
        ("distinct", Distinct),
        ("unique", Distinct),
        ("various", Distinct),
        ("per", Group),
        ("each", Group),
        ("every", Group),
        ("for each", Group),
        ("for every", Group),
        ("in each", Group),
        ("in every", Group),
        ("broken down by", Group),
        ("break down", Group),
        ("break down by", Group),
        ("breakdown", Group),
        ("breakdown by", Group),
        ("broken down", Group),
        ("split by", Group),
        ("grouped by", Group),
        ("group by", Group),
        ("across", Group),
        ("highest first", Filler),
        ("largest first", Filler),
        ("biggest first", Filler),
        ("most first", Filler),
        ("lowest first", Filler),
        ("smallest first", Filler),
        ("in descending order", Filler),
        ("in ascending order", Filler),
        ("descending", Filler),
        ("ascending", Filler),
        ("sorted", Filler),
        ("from highest to lowest", Filler),
        ("from lowest to highest", Filler),
        ("from most to least", Filler),
        ("second", Ordinal(2)),
        ("2nd", Ordinal(2)),
        ("third", Ordinal(3)),
        ("3rd", Ordinal(3)),
        ("fourth", Ordinal(4)),
        ("4th", Ordinal(4)),
        ("fifth", Ordinal(5)),
        ("5th", Ordinal(5)),
        ("by each", Group),
        ("by", By),
        ("sorted by", By),
        ("ranked by", By),
        ("ordered by", By),
        ("in terms of", By),
        ("based on", By),
        ("according to", By),
        ("day", Part(self::Part::Day)),
        ("days", Part(self::Part::Day)),
        ("daily", Part(self::Part::Day)),
        ("week", Part(self::Part::Week)),
        ("weeks", Part(self::Part::Week)),
        ("weekly", Part(self::Part::Week)),
        ("month", Part(self::Part::Month)),
        ("months", Part(self::Part::Month)),
        ("monthly", Part(self::Part::Month)),
        ("quarter", Part(self::Part::Quarter)),
        ("quarters", Part(self::Part::Quarter)),
        ("quarterly", Part(self::Part::Quarter)),
        ("year", Part(self::Part::Year)),
        ("years", Part(self::Part::Year)),
        ("yearly", Part(self::Part::Year)),
        ("annual", Part(self::Part::Year)),
        ("annually", Part(self::Part::Year)),
        ("weekday", Part(self::Part::Weekday)),
        ("weekdays", Part(self::Part::Weekday)),
        ("day of the week", Part(self::Part::Weekday)),
        ("days of the week", Part(self::Part::Weekday)),
        ("not", Negation),
        ("no", Negation),
        ("never", Negation),
        ("none", Negation),
        ("without", Negation),
        ("nothing", Negation),
        ("nobody", Negation),
        ("no one", Negation),
        ("placed", Relation),
        ("place", Relation),
        ("places", Relation),
        ("placing", Relation),
        ("ordered", Relation),
        ("buy", Relation),
        ("buys", Relation),
        ("bought", Relation),
        ("buying", Relation),
        ("purchased", Relation),
        ("made", Relation),
        ("make", Relation),
        ("makes", Relation),
        ("making", Relation),
        ("shopped", Relation),
        ("sold", Sold),
        ("sell", Sold),
        ("sells", Sold),
        ("selling", Sold),
        ("revenue", Revenue),
        ("revenues", Revenue),
        ("sales", Revenue),
        ("spent", Revenue),
        ("spend", Revenue),
        ("spends", Revenue),
        ("spending", Revenue),
        ("spender", Revenue),
        ("spenders", Revenue),
        ("earned", Revenue),
        ("earn", Revenue),
        ("earns", Revenue),
        ("earning", Revenue),
        ("earnings", Revenue),
        ("income", Revenue),
        ("turnover", Revenue),
        ("takings", Revenue),
        ("grossed", Revenue),
        ("gross", Revenue),
        ("money", Revenue),
        ("brought in", Revenue),
        ("bring in", Revenue),
        ("brings in", Revenue),
        ("bringing in", Revenue),
        ("generated", Revenue),
        ("generate", Revenue),
        ("generates", Revenue),
        ("generating", Revenue),
        ("paid", Revenue),
        ("pay", Revenue),
        ("order total", Revenue),
        ("order totals", Revenue),
        ("order value", Worth),
        ("value", Worth),
        ("values", Worth),
        ("valued", Worth),
        ("worth", Worth),
        ("times", Times),
        ("single", Single),
        ("individual", Single),
        ("out of stock", OutOfStock),
        ("sold out", OutOfStock),
        ("no stock", OutOfStock),
        ("zero stock", OutOfStock),
        ("not in stock", OutOfStock),
        ("unavailable", OutOfStock),
        ("none left", OutOfStock),
        ("ran out", OutOfStock),
        ("run out", OutOfStock),
        ("of all time", Filler),
        ("all time", Filler),
        ("so far", Filler),
        ("to date", Filler),
        ("in history", Filler),
        ("dollars", Filler),
        ("dollar", Filler),
        ("usd", Filler),
        ("bucks", Filler),
        ("with us", Filler),
        ("from us", Filler),
        ("e mail", Filler),
        ("current", Filler),
        ("table", Filler),
        ("catalog", Filler),
        ("catalogue", Filler),
        ("listed", Filler),
        ("offer", Filler),
        ("offered", Filler),
        ("range", Filler),
        ("but", Filler),
        ("use", Filler),
        ("uses", Filler),
        ("using", Filler),
        ("fall under", Filler),
        ("falls under", Filler),
        ("fall into", Filler),
        ("falls into", Filler),
        ("belong to", Filler),
        ("belongs to", Filler),
        ("part of", Filler),
        ("filed under", Filler),
        ("listed under", Filler),
        ("at the moment", Filler),
        ("right now", Filler),
        ("at current prices", Filler),
        ("current prices", Filler),
        ("including", Include),
        ("include", Include),
        ("includes", Include),
        ("included", Include),
        ("contain", Include),
        ("contains", Include),
        ("contained", Include),
        ("containing", Include),
        ("excluding", Exclude),
        ("exclude", Exclude),
        ("except", Exclude),
        ("except for", Exclude),
        ("other than", Exclude),
        ("apart from", Exclude),
        ("not counting", Exclude),
        ("leaving out", Exclude),
        ("if", Hypothetical),
        ("what if", Hypothetical),
        ("suppose", Hypothetical),
        ("supposing", Hypothetical),
        ("assuming", Hypothetical),
        ("imagine", Hypothetical),
        ("hypothetically", Hypothetical),
    ];
    for (number, word) in [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve", "fifteen", "twenty",
    ]
    .iter()
    .enumerate()
    .map(|(i, w)| {
        let value = match i {
            12 => 15,
            13 => 20,
            _ => i + 1,
        };
        (value, *w)
    }) {
        list.push((
            word,
            Number {
                value: number as f64,
                money: false,
                percent: false,
            },
        ));
    }
    list
}

/// Comparison phrases before a number.
const COMPARISONS: [(&str, Op); 34] = [
    ("more than", Op::Gt),
    ("over", Op::Gt),
    ("above", Op::Gt),
    ("greater than", Op::Gt),
    ("higher than", Op::Gt),
    ("bigger than", Op::Gt),
    ("larger than", Op::Gt),
    ("exceeding", Op::Gt),
    ("exceeds", Op::Gt),
    ("exceed", Op::Gt),
    ("in excess of", Op::Gt),
    ("pricier than", Op::Gt),
    ("more expensive than", Op::Gt),
    ("older than", Op::Gt),
    ("at least", Op::Ge),
    ("no less than", Op::Ge),
    ("no fewer than", Op::Ge),
    ("a minimum of", Op::Ge),
    ("less than", Op::Lt),
    ("under", Op::Lt),
    ("below", Op::Lt),
    ("fewer than", Op::Lt),
    ("lower than", Op::Lt),
    ("smaller than", Op::Lt),
    ("cheaper than", Op::Lt),
    ("less expensive than", Op::Lt),
    ("beneath", Op::Lt),
    ("at most", Op::Le),
    ("no more than", Op::Le),
    ("up to", Op::Le),
    ("a maximum of", Op::Le),
    ("exactly", Op::Eq),
    ("equal to", Op::Eq),
    ("equals", Op::Eq),
];

/// The state of a reading in progress: which claim took each token.
struct Claims<'a> {
    tokens: &'a [Token],
    owner: Vec<Option<usize>>,
    claims: Vec<Claimed>,
    assumptions: Vec<String>,
}

impl Claims<'_> {
    fn free(&self, index: usize) -> bool {
        index < self.tokens.len() && self.owner[index].is_none()
    }

    fn claim(&mut self, first: usize, last: usize, claim: Claim) {
        let index = self.claims.len();
        for owner in &mut self.owner[first..=last] {
            *owner = Some(index);
        }
        self.claims.push(Claimed { first, last, claim });
    }

    /// The length in tokens of `phrase` (words separated by spaces) at `at`, when every token
    /// there is free and matches; `plural_last` lets the last word be in the plural.
    fn phrase_at(&self, at: usize, phrase: &[String], plural_last: bool) -> Option<usize> {
        let mut cursor = at;
        for (index, word) in phrase.iter().enumerate() {
            let last = index + 1 == phrase.len();
            // "&" in a value meets "and" in a task.
            let token = self.tokens.get(cursor)?;
            if !self.free(cursor) {
                return None;
            }
            let matches = token.lower == *word
                || (word == "&" && token.lower == "and")
                || (last && plural_last && same_word(&token.lower, word));
            if !matches {
                return None;
            }
            cursor += 1;
        }
        Some(cursor - at)
    }
}

/// Reads a question against the schema and the data's values.
pub(crate) fn read(task: &str, schema: &Schema, values: &Values) -> Reading {
    let tokens = text::tokens(task);
    let mut state = Claims {
        tokens: &tokens,
        owner: vec![None; tokens.len()],
        claims: Vec::new(),
        assumptions: Vec::new(),
    };
    periods_and_future(&mut state);
    comparisons(&mut state);
    ids(&mut state, schema);
    currencies(&mut state);
    adjustments(&mut state);
    data_values(&mut state, schema, values);
    rates_of_values(&mut state, schema, values);
    quoted(&mut state, schema, values);
    words(&mut state, schema);
    numbers(&mut state);
    parts_of_names(&mut state, schema, values);
    misspellings(&mut state, schema, values);
    fillers(&mut state);
    unknown_names(&mut state);
    let mut unplaced = Vec::new();
    let mut run: Vec<usize> = Vec::new();
    for index in 0..=tokens.len() {
        if index < tokens.len() && state.free(index) {
            run.push(index);
        } else if !run.is_empty() {
            unplaced.push(text::said(task, &tokens[run[0]..=run[run.len() - 1]]));
            run.clear();
        }
    }
    let mut claims = state.claims;
    claims.sort_by_key(|c| c.first);
    let assumptions = state.assumptions;
    Reading {
        tokens,
        claims,
        unplaced,
        assumptions,
    }
}

fn periods_and_future(state: &mut Claims<'_>) {
    let found = {
        let free = |i: usize| state.free(i);
        periods::recognize(state.tokens, &free)
    };
    for (first, last, found) in found {
        let claim = match found {
            Found::Period(period) => Claim::Period(period),
            Found::Relative => Claim::Relative,
            Found::Future => Claim::Future,
        };
        state.claim(first, last, claim);
    }
}

fn number_token(token: &Token) -> Option<(f64, bool, bool)> {
    match token.kind {
        Kind::Number {
            value,
            money,
            percent,
            hash: false,
        } => Some((value, money, percent)),
        _ => None,
    }
}

/// A small number written as a word ("more than one unit").
fn number_word(word: &str) -> Option<f64> {
    [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ]
    .iter()
    .position(|w| *w == word)
    .map(|n| n as f64)
}

fn comparisons(state: &mut Claims<'_>) {
    let tokens = state.tokens;
    for at in 0..tokens.len() {
        if !state.free(at) {
            continue;
        }
        // "between $20 and $50", "between 10 and 20 units".
        if tokens[at].is("between")
            && let (Some((low, money, percent)), Some(and), Some((high, money_high, _))) = (
                tokens.get(at + 1).and_then(number_token),
                tokens.get(at + 2),
                tokens.get(at + 3).and_then(number_token),
            )
            && (and.is("and") || and.is("to"))
            && (at + 1..=at + 3).all(|i| state.free(i))
        {
            let mut last = at + 3;
            let money = money || money_high || absorb_money_word(state, &mut last);
            state.claim(
                at,
                last,
                Claim::Compare {
                    op: Op::Ge,
                    value: low,
                    upper: Some(high),
                    money,
                    percent,
                },
            );
            continue;
        }
        // Symbols: "> 100", ">= 5".
        if let Kind::Symbol(symbol) = &tokens[at].kind
            && let Some((value, money, percent)) = tokens.get(at + 1).and_then(number_token)
            && state.free(at + 1)
        {
            let op = match symbol.as_str() {
                ">" => Some(Op::Gt),
                ">=" => Some(Op::Ge),
                "<" => Some(Op::Lt),
                "<=" => Some(Op::Le),
                "=" => Some(Op::Eq),
                _ => None,
            };
            if let Some(op) = op {
                let mut last = at + 1;
                let money = money || absorb_money_word(state, &mut last);
                state.claim(
                    at,
                    last,
                    Claim::Compare {
                        op,
                        value,
                        upper: None,
                        money,
                        percent,
                    },
                );
                continue;
            }
        }
        for (phrase, op) in COMPARISONS {
            let words: Vec<String> = phrase.split(' ').map(str::to_owned).collect();
            let Some(length) = state.phrase_at(at, &words, false) else {
                continue;
            };
            let number_at = at + length;
            let Some((value, money, percent)) = tokens.get(number_at).and_then(|t| {
                number_token(t).or_else(|| number_word(&t.lower).map(|n| (n, false, false)))
            }) else {
                continue;
            };
            if !state.free(number_at) {
                continue;
            }
            let mut last = number_at;
            let money = money || absorb_money_word(state, &mut last);
            state.claim(
                at,
                last,
                Claim::Compare {
                    op,
                    value,
                    upper: None,
                    money,
                    percent,
                },
            );
            break;
        }
    }
    // "5 or more orders", "10 or fewer".
    for at in 0..tokens.len() {
        let Some((value, money, percent)) = tokens.get(at).and_then(number_token) else {
            continue;
        };
        let word = |i: usize| tokens.get(i).map(|t| t.lower.as_str()).unwrap_or("");
        let op =
            match (word(at + 1), word(at + 2)) {
                ("or", "more" | "above" | "greater" | "higher" | "over")
                | ("and", "above" | "up") => Some(Op::Ge),
                ("or", "less" | "fewer" | "below" | "under" | "lower")
                | ("and", "below" | "under") => Some(Op::Le),
                ("plus", _) => Some(Op::Ge),
                _ => None,
            };
        let length = if word(at + 1) == "plus" { 1 } else { 2 };
        if let Some(op) = op
            && (at..=at + length).all(|i| state.free(i))
        {
            state.claim(
                at,
                at + length,
                Claim::Compare {
                    op,
                    value,
                    upper: None,
                    money,
                    percent,
                },
            );
        }
    }
}

/// "100 dollars": the unit word after a number joins the comparison.
fn absorb_money_word(state: &Claims<'_>, last: &mut usize) -> bool {
    if let Some(token) = state.tokens.get(*last + 1)
        && state.free(*last + 1)
        && matches!(
            token.lower.as_str(),
            "dollars" | "dollar" | "usd" | "bucks" | "euros" | "eur" | "pounds"
        )
    {
        *last += 1;
        return true;
    }
    false
}

fn ids(state: &mut Claims<'_>, schema: &Schema) {
    let tokens = state.tokens;
    for at in 0..tokens.len() {
        if !state.free(at) {
            continue;
        }
        let hashed = |t: &Token| matches!(t.kind, Kind::Number { hash: true, .. });
        let integer = |t: &Token| {
            t.number()
                .filter(|n| n.fract() == 0.0 && *n >= 0.0)
                .filter(|_| {
                    !matches!(
                        t.kind,
                        Kind::Number { money: true, .. } | Kind::Number { percent: true, .. }
                    )
                })
        };
        // "#42" alone.
        if hashed(&tokens[at]) {
            let id = tokens[at].number().unwrap_or(0.0) as i64;
            let table = at
                .checked_sub(1)
                .and_then(|b| table_word(schema, &tokens[b].lower).map(|(t, _)| (b, t)));
            match table {
                Some((before, table)) if state.free(before) => state.claim(
                    before,
                    at,
                    Claim::Id {
                        table: Some(table),
                        id,
                    },
                ),
                _ => state.claim(at, at, Claim::Id { table: None, id }),
            }
            continue;
        }
        // "order 42", "order number 42", "order no 42", "order id 42", "id 42".
        let table = table_word(schema, &tokens[at].lower).filter(|(_, plural)| !plural);
        let is_id_word = tokens[at].is("id");
        if table.is_none() && !is_id_word {
            continue;
        }
        let mut cursor = at + 1;
        if table.is_some()
            && tokens
                .get(cursor)
                .is_some_and(|t| matches!(t.lower.as_str(), "number" | "no" | "id" | "num"))
        {
            cursor += 1;
        }
        if let Some(id) = tokens
            .get(cursor)
            .and_then(|t| integer(t).or_else(|| t.number()))
            && (at..=cursor).all(|i| state.free(i))
            && tokens
                .get(cursor)
                .is_some_and(|t| integer(t).is_some() || hashed(t))
        {
            state.claim(
                at,
                cursor,
                Claim::Id {
                    table: table.map(|(t, _)| t),
                    id: id as i64,
                },
            );
        }
    }
}

/// The table a word names, and whether in the plural.
fn table_word(schema: &Schema, word: &str) -> Option<(usize, bool)> {
    schema.entities.iter().enumerate().find_map(|(t, e)| {
        if e.singular.iter().any(|w| w == word) {
            Some((t, false))
        } else if e.plural.iter().any(|w| w == word) {
            Some((t, true))
        } else {
            None
        }
    })
}

fn currencies(state: &mut Claims<'_>) {
    let tokens = state.tokens;
    for at in 0..tokens.len() {
        if !state.free(at) || !matches!(tokens[at].lower.as_str(), "in" | "into" | "to" | "as") {
            continue;
        }
        // Longest name first ("canadian dollars" before "dollars").
        let mut best: Option<(usize, String)> = None;
        for (name, code) in rates::NAMES {
            let words: Vec<String> = name.split(' ').map(str::to_owned).collect();
            if let Some(length) = state.phrase_at(at + 1, &words, true)
                && best.as_ref().is_none_or(|(l, _)| length > *l)
            {
                best = Some((length, code.to_owned()));
            }
        }
        if best.is_none()
            && let Some(token) = tokens.get(at + 1)
            && state.free(at + 1)
            && token.text.len() == 3
            && rates::CODES.contains(&token.text.to_uppercase().as_str())
            && (token.text.chars().all(|c| c.is_ascii_uppercase()) || token.lower != "try")
        {
            best = Some((1, token.text.to_uppercase()));
        }
        if let Some((length, code)) = best {
            state.claim(at, at + length, Claim::Currency(code));
        }
    }
}

/// "went up by 15%", "15% off", "plus 8% tax": a change to apply to a figure.
fn adjustments(state: &mut Claims<'_>) {
    let tokens = state.tokens;
    let word = |i: usize| tokens.get(i).map(|t| t.lower.as_str()).unwrap_or("");
    for at in 0..tokens.len() {
        let Some((percent, _, true)) = tokens.get(at).and_then(number_token) else {
            continue;
        };
        if !state.free(at) {
            continue;
        }
        // Words before: "went up by", "increased by", "rose by", "with a", "plus".
        let mut first = at;
        let mut up: Option<bool> = None;
        if word(at.wrapping_sub(1)) == "by" {
            let verb = word(at.wrapping_sub(2));
            let (verb_at, direction) = match verb {
                "up" => (at - 3, Some(true)),
                "down" => (at - 3, Some(false)),
                "increased" | "increase" | "increases" | "rose" | "rise" | "rises" | "raised"
                | "raise" | "grew" | "grow" | "climbed" | "jumped" => (at - 2, Some(true)),
                "decreased" | "decrease" | "decreases" | "dropped" | "drop" | "fell" | "fall"
                | "cut" | "reduced" | "reduce" | "lowered" | "lower" | "discounted" => {
                    (at - 2, Some(false))
                }
                _ => (at, None),
            };
            if direction.is_some() && (verb_at..at).all(|i| state.free(i)) {
                first = verb_at;
                up = direction;
            }
        }
        let mut last = at;
        if up.is_none() {
            match (word(at + 1), word(at + 2)) {
                ("off", _) | ("discount", _) => {
                    up = Some(false);
                    last = at + 1;
                }
                ("more", _)
                | ("higher", _)
                | ("tax", _)
                | ("tip", _)
                | ("markup", _)
                | ("surcharge", _) => {
                    up = Some(true);
                    last = at + 1;
                }
                ("sales", "tax") => {
                    up = Some(true);
                    last = at + 2;
                }
                ("less", _) | ("lower", _) | ("cheaper", _) => {
                    up = Some(false);
                    last = at + 1;
                }
                _ => {}
            }
            if up.is_some() && matches!(word(at.wrapping_sub(1)), "a" | "plus" | "with" | "add") {
                first = at - 1;
                if matches!(word(first.wrapping_sub(1)), "with" | "plus") {
                    first -= 1;
                }
            }
        }
        if let Some(up) = up
            && (first..=last).all(|i| state.free(i))
        {
            state.claim(first, last, Claim::Adjust { percent, up });
        }
    }
}

/// A value's words: (words, table, column, value, present in the data, written as the value
/// itself rather than a name for it).
type ValuePhrase = (Vec<String>, usize, usize, String, bool, bool);

/// The phrases of every value in the data (and of countries for a column of codes).
fn value_phrases(schema: &Schema, values: &Values) -> Vec<ValuePhrase> {
    let mut phrases = Vec::new();
    for listed in &values.columns {
        for value in &listed.values {
            let words = text::value_words(value);
            if !words.is_empty() {
                phrases.push((
                    words,
                    listed.table,
                    listed.column,
                    value.clone(),
                    true,
                    true,
                ));
            }
        }
        // A column of country codes: every country's name and adjective.
        let concept = schema.entities[listed.table].columns[listed.column].concept;
        let codes = !listed.values.is_empty()
            && listed
                .values
                .iter()
                .all(|v| v.len() == 2 && v.chars().all(|c| c.is_ascii_uppercase()));
        if concept == Concept::Place && codes && listed.complete {
            for (name, code) in countries::names() {
                let present = listed.values.iter().any(|v| v == code);
                phrases.push((
                    name.split(' ').map(str::to_owned).collect(),
                    listed.table,
                    listed.column,
                    code.to_owned(),
                    present,
                    false,
                ));
            }
        }
    }
    // Longest first.
    phrases.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
    phrases
}

fn data_values(state: &mut Claims<'_>, schema: &Schema, values: &Values) {
    let phrases = value_phrases(schema, values);
    let tokens = state.tokens;
    for (at, token) in tokens.iter().enumerate() {
        if !state.free(at) {
            continue;
        }
        for (words, table, column, value, present, literal) in &phrases {
            // Short values (codes such as "US", "DE") only as written in capitals.
            if value.chars().count() <= 3 && *literal {
                if words.len() == 1 && token.text == *value && token.is_word() {
                    push_value(state, at, at, *table, *column, value, true);
                    break;
                }
                continue;
            }
            if let Some(length) = state.phrase_at(at, words, true) {
                // "may" or "us" as a word is no value.
                push_value(state, at, at + length - 1, *table, *column, value, *present);
                break;
            }
        }
    }
}

/// "the return rate", "the cancellation rate": the share of rows with that status.
fn rates_of_values(state: &mut Claims<'_>, schema: &Schema, values: &Values) {
    let tokens = state.tokens;
    for at in 1..tokens.len() {
        if !(tokens[at].is("rate") && state.free(at) && state.free(at - 1)) {
            continue;
        }
        let word = &tokens[at - 1].lower;
        if word.len() < 6 {
            continue;
        }
        let found: Vec<(usize, usize, String)> = values
            .columns
            .iter()
            .filter(|c| {
                c.complete
                    && schema.entities[c.table].columns[c.column]
                        .concept
                        .is_dimension()
            })
            .flat_map(|c| {
                c.values
                    .iter()
                    .filter(|v| {
                        let v = v.to_lowercase();
                        let shared = v
                            .chars()
                            .zip(word.chars())
                            .take_while(|(a, b)| a == b)
                            .count();
                        shared >= 6
                    })
                    .map(|v| (c.table, c.column, v.clone()))
            })
            .collect();
        if let [(table, column, value)] = found.as_slice() {
            push_value(state, at - 1, at - 1, *table, *column, value, true);
            state.claim(at, at, Claim::Percent);
        }
    }
}

/// Adds a value claim, or widens an adjacent claim of the same column ("France or Germany").
fn push_value(
    state: &mut Claims<'_>,
    first: usize,
    last: usize,
    table: usize,
    column: usize,
    value: &str,
    present: bool,
) {
    // "the customers from France or Germany": two values of one column, joined by "or"/"and".
    if first >= 2
        && matches!(state.tokens[first - 1].lower.as_str(), "or" | "and" | ",")
        && let Some(previous) = state.owner[first - 2]
        && let Claim::Value {
            table: t,
            column: c,
            values,
            present: p,
        } = &mut state.claims[previous].claim
        && *t == table
        && *c == column
    {
        if !values.iter().any(|v| v == value) {
            values.push(value.to_owned());
        }
        *p |= present;
        state.claims[previous].last = last;
        for owner in &mut state.owner[first - 1..=last] {
            *owner = Some(previous);
        }
        return;
    }
    state.claim(
        first,
        last,
        Claim::Value {
            table,
            column,
            values: vec![value.to_owned()],
            present,
        },
    );
}

fn quoted(state: &mut Claims<'_>, schema: &Schema, values: &Values) {
    let tokens = state.tokens;
    for (at, token) in tokens.iter().enumerate() {
        let Kind::Quoted(text) = &token.kind else {
            continue;
        };
        if !state.free(at) {
            continue;
        }
        let lower = text.to_lowercase();
        let exact = values.columns.iter().find_map(|listed| {
            listed
                .values
                .iter()
                .find(|v| v.to_lowercase() == lower)
                .map(|v| (listed.table, listed.column, v.clone()))
        });
        match exact {
            Some((table, column, value)) => {
                push_value(state, at, at, table, column, &value, true);
            }
            None => match near_value(&lower, schema, values) {
                Near::One(table, column, value) => {
                    state.assumptions.push(format!(
                        "read \"{text}\" as {value}, the closest value in the data"
                    ));
                    push_value(state, at, at, table, column, &value, true);
                }
                _ => state.claim(at, at, Claim::Unknown { text: text.clone() }),
            },
        }
    }
}

enum Near {
    None,
    One(usize, usize, String),
    Several(usize, usize, Vec<String>),
}

/// The values a misspelt text is close to: word by word, each word the same or near.
fn near_value(text: &str, _schema: &Schema, values: &Values) -> Near {
    let typed: Vec<String> = text::value_words(text);
    if typed.is_empty() {
        return Near::None;
    }
    let mut found: Vec<(usize, usize, String)> = Vec::new();
    for listed in &values.columns {
        for value in &listed.values {
            let words = text::value_words(value);
            if words.len() != typed.len() {
                continue;
            }
            let all_near = typed
                .iter()
                .zip(&words)
                .all(|(t, w)| same_word(t, w) || near_word(t, w));
            if all_near {
                found.push((listed.table, listed.column, value.clone()));
            }
        }
    }
    match found.len() {
        0 => Near::None,
        1 => {
            let (t, c, v) = found.remove(0);
            Near::One(t, c, v)
        }
        _ => {
            let (t, c, _) = found[0].clone();
            Near::Several(t, c, found.into_iter().map(|(_, _, v)| v).collect())
        }
    }
}

/// The schema's words: tables and columns, with the vocabulary of questions, longest first.
fn schema_phrases(schema: &Schema) -> Vec<(Vec<String>, Claim)> {
    let mut phrases: Vec<(Vec<String>, Claim)> = Vec::new();
    let split = |phrase: &str| -> Vec<String> { phrase.split(' ').map(str::to_owned).collect() };
    for (t, entity) in schema.entities.iter().enumerate() {
        for word in &entity.singular {
            phrases.push((
                split(word),
                Claim::Table {
                    table: t,
                    plural: false,
                },
            ));
        }
        for word in &entity.plural {
            phrases.push((
                split(word),
                Claim::Table {
                    table: t,
                    plural: true,
                },
            ));
        }
    }
    let mut columns: Vec<(String, Vec<(usize, usize)>)> = Vec::new();
    for (t, entity) in schema.entities.iter().enumerate() {
        for (c, column) in entity.columns.iter().enumerate() {
            let mut words = column.words.clone();
            // Plain English for money and stock ("expensive", "cheap").
            if column.concept == Concept::Price {
                words.extend(
                    [
                        "expensive",
                        "cheap",
                        "cheaper",
                        "pricey",
                        "pricier",
                        "affordable",
                        "costly",
                    ]
                    .map(str::to_owned),
                );
            }
            if column.concept == Concept::Stock {
                words.extend(
                    [
                        "units in stock",
                        "items in stock",
                        "in stock",
                        "units of stock",
                    ]
                    .map(str::to_owned),
                );
            }
            for word in words {
                match columns.iter_mut().find(|(w, _)| *w == word) {
                    Some((_, candidates)) => {
                        if !candidates.contains(&(t, c)) {
                            candidates.push((t, c));
                        }
                    }
                    None => columns.push((word, vec![(t, c)])),
                }
            }
        }
    }
    // "product category", "customer name", "order date": a column named with its table.
    for (t, entity) in schema.entities.iter().enumerate() {
        for (c, column) in entity.columns.iter().enumerate() {
            for table_word in &entity.singular {
                for word in &column.words {
                    let phrase = format!("{table_word} {word}");
                    match columns.iter_mut().find(|(w, _)| *w == phrase) {
                        Some((_, candidates)) => {
                            if !candidates.contains(&(t, c)) {
                                candidates.push((t, c));
                            }
                        }
                        None => columns.push((phrase, vec![(t, c)])),
                    }
                }
            }
        }
    }
    // The phrases so far, joined, so each new one is checked against them in O(1): checking by a
    // scan of the list made this quadratic, most of the planner's time on every question.
    let mut seen: std::collections::HashSet<String> =
        phrases.iter().map(|(w, _)| w.join(" ")).collect();
    for (word, candidates) in columns {
        // A table's own name is the table, not a column ("order" is not `ordered_at`).
        if seen.contains(&word) {
            continue;
        }
        phrases.push((split(&word), Claim::Column { candidates }));
        seen.insert(word);
    }
    for (phrase, claim) in vocabulary() {
        let words = split(phrase);
        if !seen.insert(words.join(" ")) {
            continue;
        }
        phrases.push((words, claim));
    }
    phrases.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
    phrases
}

fn words(state: &mut Claims<'_>, schema: &Schema) {
    let phrases = schema_phrases(schema);
    for at in 0..state.tokens.len() {
        if !state.free(at) || !(state.tokens[at].is_word() || is_symbol(&state.tokens[at], "%")) {
            continue;
        }
        for (words, claim) in &phrases {
            if let Some(length) = state.phrase_at(at, words, false) {
                state.claim(at, at + length - 1, claim.clone());
                break;
            }
        }
    }
}

fn is_symbol(token: &Token, symbol: &str) -> bool {
    matches!(&token.kind, Kind::Symbol(s) if s == symbol)
}

fn numbers(state: &mut Claims<'_>) {
    for at in 0..state.tokens.len() {
        if !state.free(at) {
            continue;
        }
        if let Some((value, money, percent)) = number_token(&state.tokens[at]) {
            let mut last = at;
            let money = money || absorb_money_word(state, &mut last);
            state.claim(
                at,
                last,
                Claim::Number {
                    value,
                    money,
                    percent,
                },
            );
        }
    }
}

/// A word that is part of one value's name: "Okafor" (one customer of that name), "keyboard"
/// (the one product whose name ends so). Several values: ambiguous, said so.
fn parts_of_names(state: &mut Claims<'_>, schema: &Schema, values: &Values) {
    let tokens = state.tokens;
    let mut at = 0;
    while at < tokens.len() {
        if !state.free(at) || !tokens[at].is_word() {
            at += 1;
            continue;
        }
        // A run of capitalised words ("Ada Okafro", "Tom Baker"), or one word.
        let name_like = |t: &Token| {
            t.is_word()
                && t.text.chars().next().is_some_and(char::is_uppercase)
                && !FILLERS.contains(&t.lower.as_str())
        };
        let mut end = at;
        if name_like(&tokens[at]) {
            while end + 1 < tokens.len()
                && state.free(end + 1)
                && name_like(&tokens[end + 1])
                && !tokens[end].possessive
            {
                end += 1;
            }
        }
        let written: Vec<String> = tokens[at..=end].iter().map(|t| t.lower.clone()).collect();
        let phrase = written.join(" ");
        // The whole run misspelt: each word near the value's.
        if end > at || name_like(&tokens[at]) {
            match near_value(&phrase, schema, values) {
                Near::One(table, column, value) => {
                    state.assumptions.push(format!(
                        "read \"{}\" as {value}, the closest name in the data",
                        text::said_words(&tokens[at..=end])
                    ));
                    push_value(state, at, end, table, column, &value, true);
                    at = end + 1;
                    continue;
                }
                Near::Several(table, column, matches) => {
                    state.claim(
                        at,
                        end,
                        Claim::Ambiguous {
                            text: text::said_words(&tokens[at..=end]),
                            table,
                            column,
                            matches,
                        },
                    );
                    at = end + 1;
                    continue;
                }
                Near::None => {}
            }
        }
        // One word, part of label values: a capitalised word anywhere in a name, a lowercase
        // one only as the name's last word ("keyboards" for "Mechanical Keyboard").
        if end == at {
            let word = &tokens[at].lower;
            let capital = name_like(&tokens[at]);
            let mut found: Vec<(usize, usize, String)> = Vec::new();
            for listed in &values.columns {
                if schema.entities[listed.table].columns[listed.column].concept != Concept::Label {
                    continue;
                }
                for value in &listed.values {
                    let words = text::value_words(value);
                    let fits = if capital {
                        words.iter().any(|w| same_word(word, w))
                    } else {
                        words.len() > 1
                            && words.last().is_some_and(|w| same_word(word, w))
                            && word.len() >= 4
                    };
                    if fits {
                        found.push((listed.table, listed.column, value.clone()));
                    }
                }
            }
            match found.len() {
                0 => {}
                1 => {
                    let (table, column, value) = found.remove(0);
                    state.assumptions.push(format!(
                        "read \"{}\" as {value}, the only {} of that name",
                        tokens[at].text,
                        schema.entities[table]
                            .singular
                            .first()
                            .cloned()
                            .unwrap_or_default()
                    ));
                    push_value(state, at, at, table, column, &value, true);
                }
                _ => {
                    let (table, column, _) = found[0].clone();
                    state.claim(
                        at,
                        at,
                        Claim::Ambiguous {
                            text: tokens[at].text.clone(),
                            table,
                            column,
                            matches: found.into_iter().map(|(_, _, v)| v).collect(),
                        },
                    );
                }
            }
        }
        at = end + 1;
    }
}

/// A word left over that is a likely misspelling of exactly one value or one word the reading
/// knows ("custmers", "expencive", "cancled", "Sprots").
fn misspellings(state: &mut Claims<'_>, schema: &Schema, values: &Values) {
    let phrases = schema_phrases(schema);
    let value_words = value_phrases(schema, values);
    for at in 0..state.tokens.len() {
        let token = &state.tokens[at];
        if !state.free(at) || !token.is_word() || FILLERS.contains(&token.lower.as_str()) {
            continue;
        }
        let word = token.lower.clone();
        // Each candidate with its distance; the nearest wins, a tie between two different
        // meanings places nothing.
        let mut candidates: Vec<(usize, Claim)> = Vec::new();
        let mut consider = |target: &str, claim: Claim| {
            if near_word(&word, target) {
                let distance = super::super::words::edit_distance(&word, target);
                candidates.push((distance, claim));
            }
        };
        for (words, table, column, value, present, _) in &value_words {
            if words.len() == 1 {
                consider(
                    &words[0],
                    Claim::Value {
                        table: *table,
                        column: *column,
                        values: vec![value.clone()],
                        present: *present,
                    },
                );
            }
        }
        for (words, claim) in &phrases {
            if words.len() == 1 {
                consider(&words[0], claim.clone());
            }
        }
        let Some(best) = candidates.iter().map(|(d, _)| *d).min() else {
            continue;
        };
        let mut nearest: Vec<Claim> = Vec::new();
        for (distance, claim) in candidates {
            // The singular and plural of one table are one meaning.
            let claim = match claim {
                Claim::Table { table, .. } => Claim::Table {
                    table,
                    plural: word.ends_with('s'),
                },
                other => other,
            };
            if distance == best && !nearest.contains(&claim) {
                nearest.push(claim);
            }
        }
        if nearest.len() == 1 {
            let claim = nearest.remove(0);
            if let Claim::Value { values, .. } = &claim {
                state
                    .assumptions
                    .push(format!("read \"{}\" as {}", token.text, values.join(", ")));
            }
            state.claim(at, at, claim);
        }
    }
}

fn fillers(state: &mut Claims<'_>) {
    for at in 0..state.tokens.len() {
        if state.free(at)
            && (FILLERS.contains(&state.tokens[at].lower.as_str())
                || is_symbol(&state.tokens[at], "&"))
            && state.tokens[at].is_word() | is_symbol(&state.tokens[at], "&")
        {
            state.claim(at, at, Claim::Filler);
        }
    }
}

/// A capitalised name nothing matched: the answer will say nothing in the data is called so.
fn unknown_names(state: &mut Claims<'_>) {
    let tokens = state.tokens;
    let mut at = 0;
    while at < tokens.len() {
        let name_like =
            |t: &Token| t.is_word() && t.text.chars().next().is_some_and(char::is_uppercase);
        if !state.free(at) || !name_like(&tokens[at]) {
            at += 1;
            continue;
        }
        let mut end = at;
        while end + 1 < tokens.len()
            && state.free(end + 1)
            && name_like(&tokens[end + 1])
            && !tokens[end].possessive
        {
            end += 1;
        }
        // A lone capitalised word at the start of a sentence is just a word.
        if end == at && tokens[at].sentence_start {
            at += 1;
            continue;
        }
        let text = text::said_words(&tokens[at..=end]);
        state.claim(at, end, Claim::Unknown { text });
        at = end + 1;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::planner::ask::schema::{tests::shop_tables, understand};
    use crate::planner::ask::values::ColumnValues;

    pub(crate) fn shop_values() -> Values {
        let column = |table, column, values: &[&str]| ColumnValues {
            table,
            column,
            values: values.iter().map(|v| (*v).to_owned()).collect(),
            complete: true,
        };
        Values {
            columns: vec![
                column(
                    0,
                    1,
                    &[
                        "Ada Okafor",
                        "Dana Okafor",
                        "Julia Garcia",
                        "Hana Lindqvist",
                        "Chen Schmidt",
                    ],
                ),
                column(0, 3, &["US", "DE", "GB", "JP"]),
                column(
                    1,
                    1,
                    &[
                        "Wireless Mouse",
                        "Mechanical Keyboard",
                        "Yoga Mat",
                        "Standing Desk Mat",
                        "Rust in Action",
                        "Chef's Knife",
                    ],
                ),
                column(1, 2, &["Electronics", "Books", "Home & Kitchen", "Sports"]),
                column(2, 5, &["completed", "cancelled", "returned", "pending"]),
            ],
            spans: vec![(2, 4, "2024-07-01".into(), "2025-06-30".into())],
        }
    }

    fn reading(task: &str) -> Reading {
        read(task, &understand(&shop_tables()), &shop_values())
    }

    fn kinds(task: &str) -> Vec<Claim> {
        reading(task)
            .claims
            .into_iter()
            .map(|c| c.claim)
            .filter(|c| *c != Claim::Filler)
            .collect()
    }

    #[test]
    fn a_count_with_a_country_is_read_whole() {
        let read = reading("How many customers are from Germany?");
        assert!(read.unplaced.is_empty(), "{:?}", read.unplaced);
        assert_eq!(
            kinds("How many customers are from Germany?"),
            [
                Claim::HowMany,
                Claim::Table {
                    table: 0,
                    plural: true
                },
                Claim::Value {
                    table: 0,
                    column: 3,
                    values: vec!["DE".into()],
                    present: true
                }
            ]
        );
        // A real country the data lacks: a value with nothing present.
        assert!(
            kinds("How many customers are from Spain?").contains(&Claim::Value {
                table: 0,
                column: 3,
                values: vec!["ES".into()],
                present: false
            })
        );
        // Two values of one column.
        assert!(
            kinds("customers from France or Germany")
                .iter()
                .any(|c| matches!(c, Claim::Value { values, .. } if values.len() == 2))
        );
    }

    #[test]
    fn what_nothing_places_is_named() {
        let read = reading("How many orders were refunded?");
        assert_eq!(read.unplaced, ["refunded"]);
        let read = reading("¿Cuántos clientes hay en Alemania?");
        assert!(!read.unplaced.is_empty());
        assert!(
            kinds("How many orders has John Smith placed?").contains(&Claim::Unknown {
                text: "John Smith".into()
            })
        );
        assert!(kinds("the Garden category").contains(&Claim::Unknown {
            text: "Garden".into()
        }));
    }

    #[test]
    fn misspellings_and_parts_of_names_are_assumptions() {
        let read = reading("How many orders has Ada Okafro placed?");
        assert!(read.unplaced.is_empty(), "{:?}", read.unplaced);
        assert!(
            read.assumptions[0].contains("Ada Okafor"),
            "{:?}",
            read.assumptions
        );
        let read = reading("how many custmers are from germany");
        assert!(read.unplaced.is_empty(), "{:?}", read.unplaced);
        let read = reading("How many orders were cancled?");
        assert!(
            kinds("How many orders were cancled?")
                .iter()
                .any(|c| matches!(c, Claim::Value { values, .. } if values == &["cancelled"]))
        );
        assert!(read.unplaced.is_empty());
        // "Okafor" alone fits two customers.
        assert!(kinds("orders of Okafor").iter().any(|c| matches!(
            c,
            Claim::Ambiguous { matches, .. } if matches.len() == 2
        )));
        // "keyboards": the one product whose name ends so.
        let read = reading("How many keyboards did we sell?");
        assert!(read.unplaced.is_empty(), "{:?}", read.unplaced);
        assert!(read.assumptions[0].contains("Mechanical Keyboard"));
        // "mats" fits two products: said, not guessed.
        assert!(
            kinds("How many mats did we sell?")
                .iter()
                .any(|c| matches!(c, Claim::Ambiguous { .. }))
        );
    }

    #[test]
    fn comparisons_ids_currencies_and_adjustments() {
        assert!(
            kinds("products that cost less than $20").contains(&Claim::Compare {
                op: Op::Lt,
                value: 20.0,
                upper: None,
                money: true,
                percent: false
            })
        );
        assert!(
            kinds("customers with 5 or more orders").contains(&Claim::Compare {
                op: Op::Ge,
                value: 5.0,
                upper: None,
                money: false,
                percent: false
            })
        );
        assert!(kinds("Who placed order #77?").contains(&Claim::Id {
            table: Some(2),
            id: 77
        }));
        assert!(kinds("When was order 42 placed?").contains(&Claim::Id {
            table: Some(2),
            id: 42
        }));
        assert!(kinds("the total revenue in euros").contains(&Claim::Currency("EUR".into())));
        assert!(
            kinds("if its price went up by 15%").contains(&Claim::Adjust {
                percent: 15.0,
                up: true
            })
        );
        let read = reading("What's the stock level of the Chef's Knife?");
        assert!(read.unplaced.is_empty(), "{:?}", read.unplaced);
        let read = reading("Which products have fewer than 10 units in stock?");
        assert!(read.unplaced.is_empty(), "{:?}", read.unplaced);
        assert!(read.has(|c| matches!(c, Claim::Column { candidates } if candidates == &[(1, 4)])));
    }

    #[test]
    fn refused_periods_are_claims() {
        assert!(kinds("What will our revenue be next month?").contains(&Claim::Future));
        assert!(kinds("How many orders did we get last week?").contains(&Claim::Relative));
    }
}
