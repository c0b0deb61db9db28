"""run_python latency through the demo server over stdio: median (and p90) of N sequential
`print(1)` calls, measured by the MCP client from request to answer.

    python3 demo-server/bench/run_python_latency.py target/debug/tool-cli-daemon [N] [CONCURRENT]

With CONCURRENT > 1 it also sends that many CPU-bound snippets at once (about one second of CPU
each) and prints how many timed out and their queue waits: issue 22's "ten 1 s snippets on two
cores all time out at 5 s".
"""
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time

binary = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) > 2 else 30
concurrent = int(sys.argv[3]) if len(sys.argv) > 3 else 0

with tempfile.TemporaryDirectory() as directory:
    server = subprocess.Popen(
        [binary, "demo-server", "--db", f"{directory}/demo.sqlite"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    lock = threading.Lock()
    answers = {}
    arrived = threading.Condition(lock)

    def reader():
        for line in server.stdout:
            message = json.loads(line)
            if "id" in message:
                with arrived:
                    answers[message["id"]] = message
                    arrived.notify_all()

    threading.Thread(target=reader, daemon=True).start()

    def send(message):
        with lock:
            server.stdin.write(json.dumps(message) + "\n")
            server.stdin.flush()

    def request(identifier, method, params):
        send({"jsonrpc": "2.0", "id": identifier, "method": method, "params": params})
        with arrived:
            arrived.wait_for(lambda: identifier in answers)
            return answers.pop(identifier)

    request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "bench", "version": "0"}})
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def run_python(identifier, code, timeout_ms=5000):
        answer = request(identifier, "tools/call", {
            "name": "run_python", "arguments": {"code": code, "timeoutMs": timeout_ms}})
        return answer["result"].get("structuredContent") or answer["result"]

    run_python(1, "print(1)")  # warm-up
    latencies = []
    for index in range(count):
        started = time.perf_counter()
        result = run_python(100 + index, "print(1)")
        latencies.append((time.perf_counter() - started) * 1000)
        assert result.get("stdout") == "1\n", result
    latencies.sort()
    print(f"print(1) x{count}: median {statistics.median(latencies):.1f} ms, "
          f"p90 {latencies[int(len(latencies) * 0.9) - 1]:.1f} ms, "
          f"min {latencies[0]:.1f} ms, max {latencies[-1]:.1f} ms")

    if concurrent > 1:
        # About one second of CPU: a plain loop (the guard allows no `time`), its length
        # calibrated here with the same kind of loop.
        started = time.process_time()
        total = 0
        for number in range(2_000_000):
            total += number
        per_second = int(2_000_000 / (time.process_time() - started))
        burn = f"total = 0\nfor number in range({per_second}):\n    total += number\nprint('done')"
        results = [None] * concurrent

        def one(index):
            results[index] = run_python(1000 + index, burn, 5000)

        threads = [threading.Thread(target=one, args=(index,)) for index in range(concurrent)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        timed_out = sum(1 for result in results if result.get("timedOut"))
        refused = sum(1 for result in results if "stdout" not in result)
        queued = [result.get("queuedMs") for result in results]
        print(f"{concurrent} concurrent 1 s CPU snippets: {timed_out} timed out, "
              f"{refused} refused, all answered in {elapsed:.1f} s, queuedMs {queued}")
    server.stdin.close()
    server.wait()
