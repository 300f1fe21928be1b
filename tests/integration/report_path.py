"""The report path: kill -QUIT (DataDumpRequest) runs a report on the agent's own thread while the
program goes on, repeated requests are all served, and the VM's own signal handling keeps working;
net= sends the same bytes over TCP."""
import os
import signal
import socket
import threading
import time

import hprof_records
from harness import agentpath, check, finish, java_process, jdks, run_java, verify_binary, wait_for

for label, home in jdks():
    with java_process(home, agentpath("doe=n,heap=sites,file=out.txt"), "HelloThreads",
                      ["3", "6000"]) as (proc, folder):
        out = folder / "out.txt"
        stdout = folder / "stdout.txt"
        check(wait_for(lambda: "Hello, threads!" in stdout.read_text(), 30), f"{label}: program started")
        # The streamed thread lines sit in the sink's buffer until a report flushes them.
        os.kill(proc.pid, signal.SIGQUIT)
        check(wait_for(lambda: out.exists() and 'name="worker-2"' in out.read_text(), 10),
              f"{label}: kill -QUIT writes what was streamed so far")
        check('name="fasthprof writer", group="system"' in out.read_text(),
              f"{label}: the report runs on the agent's own thread")
        for _ in range(3):
            os.kill(proc.pid, signal.SIGQUIT)
            time.sleep(0.05)
        check(wait_for(lambda: "Full thread dump" in stdout.read_text(), 10),
              f"{label}: the VM still prints its thread dump on SIGQUIT")
        check(proc.poll() is None, f"{label}: the program keeps running through the requests")
        code = proc.wait(timeout=60)
        check(code == 0, f"{label}: the program exits normally after the requests (exit {code})")
        text = out.read_text()
        check(text.count("THREAD START") == len(set(l for l in text.splitlines() if l.startswith("THREAD START"))),
              f"{label}: no thread line is written twice")
        check((folder / "stderr.txt").read_text().count("HPROF ERROR") == 0,
              f"{label}: no error during the requests:\n{(folder / 'stderr.txt').read_text()}")

    # net=host:port: the binary stream goes to a TCP peer, ends cleanly at exit, and verifies.
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1"), (socket.AF_INET, "localhost")):
        try:
            server = socket.socket(family, socket.SOCK_STREAM)
            server.bind((host, 0))
        except OSError as error:
            print(f"SKIP: {label}: cannot listen on {host}: {error}")
            continue
        server.listen(1)
        server.settimeout(30)
        port = server.getsockname()[1]
        received = bytearray()

        def serve():
            try:
                connection, _ = server.accept()
            except OSError:
                return
            while True:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                received.extend(chunk)
            connection.close()

        reader = threading.Thread(target=serve, daemon=True)
        reader.start()
        address = f"[{host}]" if ":" in host else host
        run = run_java(home, agentpath(f"format=b,heap=dump,net={address}:{port}"))
        reader.join(timeout=30)
        server.close()
        check(run.code == 0 and "Hello, threads!" in run.stdout, f"{label}: runs with net={host}:{port}", run)
        path = run.folder / "received.hprof"
        path.write_bytes(bytes(received))
        check(received.startswith(b"JAVA PROFILE 1.0.2\0"), f"{label}: net={host} receives the binary header", run)
        ok, output = verify_binary(path)
        check(ok, f"{label}: what net={host} received verifies:\n{output}", run)
        names = [t[3] for t in hprof_records.start_threads(hprof_records.read(path)[3])] if ok else []
        check("worker-0" in names, f"{label}: net={host} received the thread records", run)
        check(not any(p.name.startswith("java.hprof") for p in run.folder.iterdir()),
              f"{label}: net= writes no local output file", run)

finish("report_path")
