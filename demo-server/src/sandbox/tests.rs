//! The sandbox against the bad inputs, layer by layer, with the machine's real Python.
//!
//! `whole_tool_*` tests go through [`Sandbox::run`] (static check, restricted runtime, OS
//! limits); `os_layer_*` tests run Python directly under the OS confinement, without the first
//! two layers, to show that the limits hold on their own; `runtime_layer_*` tests run the guard's
//! `run` mode without the static check. Every test gets its own work root, so "no process left
//! behind" is checked by looking for any process whose working directory is inside it.

use std::{path::Path, time::Duration};

use super::{
    process::{self, Confined, Finished, StopReason, group_exists},
    *,
};

/// A temporary work root, removed on drop.
struct WorkRoot(PathBuf);

impl WorkRoot {
    fn new(label: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "tool-cli-sandbox-test-{label}-{}-{:x}",
            std::process::id(),
            rand::rng().random::<u32>()
        ));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    /// Processes whose working directory is inside this root (a run's directory, even deleted).
    fn processes_inside(&self) -> Vec<String> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(cwd) = std::fs::read_link(entry.path().join("cwd")) else {
                continue;
            };
            if cwd.starts_with(&self.0) {
                found.push(format!(
                    "{} in {}",
                    entry.file_name().to_string_lossy(),
                    cwd.display()
                ));
            }
        }
        found
    }

    /// The run directories left inside the root.
    fn leftovers(&self) -> Vec<PathBuf> {
        std::fs::read_dir(&self.0)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect()
    }
}

impl Drop for WorkRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn sandbox(root: &WorkRoot) -> Sandbox {
    let sandbox = Sandbox::detect(None, root.0.clone()).await;
    assert!(
        sandbox.platform().interpreter.is_ok(),
        "these tests need Python 3.8+ on PATH: {}",
        sandbox.describe()
    );
    sandbox
}

async fn run_code(
    sandbox: &Sandbox,
    code: &str,
    timeout_ms: Option<u64>,
) -> Result<CodeRun, SandboxError> {
    let request = CodeRequest::new(code.to_owned(), timeout_ms, None).unwrap();
    sandbox.run(&request, std::future::pending()).await
}

/// Asserts that nothing of a run is left: no process, no directory.
fn assert_nothing_left(root: &WorkRoot) {
    assert_eq!(
        root.processes_inside(),
        Vec::<String>::new(),
        "processes left"
    );
    assert_eq!(
        root.leftovers(),
        Vec::<PathBuf>::new(),
        "run directories left"
    );
}

fn refused(result: Result<CodeRun, SandboxError>) -> String {
    match result {
        Err(error @ SandboxError::Refused { .. }) => error.to_string(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn whole_tool_computes_and_reads_stdin() {
    let root = WorkRoot::new("ok");
    let sandbox = sandbox(&root).await;
    let code = "import statistics, json\n\
                from collections import Counter, namedtuple\n\
                Point = namedtuple('Point', 'x y')\n\
                class Box:\n    def __init__(self, v):\n        self.v = v\n\
                data = json.loads(STDIN)\n\
                print(statistics.mean(data), Counter('abca').most_common(1), Point(1, 2), Box(3).v)";
    let request = CodeRequest::new(code.to_owned(), None, Some("[1, 2, 3, 6]".to_owned())).unwrap();
    let run = sandbox.run(&request, std::future::pending()).await.unwrap();
    assert_eq!(run.stdout, "3 [('a', 2)] Point(x=1, y=2) 3\n", "{run:?}");
    assert_eq!(
        (run.exit_code, run.timed_out, run.stopped_by),
        (Some(0), false, None)
    );
    assert!(!run.stdout_truncated && !run.stderr_truncated);
    assert_nothing_left(&root);
}

#[tokio::test]
async fn whole_tool_reports_exceptions_and_exit_codes() {
    let root = WorkRoot::new("exceptions");
    let sandbox = sandbox(&root).await;
    let run = run_code(&sandbox, "print('before')\n1 / 0", None)
        .await
        .unwrap();
    assert_eq!((run.stdout.as_str(), run.exit_code), ("before\n", Some(1)));
    assert!(run.stderr.contains("ZeroDivisionError"), "{}", run.stderr);
    assert!(
        !run.stderr.contains("guard"),
        "runner frames are hidden: {}",
        run.stderr
    );
    let run = run_code(&sandbox, "raise SystemExit(7)", None)
        .await
        .unwrap();
    assert_eq!(run.exit_code, Some(7));
    assert_nothing_left(&root);
}

#[tokio::test]
async fn whole_tool_stops_a_loop_at_the_deadline() {
    let root = WorkRoot::new("loop");
    let sandbox = sandbox(&root).await;
    let run = run_code(&sandbox, "while True:\n    pass", Some(500))
        .await
        .unwrap();
    assert!(run.timed_out, "{run:?}");
    assert_eq!(run.stopped_by, Some(StoppedBy::Timeout));
    assert_eq!(
        (run.exit_code, run.signal.as_deref()),
        (None, Some("SIGKILL"))
    );
    assert!(run.duration_ms >= 500, "{run:?}");
    assert_nothing_left(&root);
}

#[tokio::test]
async fn whole_tool_hits_the_memory_limit() {
    let root = WorkRoot::new("memory");
    let sandbox = sandbox(&root).await;
    let run = run_code(
        &sandbox,
        "x = bytearray(10 * 1024 ** 3)\nprint('allocated')",
        None,
    )
    .await
    .unwrap();
    assert_eq!(run.exit_code, Some(1), "{run:?}");
    assert!(run.stderr.contains("MemoryError"), "{}", run.stderr);
    assert!(!run.stdout.contains("allocated"));
    assert_nothing_left(&root);
}

#[tokio::test]
async fn whole_tool_caps_output_and_stops_the_writer() {
    let root = WorkRoot::new("output");
    let sandbox = sandbox(&root).await;
    let run = run_code(&sandbox, "print('x' * 100_000_000)", None)
        .await
        .unwrap();
    assert!(run.stdout_truncated, "{run:?}");
    assert_eq!(run.stdout.len(), OUTPUT_LIMIT_BYTES);
    assert_eq!(run.stopped_by, Some(StoppedBy::OutputLimit));
    assert!(!run.timed_out);
    // A writer that never stops is stopped too, long before its deadline.
    let run = run_code(&sandbox, "while True:\n    print('y' * 1000)", Some(10_000))
        .await
        .unwrap();
    assert_eq!(run.stopped_by, Some(StoppedBy::OutputLimit), "{run:?}");
    assert_nothing_left(&root);
}

#[tokio::test]
async fn whole_tool_refuses_the_dangerous_inputs_before_running() {
    let root = WorkRoot::new("refused");
    let sandbox = sandbox(&root).await;
    for (code, expected) in [
        (
            "import os\nwhile True:\n    os.fork()",
            "import of 'os' is not allowed",
        ),
        (
            "f = open('big', 'w')\nf.write('x' * 2 ** 30)",
            "the name 'open' is not allowed",
        ),
        (
            "print(open('/etc/passwd').read())",
            "the name 'open' is not allowed",
        ),
        (
            "import socket\nsocket.create_connection(('127.0.0.1', 80))",
            "import of 'socket' is not allowed",
        ),
        (
            "__builtins__['__import__']('os')",
            "dunder names such as '__builtins__'",
        ),
        (
            "__import__('os').system('id')",
            "the name '__import__' is not allowed",
        ),
        (
            "import importlib\nimportlib.import_module('os')",
            "import of 'importlib'",
        ),
        (
            "().__class__.__base__.__subclasses__()",
            "attributes starting with '_' such as '__class__'",
        ),
        ("import random\nrandom._os.system('id')", "such as '_os'"),
        (
            "g = (x for x in [1])\ng.gi_frame.f_back",
            "the attribute 'gi_frame'",
        ),
        ("eval('1 + 1')", "the name 'eval' is not allowed"),
        ("getattr(1, 'real')", "the name 'getattr' is not allowed"),
        ("from os import path", "import from 'os' is not allowed"),
        (
            "import string\nstring.Formatter().get_field('0', [1], {})",
            "the attribute 'get_field'",
        ),
        (
            "name = '__class__'\nprint(name)",
            "string literals containing '__'",
        ),
        ("def f(:\n", "syntax error"),
    ] {
        let message = refused(run_code(&sandbox, code, None).await);
        assert!(message.contains(expected), "{code:?}: {message}");
        assert!(
            message.contains("allowed imports: collections"),
            "{message}"
        );
    }
    assert_nothing_left(&root);
}

#[tokio::test]
async fn whole_tool_hands_out_stripped_modules() {
    let root = WorkRoot::new("stripped");
    let sandbox = sandbox(&root).await;
    // datetime.sys would reach sys.modules; the stripped module has no submodules at all.
    let run = run_code(
        &sandbox,
        "import datetime\nprint(datetime.sys.modules)",
        None,
    )
    .await
    .unwrap();
    assert_eq!(run.exit_code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("has no attribute 'sys'"),
        "{}",
        run.stderr
    );
    let run = run_code(&sandbox, "import functools\nfunctools.update_wrapper", None).await;
    assert!(refused(run).contains("update_wrapper"));
    assert_nothing_left(&root);
}

#[test]
fn bad_requests_are_refused_with_the_range() {
    for (code, timeout, expected) in [
        ("", None, "code is empty"),
        (
            "print(1)",
            Some(0),
            "timeoutMs 0 is out of range; use 1 to 10000",
        ),
        ("print(1)", Some(60_000), "timeoutMs 60000 is out of range"),
    ] {
        let error = CodeRequest::new(code.to_owned(), timeout, None).unwrap_err();
        assert!(error.to_string().contains(expected), "{error}");
    }
    let long = "x = 1\n".repeat(MAX_CODE_BYTES);
    assert!(CodeRequest::new(long, None, None).is_err());
    assert_eq!(
        CodeRequest::new("print(1)".into(), None, None)
            .unwrap()
            .timeout,
        DEFAULT_TIMEOUT
    );
}

#[tokio::test]
async fn without_python_the_tool_says_so() {
    let root = WorkRoot::new("no-python");
    let sandbox = Sandbox::detect(Some(Path::new("/nonexistent/python3")), root.0.clone()).await;
    assert!(sandbox.describe().starts_with("UNAVAILABLE on this machine: the Python interpreter /nonexistent/python3 cannot be used"), "{}", sandbox.describe());
    let error = run_code(&sandbox, "print(1)", None).await.unwrap_err();
    assert!(matches!(error, SandboxError::Unavailable(_)), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("run_python is unavailable on this machine")
    );
}

/// Runs `code` with the real interpreter under the OS confinement only (no static check, no
/// restricted runtime).
async fn os_layer_run(
    sandbox: &Sandbox,
    root: &WorkRoot,
    code: &str,
    wall_clock: Duration,
) -> Finished {
    let interpreter = sandbox.platform().interpreter.as_ref().unwrap();
    let work_dir = WorkDir::create(&root.0).unwrap();
    let cgroup = sandbox
        .platform()
        .pids_root
        .as_ref()
        .map(|root| cgroup::RunCgroup::create(root, PROCESS_LIMIT).unwrap());
    let finished = process::run(
        Confined {
            program: &interpreter.path,
            args: &["-I", "-S", "-B", "-c", code],
            input: Vec::new(),
            work_dir: &work_dir.0,
            limits: limits(wall_clock),
            network: sandbox.platform().network,
            cgroup: cgroup.as_ref(),
        },
        std::future::pending(),
    )
    .await
    .unwrap();
    assert!(
        !group_exists(finished.process_group),
        "the process group is gone"
    );
    drop(cgroup);
    drop(work_dir);
    finished
}

fn stdout(finished: &Finished) -> String {
    String::from_utf8_lossy(&finished.stdout.bytes).into_owned()
}

#[tokio::test]
async fn os_layer_bounds_a_fork_bomb_and_kills_every_child() {
    let root = WorkRoot::new("fork");
    let sandbox = sandbox(&root).await;
    // Children that would live for a minute, and a parent that exits at once.
    let code = "import os, time\n\
                for i in range(1000):\n    \
                    try:\n        pid = os.fork()\n    \
                    except OSError as error:\n        print('refused after', i, error.errno, flush=True)\n        break\n    \
                    if pid == 0:\n        time.sleep(60)\n        os._exit(0)\n";
    let finished = os_layer_run(&sandbox, &root, code, Duration::from_secs(10)).await;
    let output = stdout(&finished);
    let forks: u32 = output
        .split_whitespace()
        .nth(2)
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no refusal: {output:?} {:?}", finished.stderr));
    assert!(forks < PROCESS_LIMIT, "{forks} forks succeeded");
    assert_eq!(finished.exit_code, Some(0));
    assert_eq!(finished.stopped_by, None, "the parent exited on its own");
    assert_nothing_left(&root);
}

#[tokio::test]
async fn os_layer_caps_file_size() {
    let root = WorkRoot::new("fsize");
    let sandbox = sandbox(&root).await;
    let code = "f = open('big', 'wb')\n\
                try:\n    \
                    for _ in range(1024):\n        f.write(b'x' * 1024 * 1024)\n        f.flush()\n\
                except OSError as error:\n    print('stopped at', f.tell(), error.strerror)";
    let finished = os_layer_run(&sandbox, &root, code, Duration::from_secs(10)).await;
    assert_eq!(
        stdout(&finished).trim(),
        format!("stopped at {FILE_SIZE_LIMIT_BYTES} File too large")
    );
    assert_nothing_left(&root);
}

#[tokio::test]
async fn os_layer_has_no_network() {
    let root = WorkRoot::new("network");
    let sandbox = sandbox(&root).await;
    if sandbox.platform().network == NetworkIsolation::None {
        // Documented fallback: this platform allows no network namespace.
        assert!(sandbox.describe().contains("network NOT isolated"));
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let code = format!(
        "import socket\n\
         try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    print('connected')\n\
         except OSError as error:\n    print('refused', error.errno)"
    );
    let finished = os_layer_run(&sandbox, &root, &code, Duration::from_secs(10)).await;
    assert!(stdout(&finished).starts_with("refused"), "{finished:?}");
    assert!(listener.accept().is_err(), "nothing reached our listener");
}

#[tokio::test]
async fn os_layer_stops_cpu_burners_and_their_children_at_the_deadline() {
    let root = WorkRoot::new("deadline");
    let sandbox = sandbox(&root).await;
    let code = "import os\nos.fork()\nwhile True:\n    pass";
    let finished = os_layer_run(&sandbox, &root, code, Duration::from_millis(500)).await;
    assert_eq!(finished.stopped_by, Some(StopReason::Timeout));
    assert_eq!(finished.signal, Some(libc::SIGKILL));
    assert_nothing_left(&root);
}

/// Runs `code` through the guard's `run` mode only (restricted runtime and OS limits, no static
/// check).
async fn runtime_layer_run(sandbox: &Sandbox, root: &WorkRoot, code: &str) -> Finished {
    let modules = ALLOWED_MODULES.join(",");
    let input = serde_json::json!({"code": code, "stdin": ""}).to_string();
    let interpreter = sandbox.platform().interpreter.as_ref().unwrap();
    let work_dir = WorkDir::create(&root.0).unwrap();
    process::run(
        Confined {
            program: &interpreter.path,
            args: &["-I", "-S", "-B", "-c", GUARD_SCRIPT, "run", &modules],
            input: input.into_bytes(),
            work_dir: &work_dir.0,
            limits: limits(Duration::from_secs(10)),
            network: sandbox.platform().network,
            cgroup: None,
        },
        std::future::pending(),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn runtime_layer_blocks_what_the_static_check_would() {
    let root = WorkRoot::new("runtime");
    let sandbox = sandbox(&root).await;
    for (code, expected) in [
        ("open('/etc/passwd')", "NameError"),
        ("__import__('os')", "import of 'os' is not allowed"),
        ("import importlib", "import of 'importlib' is not allowed"),
        ("eval('1')", "NameError"),
        // Reaching a builtin importer through object's subclasses: the audit hook refuses the
        // system call even though the attribute walk succeeds.
        (
            "imp = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'BuiltinImporter'][0]\n\
             posix = imp.load_module('posix')\nposix.system('echo escaped')",
            "the sandbox refused",
        ),
        (
            "imp = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'BuiltinImporter'][0]\n\
             imp.load_module('posix').open('/etc/passwd', 0)",
            "the sandbox refused open",
        ),
    ] {
        let finished = runtime_layer_run(&sandbox, &root, code).await;
        let stderr = String::from_utf8_lossy(&finished.stderr.bytes);
        assert_eq!(finished.exit_code, Some(1), "{code}: {stderr}");
        assert!(stderr.contains(expected), "{code}: {stderr}");
        assert!(!stdout(&finished).contains("escaped"), "{code}");
    }
}
