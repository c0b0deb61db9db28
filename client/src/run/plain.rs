//! Commands that run without an async runtime: which ones, and the trivial executor that runs
//! them.
//!
//! A listing, a schema or a plain tool call makes its requests one after another and nothing
//! runs beside them, so with the blocking transport ([`crate::link::blocking`]) every future of
//! the command completes when first polled: building a tokio runtime for it would only cost
//! start-up time (docs/benchmarks.md, "P1: client start-up"). A call that shows its progress
//! or may answer its server's questions follows the call's events beside it, and every other
//! command (the agent, chains, daemon management, ...) keeps the runtime; so does an address a
//! blocking socket cannot reach (a host name, a Unix socket).

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use crate::args::{Command, Invocation};

/// Which of the process's streams are terminals: they decide whether a call shows its progress
/// and asks its server's questions, which need the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Terminals {
    pub(crate) stdin: bool,
    pub(crate) stderr: bool,
}

/// Whether `invocation` can run on the blocking transport with no runtime.
pub(crate) fn without_runtime(invocation: &Invocation, terminals: Terminals) -> bool {
    match invocation.command {
        Command::ListServers
        | Command::ListTools { .. }
        | Command::ServerHelp { .. }
        | Command::DescribeTool { .. } => true,
        Command::CallTool { .. } | Command::CallToolWords { .. } => {
            let options = &invocation.call;
            let display =
                super::progress::display(options.progress, options.dry_run, terminals.stderr);
            let asks =
                super::elicitation::asks(options.elicitation, terminals.stdin, terminals.stderr);
            display.is_none() && !asks
        }
        _ => false,
    }
}

/// Runs `future` to completion on this thread without a runtime. Meant for the commands of
/// [`without_runtime`] on a blocking client, whose futures never wait; should one wait all
/// the same, the thread sleeps until it is woken, as any executor would.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::park();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Map;

    use super::*;
    use crate::args::{ElicitationChoice, ProgressChoice};

    fn invocation(command: Command) -> Invocation {
        Invocation {
            command,
            json: false,
            raw: false,
            out: None,
            timeout_ms: None,
            require_identity: true,
            confirm: false,
            all: false,
            warnings: Vec::new(),
            call: Default::default(),
            one_shot: None,
        }
    }

    fn call() -> Command {
        Command::CallTool {
            server: "demo".into(),
            tool: "sql_query".into(),
            arguments: Map::new(),
        }
    }

    const PIPES: Terminals = Terminals {
        stdin: false,
        stderr: false,
    };
    const TERMINALS: Terminals = Terminals {
        stdin: true,
        stderr: true,
    };

    #[test]
    fn discovery_and_a_plain_call_need_no_runtime() {
        for command in [
            Command::ListServers,
            Command::ListTools {
                server: "demo".into(),
            },
            Command::DescribeTool {
                server: "demo".into(),
                tool: "sql_query".into(),
            },
            call(),
        ] {
            assert!(
                without_runtime(&invocation(command.clone()), PIPES),
                "{command:?}"
            );
        }
        // A listing on a terminal is still one request after another.
        assert!(without_runtime(
            &invocation(Command::ListServers),
            TERMINALS
        ));
        // So is a call whose progress is turned off and whose questions are declined.
        let mut quiet = invocation(call());
        quiet.call.progress = ProgressChoice::Off;
        quiet.call.elicitation = ElicitationChoice::Decline;
        assert!(without_runtime(&quiet, TERMINALS));
    }

    #[test]
    fn a_call_that_follows_its_events_keeps_the_runtime() {
        // A bar on a terminal, and a form when both stdin and stderr are terminals.
        assert!(!without_runtime(&invocation(call()), TERMINALS));
        assert!(!without_runtime(
            &invocation(call()),
            Terminals {
                stdin: false,
                stderr: true
            }
        ));
        let mut lines = invocation(call());
        lines.call.progress = ProgressChoice::On;
        assert!(!without_runtime(&lines, PIPES));
        let mut asks = invocation(call());
        asks.call.elicitation = ElicitationChoice::Ask;
        assert!(!without_runtime(&asks, PIPES));
    }

    #[test]
    fn other_commands_keep_the_runtime() {
        for command in [
            Command::Health { tools: false },
            Command::ListTokens,
            Command::Daemon(crate::args::DaemonCommand::Status),
        ] {
            assert!(
                !without_runtime(&invocation(command.clone()), PIPES),
                "{command:?}"
            );
        }
    }

    #[test]
    fn a_future_that_waits_is_woken() {
        let (sender, receiver) = std::sync::mpsc::channel::<Waker>();
        let waiting = std::future::poll_fn(move |context| {
            static POLLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            if POLLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                sender.send(context.waker().clone()).unwrap();
                Poll::Pending
            } else {
                Poll::Ready(7)
            }
        });
        let waker = std::thread::spawn(move || receiver.recv().unwrap().wake());
        assert_eq!(block_on(waiting), 7);
        waker.join().unwrap();
    }
}
