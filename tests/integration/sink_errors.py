"""Write errors while the JVM runs: a file size limit reached mid-report (set and lifted again on
the live JVM with prlimit; HotSpot ignores SIGXFSZ, so writes fail with EFBIG), /dev/full, and a
net= peer that goes away. Each gives one clear message, the JVM keeps running, and what was
already written stays; after a cut the next report starts where the last complete one ended."""
import os
import re
import signal
import socket
import subprocess
import threading
import time

from harness import (agentpath, check, cleanup, finish, jdks, run_java, start_java, verify_binary,
                     wait_for)


def prlimit_fsize(pid, soft_limit):
    # Only the soft limit moves: raising a hard limit again needs CAP_SYS_RESOURCE.
    subprocess.run(["prlimit", f"--pid={pid}", f"--fsize={soft_limit}:"], check=True)


def file_size_limit(jdk, home, fmt):
    label = f"{jdk} format={fmt}"
    # File size limit on the running JVM.
    proc, folder = start_java(home, agentpath(f"heap=sites,doe=n,format={fmt},file=out.txt"), "ThreadChurn",
                              ["6", "10"])
    try:
        out = folder / "out.txt"
        stderr = folder / "stderr.txt"
        check(wait_for(lambda: "churning" in (folder / "stdout.txt").read_text(), 30), f"{label}: started")
        time.sleep(0.5)
        os.kill(proc.pid, signal.SIGQUIT)
        check(wait_for(lambda: out.exists() and b"churn-thread" in out.read_bytes(), 10),
              f"{label}: first report flushed the streamed lines")
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGQUIT)
        time.sleep(0.5)
        complete = out.stat().st_size
        prlimit_fsize(proc.pid, complete + 300)
        time.sleep(1.0)  # about 50 more threads: far more than 300 bytes of lines
        os.kill(proc.pid, signal.SIGQUIT)
        check(wait_for(lambda: "error writing" in stderr.read_text(), 10),
              f"{label}: the size limit gives an error message:\n{stderr.read_text()}")
        time.sleep(0.5)
        errors = [l for l in stderr.read_text().splitlines() if "error writing" in l]
        check(len(errors) == 1 and "File too large" in errors[0],
              f"{label}: exactly one message naming the error: {errors}")
        check(out.stat().st_size == complete,
              f"{label}: the file is cut back to the last complete report ({out.stat().st_size} vs {complete})")
        check(proc.poll() is None, f"{label}: the JVM keeps running after the write error")
        prlimit_fsize(proc.pid, "unlimited")
        time.sleep(0.5)
        os.kill(proc.pid, signal.SIGQUIT)
        check(wait_for(lambda: out.stat().st_size > complete, 10), f"{label}: the next report works again")
        code = proc.wait(timeout=60)
        check(code == 0, f"{label}: the program finishes normally (exit {code})")
        if fmt == "a":
            body = out.read_text().split("\n--------\n\n", 1)[-1]
            # Thread lines, and the TRACE / SITES lines of heap=sites reports.
            whole_line = re.compile(r"^(THREAD START \(.*\)|THREAD END \(.*\)|TRACE \d+:.*|\t.+|SITES BEGIN .*|SITES END|"
                                  r" +percent +live +alloc'ed +stack class| rank +self +accum .*|"
                                  r" *\d+ +[\d.]+% +[\d.]+% +\d+ +\d+ +\d+ +\d+ +\d+ \S+)$")
            check(all(whole_line.match(line) for line in body.splitlines()),
                  f"{label}: every line in the file is complete")
        else:
            ok, output = verify_binary(out)
            check(ok, f"{label}: after the cut every record still names records in the file:\n{output}")
    finally:
        if proc.poll() is None:
            proc.kill()
        cleanup(folder)


def full_device_and_lost_peer(label, home):
    # /dev/full cannot be truncated: one message and a running program.
    run = run_java(home, agentpath("heap=sites,file=/dev/full"), main="ThreadChurn", args=["1", "5"])
    errors = [l for l in run.stderr.splitlines() if "error writing /dev/full" in l]
    check(run.code == 0 and "churned" in run.stdout, f"{label}: /dev/full: the program finishes", run)
    check(len(errors) == 1 and "No space left on device" in errors[0],
          f"{label}: /dev/full: exactly one message: {errors}", run)

    # net= peer that closes the connection after the header: one message, the program goes on.
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(30)
    port = server.getsockname()[1]

    def close_after_header():
        try:
            connection, _ = server.accept()
        except OSError:
            return
        connection.recv(100)
        connection.close()

    closer = threading.Thread(target=close_after_header, daemon=True)
    closer.start()
    proc, folder = start_java(home, agentpath(f"heap=sites,net=127.0.0.1:{port}"), "ThreadChurn", ["3", "5"])
    try:
        stderr = folder / "stderr.txt"
        check(wait_for(lambda: "churning" in (folder / "stdout.txt").read_text(), 30), f"{label}: net started")
        closer.join(timeout=30)
        for _ in range(3):
            time.sleep(0.4)
            os.kill(proc.pid, signal.SIGQUIT)
        code = proc.wait(timeout=60)
        errors = [l for l in stderr.read_text().splitlines() if "error writing" in l]
        check(code == 0, f"{label}: net peer gone: the program finishes (exit {code})")
        check(len(errors) == 1 and f"127.0.0.1:{port}" in errors[0],
              f"{label}: net peer gone: exactly one message naming the peer: {errors}")
    finally:
        if proc.poll() is None:
            proc.kill()
        server.close()
        cleanup(folder)


def repeated_binary_failures(jdk, home):
    """Failed binary reports, one after the other, must not leave a copy of every LOAD CLASS each:
    after the cuts the file holds each class once (hprof-verify refuses a class loaded twice)."""
    label = f"{jdk} repeated failures"
    proc, folder = start_java(home, agentpath("heap=sites,doe=n,format=b,file=out.hprof"), "ThreadChurn", ["8", "50"])
    try:
        out = folder / "out.hprof"
        stderr = folder / "stderr.txt"
        check(wait_for(lambda: "churning" in (folder / "stdout.txt").read_text(), 30), f"{label}: started")
        os.kill(proc.pid, signal.SIGQUIT)
        check(wait_for(lambda: "done." in stderr.read_text(), 20), f"{label}: a first complete report")
        time.sleep(0.3)
        prlimit_fsize(proc.pid, out.stat().st_size + 300)
        for reports in range(2, 8):
            os.kill(proc.pid, signal.SIGQUIT)
            wait_for(lambda: stderr.read_text().count("done.") >= reports, 20)
        check("error writing" in stderr.read_text(), f"{label}: the reports failed:\n{stderr.read_text()}")
        prlimit_fsize(proc.pid, "unlimited")
        os.kill(proc.pid, signal.SIGQUIT)
        check(wait_for(lambda: stderr.read_text().count("done.") >= 8, 20), f"{label}: a report after the limit")
        code = proc.wait(timeout=60)
        check(code == 0, f"{label}: the program finishes normally (exit {code})")
        ok, output = verify_binary(out)
        check(ok, f"{label}: each class is in the file once, and every record names records in it:\n{output[-1500:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
        cleanup(folder)


def text_dump_staging_fails(jdk, home):
    """A text heap dump whose staging file cannot be written: the report is cut back with one
    message saying why, rather than leaving BEGIN, the roots and END without the objects."""
    label = f"{jdk} text dump staging"
    proc, folder = start_java(home, agentpath("heap=dump,doe=n,file=out.txt"), "ThreadChurn", ["8", "50"])
    try:
        out = folder / "out.txt"
        stderr = folder / "stderr.txt"
        check(wait_for(lambda: "churning" in (folder / "stdout.txt").read_text(), 30), f"{label}: started")
        # Room for the roots in the output (tens of KB), not for the objects in the staging file
        # (which starts empty and needs well over a MB).
        prlimit_fsize(proc.pid, out.stat().st_size + 400000)
        os.kill(proc.pid, signal.SIGQUIT)
        check(wait_for(lambda: "done." in stderr.read_text(), 30), f"{label}: the report ran")
        messages = [l for l in stderr.read_text().splitlines() if "heap dump" in l and "left out" in l]
        check(len(messages) == 1 and "staging file" in messages[0] and "truncated to the last complete report" in messages[0],
              f"{label}: one message says why the dump is missing:\n{stderr.read_text()}")
        check("HEAP DUMP BEGIN" not in out.read_text(), f"{label}: no dump without its objects is left in the file")
        prlimit_fsize(proc.pid, "unlimited")
        os.kill(proc.pid, signal.SIGQUIT)
        check(wait_for(lambda: stderr.read_text().count("done.") >= 2, 60), f"{label}: the next report runs")
        code = proc.wait(timeout=60)
        check(code == 0, f"{label}: the program finishes normally (exit {code})")
        text = out.read_text()
        check(text.count("HEAP DUMP BEGIN") == 1 and text.count("HEAP DUMP END") == 1 and "\nOBJ " in text,
              f"{label}: the next report's dump is complete")
    finally:
        if proc.poll() is None:
            proc.kill()
        cleanup(folder)


for jdk, home in jdks():
    for fmt in ("a", "b"):
        file_size_limit(jdk, home, fmt)
    full_device_and_lost_peer(jdk, home)
    repeated_binary_failures(jdk, home)
    text_dump_staging_fails(jdk, home)

finish("sink_errors")
