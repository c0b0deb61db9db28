//! Every rule of the `key=value` grammar and each of its errors.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::*;

/// A fresh directory under the system's temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("tool-cli-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn words(words: &[&str]) -> Vec<String> {
    words.iter().map(|word| (*word).to_owned()).collect()
}

fn usage_message(result: Result<impl std::fmt::Debug, Error>) -> String {
    match result {
        Err(Error::Usage(message)) => message,
        other => panic!("expected a usage error, got {other:?}"),
    }
}

/// Loads without files: any read is a failure of the test.
fn load(pairs: Vec<Pair>) -> Vec<(String, Loaded)> {
    load_files(pairs, |path| {
        panic!("unexpected read of {}", path.display())
    })
    .unwrap()
}

fn built(arguments: &[&str], schema: Option<&Value>) -> Value {
    let loaded = load(parse_words(&words(arguments)).unwrap());
    Value::Object(build(loaded, schema, "demo/tool").unwrap().0)
}

#[test]
fn each_form_parses_to_its_pair() {
    let pairs = parse_words(&words(&[
        "sql=select 1",
        "limit:=3",
        "body=@notes.txt",
        "config:=@config.json",
        "empty=",
        "at=\\@home",
        "eq=a=b",
    ]))
    .unwrap();
    let values: Vec<(&str, &PairValue)> = pairs
        .iter()
        .map(|pair| (pair.key.as_str(), &pair.value))
        .collect();
    assert_eq!(
        values,
        [
            ("sql", &PairValue::Text("select 1".into())),
            ("limit", &PairValue::Json(json!(3))),
            ("body", &PairValue::TextFile(PathBuf::from("notes.txt"))),
            ("config", &PairValue::JsonFile(PathBuf::from("config.json"))),
            ("empty", &PairValue::Text(String::new())),
            ("at", &PairValue::Text("@home".into())),
            ("eq", &PairValue::Text("a=b".into())),
        ]
    );
}

#[test]
fn is_pair_tells_pairs_from_json_and_stdin() {
    assert!(is_pair("a=b"));
    assert!(is_pair("a:=[1]"));
    assert!(!is_pair("{\"a\": \"b=c\"}"));
    assert!(!is_pair("-"));
    assert!(!is_pair("plain"));
}

#[test]
fn a_repeated_key_is_refused() {
    let message = usage_message(parse_words(&words(&["a=1", "b=2", "a:=3"])));
    assert!(message.contains("\"a\" is given twice"), "{message}");
    assert!(message.contains("a:='[...]'"), "{message}");
}

#[test]
fn mixing_json_and_pairs_is_refused() {
    for mixed in [
        &["sql=x", "{\"limit\": 3}"][..],
        &["sql=x", "-"][..],
        &["sql=x", "oops"][..],
    ] {
        let message = usage_message(parse_words(&words(mixed)));
        assert!(
            message.starts_with("cannot mix argument forms"),
            "{message}"
        );
        assert!(message.contains("key=value"), "{message}");
    }
}

#[test]
fn bad_json_after_colon_equals_is_refused_with_a_hint() {
    let message = usage_message(parse_words(&words(&["ids:=[1, 2"])));
    assert!(
        message.starts_with("the value of ids:= is not valid JSON"),
        "{message}"
    );
    assert!(
        message.contains("ids=value for a plain string"),
        "{message}"
    );
    let message = usage_message(parse_words(&words(&["name:=Ada"])));
    assert!(message.contains("name:='\"text\"'"), "{message}");
}

#[test]
fn an_empty_key_or_file_name_is_refused() {
    let message = usage_message(parse_words(&words(&["=x"])));
    assert!(message.contains("has no key before `=`"), "{message}");
    let message = usage_message(parse_words(&words(&[":=1"])));
    assert!(message.contains("has no key before `:=`"), "{message}");
    let message = usage_message(parse_words(&words(&["body=@"])));
    assert!(message.contains("body=@ names no file"), "{message}");
}

#[test]
fn files_are_read_as_text_or_json() {
    let dir = TempDir::new("kv-files");
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "line one\nline two\n").unwrap();
    let json_file = dir.path().join("filter.json");
    std::fs::write(&json_file, "{\"status\": [\"paid\"]}").unwrap();
    let pairs = parse_words(&[
        format!("body=@{}", text.display()),
        format!("filter:=@{}", json_file.display()),
    ])
    .unwrap();
    let loaded = load_files(pairs, |path| std::fs::read(path)).unwrap();
    let (arguments, warnings) = build(loaded, None, "demo/tool").unwrap();
    assert!(warnings.is_empty());
    assert_eq!(
        Value::Object(arguments),
        json!({"body": "line one\nline two\n", "filter": {"status": ["paid"]}})
    );
}

#[test]
fn a_missing_file_is_refused_naming_the_key_and_path() {
    let pairs = parse_words(&words(&["body=@/nonexistent/tool-cli/notes.txt"])).unwrap();
    let message = usage_message(load_files(pairs, |path| std::fs::read(path)));
    assert!(
        message.starts_with("cannot read the file for body=@/nonexistent/tool-cli/notes.txt"),
        "{message}"
    );
}

#[test]
fn a_json_file_that_is_not_json_is_refused() {
    let dir = TempDir::new("kv-bad-json");
    let path = dir.path().join("bad.json");
    std::fs::write(&path, "{not json").unwrap();
    let pairs = parse_words(&[format!("filter:=@{}", path.display())]).unwrap();
    let message = usage_message(load_files(pairs, |path| std::fs::read(path)));
    assert!(message.contains("is not valid JSON"), "{message}");
    assert!(message.contains("at line 1, column 2"), "{message}");
    assert!(
        message.contains("to pass the file as a string"),
        "{message}"
    );
}

#[test]
fn a_binary_file_is_not_a_string() {
    let pairs = parse_words(&words(&["image=@picture.png"])).unwrap();
    let message = usage_message(load_files(pairs, |_: &Path| Ok(vec![0xff, 0xfe, 0x00])));
    assert!(message.contains("is not UTF-8 text"), "{message}");
}

#[test]
fn plain_values_are_strings_without_a_schema() {
    assert_eq!(
        built(&["n=3", "flag=true", "nothing=null", "sql=select 1"], None),
        json!({"n": "3", "flag": "true", "nothing": "null", "sql": "select 1"})
    );
}

#[test]
fn the_schema_types_plain_values() {
    let schema = json!({"type": "object", "properties": {
        "n": {"type": "integer"},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "maybe": {"type": ["integer", "null"]},
        "code": {"type": "string"},
        "ids": {"type": "array"},
        "either": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
        "level": {"enum": [1, 2, 3]}
    }});
    assert_eq!(
        built(
            &[
                "n=3",
                "ratio=0.5",
                "flag=false",
                "maybe=null",
                "code=007",
                "ids=[1,2]",
                "either=true",
                "level=2"
            ],
            Some(&schema)
        ),
        json!({"n": 3, "ratio": 0.5, "flag": false, "maybe": null, "code": "007",
               "ids": [1, 2], "either": true, "level": 2})
    );
    // A value that is not what the schema says stays a string; the daemon's validation then
    // says what is wrong with it.
    assert_eq!(
        built(
            &["n=three", "n2=1.5"],
            Some(&json!({"properties": {
            "n": {"type": "integer"}, "n2": {"type": "integer"}}}))
        ),
        json!({"n": "three", "n2": "1.5"})
    );
    // `:=` is taken as given, whatever the schema says.
    assert_eq!(built(&["code:=7"], Some(&schema)), json!({"code": 7}));
}

#[test]
fn only_ambiguous_plain_values_need_the_schema() {
    let needs = |arguments: &[&str]| needs_schema(&load(parse_words(&words(arguments)).unwrap()));
    assert!(!needs(&["sql=select 1", "name=Ada", "n:=3"]));
    assert!(!needs(&["quoted=\"x\""]));
    assert!(needs(&["n=3"]));
    assert!(needs(&["flag=true"]));
    assert!(needs(&["nothing=null"]));
    assert!(needs(&["ids=[1]"]));
}

#[test]
fn an_unknown_key_is_refused_with_the_closest_name() {
    let schema = json!({"type": "object", "additionalProperties": false,
                        "properties": {"sql": {"type": "string"}, "page_size": {"type": "integer"}}});
    let loaded = load(parse_words(&words(&["sq=select 1"])).unwrap());
    match build(loaded, Some(&schema), "demo/sql_query") {
        Err(Error::UnknownParameter {
            key,
            suggestion,
            message,
        }) => {
            assert_eq!(key, "sq");
            assert_eq!(suggestion.as_deref(), Some("sql"));
            assert_eq!(
                message,
                "demo/sql_query has no parameter \"sq\" (its parameters: sql, page_size); did \
                 you mean \"sql\"?"
            );
        }
        other => panic!("expected UnknownParameter, got {other:?}"),
    }
}

#[test]
fn an_unknown_key_an_open_schema_allows_is_a_warning() {
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    let loaded = load(parse_words(&words(&["pth=/tmp"])).unwrap());
    let (arguments, warnings) = build(loaded, Some(&schema), "fs/read").unwrap();
    assert_eq!(Value::Object(arguments), json!({"pth": "/tmp"}));
    assert_eq!(
        warnings,
        [
            "fs/read has no parameter \"pth\" (its parameters: path); did you mean \"path\"?; \
          sent anyway, as the schema allows other keys"
        ]
    );
}

#[test]
fn args_file_must_hold_an_object() {
    let path = Path::new("args.json");
    assert_eq!(
        Value::Object(args_file_object(path, b"{\"a\": 1}").unwrap()),
        json!({"a": 1})
    );
    let message = usage_message(args_file_object(path, b"[1]"));
    assert!(message.contains("must hold a JSON object"), "{message}");
    assert!(message.ends_with("got an array"), "{message}");
    let message = usage_message(args_file_object(path, b"{"));
    assert!(
        message.starts_with("--args-file args.json is not valid JSON"),
        "{message}"
    );
}

#[test]
fn exactly_one_form_per_call() {
    let no_stdin = || -> std::io::Result<String> { panic!("stdin must not be read") };
    assert_eq!(
        call_arguments(&words(&["{\"a\": 1}"]), None, no_stdin).unwrap(),
        CallArguments::Json(json!({"a": 1}).as_object().unwrap().clone())
    );
    assert_eq!(
        call_arguments(&words(&["-"]), None, || Ok("{\"b\": 2}".to_owned())).unwrap(),
        CallArguments::Json(json!({"b": 2}).as_object().unwrap().clone())
    );
    assert_eq!(
        call_arguments(&[], Some(PathBuf::from("a.json")), no_stdin).unwrap(),
        CallArguments::Words(ArgumentWords::File(PathBuf::from("a.json")))
    );
    assert!(matches!(
        call_arguments(&words(&["a=1"]), None, no_stdin).unwrap(),
        CallArguments::Words(ArgumentWords::Pairs(_))
    ));
    // --args-file with anything else on the line.
    for line in [&["a=1"][..], &["{}"][..], &["-"][..]] {
        let message = usage_message(call_arguments(
            &words(line),
            Some(PathBuf::from("a.json")),
            no_stdin,
        ));
        assert!(
            message.starts_with("--args-file cannot be combined"),
            "{message}"
        );
    }
    // A JSON object and a pair, in either order.
    for line in [&["{}", "a=1"][..], &["a=1", "{}"][..]] {
        let message = usage_message(call_arguments(&words(line), None, no_stdin));
        assert!(
            message.starts_with("cannot mix argument forms"),
            "{message}"
        );
    }
    // Words that are no pair: the shell split an unquoted object.
    let message = usage_message(call_arguments(&words(&["{query:", "x}"]), None, no_stdin));
    assert!(message.contains("quote the whole object"), "{message}");
    assert!(message.contains("query='select 1'"), "{message}");
}

#[test]
fn output_raw_is_json_for_commands_other_than_calls() {
    let env = crate::args::ArgsEnv::default();
    let parse = |line: &[&str]| {
        let mut argv = vec!["tool-cli"];
        argv.extend_from_slice(line);
        match crate::args::parse(argv, &env, || Ok(String::new())) {
            Ok(invocation) => (invocation.json, invocation.raw),
            Err(outcome) => panic!("{line:?}: {outcome:?}"),
        }
    };
    assert_eq!(
        parse(&["demo", "t", "a=1", "--output", "raw"]),
        (false, true)
    );
    assert_eq!(
        parse(&["demo", "t", "{}", "--output", "raw"]),
        (false, true)
    );
    assert_eq!(parse(&["demo", "--output", "raw"]), (true, false));
    assert_eq!(parse(&["--output", "json"]), (true, false));
    assert_eq!(parse(&["demo", "t", "a=1"]), (false, false));
}

#[test]
fn a_bare_word_is_kept_for_the_schema_to_name_its_parameter() {
    let words = |list: &[&str]| list.iter().map(|word| word.to_string()).collect::<Vec<_>>();
    let no_stdin = || -> std::io::Result<String> { unreachable!("no stdin") };
    for word in ["SELECT * FROM orders", "hello", "42 apples"] {
        assert_eq!(
            call_arguments(&words(&[word]), None, no_stdin).unwrap(),
            CallArguments::Words(ArgumentWords::Bare(word.to_owned())),
            "{word}"
        );
    }
    // JSON, broken JSON and JSON scalars keep their own errors.
    for word in ["{sql: 1}", "[1]", "42", "null", "\"text\""] {
        assert!(
            !matches!(
                call_arguments(&words(&[word]), None, no_stdin),
                Ok(CallArguments::Words(ArgumentWords::Bare(_)))
            ),
            "{word}"
        );
    }
}

#[test]
fn a_bare_word_names_the_required_parameter_it_is_for() {
    let one =
        json!({"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]});
    let message = bare_word_message("SELECT 1", Some(&one), "demo/sql_query");
    assert!(
        message.contains("not key=value words or a JSON object"),
        "{message}"
    );
    assert!(
        message.ends_with("demo/sql_query takes it as sql: write sql='SELECT 1'"),
        "{message}"
    );

    let two = json!({"required": ["from", "to"]});
    let message = bare_word_message("EUR", Some(&two), "demo/convert");
    assert!(message.contains("requires from, to"), "{message}");
    assert!(message.contains("from='EUR'"), "{message}");

    let message = bare_word_message("it's", None, "demo/echo");
    assert!(message.contains(r"KEY='it'\''s'"), "{message}");
    assert!(message.contains("`tool-cli demo echo` lists"), "{message}");
}
