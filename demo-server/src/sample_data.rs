//! The sample shop data: the schema and deterministic rows for customers, products and orders.
//!
//! Everything here is pure: the rows come from a fixed seed and simple arithmetic, so every
//! machine (and every concurrent first start) builds byte-for-byte the same database, tests can
//! assert on exact values, and no random-number crate is needed. Writing the rows to SQLite lives
//! in `database.rs`.

/// Stored in `PRAGMA user_version` so a future layout change can recognise an old file.
/// Version 2 priced products in dollars (`price_usd`) and named finished orders `completed`.
pub(crate) const SCHEMA_VERSION: i32 = 2;

/// The tables, in creation order. Foreign keys and indexes are declared so that
/// `describe_schema` can show agents how the tables join.
pub(crate) const SCHEMA_SQL: &str = "\
CREATE TABLE customers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    country TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE products (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    category TEXT NOT NULL,
    price_usd REAL NOT NULL CHECK (price_usd > 0),
    stock INTEGER NOT NULL CHECK (stock >= 0)
);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(id),
    product_id INTEGER NOT NULL REFERENCES products(id),
    quantity INTEGER NOT NULL CHECK (quantity > 0),
    ordered_at TEXT NOT NULL,
    status TEXT NOT NULL
);
CREATE INDEX orders_customer_id ON orders(customer_id);
CREATE INDEX orders_product_id ON orders(product_id);
";

/// How many rows each table gets.
pub(crate) const CUSTOMER_COUNT: usize = 50;
pub(crate) const ORDER_COUNT: usize = 500;

const SEED: u64 = 0x5EED_2024_C0FF_EE00;

const FIRST_NAMES: [&str; 10] = [
    "Ada", "Bruno", "Chen", "Dana", "Emeka", "Freya", "Gabriel", "Hana", "Ivan", "Julia",
];
const LAST_NAMES: [&str; 10] = [
    "Okafor",
    "Lindqvist",
    "Moreau",
    "Tanaka",
    "Silva",
    "Novak",
    "Schmidt",
    "Patel",
    "Garcia",
    "Kowalski",
];
const EMAIL_DOMAINS: [&str; 3] = ["example.com", "example.org", "example.net"];

/// ISO 3166 alpha-2 codes, repeated to weight the draw towards a few big markets.
const COUNTRIES: [&str; 16] = [
    "US", "US", "US", "US", "DE", "DE", "GB", "GB", "FR", "CA", "JP", "BR", "IN", "NL", "SE", "AU",
];

/// Name, category and price in US cents of every product; ids follow this order. Cents keep the
/// table exact; the database stores dollars (`price_usd`), which is what agents ask about.
const PRODUCTS: [(&str, &str, i64); 30] = [
    ("Wireless Mouse", "Electronics", 2499),
    ("Mechanical Keyboard", "Electronics", 8999),
    ("USB-C Hub", "Electronics", 3999),
    ("Noise-Cancelling Headphones", "Electronics", 19999),
    ("27-inch Monitor", "Electronics", 27999),
    ("Webcam HD", "Electronics", 5999),
    ("The Pragmatic Programmer", "Books", 3995),
    ("Designing Data-Intensive Applications", "Books", 4599),
    ("Rust in Action", "Books", 4999),
    ("Cooking for Engineers", "Books", 2899),
    ("A Short History of Nearly Everything", "Books", 1899),
    ("French Press", "Home & Kitchen", 3499),
    ("Cast Iron Skillet", "Home & Kitchen", 4299),
    ("Chef's Knife", "Home & Kitchen", 7999),
    ("Electric Kettle", "Home & Kitchen", 3999),
    ("Bamboo Cutting Board", "Home & Kitchen", 1999),
    ("Yoga Mat", "Sports", 2999),
    ("Adjustable Dumbbells", "Sports", 14999),
    ("Running Shoes", "Sports", 11999),
    ("Water Bottle", "Sports", 1599),
    ("Cycling Helmet", "Sports", 6499),
    ("Building Blocks Set", "Toys", 4999),
    ("Jigsaw Puzzle 1000", "Toys", 1799),
    ("Remote Control Car", "Toys", 5499),
    ("Board Game Classic", "Toys", 3499),
    ("Fountain Pen", "Office", 2599),
    ("Desk Lamp", "Office", 3899),
    ("Notebook A5 Dotted", "Office", 1299),
    ("Ergonomic Chair", "Office", 32999),
    ("Standing Desk Mat", "Office", 4999),
];

/// Seconds since the Unix epoch of 2023-01-01 00:00:00 UTC: customers sign up from here.
const SIGNUPS_START: i64 = 1_672_531_200;
/// 2024-07-01 00:00:00 UTC: signups end and orders start, so no order predates its customer.
const ORDERS_START: i64 = 1_719_792_000;
/// 2025-07-01 00:00:00 UTC: the end of the order history.
const ORDERS_END: i64 = 1_751_328_000;
const DAY: i64 = 86_400;

/// One row of `customers`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Customer {
    pub(crate) id: i64,
    pub(crate) name: String,
    pub(crate) email: String,
    pub(crate) country: &'static str,
    pub(crate) created_at: String,
}

/// One row of `products`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Product {
    pub(crate) id: i64,
    pub(crate) name: &'static str,
    pub(crate) category: &'static str,
    /// The price in US dollars, always a whole number of cents.
    pub(crate) price_usd: f64,
    pub(crate) stock: i64,
}

/// One row of `orders`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Order {
    pub(crate) id: i64,
    pub(crate) customer_id: i64,
    pub(crate) product_id: i64,
    pub(crate) quantity: i64,
    pub(crate) ordered_at: String,
    pub(crate) status: &'static str,
}

/// All rows of the sample database.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SampleData {
    pub(crate) customers: Vec<Customer>,
    pub(crate) products: Vec<Product>,
    pub(crate) orders: Vec<Order>,
}

/// A SplitMix64 sequence: a few lines of arithmetic with good enough spread for sample data.
struct Sequence {
    state: u64,
}

impl Sequence {
    fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..bound`; the modulo bias is irrelevant for sample data.
    fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    /// A value in `0..bound` skewed towards 0, so a few customers and products dominate the
    /// orders the way they do in a real shop (and some customers never order at all).
    fn skewed_below(&mut self, bound: u64) -> u64 {
        self.below(bound) * self.below(bound) / bound
    }
}

/// Builds every row from the fixed seed.
pub(crate) fn generate() -> SampleData {
    let mut sequence = Sequence::new(SEED);
    let customers = generate_customers(&mut sequence);
    let products = generate_products(&mut sequence);
    let orders = generate_orders(&mut sequence, customers.len(), products.len());
    SampleData {
        customers,
        products,
        orders,
    }
}

fn generate_customers(sequence: &mut Sequence) -> Vec<Customer> {
    (0..CUSTOMER_COUNT)
        .map(|index| {
            // Stepping the last name by 3 per row and 1 per round of ten keeps every
            // (first, last) pair distinct for the first 100 rows, so emails are unique.
            let first = FIRST_NAMES[index % FIRST_NAMES.len()];
            let last = LAST_NAMES[(index * 3 + index / FIRST_NAMES.len()) % LAST_NAMES.len()];
            let domain = EMAIL_DOMAINS[index % EMAIL_DOMAINS.len()];
            let signup_window = ORDERS_START - SIGNUPS_START;
            let created_at = SIGNUPS_START + sequence.below(signup_window as u64) as i64;
            Customer {
                id: index as i64 + 1,
                name: format!("{first} {last}"),
                email: format!("{}.{}@{domain}", first.to_lowercase(), last.to_lowercase()),
                country: COUNTRIES[sequence.below(COUNTRIES.len() as u64) as usize],
                created_at: format_timestamp(created_at),
            }
        })
        .collect()
}

fn generate_products(sequence: &mut Sequence) -> Vec<Product> {
    PRODUCTS
        .iter()
        .enumerate()
        .map(|(index, &(name, category, price_cents))| {
            // About one product in ten is out of stock, which makes for a useful example query.
            let stock = if sequence.below(10) == 0 {
                0
            } else {
                5 + sequence.below(246) as i64
            };
            Product {
                id: index as i64 + 1,
                name,
                category,
                price_usd: price_cents as f64 / 100.0,
                stock,
            }
        })
        .collect()
}

fn generate_orders(
    sequence: &mut Sequence,
    customer_count: usize,
    product_count: usize,
) -> Vec<Order> {
    let mut timestamps: Vec<i64> = (0..ORDER_COUNT)
        .map(|_| ORDERS_START + sequence.below((ORDERS_END - ORDERS_START) as u64) as i64)
        .collect();
    // Ids increase with time, as they would in a real shop.
    timestamps.sort_unstable();
    timestamps
        .into_iter()
        .enumerate()
        .map(|(index, ordered_at)| {
            let customer_id = 1 + sequence.skewed_below(customer_count as u64) as i64;
            let product_id = 1 + sequence.skewed_below(product_count as u64) as i64;
            let quantity = match sequence.below(10) {
                0..=5 => 1,
                6..=7 => 2,
                8 => 3,
                _ => 4 + sequence.below(2) as i64,
            };
            let status = order_status(ordered_at, sequence.below(100));
            Order {
                id: index as i64 + 1,
                customer_id,
                product_id,
                quantity,
                ordered_at: format_timestamp(ordered_at),
                status,
            }
        })
        .collect()
}

/// Recent orders are still open; older ones are mostly completed (delivered and paid), with a few
/// cancelled or returned. `roll` is a value in `0..100`.
fn order_status(ordered_at: i64, roll: u64) -> &'static str {
    let age_days = (ORDERS_END - ordered_at) / DAY;
    match (age_days, roll) {
        (0..=4, 0..=59) => "pending",
        (0..=4, _) => "shipped",
        (5..=14, 0..=69) => "shipped",
        (5..=14, _) => "completed",
        (_, 0..=5) => "cancelled",
        (_, 6..=9) => "returned",
        _ => "completed",
    }
}

/// Formats seconds since the Unix epoch (UTC) as `YYYY-MM-DD HH:MM:SS`, the text form SQLite's
/// own date functions read and write, so agents can use `date()` and `strftime()` on it.
pub(crate) fn format_timestamp(seconds_since_epoch: i64) -> String {
    let days = seconds_since_epoch.div_euclid(DAY);
    let seconds_of_day = seconds_since_epoch.rem_euclid(DAY);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        seconds_of_day / 3600,
        seconds_of_day / 60 % 60,
        seconds_of_day % 60
    )
}

/// Converts days since 1970-01-01 to a proleptic Gregorian (year, month, day); Howard Hinnant's
/// `civil_from_days`, which avoids a date crate for the one conversion we need.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// The values of `orders.status` that `order_status` produces and the readme documents.
    const ORDER_STATUSES: [&str; 5] = ["pending", "shipped", "completed", "cancelled", "returned"];

    #[test]
    fn the_readme_documents_every_status() {
        for status in ORDER_STATUSES {
            assert!(crate::resources::README.contains(&format!("`{status}`")));
        }
    }

    #[test]
    fn timestamps_format_like_sqlite() {
        assert_eq!(format_timestamp(0), "1970-01-01 00:00:00");
        assert_eq!(format_timestamp(SIGNUPS_START), "2023-01-01 00:00:00");
        assert_eq!(format_timestamp(ORDERS_START), "2024-07-01 00:00:00");
        assert_eq!(format_timestamp(ORDERS_END - 1), "2025-06-30 23:59:59");
        // 2024 is a leap year.
        assert_eq!(
            format_timestamp(1_709_164_800 + 3_723),
            "2024-02-29 01:02:03"
        );
        assert_eq!(format_timestamp(-1), "1969-12-31 23:59:59");
    }

    #[test]
    fn generation_is_deterministic() {
        assert_eq!(generate(), generate());
    }

    #[test]
    fn tables_have_the_documented_sizes() {
        let data = generate();
        assert_eq!(data.customers.len(), CUSTOMER_COUNT);
        assert_eq!(data.products.len(), PRODUCTS.len());
        assert_eq!(data.orders.len(), ORDER_COUNT);
    }

    #[test]
    fn customer_emails_are_unique() {
        let data = generate();
        let emails: HashSet<_> = data.customers.iter().map(|c| &c.email).collect();
        assert_eq!(emails.len(), data.customers.len());
    }

    #[test]
    fn orders_reference_existing_rows_and_follow_signup() {
        let data = generate();
        for order in &data.orders {
            let customer = &data.customers[(order.customer_id - 1) as usize];
            assert_eq!(customer.id, order.customer_id);
            assert!((1..=data.products.len() as i64).contains(&order.product_id));
            assert!((1..=5).contains(&order.quantity), "{order:?}");
            assert!(ORDER_STATUSES.contains(&order.status));
            // The fixed-width text form sorts like time.
            assert!(customer.created_at < order.ordered_at);
        }
        let ordered_at: Vec<_> = data.orders.iter().map(|o| &o.ordered_at).collect();
        assert!(ordered_at.is_sorted(), "ids must increase with time");
    }

    #[test]
    fn data_has_the_variety_the_readme_promises() {
        let data = generate();
        let statuses: HashSet<_> = data.orders.iter().map(|o| o.status).collect();
        assert_eq!(statuses.len(), ORDER_STATUSES.len(), "{statuses:?}");
        assert!(data.products.iter().any(|p| p.stock == 0));
        let ordering_customers: HashSet<_> = data.orders.iter().map(|o| o.customer_id).collect();
        assert!(
            ordering_customers.len() < CUSTOMER_COUNT,
            "some never order"
        );
        assert!(ordering_customers.len() > CUSTOMER_COUNT / 2);
    }
}
