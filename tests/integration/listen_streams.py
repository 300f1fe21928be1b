"""`fasthprof listen` against streams an agent never sends and against its own limits: gzip inside
gzip (3 000 levels: not followed, no memory kept), many short connections (a closed connection
leaves nothing behind), and a full disk (a file size limit on the collector) in the middle of a
heap dump from a real JVM, text and binary, on each JDK: the file is cut back to its last complete
record with one message, the program runs on."""
import os
import pathlib
import socket
import struct
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import agentpath, check, java_process  # noqa: E402
from listen_process import Listen  # noqa: E402

HEADER = b"JAVA PROFILE 1.0.2\0" + struct.pack(">IQ", 8, 0)
UTF8_RECORD = struct.pack(">BII", 1, 0, 12) + struct.pack(">Q", 1) + b"name"


class Collector(Listen):
    """The collector, fed whole streams by connections of the test's own."""

    def feed(self, data):
        """One connection that sends data and closes; returns the collector's `closed` line."""
        with socket.create_connection(("127.0.0.1", self.port)) as peer:
            peer.sendall(data)
        return self.expect(r"^closed \d+ .*").group(0)


def nested_gzip(levels):
    data = HEADER + UTF8_RECORD
    for _ in range(levels):
        packer = zlib.compressobj(0, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # stored: quick to make
        data = packer.compress(data) + packer.flush()
    return data


def gzip_nesting():
    # Gzip inside gzip 3 000 times (77 KB): before, every level got an inflate state of its own
    # (18 MB kept for good, 10 000 levels overflowed a 1 MiB stack) and the file was cut to 0.
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-listen-"))
    collector = Collector(folder)
    collector.feed(nested_gzip(1))  # an agent's kind of stream first: the collector's buffers in use
    before = collector.rss_kib()
    bomb = nested_gzip(3000)
    started = time.time()
    closed = collector.feed(bomb)
    took = time.time() - started
    grown = collector.rss_kib() - before
    check("kept as it came" in closed and "gzip inside gzip is not followed" in closed, f"closed line: {closed}")
    check(grown < 2048, f"the nested stream left {grown} KiB behind")
    check(took < 5, f"the nested stream took {took:.1f} s")
    files = sorted(folder.glob("*.hprof.gz"), key=lambda p: p.stat().st_mtime)
    check(len(files) == 2 and files[-1].stat().st_size == len(bomb), f"files {[(p.name, p.stat().st_size) for p in files]}")
    code, errors = collector.stop()
    check(code == 0 and errors == "", f"exit {code}, stderr {errors!r}")
    print(f"3000 levels: {took:.2f} s, {grown} KiB kept")
    harness.cleanup(folder)


def closed_connections():
    # 500 short connections, gz=y and plain in turn: what the last 400 leave behind. Before, a
    # closed connection was never forgotten (about 6 KB each with gz=y, 0.5 KB plain).
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-listen-"))
    collector = Collector(folder)
    plain = HEADER + UTF8_RECORD
    packed = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    streams = [packed.compress(plain) + packed.flush(), plain]
    for n in range(100):
        collector.feed(streams[n % 2])
    before = collector.rss_kib()
    for n in range(400):
        closed = collector.feed(streams[n % 2])
        check("cut back" not in closed and "kept" not in closed, f"a whole stream: {closed}")
    grown = collector.rss_kib() - before
    print(f"400 connections: {grown} KiB more")
    check(grown < 400, f"400 closed connections left {grown} KiB behind")
    collector.send("list")
    code, errors = collector.stop()
    check(code == 0 and errors == "", f"exit {code}, stderr {errors!r}")
    check(len(list(folder.iterdir())) == 500, f"{len(list(folder.iterdir()))} files, not 500")
    harness.cleanup(folder)


def full_disk(label, home):
    # The collector's files may not pass a limit (RLIMIT_FSIZE: a write fails with EFBIG, as on a
    # full disk) that a heap dump asked of the agent goes over.
    for fmt, limit in (("b", 1 << 20), ("a", 256 << 10)):
        case = f"{label} format={fmt}"
        folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-listen-"))
        collector = Collector(folder, file_size_limit=limit)
        options = f"heap=dump,format={fmt},doe=n,dumper=jvmti,net=127.0.0.1:{collector.port}"
        with java_process(home, agentpath(options), "LiveHeap", args=(8, 4)) as (proc, jvm):
            path = pathlib.Path(collector.expect(r"file 1 (\S+)").group(1))
            harness.wait_for(lambda: "ready" in harness.read_text(jvm / "stdout.txt"), timeout=60)
            collector.send("dump")
            closed = collector.expect(r"closed 1 \S+ (\d+) bytes cut back to (\d+): the file could not be written "
                                      r"\(File too large\)")
            code = proc.wait(timeout=60)
            check(code == 0 and "finished" in harness.read_text(jvm / "stdout.txt"), f"{case}: the JVM exited {code}")
        size = path.stat().st_size
        check(size == int(closed.group(2)) and size < limit, f"{case}: {size} bytes, said {closed.group(0)}")
        if fmt == "b":
            ok, output = harness.verify_binary(path)
            check(ok, f"{case}: the cut file: {output}")
        else:
            text = path.read_bytes()
            check(text.endswith(b"\n") and b"HEAP DUMP BEGIN" in text, f"{case}: the text ends {text[-80:]!r}")
        code, errors = collector.stop()
        messages = [line for line in errors.splitlines() if line]
        check(code == 0 and len(messages) == 1 and f"cut back to {size} bytes" in messages[0] and
              "File too large" in messages[0], f"{case}: exit {code}, stderr {errors!r}")
        harness.cleanup(folder)


harness.run_cases("listen_streams", {
    "gzip_nesting": gzip_nesting,
    "closed_connections": closed_connections,
    "full_disk": harness.on_each_jdk(full_disk),
})
