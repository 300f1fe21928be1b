"""net= commands and `fasthprof listen` with real JVMs: every command in binary and text through the
collector (the output verified by hprof-verify --strict and read record by record), three agents at
once with a dump asked of one, garbage / a truncated command / a thousand commands in a burst (one
message each kind, the program runs on), and the collector killed while a dump streams (the JVM
keeps running and exits normally)."""
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from listen_process import Listen  # noqa: E402
import hprof_records  # noqa: E402
from harness import agentpath, check, java_process  # noqa: E402

COMMAND = os.environ.get("FASTHPROF_COMMAND", "")

HEAP_DUMP_END, ALLOC_SITES, HEAP_SUMMARY, CPU_SAMPLES, TRACE = 0x2C, 0x06, 0x07, 0x0D, 0x05


def records_by_tag(path):
    _, _, _, records = hprof_records.read(path)
    counts = {}
    for record in records:
        counts[record.tag] = counts.get(record.tag, 0) + 1
    return counts


def send_then_exit(listen, proc, jvm, label, script):
    """Sends each command of `script` to connection 1 ("wait N": N seconds), then EXIT; checks that the
    JVM exited normally and the collector closed the connection. Returns the JVM's stderr."""
    for line in script:
        if line.startswith("wait "):
            time.sleep(float(line.split()[1]))
            continue
        listen.send(line)
        listen.expect(r"sent 1 ")
    listen.send("exit 1")
    code = proc.wait(timeout=120)
    check(code == 0, f"{label}: the JVM exited {code} after EXIT")
    listen.expect(r"closed 1 .* bytes")
    return harness.read_text(jvm / "stderr.txt")


def every_command(home, label, binary):
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-net-"))
    listen = Listen(folder)
    fmt = "format=b," if binary else ""
    options = f"heap=all,cpu=samples,{fmt}doe=n,net=127.0.0.1:{listen.port}"
    with java_process(home, agentpath(options), "LiveHeap", args=(4, 120)) as (proc, jvm):
        listen.expect(rf"connected 1 127\.0\.0\.1:\d+ pid {proc.pid}$")
        path = pathlib.Path(listen.expect(r"file 1 (\S+)").group(1))
        check(oct(path.stat().st_mode & 0o777) == "0o600", f"{label}: {path} is mode {oct(path.stat().st_mode)}")
        check(re.fullmatch(rf"127\.0\.0\.1_\d+_pid{proc.pid}_\d{{8}}T\d{{6}}Z\.(hprof|txt)", path.name) is not None,
              f"{label}: the file is named {path.name}")
        harness.wait_for(lambda: "ready" in harness.read_text(jvm / "stdout.txt"))
        # The three ALLOC SITES after the dump: the whole table (cutoff 0), then only the sites that
        # changed since (the program allocates nothing more: few or none), then the whole table
        # by allocated bytes.
        script = ["gc", "dump", "sites 1 0 gc", "sites 1 0 incremental", "sites 1 0 alloc", "summary", "traces", "cpu 1 0.0", "control 1 alloc off",
                  "control 1 alloc on", "control 1 sampling off", "control 1 sampling on", "control 1 clear-cpu",
                  "control 1 reset-sites", "control 1 sampling off 424242", "control 1 depth 100", "control 1 depth 1", "dump",
                  "sites 1 0 incremental", "sites 1 0.5"]
        stderr = send_then_exit(listen, proc, jvm, label, script)
        check("HPROF: received exit event, exiting ..." in stderr, f"{label}: no exit message: {stderr}")
        check("424242 names no thread" in stderr, f"{label}: an unknown thread ID was not reported: {stderr}")
        check("depth 100 is above 64" in stderr, f"{label}: depth 100 was not refused: {stderr}")
        check(stderr.count("ignored") == (2 if binary else 3), f"{label}: commands refused: {stderr}")
        check("finished" not in harness.read_text(jvm / "stdout.txt"), f"{label}: the program was not made to exit")
        if binary:
            check("HEAP SUMMARY" not in stderr, f"{label}: HEAP SUMMARY refused in binary: {stderr}")
            ok, output = harness.verify_binary(path)
            check(ok, f"{label}: hprof-verify --strict rejects the collected file: {output}")
            counts = records_by_tag(path)
            # doe=n: every section in the file is a command's.
            check(counts.get(HEAP_DUMP_END, 0) == 2, f"{label}: {counts.get(HEAP_DUMP_END, 0)} heap dumps, not 2")
            # LiveHeap.tick allocates three frames deep every 10 ms: its traces have 3 frames at
            # depth 4, then 1 after CONTROL depth 1 (the sites command after it lists the new site).
            records = hprof_records.read(path)[3]
            frames = hprof_records.stack_frames(records)
            depths = sorted({len(ids) for _, ids in hprof_records.stack_traces(records).values()
                             if ids and frames.get(ids[0], ("",))[0] == "tick"})
            check(depths == [1, 3], f"{label}: LiveHeap.tick's traces have {depths} frames, not 3 then 1")
            check(counts.get(ALLOC_SITES, 0) == 5, f"{label}: {counts.get(ALLOC_SITES, 0)} ALLOC SITES, not 5")
            # One per ALLOC SITES section plus the HEAP SUMMARY command's.
            check(counts.get(HEAP_SUMMARY, 0) == 6, f"{label}: {counts.get(HEAP_SUMMARY, 0)} HEAP SUMMARY, not 6")
            sections = hprof_records.alloc_sites(hprof_records.read(path)[3])
            flags = [header[0] for header, _ in sections]
            check(flags == [4, 1, 2, 1, 0], f"{label}: ALLOC SITES flags {flags}, not those of the commands")
            whole, changed, by_alloc = (rows for _, rows in sections[:3])
            check(len(whole) >= 5 and len(changed) < len(whole) // 2,
                  f"{label}: {len(changed)} changed sites of {len(whole)} right after a whole list")
            check(len(by_alloc) >= len(whole), f"{label}: {len(by_alloc)} sites by allocation, {len(whole)} by live")
            allocated = [row[5] for row in by_alloc]
            check(allocated == sorted(allocated, reverse=True), f"{label}: not ordered by allocated bytes")
            check(counts.get(CPU_SAMPLES, 0) == 1, f"{label}: {counts.get(CPU_SAMPLES, 0)} CPU SAMPLES, not 1")
            verified = subprocess.run([COMMAND, "verify", "--strict", str(path)], capture_output=True, text=True)
            check(verified.returncode == 0, f"{label}: fasthprof verify: {verified.stdout}{verified.stderr}")
        else:
            check("HEAP SUMMARY is a binary record" in stderr, f"{label}: text HEAP SUMMARY not refused: {stderr}")
            text = path.read_text(errors="replace")
            check(text.startswith("JAVA PROFILE 1.0.1"), f"{label}: the text file starts {text[:40]!r}")
            for marker, wanted in (("HEAP DUMP BEGIN", 2), ("HEAP DUMP END", 2), ("SITES BEGIN", 5),
                                   ("SITES BEGIN (ordered by allocated bytes)", 1), ("CPU SAMPLES BEGIN", 1)):
                check(text.count(marker) == wanted, f"{label}: {text.count(marker)} {marker}, not {wanted}")
            rows = [len(re.findall(r"(?m)^ +\d+ +[\d.]+% ", section))
                    for section in (piece.split("SITES END")[0] for piece in text.split("SITES BEGIN")[1:4])]
            check(len(rows) == 3 and rows[0] >= 5 and rows[1] < rows[0] // 2 and rows[2] >= rows[0],
                  f"{label}: rows in the whole, incremental and by-allocation SITES: {rows}")
    _, errors = listen.stop()
    check(errors.strip() == "", f"{label}: fasthprof listen said: {errors}")
    harness.cleanup(folder)


def garbage(home, label):
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-net-"))
    listen = Listen(folder)
    options = f"heap=sites,format=b,net=127.0.0.1:{listen.port}"
    with java_process(home, agentpath(options), "LiveHeap", args=(2, 120)) as (proc, jvm):
        listen.expect(r"connected 1 ")
        harness.wait_for(lambda: "ready" in harness.read_text(jvm / "stdout.txt"))
        traces = "06" + "00000001" + "00000000"
        listen.send("raw 1 " + traces * 1000)                     # a thousand in a burst
        listen.send("raw 1 2a0000000200000003616263")            # unknown tag, skipped by its length
        listen.send("raw 1 070000000300000006" + "0000" + "7fc00000")  # CPU SAMPLES cutoff NaN
        listen.send("raw 1 030000000400000006" + "0000" + "3f000000")  # a good ALLOC SITES after them
        listen.send("raw 1 0800000005000000020003")              # sampling on without its ID
        listen.send("raw 1 474554202f20485454502f312e310d0a")   # "GET / HTTP/1.1": out of step
        listen.send("traces 1")                                  # read no more
        time.sleep(3)
        check(proc.poll() is None, f"{label}: the JVM ended after garbage")
        stderr = harness.read_text(jvm / "stderr.txt")
        check(stderr.count("unknown command; ignored") == 1, f"{label}: unknown tag: {stderr}")
        check("cutoff nan is not a number in 0..1" in stderr, f"{label}: NaN cutoff: {stderr}")
        check("bad length 2 for sub-command 3" in stderr, f"{label}: short CONTROL: {stderr}")
        check(stderr.count("out of step") == 1, f"{label}: out of step said {stderr.count('out of step')} times")
        check("CPU SAMPLES need cpu=samples" not in stderr, f"{label}: the NaN command ran: {stderr}")
        harness.terminate(proc)
    listen.expect(r"closed 1 ")
    files = list(folder.glob("*.hprof"))
    check(len(files) == 1, f"{label}: files {files}")
    if files:
        ok, output = harness.verify_binary(files[0])
        check(ok, f"{label}: hprof-verify: {output}")
        counts = records_by_tag(files[0])
        check(counts.get(ALLOC_SITES, 0) == 2, f"{label}: {counts.get(ALLOC_SITES, 0)} ALLOC SITES (command + exit)")
    listen.stop()
    harness.cleanup(folder)


def truncated(home, label):
    # A command cut short by the peer's close: one message at the end, nothing run, the program goes on.
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-net-"))
    listen = Listen(folder)
    with java_process(home, agentpath(f"heap=sites,format=b,net=127.0.0.1:{listen.port}"), "LiveHeap",
                      args=(2, 8)) as (proc, jvm):
        listen.expect(r"connected 1 ")
        listen.send("raw 1 030000000100000006000000")
        time.sleep(1)
        listen.send("quit")  # the collector goes: the agent sees the close, its output ends
        code = proc.wait(timeout=120)
        check(code == 0, f"{label}: the JVM exited {code}")
        stderr = harness.read_text(jvm / "stderr.txt")
        check("cut short by the end of the connection" in stderr, f"{label}: {stderr}")
        check("finished" in harness.read_text(jvm / "stdout.txt"), f"{label}: the program did not run to its end")
    listen.stop()
    harness.cleanup(folder)


def three_agents(home, label):
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-net-"))
    listen = Listen(folder)
    options = f"heap=all,format=b,doe=n,net=127.0.0.1:{listen.port}"
    with java_process(home, agentpath(options), "LiveHeap", args=(2, 120)) as (a, _), \
         java_process(home, agentpath(options), "LiveHeap", args=(2, 120)) as (b, _), \
         java_process(home, agentpath(options), "LiveHeap", args=(2, 120)) as (c, _):
        for n in (1, 2, 3):
            listen.expect(rf"file {n} ")
        time.sleep(2)
        listen.send("dump 2")
        listen.expect(r"sent 2 DUMP HEAP")
        listen.send("list")
        time.sleep(8)
        listen.send("exit")
        for proc in (a, b, c):
            check(proc.wait(timeout=120) == 0, f"{label}: an agent did not exit 0 on EXIT")
        for n in (1, 2, 3):
            listen.expect(rf"closed {n} ")
    files = sorted(folder.glob("*.hprof"))
    check(len(files) == 3, f"{label}: {len(files)} files")
    dumps = 0
    for path in files:
        ok, output = harness.verify_binary(path)
        check(ok, f"{label}: {path.name}: {output}")
        dumps += records_by_tag(path).get(HEAP_DUMP_END, 0)
    check(dumps == 1, f"{label}: {dumps} heap dumps among the three files, not 1")
    listen.stop()
    harness.cleanup(folder)


def collector_killed(home, label):
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-net-"))
    listen = Listen(folder)
    options = f"heap=dump,format=b,dumper=jvmti,timeout=5,net=127.0.0.1:{listen.port}"
    with java_process(home, agentpath(options), "LiveHeap", args=(200, 25), jvm_args=("-Xmx1g",)) as (proc, jvm):
        path = pathlib.Path(listen.expect(r"file 1 (\S+)").group(1))
        harness.wait_for(lambda: "ready" in harness.read_text(jvm / "stdout.txt"), timeout=60)
        listen.send("dump")
        # Kill the collector once the dump is streaming: the file grows past the 200 MB's first MiBs.
        harness.wait_for(lambda: path.stat().st_size > 8 << 20, timeout=60, step=0.01)
        listen.proc.kill()
        listen.proc.wait()
        time.sleep(2)
        check(proc.poll() is None, f"{label}: the JVM ended with the collector")
        code = proc.wait(timeout=120)
        check(code == 0, f"{label}: the JVM exited {code}")
        check("finished" in harness.read_text(jvm / "stdout.txt"), f"{label}: the program did not run to its end")
    harness.cleanup(folder)


def killed_mid_dump(home, label, options, heap_mb, xmx, cut_at, closed):
    """Starts an agent on a fresh collector, asks it for a dump and kills the JVM once the file
    passes cut_at bytes; returns (folder, listen, path, the collector's `closed` line)."""
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-net-"))
    listen = Listen(folder)
    with java_process(home, agentpath(f"{options},net=127.0.0.1:{listen.port}"), "LiveHeap", args=(heap_mb, 60),
                      jvm_args=(f"-Xmx{xmx}",)) as (proc, jvm):
        path = pathlib.Path(listen.expect(r"file 1 (\S+)").group(1))
        harness.wait_for(lambda: "ready" in harness.read_text(jvm / "stdout.txt"), timeout=60)
        listen.send("dump")
        harness.wait_for(lambda: path.stat().st_size > cut_at, timeout=60, step=0.01)
        proc.kill()
        found = listen.expect(closed)
        check(int(found.group(2)) < int(found.group(1)), f"{label}: {found.group(0)}")
    return folder, listen, path, found


def cut_back(home, label):
    # The agent killed in the middle of a dump: the collector cuts its file back to the last
    # complete record outside a heap dump, which hprof-verify accepts.
    folder, listen, path, _ = killed_mid_dump(home, label, "heap=dump,format=b,dumper=jvmti", 200, "1g", 8 << 20,
                                              r"closed 1 \S+ (\d+) bytes cut back to (\d+)")
    ok, output = harness.verify_binary(path)
    check(ok, f"{label}: the cut-back file: {output}")
    check(records_by_tag(path).get(HEAP_DUMP_END, 0) == 0, f"{label}: a heap dump survived the cut")
    listen.stop()
    harness.cleanup(folder)
    cut_back_gzip(home, label + " gz=y")


def cut_back_gzip(home, label):
    # The same with gz=y: the collector ends the file on a gzip member boundary plus one member of
    # its own, so that it is a valid gzip file whose plain bytes end on the last complete record.
    import gzip
    folder, listen, path, found = killed_mid_dump(
        home, label, "heap=dump,format=b,gz=y,dumper=jvmti", 64, "512m", 1 << 20,
        r"closed 1 \S+ (\d+) bytes cut back to (\d+) \((\d+) uncompressed\)")
    check(path.name.endswith(".hprof.gz"), f"{label}: the file is {path.name}")
    check(path.stat().st_size == int(found.group(2)), f"{label}: {path.stat().st_size} bytes, said {found.group(2)}")
    plain = gzip.decompress(path.read_bytes())  # raises on a member cut short
    check(len(plain) == int(found.group(3)), f"{label}: {len(plain)} plain bytes, said {found.group(3)}")
    unpacked = folder / "unpacked.hprof"
    unpacked.write_bytes(plain)
    ok, output = harness.verify_binary(unpacked)
    check(ok, f"{label}: the cut-back file, decompressed: {output}")
    check(records_by_tag(unpacked).get(HEAP_DUMP_END, 0) == 0, f"{label}: a heap dump survived the cut")
    listen.stop()
    harness.cleanup(folder)


def prompt(home, label):
    # The interactive prompt on a pseudo-terminal: shown once at start and again after each line or
    # event, never at every turn of the poll loop; an event writes over it. No JVM: a plain socket.
    del home
    import pty
    import select
    import socket
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-net-"))
    master, slave = pty.openpty()
    proc = subprocess.Popen([COMMAND, "listen", "--port", "0", "--dir", str(folder)], stdin=slave, stdout=slave,
                            stderr=subprocess.PIPE, close_fds=True)
    os.close(slave)
    seen = b""

    def read_until(pattern, timeout=20):
        nonlocal seen
        deadline = time.time() + timeout
        while time.time() < deadline:
            found = re.search(pattern, seen)
            if found:
                return found
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    seen += os.read(master, 4096)
                except OSError:
                    break
        raise AssertionError(f"{label}: the terminal never showed {pattern!r}: {seen!r}")

    port = int(read_until(rb"listening on 127\.0\.0\.1:(\d+)").group(1))
    read_until(rb"> $")
    time.sleep(2.5)  # idle: two turns of the poll loop
    read_until(rb"> $")
    check(seen.count(b"> ") == 1, f"{label}: the idle prompt repeated: {seen!r}")
    peer = socket.create_connection(("127.0.0.1", port))
    read_until(rb"\rconnected 1 127\.0\.0\.1:\d+.*\r?\n> $")
    os.write(master, b"list\n")
    read_until(rb"1 127\.0\.0\.1:\d+ - 0 bytes\r?\n> $")
    os.write(master, b"sites 1 2\n")  # bad cutoff: a message on stderr, the prompt again
    read_until(rb"sites 1 2\r?\n> $")
    check(seen.count(b"> ") == 4, f"{label}: {seen.count(b'> ')} prompts, not 4: {seen!r}")
    os.write(master, b"quit\n")
    check(proc.wait(timeout=20) == 0, f"{label}: fasthprof listen exited {proc.returncode}")
    errors = proc.stderr.read().decode()
    check("a cutoff is a number from 0 to 1" in errors, f"{label}: stderr {errors!r}")
    peer.close()
    os.close(master)
    harness.cleanup(folder)


def stalled_peer(home, label):
    # A peer that asks for a heap dump and then reads nothing: timeout= bounds how long the program
    # waits (the dump holds its threads), about timeout= itself; then the connection is given up and
    # the program runs on.
    import socket
    import struct
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    options = f"heap=dump,format=b,dumper=jvmti,timeout=3,net=127.0.0.1:{port}"
    with java_process(home, agentpath(options), "LiveHeap", args=(64, 20)) as (proc, jvm):
        server.settimeout(60)
        peer, _ = server.accept()
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        harness.wait_for(lambda: "ready" in harness.read_text(jvm / "stdout.txt"), timeout=60)
        peer.sendall(struct.pack(">BII", 0x02, 1, 0))
        asked = time.time()
        gave_up = harness.wait_for(lambda: "took no data for 3 seconds" in harness.read_text(jvm / "stderr.txt"),
                                   timeout=60)
        held = time.time() - asked
        check(gave_up, f"{label}: the agent never gave the stalled peer up: {harness.read_text(jvm / 'stderr.txt')}")
        # timeout= from the moment the queues are full (a few MB of the dump in): 9.3 s here before,
        # when each send() that the kernel let queue a few more bytes waited the whole time again.
        print(f"{label}: the stalled peer held the dump {held:.1f} s with timeout=3")
        check(held < 5.5, f"{label}: giving up took {held:.1f} s with timeout=3")
        code = proc.wait(timeout=120)
        check(code == 0, f"{label}: the JVM exited {code}")
        check("finished" in harness.read_text(jvm / "stdout.txt"), f"{label}: the program did not run to its end")
        peer.close()
    server.close()


def death_during_command(home, label):
    # SIGTERM while a dump command runs: VM death waits for the writer, the listener ends with the
    # connection, the JVM exits as after any SIGTERM, and the file holds only complete records.
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-net-"))
    listen = Listen(folder)
    options = f"heap=dump,format=b,dumper=jvmti,net=127.0.0.1:{listen.port}"
    with java_process(home, agentpath(options), "LiveHeap", args=(64, 60)) as (proc, jvm):
        path = pathlib.Path(listen.expect(r"file 1 (\S+)").group(1))
        harness.wait_for(lambda: "ready" in harness.read_text(jvm / "stdout.txt"), timeout=60)
        listen.send("dump")
        harness.wait_for(lambda: path.stat().st_size > 1 << 20, timeout=60, step=0.005)
        code = harness.terminate(proc)
        check(code == 143, f"{label}: the JVM exited {code} after SIGTERM during a dump command")
        listen.expect(r"closed 1 ")
        check(not list(jvm.glob("hs_err*")), f"{label}: the JVM crashed")
    ok, output = harness.verify_binary(path)
    check(ok, f"{label}: {output}")
    listen.stop()
    harness.cleanup(folder)


def ipv6(home, label):
    # The unbracketed form net=::1:PORT (the bracketed one is the unit tests'), and the CPU SAMPLES
    # command with cpu=times alone: the original wrote the CPU TIME section then.
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-net-"))
    listen = Listen(folder)
    with java_process(home, agentpath(f"heap=dump,cpu=times,doe=n,net=::1:{listen.port}"), "LiveHeap",
                      args=(2, 60)) as (proc, jvm):
        found = listen.expect(r"file 1 (\S+)")
        path = pathlib.Path(found.group(1))
        check(path.name.startswith("ip6_--1_") and path.suffix == ".txt", f"{label}: the IPv6 peer's file is {path.name}")
        harness.wait_for(lambda: "ready" in harness.read_text(jvm / "stdout.txt"), timeout=60)
        for line in ("dump", "cpu 1 0", "control 1 clear-cpu", "cpu 1 0", "exit"):
            listen.send(line)
        check(proc.wait(timeout=120) == 0, f"{label}: the JVM did not exit 0 on EXIT")
        listen.expect(r"closed 1 \[::1\]:")
        stderr = harness.read_text(jvm / "stderr.txt")
        check("ignored" not in stderr, f"{label}: a command was refused: {stderr}")
    text = path.read_text(errors="replace")
    for marker, wanted in (("HEAP DUMP BEGIN", 1), ("HEAP DUMP END", 1), ("CPU TIME (ms) BEGIN", 2),
                           ("CPU SAMPLES BEGIN", 0)):
        check(text.count(marker) == wanted, f"{label}: {text.count(marker)} {marker}, not {wanted}")
    # The first section holds the start-up's timed calls (clear-cpu between them is accepted:
    # "ignored" is not on stderr; each section starts the counts afresh anyway).
    rows = [len(re.findall(r"(?m)^ +\d+ +[\d.]+% ", piece.split("CPU TIME (ms) END")[0]))
            for piece in text.split("CPU TIME (ms) BEGIN")[1:]]
    check(len(rows) == 2 and rows[0] >= 10, f"{label}: CPU TIME rows {rows}")
    listen.stop()
    harness.cleanup(folder)


def restricted(home, label):
    # commands=noexit ignores EXIT; commands=reports also GC and CONTROL, and still dumps.
    for which, refused in (("noexit", "EXIT is not obeyed with commands=noexit"),
                           ("reports", "commands=reports obeys only the commands that write output")):
        folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-net-"))
        listen = Listen(folder)
        options = f"heap=all,format=b,doe=n,commands={which},net=127.0.0.1:{listen.port}"
        with java_process(home, agentpath(options), "LiveHeap", args=(2, 6)) as (proc, jvm):
            path = pathlib.Path(listen.expect(r"file 1 (\S+)").group(1))
            harness.wait_for(lambda: "ready" in harness.read_text(jvm / "stdout.txt"), timeout=60)
            listen.send("exit" if which == "noexit" else "control 1 alloc off")
            listen.send("dump")
            code = proc.wait(timeout=120)
            check(code == 0, f"{label} {which}: the JVM exited {code}")
            check("finished" in harness.read_text(jvm / "stdout.txt"), f"{label} {which}: the program was cut short")
            stderr = harness.read_text(jvm / "stderr.txt")
            check(refused in stderr, f"{label} {which}: no refusal: {stderr}")
            check("received exit event" not in stderr, f"{label} {which}: EXIT obeyed")
            listen.expect(r"closed 1 ")
        check(records_by_tag(path).get(HEAP_DUMP_END, 0) == 1, f"{label} {which}: the dump command did not run")
        listen.stop()
        harness.cleanup(folder)


def alloc_control(home, label):
    """CONTROL allocation off and on with heap=sites,live=n: counted by injected code (the default
    there, alloc=auto) and by the event (alloc=event). While off nothing is counted (the allocated
    totals of two ALLOC SITES a second apart are equal, though LiveHeap allocates every 10 ms);
    after on the counts grow again."""
    for how in ("auto", "event"):
        tag = f"{label} alloc={how}"
        folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-net-"))
        listen = Listen(folder)
        options = f"heap=sites,live=n,alloc={how},format=b,verbose=y,net=127.0.0.1:{listen.port}"
        with java_process(home, agentpath(options), "LiveHeap", args=(2, 120)) as (proc, jvm):
            listen.expect(r"connected 1 ")
            path = pathlib.Path(listen.expect(r"file 1 (\S+)").group(1))
            harness.wait_for(lambda: "ready" in harness.read_text(jvm / "stdout.txt"))
            stderr = send_then_exit(listen, proc, jvm, tag, ("sites 1 0", "control 1 alloc off", "sites 1 0", "wait 1",
                                                             "sites 1 0", "control 1 alloc on", "wait 1", "sites 1 0"))
            check("ignored" not in stderr, f"{tag}: a command was refused: {stderr}")
            injected = "alloc=inject:" in stderr
            check(injected == (how == "auto"), f"{tag}: counted by {'injection' if injected else 'the event'}: {stderr}")
            # The four commands' ALLOC SITES, then the exit report's.
            totals = [header[5] for header, _ in hprof_records.alloc_sites(hprof_records.read(path)[3])]
            check(len(totals) == 5 and totals[0] <= totals[1] == totals[2] <= totals[3],
                  f"{tag}: allocated instances before off, after it, a second later, a second after on: {totals}")
            # Both ways count again at once (on JDK 17 the event path retires the threads' TLABs at
            # on, without which it saw nothing before LiveHeap's next one).
            check(len(totals) == 5 and totals[2] < totals[3], f"{tag}: counted again a second after on: {totals}")
        listen.stop()
        harness.cleanup(folder)


def on_jdks(run):
    return lambda: [run(home, label) for label, home in harness.jdks()]


harness.run_cases("net_commands", {
    "binary": on_jdks(lambda home, label: every_command(home, label + " binary", True)),
    "text": on_jdks(lambda home, label: every_command(home, label + " text", False)),
    "garbage": on_jdks(garbage),
    "truncated": on_jdks(truncated),
    "three_agents": on_jdks(three_agents),
    "collector_killed": on_jdks(collector_killed),
    "cut_back": on_jdks(cut_back),
    "stalled_peer": on_jdks(stalled_peer),
    "death_during_command": on_jdks(death_during_command),
    "ipv6": on_jdks(ipv6),
    "restricted": on_jdks(restricted),
    "alloc_control": on_jdks(alloc_control),
    "prompt": lambda: prompt(None, "pty"),
})
