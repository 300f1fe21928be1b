"""Write errors while the JVM runs: a file size limit reached mid-report (set and lifted again on
the live JVM with prlimit; HotSpot ignores SIGXFSZ, so writes fail with EFBIG), /dev/full, a net=
peer that goes away, and net= peers that stop reading, reset, or read slowly. Each gives one clear
message, the JVM keeps running, and what was already written stays; after a cut the next report
starts where the last complete one ended. Each case is a Meson test (`sink_errors.py <case>`)."""
import os
import re
import signal
import socket
import struct
import subprocess
import threading
import time

from harness import prlimit_fsize, agentpath, check, java_process, jdks, on_each_jdk, run_cases, run_java, verify_binary, wait_for


def file_size_limit(jdk, home, fmt):
    label = f"{jdk} format={fmt}"
    # File size limit on the running JVM.
    with java_process(home, agentpath(f"heap=sites,doe=n,format={fmt},file=out.txt"), "ThreadChurn",
                      ["6", "10"]) as (proc, folder):
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
    try:
        with java_process(home, agentpath(f"heap=sites,net=127.0.0.1:{port}"), "ThreadChurn",
                          ["3", "5"]) as (proc, folder):
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
        server.close()


def repeated_binary_failures(jdk, home):
    """Failed binary reports, one after the other, must not leave a copy of every LOAD CLASS each:
    after the cuts the file holds each class once (hprof-verify refuses a class loaded twice)."""
    label = f"{jdk} repeated failures"
    with java_process(home, agentpath("heap=sites,doe=n,format=b,file=out.hprof"), "ThreadChurn", ["8", "50"]) as (proc, folder):
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


def text_dump_staging_fails(jdk, home):
    """A text heap dump whose staging file cannot be written: the report is cut back with one
    message saying why, rather than leaving BEGIN, the roots and END without the objects."""
    label = f"{jdk} text dump staging"
    with java_process(home, agentpath("heap=dump,doe=n,file=out.txt"), "ThreadChurn", ["8", "50"]) as (proc, folder):
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


class Peer:
    """A loopback net= peer: accepts one connection and runs behaviour(connection, self) on it;
    what it reads lands in self.received. stop() ends it (the connection closes)."""

    def __init__(self, behaviour):
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(1)
        self.server.settimeout(60)
        self.port = self.server.getsockname()[1]
        self.received = bytearray()
        self.stopping = threading.Event()
        self.behaviour = behaviour
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        try:
            connection, _ = self.server.accept()
        except OSError:
            return
        try:
            self.behaviour(connection, self)
        except OSError:
            pass
        finally:
            connection.close()

    def read(self, connection, limit=None, pause=0.0):
        connection.settimeout(0.5)
        while not self.stopping.is_set() and (limit is None or len(self.received) < limit):
            try:
                data = connection.recv(65536 if limit is None else min(65536, limit - len(self.received)))
            except socket.timeout:
                continue
            if not data:
                return
            self.received += data
            if pause:
                time.sleep(pause)

    def stop(self):
        self.stopping.set()
        self.thread.join(timeout=30)
        self.server.close()


def never_reads(connection, peer):
    peer.stopping.wait(120)


def reads_then_stops(connection, peer):
    peer.read(connection, limit=1 << 20)
    peer.stopping.wait(120)


def reads_then_resets(connection, peer):
    peer.read(connection, limit=1 << 20)
    # SO_LINGER with a zero timeout: close() sends a reset instead of a FIN.
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def reads_slowly(connection, peer):
    peer.read(connection, pause=0.008)  # 64 KiB per 8 ms at most: about 8 MB/s


def stalled_peers(label, home):
    """net= peers that stop taking data while a heap dump (40 MB, binary) is sent on kill -QUIT:
    the program must not stay frozen for as long as the peer stays connected (120 s here). One
    message, the program finishes; a slow but steady reader gets the whole dump."""
    cases = [("never reads", never_reads, "", "the peer took no data for 10 seconds"),
             ("reads then stops", reads_then_stops, ",timeout=2", "the peer took no data for 2 seconds"),
             ("reads then resets", reads_then_resets, ",timeout=2", None),
             ("reads slowly", reads_slowly, ",timeout=1", "")]
    for name, behaviour, timeout, reason in cases:
        peer = Peer(behaviour)
        case = f"{label} net= peer that {name}"
        try:
            with java_process(home, agentpath(f"heap=dump,format=b,doe=n,dumper=jvmti,net=127.0.0.1:{peer.port}{timeout}"),
                              "LiveHeap", ["40", "4"]) as (proc, folder):
                stdout = folder / "stdout.txt"
                stderr = folder / "stderr.txt"
                check(wait_for(lambda: "ready" in stdout.read_text(), 60), f"{case}: program started")
                os.kill(proc.pid, signal.SIGQUIT)
                try:
                    code = proc.wait(timeout=90)
                except subprocess.TimeoutExpired:
                    code = None
                errors = [l for l in stderr.read_text().splitlines() if "error writing" in l]
                check(code == 0 and "finished" in stdout.read_text(),
                      f"{case}: the program finishes while the peer is still connected (exit {code})")
                if reason == "":
                    peer.thread.join(timeout=60)  # reads to the end: the agent closes at VM death
                    dump = folder / "received.hprof"
                    dump.write_bytes(bytes(peer.received))
                    ok, output = verify_binary(dump)
                    check(not errors and ok and "heap dumps: 1" in output,
                          f"{case}: no error, and the peer has the whole dump ({len(peer.received)} bytes): "
                          f"{errors}\n{output[-1000:]}")
                    continue
                check(len(errors) == 1 and f"127.0.0.1:{peer.port}" in errors[0] and
                      "no more output will be sent" in errors[0] and (reason is None or reason in errors[0]),
                      f"{case}: exactly one message naming the peer and why: {errors}")
        finally:
            peer.stop()


run_cases("sink_errors", {
    "stalled_peers": on_each_jdk(stalled_peers),
    "file_size_limit": lambda: [file_size_limit(jdk, home, fmt) for jdk, home in jdks() for fmt in ("a", "b")],
    "full_device": on_each_jdk(full_device_and_lost_peer),
    "repeated_failures": on_each_jdk(repeated_binary_failures),
    "text_dump_staging": on_each_jdk(text_dump_staging_fails),
})
