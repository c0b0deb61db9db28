//! What the data rule understands of a live schema: each table's words (its name, singular and
//! plural, and the common English words for the same thing: "clients" for customers, "items"
//! for products), each column's concept (a row's label, an email, a place, a category, a status,
//! a price, a stock level, a quantity, a date of signing up or ordering, a key) read from its name
//! and type, the words people use for it, and how the tables join. Nothing here knows the demo
//! shop: a schema with `clients(full_name, city)` and `sales(client_id, amount, sold_on)` is read
//! the same way. Pure.

use super::super::sql::Table;

/// What a column holds, as far as questions go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Concept {
    /// The table's own key.
    Key,
    /// A reference to another table.
    Reference,
    /// The row's name or title.
    Label,
    Email,
    /// A country, city, region, …
    Place,
    Category,
    Status,
    /// Money per unit (a price, a cost).
    Price,
    /// Money of the row itself (an order's total, an amount).
    Amount,
    /// Units on hand.
    Stock,
    /// Units of the row (an order line's quantity).
    Quantity,
    /// When the row was created (a customer signed up).
    Created,
    /// When an order was placed.
    Ordered,
    /// Another date.
    Date,
    /// Other text.
    Text,
    /// Another number.
    Number,
}

impl Concept {
    pub(crate) fn is_date(self) -> bool {
        matches!(self, Concept::Created | Concept::Ordered | Concept::Date)
    }

    pub(crate) fn is_number(self) -> bool {
        matches!(
            self,
            Concept::Price | Concept::Amount | Concept::Stock | Concept::Quantity | Concept::Number
        )
    }

    pub(crate) fn is_money(self) -> bool {
        matches!(self, Concept::Price | Concept::Amount)
    }

    /// A column whose few values group rows: a category, a status, a place.
    pub(crate) fn is_dimension(self) -> bool {
        matches!(
            self,
            Concept::Category | Concept::Status | Concept::Place | Concept::Text
        )
    }
}

/// One column, understood.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Column {
    pub(crate) name: String,
    pub(crate) concept: Concept,
    /// The table a reference points to.
    pub(crate) references: Option<usize>,
    /// The words (and phrases, space-separated) that name it in a question.
    pub(crate) words: Vec<String>,
}

/// One table, understood.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entity {
    pub(crate) name: String,
    /// Words for one row and for many: `customer`/`customers`, `client`/`clients`, …
    pub(crate) singular: Vec<String>,
    pub(crate) plural: Vec<String>,
    pub(crate) columns: Vec<Column>,
    /// Its key column.
    pub(crate) key: String,
    /// The column that names a row (`name`, `title`), when there is one.
    pub(crate) label: Option<usize>,
    /// Rows are people ("who").
    pub(crate) people: bool,
}

impl Entity {
    pub(crate) fn column(&self, concept: Concept) -> Option<usize> {
        self.columns.iter().position(|c| c.concept == concept)
    }

    /// The row's date column of a kind, else its first date column.
    pub(crate) fn date_column(&self) -> Option<usize> {
        self.column(Concept::Ordered)
            .or_else(|| self.column(Concept::Created))
            .or_else(|| self.column(Concept::Date))
    }
}

/// The schema, understood.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Schema {
    pub(crate) entities: Vec<Entity>,
}

/// Common words for a table, by the stem of its name.
const TABLE_WORDS: [(&str, &[&str]); 10] = [
    (
        "customer",
        &[
            "customer",
            "client",
            "buyer",
            "shopper",
            "purchaser",
            "consumer",
            "patron",
        ],
    ),
    ("client", &["client", "customer", "buyer"]),
    ("user", &["user", "member", "account"]),
    (
        "product",
        &[
            "product",
            "item",
            "article",
            "good",
            "merchandise",
            "sku",
            "offering",
            "thing",
        ],
    ),
    ("item", &["item", "product", "article"]),
    ("order", &["order", "purchase", "transaction"]),
    ("employee", &["employee", "staff", "worker"]),
    ("supplier", &["supplier", "vendor"]),
    ("invoice", &["invoice", "bill"]),
    ("category", &["category"]),
];

/// The plural of an English noun (regular forms).
pub(crate) fn plural(word: &str) -> String {
    if let Some(stem) = word.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'o', 'u'])
    {
        return format!("{stem}ies");
    }
    if word.ends_with("ss") || word.ends_with('x') || word.ends_with("ch") || word.ends_with("sh") {
        return format!("{word}es");
    }
    if word.ends_with('s') {
        return word.to_owned();
    }
    format!("{word}s")
}

/// The singular of a table name (`customers` → `customer`, `categories` → `category`).
pub(crate) fn singular(word: &str) -> String {
    let lower = word.to_lowercase();
    if let Some(stem) = lower.strip_suffix("ies") {
        return format!("{stem}y");
    }
    for suffix in ["sses", "shes", "ches", "xes"] {
        if let Some(stem) = lower.strip_suffix(suffix) {
            return format!("{stem}{}", &suffix[..suffix.len() - 2]);
        }
    }
    if let Some(stem) = lower.strip_suffix('s')
        && !stem.ends_with('s')
    {
        return stem.to_owned();
    }
    lower
}

fn owned(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

/// A column's concept and words, from its name, its type and its table.
fn understand_column(table: &Table, column: &str, tables: &[Table]) -> Column {
    let lower = column.to_lowercase();
    let declared = table.type_of(column);
    let parts: Vec<&str> = lower
        .split(['_', ' ', '-'])
        .filter(|p| !p.is_empty())
        .collect();
    let has = |word: &str| parts.contains(&word);
    let references = table
        .foreign_keys
        .iter()
        .find(|(c, _)| c == column)
        .and_then(|(_, referenced)| {
            tables
                .iter()
                .position(|t| t.name.eq_ignore_ascii_case(referenced))
        });
    let numeric = ["INT", "REAL", "NUM", "DEC", "FLOA", "DOUB"]
        .iter()
        .any(|kind| declared.contains(kind));
    let (concept, words): (Concept, &[&str]) = if references.is_some() {
        (Concept::Reference, &[])
    } else if lower == "id" || lower == table.primary_key().to_lowercase() {
        (Concept::Key, &["id", "number", "no"])
    } else if has("email") || has("mail") {
        (
            Concept::Email,
            &[
                "email",
                "e mail",
                "email address",
                "e mail address",
                "mail",
                "mail address",
                "address",
                "contact",
            ],
        )
    } else if has("name") || has("title") {
        (
            Concept::Label,
            &["name", "names", "called", "title", "titles"],
        )
    } else if has("country") || has("city") || has("region") || has("location") || has("state") {
        (
            Concept::Place,
            &[
                "country",
                "countries",
                "nation",
                "location",
                "located",
                "based",
                "live",
                "lives",
                "living",
                "where",
                "market",
                "markets",
                "city",
                "region",
            ],
        )
    } else if has("category") || has("type") || has("kind") || has("department") || has("genre") {
        (
            Concept::Category,
            &[
                "category",
                "categories",
                "type",
                "types",
                "kind",
                "kinds",
                "department",
                "departments",
                "product line",
                "section",
            ],
        )
    } else if has("status") {
        (
            Concept::Status,
            &["status", "statuses", "state", "stage", "order status"],
        )
    } else if has("price") || has("cost") {
        (
            Concept::Price,
            &[
                "price",
                "prices",
                "priced",
                "cost",
                "costs",
                "costing",
                "pricing",
                "unit price",
                "list price",
                "sell for",
                "sells for",
                "sold for",
                "go for",
                "goes for",
                "retail",
                "retails",
            ],
        )
    } else if has("stock") || has("inventory") || (has("on") && has("hand")) {
        (
            Concept::Stock,
            &[
                "stock",
                "stocked",
                "inventory",
                "in stock",
                "on hand",
                "stock level",
                "stock levels",
                "in inventory",
                "left",
                "remaining",
                "available",
                "supply",
            ],
        )
    } else if has("quantity") || has("qty") || has("units") {
        (
            Concept::Quantity,
            &[
                "quantity",
                "quantities",
                "qty",
                "units",
                "unit",
                "pieces",
                "copies",
            ],
        )
    } else if has("total") || has("amount") || has("revenue") {
        (Concept::Amount, &["amount", "total"])
    } else if (has("created") || has("signup") || has("joined") || has("registered"))
        && (lower.ends_with("_at") || lower.contains("date") || lower.contains("time"))
    {
        (
            Concept::Created,
            &[
                "created",
                "signed up",
                "sign up",
                "signup",
                "signups",
                "sign ups",
                "joined",
                "join",
                "joining",
                "registered",
                "register",
                "registration",
                "registrations",
                "became",
                "member since",
            ],
        )
    } else if (has("ordered") || has("placed") || has("purchased"))
        && (lower.ends_with("_at") || lower.contains("date") || lower.contains("time"))
    {
        (Concept::Ordered, &["order date", "date", "dates"])
    } else if lower.ends_with("_at")
        || lower.contains("date")
        || lower.contains("time")
        || declared.contains("DATE")
    {
        (Concept::Date, &["date"])
    } else if numeric {
        (Concept::Number, &[])
    } else {
        (Concept::Text, &[])
    };
    let mut words = owned(words);
    // The column's own name in words ("price usd" → "price"), unless it is only a table's name.
    let own: Vec<&str> = parts
        .iter()
        .copied()
        .filter(|p| !matches!(*p, "id" | "at" | "usd" | "eur" | "cents" | "on"))
        .collect();
    // A date's own name is a verb ("ordered", "created"): its words above say when it is meant.
    if !own.is_empty()
        && !matches!(concept, Concept::Reference | Concept::Key)
        && !concept.is_date()
    {
        let phrase = own.join(" ");
        if !words.contains(&phrase) {
            words.push(phrase.clone());
            words.push(plural(&phrase));
        }
    }
    Column {
        name: column.to_owned(),
        concept,
        references,
        words,
    }
}

/// The schema understood from the tables a schema tool described.
pub(crate) fn understand(tables: &[Table]) -> Schema {
    let entities = tables
        .iter()
        .map(|table| {
            let columns: Vec<Column> = table
                .columns
                .iter()
                .map(|c| understand_column(table, c, tables))
                .collect();
            let base = singular(&table.name);
            let base_words: Vec<&str> = base.split(['_', ' ', '-']).collect();
            let head = base_words.last().copied().unwrap_or(base.as_str()).to_owned();
            let mut singulars = vec![base.replace(['_', '-'], " ")];
            if head != singulars[0] {
                singulars.push(head.clone());
            }
            if let Some((_, more)) = TABLE_WORDS.iter().find(|(stem, _)| *stem == head) {
                for word in *more {
                    if !singulars.iter().any(|w| w == word)
                        // Another table of that name keeps its own word.
                        && !tables.iter().any(|t| t.name != table.name && singular(&t.name) == *word)
                    {
                        singulars.push((*word).to_owned());
                    }
                }
            }
            let mut plurals: Vec<String> = singulars.iter().map(|w| plural(w)).collect();
            let label = columns.iter().position(|c| c.concept == Concept::Label);
            let people = columns.iter().any(|c| c.concept == Concept::Email)
                || ["customer", "client", "user", "employee", "person", "member", "staff"]
                    .contains(&head.as_str());
            if people {
                plurals.extend(owned(&["people", "persons"]));
                singulars.push("person".to_owned());
            }
            Entity {
                name: table.name.clone(),
                singular: singulars,
                plural: plurals,
                key: table.primary_key().to_owned(),
                columns,
                label,
                people,
            }
        })
        .collect();
    Schema { entities }
}

impl Schema {
    /// The table whose rows are people (customers), for "who".
    pub(crate) fn people(&self) -> Option<usize> {
        self.entities.iter().position(|e| e.people)
    }

    /// The table of order lines: it references others and has a quantity or an amount.
    pub(crate) fn facts(&self) -> Option<usize> {
        self.entities.iter().position(|e| {
            e.columns.iter().any(|c| c.concept == Concept::Reference)
                && e.columns
                    .iter()
                    .any(|c| matches!(c.concept, Concept::Quantity | Concept::Amount))
        })
    }

    /// The money of one fact row: its amount, or a price (its own or a referenced table's)
    /// times its quantity. The expression and the tables it reads.
    pub(crate) fn money_of_fact(&self) -> Option<Money> {
        let facts = self.facts()?;
        let entity = &self.entities[facts];
        if let Some(amount) = entity.column(Concept::Amount) {
            return Some(Money {
                facts,
                price: (facts, amount),
                quantity: None,
            });
        }
        let quantity = entity.column(Concept::Quantity).map(|q| (facts, q));
        if let Some(price) = entity.column(Concept::Price) {
            return Some(Money {
                facts,
                price: (facts, price),
                quantity,
            });
        }
        entity.columns.iter().find_map(|c| {
            let referenced = c.references?;
            let price = self.entities[referenced].column(Concept::Price)?;
            Some(Money {
                facts,
                price: (referenced, price),
                quantity,
            })
        })
    }

    /// The path of references from `from` to `to` (each step a table and its referencing
    /// column), or `None` when `to` is not reached by following references.
    pub(crate) fn path(&self, from: usize, to: usize) -> Option<Vec<(usize, usize)>> {
        if from == to {
            return Some(Vec::new());
        }
        // Breadth first over references, at most three steps.
        let mut frontier: Vec<(usize, Vec<(usize, usize)>)> = vec![(from, Vec::new())];
        for _ in 0..3 {
            let mut next = Vec::new();
            for (table, path) in frontier {
                for (index, column) in self.entities[table].columns.iter().enumerate() {
                    let Some(referenced) = column.references else {
                        continue;
                    };
                    if path.iter().any(|(t, _)| *t == referenced) || referenced == from {
                        continue;
                    }
                    let mut longer = path.clone();
                    longer.push((table, index));
                    if referenced == to {
                        return Some(longer);
                    }
                    next.push((referenced, longer));
                }
            }
            frontier = next;
        }
        None
    }
}

/// The money of an order line: `price × quantity` (or an amount column alone).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Money {
    /// The facts table.
    pub(crate) facts: usize,
    pub(crate) price: (usize, usize),
    pub(crate) quantity: Option<(usize, usize)>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn shop_tables() -> Vec<Table> {
        let table = |name: &str, columns: &[(&str, &str)], keys: &[(&str, &str)]| Table {
            name: name.into(),
            columns: columns.iter().map(|(c, _)| (*c).to_owned()).collect(),
            types: columns.iter().map(|(_, t)| (*t).to_owned()).collect(),
            foreign_keys: keys
                .iter()
                .map(|(c, t)| ((*c).to_owned(), (*t).to_owned()))
                .collect(),
        };
        vec![
            table(
                "customers",
                &[
                    ("id", "INTEGER"),
                    ("name", "TEXT"),
                    ("email", "TEXT"),
                    ("country", "TEXT"),
                    ("created_at", "TEXT"),
                ],
                &[],
            ),
            table(
                "products",
                &[
                    ("id", "INTEGER"),
                    ("name", "TEXT"),
                    ("category", "TEXT"),
                    ("price_usd", "REAL"),
                    ("stock", "INTEGER"),
                ],
                &[],
            ),
            table(
                "orders",
                &[
                    ("id", "INTEGER"),
                    ("customer_id", "INTEGER"),
                    ("product_id", "INTEGER"),
                    ("quantity", "INTEGER"),
                    ("ordered_at", "TEXT"),
                    ("status", "TEXT"),
                ],
                &[("customer_id", "customers"), ("product_id", "products")],
            ),
        ]
    }

    #[test]
    fn the_shop_is_understood_from_its_schema() {
        let schema = understand(&shop_tables());
        let [customers, products, orders] = &schema.entities[..] else {
            panic!("three tables");
        };
        assert!(customers.people && !products.people);
        assert!(customers.plural.contains(&"clients".to_owned()));
        assert!(products.singular.contains(&"item".to_owned()));
        let concept =
            |e: &Entity, name: &str| e.columns.iter().find(|c| c.name == name).unwrap().concept;
        assert_eq!(concept(customers, "created_at"), Concept::Created);
        assert_eq!(concept(customers, "country"), Concept::Place);
        assert_eq!(concept(products, "price_usd"), Concept::Price);
        assert_eq!(concept(products, "stock"), Concept::Stock);
        assert_eq!(concept(orders, "ordered_at"), Concept::Ordered);
        assert_eq!(concept(orders, "customer_id"), Concept::Reference);
        assert_eq!(schema.facts(), Some(2));
        let money = schema.money_of_fact().unwrap();
        assert_eq!(money.price, (1, 3));
        assert_eq!(money.quantity, Some((2, 3)));
        assert_eq!(schema.path(2, 0).map(|p| p.len()), Some(1));
        assert_eq!(schema.path(0, 2), None);
        assert_eq!(singular("categories"), "category");
        assert_eq!(plural("category"), "categories");
        assert_eq!(plural("status"), "status");
    }
}
