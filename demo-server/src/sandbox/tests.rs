//! The sandbox against the attacks, layer by layer, with the machine's real Python.
//!
//! `whole_tool_*` tests go through [`Sandbox::run`] (guard and kernel). `kernel_*` tests run raw
//! Python (`python -I -S -B -c CODE`, no guard at all) under the kernel layers, so each kernel
//! layer is shown to hold on its own: where a test turns layers off (Landlock, seccomp, an rlimit)
//! it is to prove that the layer it names stops the attack without the others. `guard_*` tests
//! run the guard's runner without its static check.
//!
//! These tests need what CI has: root, user namespaces, seccomp, Landlock, and cgroup v1 pids and
//! memory hierarchies (`sandbox()` asserts the sandbox is complete and says which layer is
//! missing otherwise; there is no skip). Every test gets its own work root; "no process left
//! behind" is checked by looking for any process whose working directory or command line names
//! it (the intermediate works there; the interpreter's last argument names its run directory).

use std::{path::Path, time::Duration};

use super::{
    plan::Layers,
    process::{Confined, Finished, StopReason, group_exists},
    *,
};

/// The escape chain of issue 22 as one snippet (see the file's comment).
const ESCAPE_CHAIN: &str = include_str!("escape_chain.py");

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

    /// Processes of a run in this root: working directory inside it, or named on the command
    /// line.
    fn processes_inside(&self) -> Vec<String> {
        let mut found = Vec::new();
        let name = self.0.to_string_lossy().into_owned();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let cwd = std::fs::read_link(entry.path().join("cwd")).unwrap_or_default();
            let command_line = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            if cwd.starts_with(&self.0) || String::from_utf8_lossy(&command_line).contains(&name) {
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

/// The sandbox on this machine, which must have every layer.
async fn sandbox(root: &WorkRoot) -> Sandbox {
    let sandbox = Sandbox::detect(None, root.0.clone()).await;
    assert_eq!(
        sandbox.health(),
        SandboxHealth::Complete,
        "these tests need Python 3.8+ on PATH, root, user namespaces, seccomp, Landlock and \
         cgroup v1 pids and memory (as on CI): {}",
        sandbox.describe()
    );
    sandbox
}

fn ready(sandbox: &Sandbox) -> &platform::Ready {
    sandbox.platform().ready().expect("the sandbox is ready")
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

/// How a kernel-layer test changes the production setup.
#[derive(Default)]
struct Variation {
    /// Turns layers off (or leaves them) before the run.
    layers: Option<fn(&mut Layers)>,
    /// Changes the rlimits.
    limits: Option<fn(&mut Limits)>,
}

/// Runs `arguments` (after the interpreter's path) under the kernel layers of `sandbox`, changed
/// by `variation`, with `input` on stdin.
async fn kernel_run_with(
    sandbox: &Sandbox,
    root: &WorkRoot,
    arguments: &[&str],
    input: &str,
    variation: Variation,
) -> Finished {
    let ready = ready(sandbox);
    let mut layers = ready.plan.layers.clone();
    if let Some(change) = variation.layers {
        change(&mut layers);
    }
    let plan = ready.plan.with_layers(layers);
    let mut run_limits = limits(Duration::from_secs(10));
    if let Some(change) = variation.limits {
        change(&mut run_limits);
    }
    let run_directory = WorkDir::create(&root.0).unwrap();
    let cgroups = (!plan.layers.cgroups.is_empty()).then(|| {
        cgroup::RunCgroups::create(
            &plan.layers.cgroups,
            cgroup::CgroupLimits {
                processes: PROCESS_LIMIT + 1,
                memory_bytes: MEMORY_LIMIT_BYTES,
            },
        )
        .unwrap()
    });
    let marker = run_directory.path().to_string_lossy().into_owned();
    let mut all_arguments = arguments.to_vec();
    all_arguments.push(&marker);
    let finished = process::run(
        Confined {
            plan: &plan,
            run_directory: run_directory.path(),
            arguments: &all_arguments,
            limits: run_limits,
            cgroups: cgroups.as_ref(),
        },
        input.as_bytes().to_vec(),
        std::future::pending(),
    )
    .await
    .unwrap();
    assert!(
        !group_exists(finished.process_group),
        "the process group is gone"
    );
    drop(cgroups);
    drop(run_directory);
    finished
}

/// Raw Python under the kernel layers (no guard), changed by `variation`.
async fn kernel_run(
    sandbox: &Sandbox,
    root: &WorkRoot,
    code: &str,
    variation: Variation,
) -> Finished {
    kernel_run_with(
        sandbox,
        root,
        &["-I", "-S", "-B", "-c", code, "--"],
        "",
        variation,
    )
    .await
}

fn stdout(finished: &Finished) -> String {
    String::from_utf8_lossy(&finished.stdout.bytes).into_owned()
}

fn stderr(finished: &Finished) -> String {
    String::from_utf8_lossy(&finished.stderr.bytes).into_owned()
}

/// The last stdout line of a run that printed JSON there.
fn json_output(finished: &Finished) -> serde_json::Value {
    let output = stdout(finished);
    let line = output.trim().lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|error| {
        panic!(
            "not JSON ({error}): {output:?}; stderr: {}",
            stderr(finished)
        )
    })
}

fn without_landlock(layers: &mut Layers) {
    layers.landlock_abi = None;
}

fn without_seccomp(layers: &mut Layers) {
    layers.seccomp = false;
}

/// A prelude for snippets that report what each attempt did: `attempt(label, action)` stores
/// the result or the error's class and errno, `report()` prints them as JSON.
const ATTEMPTS: &str = "import json, os, errno as _errno\n\
results = {}\n\
def attempt(label, action):\n    \
    try:\n        results[label] = ['ok', repr(action())]\n    \
    except OSError as error:\n        results[label] = [type(error).__name__, _errno.errorcode.get(error.errno, error.errno)]\n    \
    except Exception as error:\n        results[label] = [type(error).__name__, str(error)]\n\
def report():\n    print(json.dumps(results))\n";

/// `ctypes` with errno, and a `call(name, *args)` that returns 'ok' or the errno's name.
const CTYPES: &str = "import ctypes, errno as _errno\n\
libc = ctypes.CDLL(None, use_errno=True)\n\
def call(name, *args):\n    \
    result = getattr(libc, name)(*args)\n    \
    if result == -1:\n        return _errno.errorcode[ctypes.get_errno()]\n    \
    return 'ok'\n";

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
        // The escape chain's first steps (issue 22): a match capture binding a dunder, and a
        // hook that makes every object an instance.
        (
            "class C:\n    match ('x',):\n        case __match_args__:\n            pass",
            "dunder names such as '__match_args__'",
        ),
        (
            "class C:\n    def __subclasshook__(*args):\n        return True",
            "defining '__subclasshook__' is not allowed",
        ),
        (
            "try:\n    pass\nexcept Exception as __builtins__:\n    pass",
            "dunder names such as '__builtins__'",
        ),
        ("import math as _m", "importing as '_m' is not allowed"),
        (ESCAPE_CHAIN, "dunder names such as '__match_args__'"),
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
    assert_eq!(sandbox.health(), SandboxHealth::Unavailable);
    let error = run_code(&sandbox, "print(1)", None).await.unwrap_err();
    assert!(matches!(error, SandboxError::Unavailable(_)), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("run_python is unavailable on this machine")
    );
}

#[tokio::test]
async fn the_description_names_every_layer_in_force() {
    let root = WorkRoot::new("describe");
    let sandbox = sandbox(&root).await;
    let description = sandbox.describe();
    for expected in [
        "kernel sandbox",
        "no network",
        "seccomp",
        "Landlock ABI",
        "pids and memory cgroup",
        "/scratch",
    ] {
        assert!(description.contains(expected), "{expected}: {description}");
    }
    assert!(!description.contains("DEGRADED"), "{description}");
    let layers = sandbox.layers();
    for expected in [
        "user namespace",
        "pid namespace",
        "mount namespace",
        "network namespace",
        "IPC namespace",
        "UTS namespace",
        "cgroup namespace",
        "unprivileged user 65534",
        "no capabilities",
        "no_new_privs",
        "fresh /proc",
        "seccomp",
        "pids cgroup",
        "memory cgroup",
    ] {
        assert!(
            layers.iter().any(|layer| layer == expected),
            "{expected}: {layers:?}"
        );
    }
}

/// Issue 22's escape: the chain that passed main's static check, run here through the guard's
/// runner without the static check (which now refuses it), so it really switches the audit hook
/// off; the kernel then stops every step that followed in the outside attack.
#[tokio::test]
async fn escape_chain_is_contained_by_the_kernel_once_past_the_guard() {
    let root = WorkRoot::new("escape");
    let sandbox = sandbox(&root).await;
    // Stand-ins for the daemon's runtime file (owner token inside, mode 0600, owned by root).
    let daemon_directory = WorkRoot::new("escape-daemon");
    let runtime_file = daemon_directory.0.join("daemon-runtime.json");
    std::fs::write(&runtime_file, "{\"token\": \"owner-token-SECRET\"}").unwrap();
    std::fs::set_permissions(
        &runtime_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let target = serde_json::json!({
        "runtime_file": runtime_file,
        "daemon_pid": std::process::id(),
    });
    let input =
        serde_json::json!({"code": ESCAPE_CHAIN, "stdin": target.to_string(), "nonce": "x"});
    let modules = ALLOWED_MODULES.join(",");
    let finished = kernel_run_with(
        &sandbox,
        &root,
        &[
            "-I",
            "-S",
            "-B",
            "-c",
            GUARD_SCRIPT,
            "run-unchecked",
            &modules,
        ],
        &input.to_string(),
        Variation::default(),
    )
    .await;
    let output = stdout(&finished);
    assert!(
        output.starts_with("audit hook off\n"),
        "the chain got past the guard's runtime layer: {output:?} {}",
        stderr(&finished)
    );
    assert!(!output.contains("SECRET"), "{output}");
    let results = json_output(&finished);
    assert_eq!(results["uid"], 65534, "{results}");
    for (step, expected) in [
        ("runtime file", "FileNotFoundError"),
        ("daemon network namespace", "FileNotFoundError"),
        ("leave pids cgroup", "FileNotFoundError"),
    ] {
        let result = results[step].as_str().unwrap_or_default();
        assert!(result.starts_with(expected), "{step}: {result}");
    }
    // No shell: there is no /bin/sh in the tree, and nothing else to run.
    let shell = results["shell"].as_str().unwrap_or_default();
    assert!(shell.starts_with("FileNotFoundError"), "{results}");
    assert_nothing_left(&root);
}

#[tokio::test]
async fn kernel_seccomp_refuses_namespaces_mounts_ptrace_and_kernel_calls_from_ctypes() {
    let root = WorkRoot::new("seccomp");
    let sandbox = sandbox(&root).await;
    let code = format!(
        "{CTYPES}\
import json\n\
SYS = dict(unshare=272, setns=308, mount=165, umount2=166, pivot_root=155, ptrace=101, bpf=321, keyctl=250, add_key=248, request_key=249, perf_event_open=298, init_module=175, finit_module=313, delete_module=176, kexec_load=246, reboot=169, io_uring_setup=425, open_tree=428, move_mount=429, fsopen=430, clone3=435, process_vm_readv=310)\n\
results = {{}}\n\
for name, number in SYS.items():\n    \
    results[name] = call('syscall', number, 0, 0, 0, 0, 0)\n\
results['unshare user'] = call('unshare', 0x10000000)\n\
results['unshare net'] = call('unshare', 0x40000000)\n\
results['clone new user'] = call('syscall', 56, 0x10000000 | 17, 0, 0, 0, 0)\n\
results['x32 unshare'] = call('syscall', 272 | 0x40000000, 0x10000000)\n\
results['ptrace traceme'] = call('ptrace', 0, 0, 0, 0)\n\
results['mount tmpfs'] = call('mount', b'none', b'/scratch', b'tmpfs', 0, None)\n\
print(json.dumps(results))\n"
    );
    assert!(
        std::env::consts::ARCH == "x86_64",
        "this test's syscall numbers are x86-64's"
    );
    let finished = kernel_run(&sandbox, &root, &code, Variation::default()).await;
    let results = json_output(&finished);
    for (call, expected) in results.as_object().unwrap() {
        let expected_errno = match call.as_str() {
            "clone3" | "x32 unshare" => "ENOSYS",
            _ => "EPERM",
        };
        assert_eq!(expected, expected_errno, "{call}: {results}");
    }
    // Without the filter, an unprivileged process may still make a user namespace: seccomp is
    // the layer that refuses it.
    let finished = kernel_run(
        &sandbox,
        &root,
        &format!("{CTYPES}print(call('unshare', 0x10000000))"),
        Variation {
            layers: Some(without_seccomp),
            ..Variation::default()
        },
    )
    .await;
    assert_eq!(stdout(&finished).trim(), "ok", "{}", stderr(&finished));
    assert_nothing_left(&root);
}

#[tokio::test]
async fn kernel_ptrace_of_another_process_is_refused() {
    let root = WorkRoot::new("ptrace");
    let sandbox = sandbox(&root).await;
    // A child tries to attach to its parent, as a debugger would; seccomp refuses, and without
    // it the missing capability and the dumpable check do.
    let code = format!(
        "{CTYPES}import os\n\
pid = os.fork()\n\
if pid == 0:\n    \
    os.write(1, (call('ptrace', 16, os.getppid(), 0, 0) + '\\n').encode())\n    \
    os._exit(0)\n\
os.waitpid(pid, 0)\n"
    );
    let finished = kernel_run(&sandbox, &root, &code, Variation::default()).await;
    assert_eq!(stdout(&finished).trim(), "EPERM", "{}", stderr(&finished));
    assert_nothing_left(&root);
}

#[tokio::test]
async fn kernel_proc_shows_only_the_sandbox_and_landlock_closes_it() {
    let root = WorkRoot::new("proc");
    let sandbox = sandbox(&root).await;
    let daemon = std::process::id();
    let code = format!(
        "{ATTEMPTS}\
attempt('ppid', os.getppid)\n\
attempt('processes', lambda: sorted(int(name) for name in os.listdir('/proc') if name.isdigit()))\n\
attempt('daemon environ', lambda: open('/proc/{daemon}/environ', 'rb').read())\n\
attempt('daemon root', lambda: os.listdir('/proc/{daemon}/root/'))\n\
attempt('init environ', lambda: open('/proc/1/environ', 'rb').read())\n\
attempt('init cmdline', lambda: open('/proc/1/cmdline', 'rb').read().split(b'\\0')[0])\n\
report()\n"
    );
    // The pid namespace and the fresh /proc alone: only the interpreter itself is there.
    let finished = kernel_run(
        &sandbox,
        &root,
        &code,
        Variation {
            layers: Some(without_landlock),
            ..Variation::default()
        },
    )
    .await;
    let results = json_output(&finished);
    assert_eq!(results["ppid"], serde_json::json!(["ok", "0"]), "{results}");
    assert_eq!(
        results["processes"],
        serde_json::json!(["ok", "[1]"]),
        "{results}"
    );
    assert_eq!(
        results["daemon environ"][0], "FileNotFoundError",
        "{results}"
    );
    assert_eq!(results["daemon root"][0], "FileNotFoundError", "{results}");
    assert_eq!(
        results["init environ"],
        serde_json::json!(["ok", "b''"]),
        "{results}"
    );
    assert!(
        results["init cmdline"][1]
            .as_str()
            .unwrap()
            .contains("python"),
        "{results}"
    );
    // With Landlock on top, /proc cannot be read at all.
    let finished = kernel_run(&sandbox, &root, &code, Variation::default()).await;
    let results = json_output(&finished);
    for attempt in ["processes", "init environ", "init cmdline"] {
        assert_eq!(
            results[attempt][0], "PermissionError",
            "{attempt}: {results}"
        );
    }
    assert_nothing_left(&root);
}

#[tokio::test]
async fn kernel_signals_cannot_reach_the_daemon() {
    let root = WorkRoot::new("signals");
    let sandbox = sandbox(&root).await;
    // A stand-in for the daemon: a process of ours the snippet tries to kill by its real pid.
    let mut daemon = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let code = format!(
        "{ATTEMPTS}import signal\n\
attempt('kill daemon', lambda: os.kill({}, signal.SIGKILL))\n\
attempt('kill everyone', lambda: os.kill(-1, signal.SIGKILL))\n\
attempt('kill group', lambda: os.killpg(os.getpgid(0), signal.SIGKILL))\n\
report()\n",
        daemon.id()
    );
    for variation in [
        Variation {
            layers: Some(without_landlock),
            ..Variation::default()
        },
        Variation::default(),
    ] {
        let finished = kernel_run(&sandbox, &root, &code, variation).await;
        let output = stdout(&finished);
        // Killing its own group ends the snippet itself (it is the group's only member in its
        // namespace), so the report may be missing; the daemon must live either way.
        if let Ok(results) = serde_json::from_str::<serde_json::Value>(output.trim()) {
            assert_eq!(
                results["kill daemon"],
                serde_json::json!(["ProcessLookupError", "ESRCH"]),
                "{results}"
            );
        }
        assert_eq!(
            daemon.try_wait().unwrap(),
            None,
            "the daemon stand-in lives"
        );
    }
    daemon.kill().unwrap();
    daemon.wait().unwrap();
    assert_nothing_left(&root);
}

#[tokio::test]
async fn kernel_writes_land_only_in_the_private_scratch_directory() {
    let root = WorkRoot::new("writes");
    let sandbox = sandbox(&root).await;
    let runtime = ready(&sandbox).plan.layout.directories[0].clone();
    let code = format!(
        "{ATTEMPTS}\
attempt('scratch', lambda: open('/scratch/ok', 'w').write('fine'))\n\
attempt('cwd', os.getcwd)\n\
attempt('root', lambda: open('/escape', 'w'))\n\
attempt('runtime', lambda: open('{}/escape', 'w'))\n\
attempt('tmp', lambda: open('/tmp/escape', 'w'))\n\
attempt('device', lambda: open('/dev/null', 'w').write('x'))\n\
def fill():\n    \
    for index in range(40):\n        \
        with open('/scratch/fill%d' % index, 'wb') as file:\n            \
            file.write(b'x' * 1024 * 1024)\n\
attempt('big file', lambda: open('/scratch/big', 'wb').write(b'x' * 2 * 1024 * 1024))\n\
attempt('fill scratch', fill)\n\
report()\n",
        runtime.display()
    );
    for variation in [
        Variation {
            layers: Some(without_landlock),
            ..Variation::default()
        },
        Variation::default(),
    ] {
        let finished = kernel_run(&sandbox, &root, &code, variation).await;
        let results = json_output(&finished);
        assert_eq!(
            results["scratch"],
            serde_json::json!(["ok", "4"]),
            "{results}"
        );
        assert_eq!(
            results["cwd"],
            serde_json::json!(["ok", "'/scratch'"]),
            "{results}"
        );
        assert_eq!(
            results["device"],
            serde_json::json!(["ok", "1"]),
            "{results}"
        );
        // The tree: a read-only root and read-only binds (the kernel answers EROFS before it
        // asks Landlock, which has no write rule there either).
        for attempt in ["root", "runtime"] {
            assert_eq!(results[attempt][1], "EROFS", "{attempt}: {results}");
        }
        assert_eq!(results["tmp"][1], "ENOENT", "{results}");
        assert_eq!(results["big file"][1], "EFBIG", "{results}");
        // The scratch tmpfs is 16 MiB; one file at most 1 MiB (RLIMIT_FSIZE).
        assert_eq!(results["fill scratch"][1], "ENOSPC", "{results}");
    }
    assert_nothing_left(&root);
}

#[tokio::test]
async fn kernel_has_no_network_dns_or_loopback() {
    let root = WorkRoot::new("network");
    let sandbox = sandbox(&root).await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let dns = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    dns.set_nonblocking(true).unwrap();
    let (tcp_port, dns_port) = (
        listener.local_addr().unwrap().port(),
        dns.local_addr().unwrap().port(),
    );
    let code = format!(
        "{ATTEMPTS}import socket\n\
attempt('tcp', lambda: socket.create_connection(('127.0.0.1', {tcp_port}), timeout=2))\n\
def query():\n    \
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    \
    return udp.sendto(b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x07example\\x03com\\x00\\x00\\x01\\x00\\x01', ('127.0.0.1', {dns_port}))\n\
attempt('dns query', query)\n\
attempt('resolve', lambda: socket.getaddrinfo('example.com', 80))\n\
attempt('interfaces', lambda: [name for _, name in socket.if_nameindex()])\n\
report()\n"
    );
    for variation in [
        Variation {
            layers: Some(without_landlock),
            ..Variation::default()
        },
        Variation::default(),
    ] {
        let landlock = variation.layers.is_none();
        let finished = kernel_run(&sandbox, &root, &code, variation).await;
        let results = json_output(&finished);
        // The network namespace alone: only a loopback device, down, so no route anywhere;
        // Landlock (ABI 4) refuses the TCP connect before routing.
        let tcp = if landlock { "EACCES" } else { "ENETUNREACH" };
        assert_eq!(results["tcp"][1], tcp, "{results}");
        assert_eq!(results["dns query"][1], "ENETUNREACH", "{results}");
        assert_eq!(results["resolve"][0], "gaierror", "{results}");
        assert_eq!(
            results["interfaces"],
            serde_json::json!(["ok", "['lo']"]),
            "{results}"
        );
    }
    assert!(listener.accept().is_err(), "nothing reached our listener");
    let mut buffer = [0; 512];
    assert!(dns.recv_from(&mut buffer).is_err(), "no DNS query arrived");
    assert_nothing_left(&root);
}

#[tokio::test]
async fn kernel_raw_sockets_need_a_capability_nobody_has() {
    let root = WorkRoot::new("raw");
    let sandbox = sandbox(&root).await;
    let code = format!(
        "{ATTEMPTS}import socket\n\
attempt('raw icmp', lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))\n\
attempt('packet', lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0))\n\
attempt('raw ipv6', lambda: socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6))\n\
report()\n"
    );
    // Neither Landlock nor seccomp is needed for this: no capability, CAP_NET_RAW included.
    let finished = kernel_run(
        &sandbox,
        &root,
        &code,
        Variation {
            layers: Some(|layers| {
                layers.landlock_abi = None;
                layers.seccomp = false;
            }),
            ..Variation::default()
        },
    )
    .await;
    let results = json_output(&finished);
    for attempt in ["raw icmp", "packet", "raw ipv6"] {
        assert_eq!(
            results[attempt],
            serde_json::json!(["PermissionError", "EPERM"]),
            "{attempt}: {results}"
        );
    }
    assert_nothing_left(&root);
}

/// A fork bomb whose children live on after the parent exits, some of them in their own
/// sessions: bounded while it runs, and killed with the namespace when the run ends.
const FORK_BOMB: &str = "import os, time\n\
for i in range(1000):\n    \
    try:\n        pid = os.fork()\n    \
    except OSError as error:\n        print('refused after', i, error.errno, flush=True)\n        break\n    \
    if pid == 0:\n        \
        if i % 2:\n            os.setsid()\n        \
        time.sleep(60)\n        os._exit(0)\n";

fn forks_before_refusal(finished: &Finished) -> u32 {
    let output = stdout(finished);
    output
        .split_whitespace()
        .nth(2)
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no refusal: {output:?} {}", stderr(finished)))
}

#[tokio::test]
async fn kernel_fork_bombs_are_bounded_by_the_pids_cgroup_and_by_rlimit_nproc() {
    let root = WorkRoot::new("fork");
    let sandbox = sandbox(&root).await;
    // The pids cgroup alone (RLIMIT_NPROC lifted).
    let finished = kernel_run(
        &sandbox,
        &root,
        FORK_BOMB,
        Variation {
            limits: Some(|limits| {
                let mut current = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                // SAFETY: getrlimit writes the struct we pass.
                unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut current) };
                limits.processes = current.rlim_max;
            }),
            ..Variation::default()
        },
    )
    .await;
    assert!(
        forks_before_refusal(&finished) < PROCESS_LIMIT,
        "{finished:?}"
    );
    assert_eq!(finished.exit_code, Some(0));
    assert_eq!(finished.stopped_by, None, "the parent exited on its own");
    assert_nothing_left(&root);
    // RLIMIT_NPROC alone (no cgroups): it counts the snippet's user in its own namespace.
    let finished = kernel_run(
        &sandbox,
        &root,
        FORK_BOMB,
        Variation {
            layers: Some(|layers| layers.cgroups = cgroup::CgroupRoots::default()),
            ..Variation::default()
        },
    )
    .await;
    assert!(
        forks_before_refusal(&finished) < PROCESS_LIMIT,
        "{finished:?}"
    );
    assert_nothing_left(&root);
}

#[tokio::test]
async fn kernel_four_gib_are_refused_by_rlimit_as_and_by_the_memory_cgroup() {
    let root = WorkRoot::new("memory-kernel");
    let sandbox = sandbox(&root).await;
    let code = "x = bytearray(4 * 1024 ** 3)\nprint('allocated', len(x))";
    let finished = kernel_run(&sandbox, &root, code, Variation::default()).await;
    assert!(stderr(&finished).contains("MemoryError"), "{finished:?}");
    // The memory cgroup alone (RLIMIT_AS lifted): the kernel kills the process at 512 MiB.
    let finished = kernel_run(
        &sandbox,
        &root,
        code,
        Variation {
            limits: Some(|limits| limits.address_space_bytes = 64 * 1024 * 1024 * 1024),
            ..Variation::default()
        },
    )
    .await;
    assert!(!stdout(&finished).contains("allocated"), "{finished:?}");
    assert_eq!(finished.signal, Some(libc::SIGKILL), "{finished:?}");
    assert!(finished.out_of_memory, "{finished:?}");
    assert_nothing_left(&root);
}

#[tokio::test]
async fn kernel_host_secrets_are_not_in_the_tree() {
    let root = WorkRoot::new("secrets");
    let sandbox = sandbox(&root).await;
    // Stand-ins for the daemon's runtime file and config file, where the daemon keeps them.
    let daemon_directory = WorkRoot::new("secrets-daemon");
    let runtime_file = daemon_directory.0.join("runtime.json");
    let config_file = daemon_directory.0.join("config.json");
    std::fs::write(&runtime_file, "owner-token-SECRET").unwrap();
    std::fs::write(&config_file, "{\"mcpServers\": {}}").unwrap();
    let code = format!(
        "{ATTEMPTS}\
attempt('shadow', lambda: open('/etc/shadow').read())\n\
attempt('passwd', lambda: open('/etc/passwd').read())\n\
attempt('runtime file', lambda: open('{}').read())\n\
attempt('config file', lambda: open('{}').read())\n\
attempt('home', lambda: os.listdir('/root'))\n\
attempt('environment', lambda: sorted(set(os.environ) - {{'LC_CTYPE'}}))\n\
attempt('uid', os.getuid)\n\
report()\n",
        runtime_file.display(),
        config_file.display()
    );
    for variation in [
        Variation {
            layers: Some(without_landlock),
            ..Variation::default()
        },
        Variation::default(),
    ] {
        let finished = kernel_run(&sandbox, &root, &code, variation).await;
        let output = stdout(&finished);
        assert!(
            !output.contains("SECRET") && !output.contains("root:"),
            "{output}"
        );
        let results = json_output(&finished);
        for attempt in ["shadow", "passwd", "runtime file", "config file"] {
            assert_eq!(
                results[attempt],
                serde_json::json!(["FileNotFoundError", "ENOENT"]),
                "{attempt}: {results}"
            );
        }
        // Python adds LC_CTYPE itself (PEP 538); nothing comes from the daemon.
        assert_eq!(
            results["environment"],
            serde_json::json!(["ok", "[]"]),
            "{results}"
        );
        assert_eq!(
            results["uid"],
            serde_json::json!(["ok", "65534"]),
            "{results}"
        );
    }
    assert_nothing_left(&root);
}

#[tokio::test]
async fn kernel_cannot_leave_its_cgroups() {
    let root = WorkRoot::new("cgroup");
    let sandbox = sandbox(&root).await;
    let code = format!(
        "{ATTEMPTS}{CTYPES}\
for hierarchy in ['pids', 'memory', 'unified']:\n    \
    attempt(hierarchy, lambda: open('/sys/fs/cgroup/%s/cgroup.procs' % hierarchy, 'w').write(str(os.getpid())))\n\
attempt('proc cgroup', lambda: open('/proc/self/cgroup').read())\n\
results['mount cgroupfs'] = call('mount', b'cgroup', b'/scratch', b'cgroup', 0, b'pids')\n\
results['mount cgroup2'] = call('mount', b'none', b'/scratch', b'cgroup2', 0, None)\n\
report()\n"
    );
    let finished = kernel_run(
        &sandbox,
        &root,
        &code,
        Variation {
            layers: Some(without_landlock),
            ..Variation::default()
        },
    )
    .await;
    let results = json_output(&finished);
    for hierarchy in ["pids", "memory", "unified"] {
        assert_eq!(results[hierarchy][1], "ENOENT", "{hierarchy}: {results}");
    }
    // Its cgroup namespace starts at its own cgroup.
    let own = results["proc cgroup"][1].as_str().unwrap_or_default();
    assert!(
        own.contains("pids:/\\n") && own.contains("memory:/\\n"),
        "{results}"
    );
    assert_eq!(results["mount cgroupfs"], "EPERM", "{results}");
    assert_eq!(results["mount cgroup2"], "EPERM", "{results}");
    assert_nothing_left(&root);
}

#[tokio::test]
async fn kernel_drops_every_capability_and_passes_on_nothing() {
    let root = WorkRoot::new("credentials");
    let sandbox = sandbox(&root).await;
    let code = format!(
        "{ATTEMPTS}\
status = dict(line.split(':', 1) for line in open('/proc/self/status').read().splitlines())\n\
for key in ['Uid', 'Gid', 'Groups', 'CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb', 'NoNewPrivs', 'Seccomp']:\n    \
    results[key] = status[key].split()\n\
def open_descriptors():\n    \
    found = []\n    \
    for fd in range(3, 1024):\n        \
        try:\n            os.fstat(fd)\n            found.append(fd)\n        \
        except OSError:\n            pass\n    \
    return found\n\
attempt('descriptors', open_descriptors)\n\
attempt('environment', lambda: open('/proc/self/environ', 'rb').read())\n\
attempt('setuid root', lambda: os.setuid(0))\n\
attempt('hostname', lambda: os.uname().nodename)\n\
report()\n"
    );
    let finished = kernel_run(
        &sandbox,
        &root,
        &code,
        Variation {
            layers: Some(without_landlock),
            ..Variation::default()
        },
    )
    .await;
    let results = json_output(&finished);
    let zero = serde_json::json!(["0000000000000000"]);
    for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert_eq!(results[set], zero, "{set}: {results}");
    }
    assert_eq!(
        results["Uid"],
        serde_json::json!(["65534", "65534", "65534", "65534"])
    );
    assert_eq!(
        results["Gid"],
        serde_json::json!(["65534", "65534", "65534", "65534"])
    );
    assert_eq!(results["Groups"], serde_json::json!([]), "{results}");
    assert_eq!(results["NoNewPrivs"], serde_json::json!(["1"]));
    assert_eq!(results["Seccomp"], serde_json::json!(["2"]));
    assert_eq!(
        results["descriptors"],
        serde_json::json!(["ok", "[]"]),
        "{results}"
    );
    assert_eq!(
        results["environment"],
        serde_json::json!(["ok", "b''"]),
        "{results}"
    );
    assert_eq!(results["setuid root"][1], "EINVAL", "{results}");
    assert_eq!(
        results["hostname"],
        serde_json::json!(["ok", "'run-python'"]),
        "{results}"
    );
    assert_nothing_left(&root);
}

#[tokio::test]
async fn kernel_deadline_kills_the_whole_namespace() {
    let root = WorkRoot::new("deadline");
    let sandbox = sandbox(&root).await;
    // A child in its own session, and the parent burning CPU until the deadline.
    let code = "import os\nif os.fork() == 0:\n    os.setsid()\nwhile True:\n    pass";
    let finished = kernel_run(
        &sandbox,
        &root,
        code,
        Variation {
            limits: Some(|limits| limits.wall_clock = Duration::from_millis(500)),
            ..Variation::default()
        },
    )
    .await;
    assert_eq!(finished.stopped_by, Some(StopReason::Timeout));
    assert_eq!(finished.signal, Some(libc::SIGKILL));
    assert_nothing_left(&root);
}

#[tokio::test]
async fn guard_runtime_layer_blocks_what_the_static_check_would() {
    let root = WorkRoot::new("runtime");
    let sandbox = sandbox(&root).await;
    let modules = ALLOWED_MODULES.join(",");
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
    ] {
        let input = serde_json::json!({"code": code, "stdin": "", "nonce": "x"}).to_string();
        let finished = kernel_run_with(
            &sandbox,
            &root,
            &[
                "-I",
                "-S",
                "-B",
                "-c",
                GUARD_SCRIPT,
                "run-unchecked",
                &modules,
            ],
            &input,
            Variation::default(),
        )
        .await;
        assert_eq!(finished.exit_code, Some(1), "{code}: {}", stderr(&finished));
        assert!(
            stderr(&finished).contains(expected),
            "{code}: {}",
            stderr(&finished)
        );
        assert!(!stdout(&finished).contains("escaped"), "{code}");
    }
    assert_nothing_left(&root);
}

#[tokio::test]
async fn runs_beyond_the_slots_queue_and_the_wait_is_not_their_time() {
    let root = WorkRoot::new("queue");
    let detected = sandbox(&root).await;
    // One slot, so the second run must wait for the first.
    let sandbox = Sandbox::with_slots(detected.platform().clone(), root.0.clone(), 1);
    // The second's limit is far above a Python start on a loaded machine, and still shorter
    // than the first's run, so its wait alone would exceed it.
    let first = CodeRequest::new("while True:\n    pass".into(), Some(2500), None).unwrap();
    let second = CodeRequest::new("print('second')".into(), Some(1500), None).unwrap();
    let first_run = sandbox.run(&first, std::future::pending());
    tokio::pin!(first_run);
    // Wait until the first holds the slot, then queue the second behind it.
    let mut first_result = None;
    while sandbox.slots.available_permits() == 1 {
        tokio::select! {
            biased;
            result = &mut first_run => { first_result = Some(result); break; }
            () = tokio::task::yield_now() => {}
        }
    }
    let second_run = sandbox.run(&second, std::future::pending());
    let (first, second) = match first_result {
        Some(first) => (first, second_run.await),
        None => tokio::join!(first_run, second_run),
    };
    let (first, second) = (first.unwrap(), second.unwrap());
    assert!(first.timed_out, "{first:?}");
    assert_eq!(first.queued_ms, 0, "{first:?}");
    // The second waited for the first run (2,500 ms of it at least, less the moment between
    // the first's start and the second's arrival), longer than its own 1,500 ms limit, and
    // still had all of that limit.
    assert!(second.queued_ms > 1500, "{second:?}");
    assert_eq!(
        (second.stdout.as_str(), second.exit_code, second.timed_out),
        ("second\n", Some(0), false),
        "{second:?}"
    );
    // A caller that gives up while waiting gets told nothing ran.
    let permit = sandbox.slots.acquire().await.unwrap();
    let request = CodeRequest::new("print(1)".into(), None, None).unwrap();
    let error = sandbox
        .run(&request, std::future::ready(()))
        .await
        .unwrap_err();
    assert!(
        matches!(error, SandboxError::CancelledWhileQueued { .. }),
        "{error}"
    );
    assert_eq!(sandbox.waiting.load(Ordering::SeqCst), 0);
    drop(permit);
    assert_nothing_left(&root);
}

/// A machine where an essential layer fails (here: the kernel rejects the seccomp program) gets
/// no sandbox at all: the tool refuses every call rather than run without the layer.
#[tokio::test]
async fn an_essential_layer_that_fails_makes_the_tool_refuse() {
    let root = WorkRoot::new("essential");
    let sandbox = sandbox(&root).await;
    let ready = ready(&sandbox);
    // A filter whose only instruction jumps past its end: the kernel refuses it (EINVAL).
    let broken = vec![vec![seccompiler::sock_filter {
        code: 0x05,
        jt: 0,
        jf: 0,
        k: 10,
    }]];
    let state = platform::settle(
        ready.plan.with_seccomp(broken),
        &root.0,
        ready.version.clone(),
        Vec::new(),
    )
    .await;
    let why = state.expect_err("no sandbox without seccomp");
    assert!(
        why.contains("installing the seccomp filter failed")
            && why.contains("run_python refuses to run code without it"),
        "{why}"
    );
    let refusing = Sandbox::with_slots(
        Platform {
            state: Err(why.clone()),
        },
        root.0.clone(),
        1,
    );
    assert_eq!(refusing.health(), SandboxHealth::Unavailable);
    assert!(
        refusing
            .describe()
            .starts_with("UNAVAILABLE on this machine: the kernel sandbox cannot be set up here")
    );
    let error = run_code(&refusing, "print(1)", None).await.unwrap_err();
    assert!(matches!(error, SandboxError::Unavailable(_)), "{error}");
    assert_nothing_left(&root);
}

/// Without an optional layer the tool runs, and says it is degraded.
#[tokio::test]
async fn a_missing_optional_layer_is_reported_as_degraded() {
    let root = WorkRoot::new("degraded");
    let sandbox = sandbox(&root).await;
    let ready = ready(&sandbox).clone();
    let mut layers = ready.plan.layers.clone();
    layers.landlock_abi = None;
    let degraded = Sandbox::with_slots(
        Platform {
            state: Ok(platform::Ready {
                plan: ready.plan.with_layers(layers),
                missing: vec![platform::MissingLayer {
                    layer: "Landlock",
                    reason: "the kernel has no Landlock or it is disabled".to_owned(),
                }],
                ..ready
            }),
        },
        root.0.clone(),
        1,
    );
    assert_eq!(degraded.health(), SandboxHealth::Degraded);
    let description = degraded.describe();
    assert!(
        description
            .contains("DEGRADED here: no Landlock (the kernel has no Landlock or it is disabled)"),
        "{description}"
    );
    assert!(
        !degraded
            .layers()
            .iter()
            .any(|layer| layer.starts_with("Landlock"))
    );
    let run = run_code(&degraded, "print(6 * 7)", None).await.unwrap();
    assert_eq!(run.stdout, "42\n");
    assert_nothing_left(&root);
}

/// A run whose future is dropped mid-way (the server shutting down) leaves nothing behind.
#[tokio::test]
async fn a_dropped_run_leaves_no_process() {
    let root = WorkRoot::new("dropped");
    let sandbox = sandbox(&root).await;
    let request = CodeRequest::new(
        "import json\nprint('running', flush=True)\nwhile True:\n    pass".into(),
        Some(10_000),
        None,
    )
    .unwrap();
    {
        let run = sandbox.run(&request, std::future::pending());
        tokio::pin!(run);
        // Poll until the snippet's process exists, then drop the run.
        while root.processes_inside().len() < 2 {
            tokio::select! {
                biased;
                result = &mut run => panic!("the run ended: {result:?}"),
                () = tokio::task::yield_now() => {}
            }
        }
    }
    let gone = (0..2000).any(|_| {
        std::thread::sleep(Duration::from_millis(5));
        root.processes_inside().is_empty()
    });
    assert!(gone, "left: {:?}", root.processes_inside());
    assert_nothing_left(&root);
}
