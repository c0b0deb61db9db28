//! Elicitation relayed to the caller (`"elicitation": "ask"`), against server-everything's
//! `trigger-elicitation-request` (a form of 13 fields, `name` required, whose result echoes
//! what was answered): the caller watching the call (`progressId` + `callEvents`) gets an
//! `elicitation` event and answers it with `answerElicitation`; invalid content is refused with
//! the field named and a valid retry goes through; decline; another token is `notPermitted`;
//! unknown, duplicate and late answers are refused clearly; no watcher and no answer in time
//! are declined with a reason. And the same through `tool-cli --elicitation ask`, its form
//! driven from a pipe.

use serde_json::{Value, json};
use tool_cli_protocol::code;
use tool_cli_protocol::methods::name;

use tool_cli_tests::{Daemon, everything_stdio, text_content};

const TOOL: &str = "trigger-elicitation-request";

fn asking_daemon(timeout_ms: Option<u64>) -> Daemon {
    let mut server = everything_stdio();
    server["elicitation"] = json!("ask");
    if let Some(timeout_ms) = timeout_ms {
        server["elicitationTimeoutMs"] = json!(timeout_ms);
    }
    Daemon::start(json!({"mcpServers": {"everything": server}}))
}

/// Starts the tool with `progressId` on its own connection.
fn call_watched(daemon: &Daemon, progress_id: &str) -> Value {
    daemon.call(
        name::CALL_TOOL,
        json!({"server": "everything", "tool": TOOL, "arguments": {},
               "progressId": progress_id}),
    )
}

fn answer(
    daemon: &Daemon,
    progress_id: &str,
    id: &str,
    action: &str,
    content: Option<Value>,
) -> Result<Value, tool_cli_protocol::ErrorObject> {
    let mut params = json!({"progressId": progress_id, "elicitationId": id, "action": action});
    if let Some(content) = content {
        params["content"] = content;
    }
    daemon.rpc(name::ANSWER_ELICITATION, Some(params))
}

#[test]
fn a_watching_caller_answers_and_the_tool_sees_the_answer_after_an_invalid_try() {
    let daemon = asking_daemon(None);
    std::thread::scope(|scope| {
        let call = scope.spawn(|| call_watched(&daemon, "ask-1"));
        let question = daemon.next_call_event("ask-1", &mut 0, "elicitation");
        assert_eq!(question["server"], "everything", "{question:#}");
        assert!(
            question["message"]
                .as_str()
                .unwrap()
                .contains("Please provide inputs"),
            "{question:#}"
        );
        let schema = &question["requestedSchema"];
        assert_eq!(schema["required"], json!(["name"]), "{schema:#}");
        assert_eq!(schema["properties"]["email"]["format"], "email");
        assert_eq!(schema["properties"]["integer"]["maximum"], 100);
        let id = question["elicitationId"].as_str().unwrap();

        // A question that was never asked, named by the owner: what it did ask is listed.
        let unknown = answer(&daemon, "ask-1", "e99", "decline", None).unwrap_err();
        assert_eq!(unknown.code, code::INVALID_PARAMS);
        assert!(
            unknown
                .message
                .contains(&format!("its elicitations are \"{id}\"")),
            "{}",
            unknown.message
        );

        // Invalid content: each field named with what it takes; the question stays open.
        let invalid = answer(
            &daemon,
            "ask-1",
            id,
            "accept",
            Some(json!({"name": "Ada Lovelace", "email": "not-an-email", "integer": 500})),
        )
        .unwrap_err();
        assert_eq!(invalid.code, code::INVALID_PARAMS);
        for expected in [
            "content.email",
            "a string in email format",
            "content.integer",
            "an integer from 1 to 100",
            "is still open",
        ] {
            assert!(
                invalid.message.contains(expected),
                "{expected}: {}",
                invalid.message
            );
        }
        let missing = answer(
            &daemon,
            "ask-1",
            id,
            "accept",
            Some(json!({"email": "a@b.org"})),
        )
        .unwrap_err();
        assert!(
            missing.message.contains("content.name is required"),
            "{}",
            missing.message
        );
        let typo =
            answer(&daemon, "ask-1", id, "accept", Some(json!({"nmae": "Ada"}))).unwrap_err();
        assert!(
            typo.message.contains("did you mean \"name\""),
            "{}",
            typo.message
        );

        let answered = answer(
            &daemon,
            "ask-1",
            id,
            "accept",
            Some(
                json!({"name": "Ada Lovelace", "check": true, "email": "ada@example.com",
                        "integer": 7}),
            ),
        )
        .unwrap();
        assert_eq!(answered["action"], "accept");
        assert_eq!(answered["content"]["integer"], 7);

        let again = answer(&daemon, "ask-1", id, "decline", None).unwrap_err();
        assert!(
            again.message.contains("was already answered (accept)"),
            "{}",
            again.message
        );

        let result = call.join().unwrap();
        let text = text_content(&result);
        for expected in [
            "User provided the requested information",
            "- Name: Ada Lovelace",
            "- Agreed to terms: true",
            "- Email: ada@example.com",
            "- Favorite Integer: 7",
        ] {
            assert!(text.contains(expected), "{expected}: {text}");
        }
    });
}

#[test]
fn another_token_is_not_permitted_and_the_owner_declines() {
    let daemon = asking_daemon(None);
    let minted = daemon.call(name::MINT_TOKEN, json!({}));
    let other = minted["token"].as_str().unwrap();
    std::thread::scope(|scope| {
        let call = scope.spawn(|| call_watched(&daemon, "ask-2"));
        let question = daemon.next_call_event("ask-2", &mut 0, "elicitation");
        let id = question["elicitationId"].as_str().unwrap();
        let params = json!({"progressId": "ask-2", "elicitationId": id, "action": "accept",
                            "content": {"name": "Mallory"}});
        let refused = daemon
            .rpc_as(other, name::ANSWER_ELICITATION, Some(params))
            .unwrap_err();
        assert_eq!(refused.code, code::FORBIDDEN);
        assert_eq!(refused.data.as_ref().unwrap()["kind"], "notPermitted");
        // The same answer as for a question that does not exist at all: no hint.
        let nowhere = daemon
            .rpc_as(
                other,
                name::ANSWER_ELICITATION,
                Some(json!({"progressId": "no-such-call", "elicitationId": id,
                            "action": "decline"})),
            )
            .unwrap_err();
        assert_eq!(nowhere.code, code::FORBIDDEN);
        assert_eq!(
            refused.message.replace("ask-2", "X"),
            nowhere.message.replace("no-such-call", "X")
        );

        answer(&daemon, "ask-2", id, "decline", None).unwrap();
        let text = text_content(&call.join().unwrap());
        assert!(text.contains("User declined"), "{text}");
        assert!(!text.contains("Mallory"), "{text}");
    });
}

#[test]
fn without_a_watcher_or_an_answer_in_time_the_question_is_declined_with_a_reason() {
    let daemon = asking_daemon(Some(300));
    // Nobody watches a plain call.
    let plain = daemon.call_tool("everything", TOOL, json!({}));
    let text = text_content(&plain);
    assert!(text.contains("User declined"), "{text}");
    assert!(text.contains("no caller is watching the call"), "{text}");

    // Watched, but never answered: declined when elicitationTimeoutMs passes, and the caller is
    // told with an `elicitationClosed` event.
    std::thread::scope(|scope| {
        let call = scope.spawn(|| call_watched(&daemon, "ask-3"));
        let mut after = 0;
        let question = daemon.next_call_event("ask-3", &mut after, "elicitation");
        let id = question["elicitationId"].as_str().unwrap();
        let closed = daemon.next_call_event("ask-3", &mut after, "elicitationClosed");
        assert_eq!(closed["elicitationId"], id);
        assert!(
            closed["reason"]
                .as_str()
                .unwrap()
                .contains("no answer came within 300 ms"),
            "{closed}"
        );
        let text = text_content(&call.join().unwrap());
        assert!(text.contains("User declined"), "{text}");
        assert!(text.contains("no answer came within 300 ms"), "{text}");
        let late =
            answer(&daemon, "ask-3", id, "accept", Some(json!({"name": "Ada"}))).unwrap_err();
        assert_eq!(late.code, code::INVALID_PARAMS);
        assert!(
            late.message.contains("takes no answer any more"),
            "{}",
            late.message
        );
    });
}

#[test]
fn bad_answer_params_are_named() {
    let daemon = asking_daemon(None);
    let error = daemon
        .rpc(
            name::ANSWER_ELICITATION,
            Some(json!({"progressId": "p", "elicitationId": "e1", "action": "maybe"})),
        )
        .unwrap_err();
    assert_eq!(error.code, code::INVALID_PARAMS);
    assert!(error.message.contains("accept"), "{}", error.message);
}

#[test]
fn the_cli_asks_the_form_on_stderr_and_reads_the_answers_from_stdin() {
    let daemon = asking_daemon(None);
    // name, check, firstLine (default), email (a bad one first), homepage, birthdate, integer
    // (out of range first), number (default), then the choices at their defaults.
    let answers = "y\nAda Lovelace\nyes\n\nnot-an-email\nada@example.com\n\n\n500\n7\n\n\n\n\n\n\n";
    let (stdout, stderr) = daemon.answer_cli_form(&["everything", TOOL, "{}"], answers);
    for expected in [
        "everything asks: Please provide inputs",
        "name* (String): text",
        "integer (Integer): integer 1 to 100",
        "! expected an email address",
        "! expected an integer from 1 to 100",
    ] {
        assert!(stderr.contains(expected), "{expected}: {stderr}");
    }
    for expected in [
        "- Name: Ada Lovelace",
        "- Agreed to terms: true",
        "- Email: ada@example.com",
        "- Favorite Integer: 7",
        "- Favorite Number: 3.14",
    ] {
        assert!(stdout.contains(expected), "{expected}: {stdout}");
    }

    // `--elicitation decline` declines at once; without a flag and without terminals the call
    // is not watched, and the daemon declines with its reason.
    let declined = daemon.run_client(
        &[
            "everything",
            TOOL,
            "{}",
            "--elicitation",
            "decline",
            "--progress",
        ],
        &[],
    );
    let stdout = String::from_utf8_lossy(&declined.stdout);
    assert!(stdout.contains("User declined"), "{stdout}");
    assert!(
        String::from_utf8_lossy(&declined.stderr).contains("declined (give --elicitation ask"),
        "{}",
        String::from_utf8_lossy(&declined.stderr)
    );
    let unwatched = daemon.run_client(&["everything", TOOL, "{}"], &[]);
    let stdout = String::from_utf8_lossy(&unwatched.stdout);
    assert!(
        stdout.contains("no caller is watching the call"),
        "{stdout}"
    );
}
