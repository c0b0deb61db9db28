# The fixed Python half of the run_python sandbox, run by the same interpreter as the snippet,
# inside the kernel sandbox (namespaces, seccomp, Landlock, cgroups: see confine.rs). This file is
# a first layer that gives useful refusals; it is not the boundary.
#   python -I -S -B -c GUARD run MODULES RUN            reads {"code", "stdin", "nonce"} JSON on
#       stdin, checks the snippet and runs it; a refused snippet does not run, and the verdict
#       {"nonce", "problems"} is printed with exit code 86
#   python -I -S -B -c GUARD run-unchecked MODULES RUN  the same without the static check (tests)
# MODULES is the comma-separated import allow-list, which lives in the Rust code only; RUN names
# the run (its directory), so a process of the run can be recognised from outside.
#
# The static check parses the snippet with `ast` and refuses imports outside the allow-list,
# dangerous builtins by name, any dunder name (whatever binds it: a name, a match capture, an
# except clause, an import alias, a parameter or keyword), dunder methods other than ordinary
# ones, any attribute starting with "_" and the frame/code/generator attributes that reach
# interpreter internals. The runner gives the snippet a fresh globals dict whose builtins hold only
# safe functions, an __import__ that hands out stripped copies of allow-listed modules (no
# submodules, no private names, none of the few functions that look attributes up by a string),
# and an audit hook that refuses files, sockets, processes, new imports and further compilation.
import sys

MODE = sys.argv[1]
ALLOWED_MODULES = frozenset(filter(None, sys.argv[2].split(",")))

DENIED_NAMES = frozenset({
    "open", "exec", "eval", "compile", "__import__", "globals", "locals", "vars", "getattr",
    "setattr", "delattr", "hasattr", "input", "breakpoint", "help", "memoryview", "dir",
    "exit", "quit", "type", "super", "object", "classmethod", "staticmethod", "property",
})
# Attributes that lead from an ordinary object to frames, code objects or module globals
# (RestrictedPython's INSPECT_ATTRIBUTES, plus the few string-keyed getters of the stdlib).
DENIED_ATTRIBUTES = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "cr_await", "cr_frame", "cr_code",
    "cr_origin", "cr_running", "ag_await", "ag_code", "ag_frame", "ag_running", "f_back",
    "f_builtins", "f_code", "f_globals", "f_locals", "f_trace", "f_lasti", "f_lineno",
    "tb_frame", "tb_next", "tb_lasti", "tb_lineno", "co_code", "co_consts", "co_names",
    "mro", "format_map", "get_field", "update_wrapper", "wraps", "register", "dispatch",
})

# Dunder methods a snippet may define: construction, representation, comparison, containers,
# arithmetic and context managers. Anything else (instance checks, attribute hooks, class
# creation hooks, pickling) is refused.
ORDINARY_DUNDER_METHODS = frozenset({
    "__init__", "__repr__", "__str__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
    "__ge__", "__hash__", "__bool__", "__len__", "__iter__", "__next__", "__reversed__",
    "__contains__", "__getitem__", "__setitem__", "__delitem__", "__add__", "__radd__",
    "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__", "__rmul__", "__imul__",
    "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__",
    "__pow__", "__rpow__", "__neg__", "__pos__", "__abs__", "__int__", "__float__",
    "__round__", "__call__", "__enter__", "__exit__",
})


def check(code):
    import ast
    import json

    problems = []

    def refuse(node, message):
        problems.append({"line": getattr(node, "lineno", 0), "message": message})

    try:
        tree = ast.parse(code, "<snippet>", "exec")
    except SyntaxError as error:
        problems.append({"line": error.lineno or 0,
                         "message": f"syntax error: {error.msg}"})
        return problems
    except (ValueError, MemoryError, RecursionError) as error:
        problems.append({"line": 0, "message": f"cannot parse the code: {error!r}"})
        return problems

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in ALLOWED_MODULES:
                    refuse(node, f"import of {alias.name!r} is not allowed")
        elif isinstance(node, ast.ImportFrom):
            if node.level or node.module not in ALLOWED_MODULES:
                refuse(node, f"import from {'.' * node.level}{node.module or ''!r} is not allowed")
            for alias in node.names:
                if alias.name.startswith("_") or alias.name in DENIED_ATTRIBUTES:
                    refuse(node, f"importing the name {alias.name!r} is not allowed")
        elif isinstance(node, ast.Name):
            if node.id in DENIED_NAMES:
                refuse(node, f"the name {node.id!r} is not allowed")
            elif node.id.startswith("__"):
                refuse(node, f"dunder names such as {node.id!r} are not allowed")
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                refuse(node, f"attributes starting with '_' such as {node.attr!r} are not allowed")
            elif node.attr in DENIED_ATTRIBUTES:
                refuse(node, f"the attribute {node.attr!r} is not allowed")
        elif isinstance(node, ast.MatchClass):
            for attribute in node.kwd_attrs:
                if attribute.startswith("_") or attribute in DENIED_ATTRIBUTES:
                    refuse(node, f"matching on the attribute {attribute!r} is not allowed")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            # Defining __init__ or __repr__ is ordinary Python; the hooks that intercept
            # attribute access, instance checks or class creation are what turn a string-keyed
            # helper or a class pattern into an escape (an ABC's __subclasshook__ made every
            # object match a class pattern that read attributes named by a runtime string).
            if node.name.startswith("__") and node.name not in ORDINARY_DUNDER_METHODS:
                refuse(node, f"defining {node.name!r} is not allowed")
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)):
            # `case __match_args__:` binds a dunder without an ast.Name.
            if node.name and node.name.startswith("__"):
                refuse(node, f"dunder names such as {node.name!r} are not allowed")
        elif isinstance(node, ast.MatchMapping):
            if node.rest and node.rest.startswith("__"):
                refuse(node, f"dunder names such as {node.rest!r} are not allowed")
        elif isinstance(node, ast.ExceptHandler):
            if node.name and node.name.startswith("__"):
                refuse(node, f"dunder names such as {node.name!r} are not allowed")
        elif isinstance(node, ast.arg):
            if node.arg.startswith("__"):
                refuse(node, f"dunder names such as {node.arg!r} are not allowed")
        elif isinstance(node, ast.keyword):
            if node.arg and node.arg.startswith("__"):
                refuse(node, f"dunder names such as {node.arg!r} are not allowed")
        elif isinstance(node, ast.alias):
            if node.asname and node.asname.startswith("_"):
                refuse(node, f"importing as {node.asname!r} is not allowed")
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                if name.startswith("__"):
                    refuse(node, f"dunder names such as {name!r} are not allowed")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "__" in node.value:
                refuse(node, "string literals containing '__' are not allowed")
    return problems


SAFE_BUILTINS = (
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr",
    "complex", "dict", "divmod", "enumerate", "filter", "float", "format", "frozenset", "hash",
    "hex", "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next",
    "oct", "ord", "pow", "print", "range", "repr", "reversed", "round", "set", "slice", "sorted",
    "str", "sum", "tuple", "zip", "id", "NotImplemented", "Ellipsis",
    "ArithmeticError", "AssertionError", "AttributeError", "BaseException", "EOFError",
    "Exception", "FloatingPointError", "GeneratorExit", "IndexError", "KeyError",
    "LookupError", "MemoryError", "NameError", "NotImplementedError", "OverflowError",
    "RecursionError", "RuntimeError", "StopIteration", "SystemExit", "TypeError",
    "UnicodeError", "ValueError", "ZeroDivisionError",
)
# Modules the allowed ones import lazily (Counter.most_common needs heapq, datetime.strptime needs
# _strptime). They are loaded before the audit hook starts refusing imports and file opens, and
# are never handed to the snippet.
PRELOADED = ("heapq", "_strptime")
# Module attributes never handed out: string-keyed attribute access and string evaluation.
STRIPPED = {
    "functools": {"update_wrapper", "wraps", "singledispatch", "singledispatchmethod"},
    "string": {"Formatter"},
    "collections": {"UserDict", "UserList", "UserString"},
}
# Audit events refused once the snippet runs (PEP 578); prefixes end with a dot. sys._getframe is
# let through because collections.namedtuple asks for its caller's module name; the snippet
# itself cannot reach sys.
ALLOWED_EVENTS = {"sys._getframe"}
REFUSED_EVENTS = {"open", "import", "compile", "exec", "object.__getattr__", "code.__new__",
                  "function.__new__", "setopencode", "cpython.PyInterpreterState_New"}
REFUSED_PREFIXES = ("os.", "subprocess.", "socket.", "shutil.", "ctypes.", "sys.", "marshal.",
                    "pickle.", "urllib.", "http.", "ftplib.", "smtplib.", "fcntl.", "mmap.",
                    "resource.", "signal.", "pty.", "tempfile.", "glob.", "sqlite3.",
                    "webbrowser.", "msvcrt.", "winreg.", "_winapi.", "syslog.", "cpython.")


def run(request):
    import builtins
    import json
    import traceback
    import types

    for name in PRELOADED:
        __import__(name)
    modules = {}
    for name in sorted(ALLOWED_MODULES):
        module = __import__(name)
        public = {
            key: value for key, value in vars(module).items()
            if not key.startswith("_")
            and not isinstance(value, types.ModuleType)
            and key not in STRIPPED.get(name, ())
        }
        modules[name] = types.SimpleNamespace(**public)

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level or name not in modules:
            raise ImportError(f"import of {name!r} is not allowed")
        return modules[name]

    safe = {name: getattr(builtins, name) for name in SAFE_BUILTINS}
    safe["__build_class__"] = builtins.__build_class__
    safe["__import__"] = guarded_import
    namespace = {"__builtins__": safe, "__name__": "__main__", "STDIN": request.get("stdin") or ""}
    compiled = compile(request["code"], "<snippet>", "exec")

    def namedtuple_source(source):
        # collections.namedtuple compiles one lambda of its own; nothing else may compile.
        return isinstance(source, bytes) and source.startswith(b"lambda _cls, ")

    # started: the snippet runs; allowed_exec: how many exec events may still pass (the snippet's
    # own, then one per namedtuple lambda); finished: the snippet is done, tracebacks may print.
    started, finished = [], []
    allowed_exec = [1]

    def audit(event, arguments):
        if not started or finished:
            return
        if event == "compile" and namedtuple_source(arguments[0]):
            allowed_exec[0] += 1
            return
        if event == "exec" and allowed_exec[0] > 0:
            allowed_exec[0] -= 1
            return
        if event in ALLOWED_EVENTS:
            return
        if event in REFUSED_EVENTS or event.startswith(REFUSED_PREFIXES):
            raise RuntimeError(f"the sandbox refused {event}")

    sys.addaudithook(audit)
    started.append(True)
    try:
        exec(compiled, namespace)
    except SystemExit as stop:
        sys.stdout.flush()
        code = stop.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except BaseException as error:
        finished.append(True)
        sys.stdout.flush()
        # Show the snippet's frames only, not this runner's.
        traceback.print_exception(type(error), error, error.__traceback__.tb_next)
        return 1
    sys.stdout.flush()
    return 0


def main():
    import json
    request = json.loads(sys.stdin.buffer.read())
    if MODE == "run":
        problems = check(request["code"])
        if problems:
            sys.stdout.write(json.dumps({"nonce": request.get("nonce", ""),
                                         "problems": problems}))
            sys.stdout.flush()
            return 86
    elif MODE != "run-unchecked":
        sys.stderr.write(f"unknown guard mode {MODE!r}\n")
        return 2
    return run(request)


sys.exit(main())
