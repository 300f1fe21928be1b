"""gz=y: compressed binary output in the layout of `jcmd GC.heap_dump -gz=N` (docs/decisions.md,
"Compressed output"), from a real java program, for every kind of binary report: heap dumps at exit
and on kill -QUIT (several reports in one file, each leaving a complete gzip file behind it),
heap=sites, cpu=samples, net= (a python listener), and a file size limit reached inside a dump
(the file is cut back to the last complete report, the next dump works). Every output is checked
member by member here (gzip headers, the "HPROF BLOCKSIZE=1048576" comment on the first member,
no member over 1 MiB, CRC and size through Python's zlib), read by hprof-verify --strict (which
decompresses it), and heap dumps also by the OpenJDK test library's parser (which reads the
compressed file itself) and by VisualVM's heap library after `gzip -d`. Per-class counts of the
test program's own classes must equal those of an uncompressed run. Each case is a Meson test
(`gzip_output.py <case>`)."""
import gzip
import os
import re
import signal
import socket
import subprocess
import threading
import time
import zlib

from harness import (prlimit_fsize, TEST_CLASSES, agentpath, check, java_bin, java_process, jdks, on_each_jdk, read_text,
                     run_cases, terminate, verify_binary, wait_for)

HEAP_CHECK = os.environ.get("HEAP_CHECK_CLASSES", "")
OPENJDK_CHECK = os.environ.get("OPENJDK_HEAP_CHECK_CLASSES", "")
JAVA17 = os.environ["JAVA17_HOME"]
BLOCK = 1 << 20
COMMENT = b"HPROF BLOCKSIZE=1048576"


def members(data):
    """[(comment or None, uncompressed length)] of every gzip member; raises ValueError on bad bytes."""
    found = []
    at = 0
    while at < len(data):
        if data[at:at + 3] != b"\x1f\x8b\x08":
            raise ValueError(f"no gzip member at byte {at}")
        flags = data[at + 3]
        if flags & ~0x10:
            raise ValueError(f"unexpected header flags {flags:#x} at byte {at}")
        p = at + 10
        comment = None
        if flags & 0x10:
            end = data.index(b"\0", p)
            comment, p = data[p:end], end + 1
        inflater = zlib.decompressobj(-15)
        body = inflater.decompress(data[p:])
        if not inflater.eof:
            raise ValueError(f"member {len(found) + 1} is cut off")
        p = len(data) - len(inflater.unused_data)
        crc, size = int.from_bytes(data[p:p + 4], "little"), int.from_bytes(data[p + 4:p + 8], "little")
        if crc != zlib.crc32(body) or size != len(body):
            raise ValueError(f"member {len(found) + 1}: CRC or size does not match")
        found.append((comment, len(body)))
        at = p + 8
    return found


def check_layout(label, data):
    """The JDK's layout: members of at most 1 MiB, the comment on the first and only there."""
    try:
        found = members(data)
    except ValueError as error:
        check(False, f"{label}: a gzip file made of whole members: {error}")
        return []
    check(len(found) > 0 and found[0][0] == COMMENT, f"{label}: the first member says {COMMENT!r}: {found[:1]}")
    check(all(comment is None for comment, _ in found[1:]), f"{label}: later members have no comment")
    check(all(0 < size <= BLOCK for _, size in found), f"{label}: every member holds 1..{BLOCK} bytes")
    return found


def gunzip(path, to):
    """`gzip -dc` (the documented way to a plain file) into to; returns whether it succeeded."""
    with open(to, "wb") as out:
        return subprocess.run(["gzip", "-dc", str(path)], stdout=out).returncode == 0


def class_counts(path, names):
    """{dump index: {class: count}} of hprof-verify --classes, for classes whose name matches names."""
    ok, output = verify_binary(path, "--classes")
    counts = {}
    dump = None
    for line in output.splitlines():
        header = re.match(r"  dump (\d+) objects per class:", line)
        if header:
            dump = int(header.group(1)) - 1
            counts[dump] = {}
            continue
        row = re.match(r"\s+(\d+)  (\S+)$", line)
        if dump is not None and row and re.match(names, row.group(2)):
            # A hidden class's name ends in its address, which differs from run to run.
            name = re.sub(r"\.?0x[0-9a-f]+$", "", row.group(2))
            counts[dump][name] = counts[dump].get(name, 0) + int(row.group(1))
    return counts


def openjdk_check(mode, path, dump):
    if not OPENJDK_CHECK:
        print("OpenJDK test-library parser not built (tools/fetch-openjdk-test-lib.sh): its check is left out")
        return True, ""
    proc = subprocess.run([java_bin(JAVA17), "-Xmx1g", "-cp", OPENJDK_CHECK, "OpenJdkHeapCheck", mode, str(path),
                           str(dump)], capture_output=True, text=True, timeout=300)
    return proc.returncode == 0, proc.stdout + proc.stderr


def visualvm_check(mode, path, dump):
    if not HEAP_CHECK or not os.path.isdir(HEAP_CHECK.split(":")[0]):
        print("VisualVM checker not built (install visualvm): its check is left out")
        return True, ""
    proc = subprocess.run([java_bin(JAVA17), "-Xmx1g", "-cp", HEAP_CHECK, "HeapCheck", mode, str(path), str(dump)],
                          capture_output=True, text=True, timeout=300)
    return proc.returncode == 0, proc.stdout + proc.stderr


def dumps_done(folder):
    return read_text(folder / "stderr.txt").count(" done.\n")


def quit_and_wait(proc, folder, count, timeout=60):
    os.kill(proc.pid, signal.SIGQUIT)
    return wait_for(lambda: dumps_done(folder) >= count, timeout)


def ready(folder, label):
    """Whether HeapShapes said it is ready within a minute (a failed check if not)."""
    return check(wait_for(lambda: "ready" in read_text(folder / "stdout.txt"), 60), f"{label}: ready")


def shapes_counts(jdk, home, options):
    """Per-class counts of HeapShapes' own classes in its dump on kill -QUIT (dump 0)."""
    with java_process(home, agentpath(options), "HeapShapes", ["30"]) as (proc, folder):
        ready(folder, f"{jdk} {options}")
        check(quit_and_wait(proc, folder, 1), f"{jdk} {options}: a dump")
        time.sleep(0.2)
        proc.kill()
        proc.wait()
        name = re.search(r"file=([^,]+)", options).group(1)
        return class_counts(folder / name, r"HeapShapes").get(0, {})


def dumps(jdk, home):
    label = f"{jdk} heap=dump gz=y"
    with java_process(home, agentpath("heap=dump,format=b,gz=y,file=dump.hprof.gz,verbose=y"), "HeapShapes",
                      ["60"]) as (proc, folder):
        dump = folder / "dump.hprof.gz"
        if not ready(folder, label):
            return
        for n in (1, 2):
            check(quit_and_wait(proc, folder, n), f"{label}: dump {n} on kill -QUIT")
            # What a user copies while the JVM runs: a complete gzip file after every report.
            copy = folder / f"copy{n}.hprof.gz"
            copy.write_bytes(dump.read_bytes())
            check_layout(f"{label}: copy after dump {n}", copy.read_bytes())
            ok, output = verify_binary(copy)
            check(ok and f"heap dumps: {n}\n" in output, f"{label}: the copy after dump {n} verifies with "
                  f"{n} dump(s):\n{output[-2000:]}")
        code = terminate(proc)
        check(code in (0, 143), f"{label}: the program ends (exit {code})")
        check(dumps_done(folder) == 3, f"{label}: a third dump at exit:\n{read_text(folder / 'stderr.txt')}")
        found = check_layout(label, dump.read_bytes())
        check(sum(size for _, size in found) > 3 * BLOCK and sum(size == BLOCK for _, size in found) >= 3,
              f"{label}: several whole 1 MiB blocks: {[size for _, size in found]}")
        check(len(gzip.decompress(dump.read_bytes())) == sum(size for _, size in found),
              f"{label}: Python's gzip module reads every member")
        ok, output = verify_binary(dump)
        check(ok and "heap dumps: 3\n" in output and "gzip: " in output,
              f"{label}: hprof-verify --strict reads the compressed file:\n{output[-2000:]}")
        ok, output = openjdk_check("shapes", dump, 0)
        check(ok, f"{label}: the OpenJDK parser reads the compressed file and finds the known heap:\n{output[-3000:]}")
        ok, output = openjdk_check("read", dump, 2)
        check(ok, f"{label}: the OpenJDK parser reads the dump at exit:\n{output[-3000:]}")
        plain = folder / "dump.hprof"
        check(gunzip(dump, plain), f"{label}: gzip -d decompresses the file")
        ok, output = visualvm_check("shapes", plain, 0)
        check(ok, f"{label}: VisualVM reads the decompressed file and finds the known heap:\n{output[-3000:]}")
        ok, output = visualvm_check("generic", plain, 2)
        check(ok, f"{label}: VisualVM reads the dump at exit:\n{output[-3000:]}")
        ok, output = visualvm_check("shapes", dump, 0)
        print(f"{label}: VisualVM on the compressed file itself: {'reads it' if ok else 'cannot read it'}")

    compressed = shapes_counts(jdk, home, "heap=dump,format=b,gz=y,file=d.hprof.gz,verbose=y")
    plain = shapes_counts(jdk, home, "heap=dump,format=b,file=d.hprof,verbose=y")
    check(len(plain) >= 3 and compressed == plain,
          f"{label}: HeapShapes' classes have the same counts as in an uncompressed run:\n{compressed}\n{plain}")


def sites_and_samples(jdk, home):
    for options, main, args, expect in (
            ("heap=sites,format=b,gz=y,file=out.gz,logflags=4,verbose=y", "AllocSites", [], "ALLOC SITES"),
            ("cpu=samples,format=b,gz=y,file=out.gz", "CpuBusy", ["2", "1500"], "CPU SAMPLES")):
        label = f"{jdk} {options}"
        with java_process(home, agentpath(options), main, args) as (proc, folder):
            code = proc.wait(timeout=300)
            check(code == 0, f"{label}: the program ends (exit {code}):\n{read_text(folder / 'stderr.txt')[-2000:]}")
            out = folder / "out.gz"
            if "logflags=4" in options:
                check("fasthprof: verified " in read_text(folder / "stderr.txt"),
                      f"{label}: logflags=4 verifies the compressed file at exit:\n{read_text(folder / 'stderr.txt')}")
            check_layout(label, out.read_bytes())
            ok, output = verify_binary(out)
            check(ok and re.search(expect + r"\s+[1-9]", output), f"{label}: hprof-verify --strict reads it, "
                  f"with {expect} records:\n{output[-2000:]}")
            plain = folder / "out"
            check(gunzip(out, plain) and plain.read_bytes().startswith(b"JAVA PROFILE 1.0.2\0"),
                  f"{label}: gzip -d gives the HPROF file")
            ok, plain_output = verify_binary(plain)
            check(ok and plain_output.split("\n", 1)[1] == output.split("\n", 1)[1].rsplit("gzip: ", 1)[0],
                  f"{label}: the decompressed file verifies the same")


def net(jdk, home):
    label = f"{jdk} net= gz=y"
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    received = bytearray()

    def serve():
        connection, _ = server.accept()
        with connection:
            while True:
                chunk = connection.recv(1 << 16)
                if not chunk:
                    return
                received.extend(chunk)

    listener = threading.Thread(target=serve, daemon=True)
    listener.start()
    with java_process(home, agentpath(f"heap=dump,format=b,gz=y,net=127.0.0.1:{port},verbose=y"), "HeapShapes",
                      ["60"]) as (proc, folder):
        if ready(folder, label):
            check(quit_and_wait(proc, folder, 1), f"{label}: a dump on kill -QUIT")
            # The report ended a member: what arrived so far is a complete gzip stream.
            check(wait_for(lambda: len(received) > 0 and _complete(bytes(received)), 10),
                  f"{label}: the bytes sent after the dump are a complete gzip stream")
            code = terminate(proc)
            check(code in (0, 143), f"{label}: the program ends (exit {code})")
    listener.join(30)
    server.close()
    data = bytes(received)
    check_layout(label, data)
    path = folder.parent / f"fasthprof-net-{os.getpid()}.hprof.gz"
    try:
        path.write_bytes(data)
        ok, output = verify_binary(path)
        check(ok and "heap dumps: 2\n" in output, f"{label}: hprof-verify --strict reads the stream:\n{output[-2000:]}")
        ok, output = openjdk_check("shapes", path, 0)
        check(ok, f"{label}: the OpenJDK parser reads the stream:\n{output[-3000:]}")
    finally:
        path.unlink(missing_ok=True)


def _complete(data):
    try:
        members(data)
        return True
    except (ValueError, IndexError):
        return False


def file_size_limit(jdk, home):
    label = f"{jdk} gz=y file size limit"
    # The walk: the JVM's own dumper starts its attach listener thread at the first dump, whose
    # START THREAD streams after that report, so the cut-back point is not the size seen at its
    # end (vm_dump.py's disk_full covers a full disk under the JVM's dumper).
    with java_process(home, agentpath("heap=dump,format=b,gz=y,dumper=jvmti,file=dump.gz,doe=n,verbose=y"), "HeapShapes",
                      ["60"]) as (proc, folder):
        dump = folder / "dump.gz"
        if not ready(folder, label):
            return
        check(quit_and_wait(proc, folder, 1), f"{label}: a first dump")
        time.sleep(0.3)
        complete = dump.stat().st_size
        # Room for a little more than a member: the second dump fails inside.
        prlimit_fsize(proc.pid, complete + 100000)
        check(quit_and_wait(proc, folder, 2), f"{label}: the second dump ends")
        check(wait_for(lambda: "File too large" in read_text(folder / "stderr.txt"), 10),
              f"{label}: a clear message:\n{read_text(folder / 'stderr.txt')}")
        time.sleep(0.3)
        errors = [line for line in read_text(folder / "stderr.txt").splitlines() if "error writing" in line]
        check(len(errors) == 1 and errors[0].endswith(f"the file was truncated to the last complete report "
                                                      f"({complete} bytes)"),
              f"{label}: one message giving the file's size after the cut ({complete}): {errors}")
        check(dump.stat().st_size == complete, f"{label}: the file is cut back to the complete dump "
              f"({dump.stat().st_size} vs {complete})")
        check_layout(f"{label}: after the cut", dump.read_bytes())
        check(proc.poll() is None, f"{label}: the JVM keeps running")
        prlimit_fsize(proc.pid, "unlimited")
        check(quit_and_wait(proc, folder, 3), f"{label}: the next dump works once there is room")
        time.sleep(0.3)
        proc.kill()
        proc.wait()
        check_layout(label, dump.read_bytes())
        ok, output = verify_binary(dump)
        check(ok and "heap dumps: 2\n" in output, f"{label}: two complete dumps in the file:\n{output[-2000:]}")
        ok, output = openjdk_check("shapes", dump, 1)
        check(ok, f"{label}: the OpenJDK parser reads the dump written after the error:\n{output[-3000:]}")


def format_a():
    proc = subprocess.run([java_bin(JAVA17), agentpath("gz=y"), "-cp", TEST_CLASSES, "HelloThreads"],
                          capture_output=True, text=True, timeout=120)
    check(proc.returncode != 0 and "gz=y is not supported with format=a" in proc.stderr,
          f"gz=y with text output is refused with a clear message (exit {proc.returncode}):\n{proc.stderr[-1000:]}")


if __name__ == "__main__":
    run_cases("gzip_output", {
        "dumps": on_each_jdk(dumps),
        "sites_samples": on_each_jdk(sites_and_samples),
        "net": on_each_jdk(net),
        "file_size_limit": on_each_jdk(file_size_limit),
        "format_a": format_a,
    })
