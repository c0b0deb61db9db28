//! The offline planner's computation rule: code the task gives ("run this Python: `…`") is run
//! as written; arithmetic the task asks for ("what is 17 * 23 + 4", "the factorial of 12",
//! "15% of 240", "the square root of 2", "the average of 3, 5 and 10") is turned into a one-line
//! Python expression for a code-running tool, so the sandbox computes and the planner never
//! does the sums itself. Pure: text in, code out.

/// Code quoted in the task when it asks to run code: a fenced block, else backticks, else what
/// follows "python:".
pub(crate) fn given_code(task: &str) -> Option<String> {
    let lower = task.to_lowercase();
    let asks = [
        "python", "run", "execute", "code", "snippet", "script", "evaluate",
    ]
    .iter()
    .any(|word| lower.contains(word));
    if !asks {
        return None;
    }
    if let Some(start) = task.find("```") {
        let rest = &task[start + 3..];
        let end = rest.find("```").unwrap_or(rest.len());
        let block = &rest[..end];
        // A language tag on the opening line.
        let block = match block.split_once('\n') {
            Some((tag, body)) if !tag.trim().contains(' ') && !tag.contains('(') => body,
            _ => block,
        };
        return Some(block.trim().to_owned()).filter(|code| !code.is_empty());
    }
    if let Some(start) = task.find('`') {
        let rest = &task[start + 1..];
        if let Some(end) = rest.find('`') {
            return Some(rest[..end].trim().to_owned()).filter(|code| !code.is_empty());
        }
    }
    let at = lower.find("python:")?;
    Some(task[at + "python:".len()..].trim().to_owned()).filter(|code| !code.is_empty())
}

/// Phrases rewritten to operators and functions, longest first.
const PHRASES: [(&str, &str); 30] = [
    ("to the power of", " ** "),
    ("raised to the", " ** "),
    ("raised to", " ** "),
    ("square root of", " sqrt "),
    ("cube root of", " cbrt "),
    ("factorial of", " fact "),
    ("average of", " mean "),
    ("mean of", " mean "),
    ("median of", " median "),
    ("sum of", " total "),
    ("product of", " prod "),
    ("multiplied by", " * "),
    ("divided by", " / "),
    ("percent of", " pct "),
    ("% of", " pct "),
    ("logarithm of", " log "),
    ("log of", " log "),
    ("modulo", " % "),
    ("mod", " % "),
    ("times", " * "),
    ("plus", " + "),
    ("minus", " - "),
    ("squared", " ** 2 "),
    ("cubed", " ** 3 "),
    ("over", " / "),
    ("×", " * "),
    ("÷", " / "),
    ("^", " ** "),
    ("sqrt", " sqrt "),
    ("!", " ! "),
];

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(String),
    Operator(&'static str),
    Open,
    Close,
    /// A function of the next operand (sqrt, fact, …) or of a list (mean, total, …).
    Function(&'static str),
    /// `A pct B`: A percent of B.
    Percent,
    /// Postfix `!`.
    Factorial,
    /// A list separator (`,` or "and") inside a list function's arguments.
    Separator,
    Other,
}

fn tokens(task: &str) -> Vec<Token> {
    // Dates are not subtractions.
    let mut task = task.to_lowercase().replace("**", "^");
    while let Some(date) = super::rates::date(&task) {
        task = task.replace(&date, " date ");
    }
    // Symbols become words of their own, so that phrases match between spaces; a comma between
    // digits (1,200) stays.
    let chars: Vec<char> = task.chars().collect();
    let mut text = String::from(" ");
    for (index, c) in chars.iter().enumerate() {
        let thousands = *c == ','
            && index > 0
            && chars[index - 1].is_ascii_digit()
            && chars.get(index + 1).is_some_and(char::is_ascii_digit);
        if !c.is_alphanumeric() && *c != '.' && *c != ' ' && !thousands {
            text.push(' ');
            text.push(*c);
            text.push(' ');
        } else if *c == '.' && !chars.get(index + 1).is_some_and(char::is_ascii_digit) {
            text.push(' ');
        } else {
            text.push(*c);
        }
    }
    let mut text = format!(
        " {} ",
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    for (phrase, replacement) in PHRASES {
        text = text.replace(&format!(" {phrase} "), &format!(" {replacement} "));
    }
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        if c.is_ascii_digit()
            || (c == '.' && chars.get(index + 1).is_some_and(char::is_ascii_digit))
        {
            let begin = index;
            while index < chars.len()
                && (chars[index].is_ascii_digit()
                    || chars[index] == '.'
                    || (chars[index] == ','
                        && chars.get(index + 1).is_some_and(char::is_ascii_digit)
                        && chars.get(index + 2).is_some_and(char::is_ascii_digit)
                        && chars.get(index + 3).is_some_and(char::is_ascii_digit)))
            {
                index += 1;
            }
            let number: String = chars[begin..index].iter().filter(|c| **c != ',').collect();
            out.push(Token::Number(number.trim_end_matches('.').to_owned()));
            continue;
        }
        if c.is_alphabetic() {
            let begin = index;
            while index < chars.len() && chars[index].is_alphanumeric() {
                index += 1;
            }
            let word: String = chars[begin..index].iter().collect();
            out.push(match word.as_str() {
                "sqrt" => Token::Function("math.sqrt"),
                "cbrt" => Token::Function("cbrt"),
                "fact" => Token::Function("math.factorial"),
                "log" => Token::Function("math.log"),
                "mean" => Token::Function("statistics.mean"),
                "median" => Token::Function("statistics.median"),
                "total" => Token::Function("sum"),
                "prod" => Token::Function("math.prod"),
                "pct" => Token::Percent,
                "x" => Token::Operator("*"),
                "and" => Token::Separator,
                _ => Token::Other,
            });
            continue;
        }
        index += 1;
        out.push(match c {
            '+' => Token::Operator("+"),
            '-' => Token::Operator("-"),
            '/' => Token::Operator("/"),
            '%' => Token::Operator("%"),
            '*' if chars.get(index) == Some(&'*') => {
                index += 1;
                Token::Operator("**")
            }
            '*' => Token::Operator("*"),
            '(' => Token::Open,
            ')' => Token::Close,
            '!' => Token::Factorial,
            ',' => Token::Separator,
            ' ' | '?' | '=' => continue,
            _ => Token::Other,
        });
    }
    out
}

/// The arithmetic the task asks for as a Python expression (using `math` and `statistics`), or
/// `None` when it holds no computation (a lone number is not one).
pub(crate) fn expression(task: &str) -> Option<String> {
    if let Some(expression) = verb_expression(task) {
        return Some(expression);
    }
    let tokens = tokens(task);
    // The longest run of tokens that can be part of an expression.
    let mut best: &[Token] = &[];
    for run in tokens.split(|token| *token == Token::Other) {
        let run = trim_separators(run);
        let computes = run.iter().any(|t| {
            matches!(
                t,
                Token::Operator(_) | Token::Function(_) | Token::Percent | Token::Factorial
            )
        });
        let has_number = run.iter().any(|t| matches!(t, Token::Number(_)));
        if computes && has_number && run.len() > best.len() {
            best = run;
        }
    }
    if best.is_empty() {
        return None;
    }
    render(best)
}

/// Arithmetic phrased as a verb on two numbers: "add 17 and 25", "subtract 5 from 20",
/// "multiply 12 by 7", "divide 100 by 8", "take 3 away from 10", "the difference between 9
/// and 4", "the quotient of 10 and 4". The operands are the first two numbers after the verb;
/// "from" and "into" put them in the other order.
fn verb_expression(task: &str) -> Option<String> {
    let lower = task.to_lowercase().replace("take away", "subtract");
    // Words split at spaces only, so that "2.5" and "1,200" stay numbers.
    let task_words: Vec<String> = lower
        .split_whitespace()
        .map(|word| {
            let word = word.trim_matches(|c: char| !c.is_alphanumeric());
            if word
                .chars()
                .all(|c| c.is_ascii_digit() || c == ',' || c == '.')
            {
                word.replace(',', "")
            } else {
                word.to_owned()
            }
        })
        .filter(|word| !word.is_empty())
        .collect();
    let (index, operator) = task_words.iter().enumerate().find_map(|(index, word)| {
        let operator = match word.as_str() {
            "add" | "adding" => "+",
            "subtract" | "subtracting" | "deduct" | "difference" => "-",
            "multiply" | "multiplying" => "*",
            "divide" | "dividing" | "quotient" | "ratio" => "/",
            "take" if task_words[index + 1..].iter().any(|w| w == "away") => "-",
            _ => return None,
        };
        Some((index, operator))
    })?;
    // The operands: numbers written as words of their own after the verb.
    let operands: Vec<&String> = task_words[index + 1..]
        .iter()
        .filter(|word| word.parse::<f64>().is_ok())
        .collect();
    // Only two plain numbers: anything more ("add 2 and 3 then square it") is left to the
    // general reading, which fails rather than guesses.
    let [first, second] = operands.as_slice() else {
        return None;
    };
    let between: Vec<&String> = task_words
        .iter()
        .skip_while(|w| w != first)
        .skip(1)
        .take_while(|w| w != second)
        .collect();
    let joiner_ok = between.iter().all(|w| {
        matches!(
            w.as_str(),
            "and" | "to" | "by" | "from" | "into" | "with" | "away" | "of"
        )
    });
    if !joiner_ok || between.is_empty() {
        return None;
    }
    let reversed = between.iter().any(|w| {
        (w.as_str() == "from" && operator == "-") || (w.as_str() == "into" && operator == "/")
    });
    let (a, b) = if reversed {
        (second, first)
    } else {
        (first, second)
    };
    Some(format!("{a} {operator} {b}"))
}

/// A run without separators or dangling operators at its ends ("27-inch" is not a subtraction).
fn trim_separators(mut run: &[Token]) -> &[Token] {
    while let Some((first, rest)) = run.split_first()
        && (matches!(first, Token::Separator | Token::Percent | Token::Factorial)
            || matches!(first, Token::Operator(op) if *op != "-"))
    {
        run = rest;
    }
    while let Some((last, rest)) = run.split_last()
        && matches!(
            last,
            Token::Separator | Token::Operator(_) | Token::Percent | Token::Function(_)
        )
    {
        run = rest;
    }
    run
}

fn render(tokens: &[Token]) -> Option<String> {
    let mut out = String::new();
    let mut index = 0;
    let mut depth = 0i32;
    while index < tokens.len() {
        match &tokens[index] {
            Token::Number(number) => {
                out.push_str(number);
                if tokens.get(index + 1) == Some(&Token::Factorial) {
                    out = format!(
                        "{}math.factorial({number})",
                        &out[..out.len() - number.len()]
                    );
                    index += 1;
                }
            }
            Token::Operator(operator) => {
                out.push(' ');
                out.push_str(operator);
                out.push(' ');
            }
            Token::Open => {
                depth += 1;
                out.push('(');
            }
            Token::Close => {
                depth -= 1;
                out.push(')');
            }
            Token::Percent => out.push_str(" / 100 * "),
            Token::Function(
                name @ ("statistics.mean" | "statistics.median" | "sum" | "math.prod"),
            ) => {
                let mut items = Vec::new();
                let mut next = index + 1;
                while let Some(token) = tokens.get(next) {
                    match token {
                        Token::Number(number) => items.push(number.clone()),
                        Token::Separator => {}
                        _ => break,
                    }
                    next += 1;
                }
                if items.len() < 2 {
                    return None;
                }
                out.push_str(&format!("{name}([{}])", items.join(", ")));
                index = next;
                continue;
            }
            Token::Function(name) => {
                let Some(Token::Number(number)) = tokens.get(index + 1) else {
                    return None;
                };
                if *name == "cbrt" {
                    out.push_str(&format!("({number}) ** (1 / 3)"));
                } else {
                    out.push_str(&format!("{name}({number})"));
                }
                index += 2;
                continue;
            }
            Token::Factorial | Token::Separator | Token::Other => return None,
        }
        index += 1;
    }
    (depth == 0).then(|| out.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The Python program that prints the expression's value (integers exactly, floats to 10
/// significant digits).
pub(crate) fn program(expression: &str) -> String {
    format!(
        "import math, statistics\nvalue = {expression}\n\
         if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:\n    value = int(value)\n\
         elif isinstance(value, float):\n    value = float('%.10g' % value)\n\
         print(value)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_in_words_and_symbols() {
        for (task, expected) in [
            ("What is 17 * 23 + 4?", "17 * 23 + 4"),
            ("Calculate the factorial of 12", "math.factorial(12)"),
            ("What's the square root of 2?", "math.sqrt(2)"),
            ("What is 15% of 240?", "15 / 100 * 240"),
            ("compute 2^10 minus 1", "2 ** 10 - 1"),
            ("what is (3 + 4) times 5", "(3 + 4) * 5"),
            ("How much is 1,200 divided by 7", "1200 / 7"),
            ("What is 12 squared", "12 ** 2"),
            (
                "What is the average of 3, 5 and 10?",
                "statistics.mean([3, 5, 10])",
            ),
            ("5! please", "math.factorial(5)"),
            ("Add 17 and 25", "17 + 25"),
            ("Multiply 12 by 7", "12 * 7"),
            ("divide 100 by 8", "100 / 8"),
            ("Subtract 5 from 20", "20 - 5"),
            ("take away 3 from 10", "10 - 3"),
            ("Take 3 away from 10", "10 - 3"),
            ("What is the difference between 9 and 4?", "9 - 4"),
            ("Divide 4 into 10", "10 / 4"),
            ("What is the quotient of 10 and 4?", "10 / 4"),
            ("What is the product of 6 and 7?", "math.prod([6, 7])"),
            ("What is 15 percent of 80?", "15 / 100 * 80"),
            ("Get the sum of 3 and 4", "sum([3, 4])"),
            ("add 2.5 and 1,200", "2.5 + 1200"),
        ] {
            assert_eq!(expression(task).as_deref(), Some(expected), "{task}");
        }
    }

    #[test]
    fn no_computation_without_an_operator_and_a_number() {
        assert_eq!(expression("How many customers are there?"), None);
        assert_eq!(expression("Show the 5 most recent orders"), None);
        assert_eq!(expression("What is 42?"), None);
        assert_eq!(expression("What is the square root of a number"), None);
        // A verb without two plain operands is no computation of its own.
        assert_eq!(expression("Add Ada to the mailing list"), None);
        assert_eq!(expression("Add the 3 new orders to the 2024 report"), None);
    }

    #[test]
    fn given_code_is_taken_as_written() {
        assert_eq!(
            given_code("Run this Python: `print(sum(range(1, 101)))`").as_deref(),
            Some("print(sum(range(1, 101)))")
        );
        assert_eq!(
            given_code("Please run\n```python\nx = 2\nprint(x * 3)\n```").as_deref(),
            Some("x = 2\nprint(x * 3)")
        );
        assert_eq!(
            given_code("execute this python: print(7)").as_deref(),
            Some("print(7)")
        );
        assert_eq!(given_code("What is `x`?"), None);
        assert!(program("17 * 23 + 4").contains("value = 17 * 23 + 4"));
    }
}
