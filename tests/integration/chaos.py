"""Chaos: tests/java/Chaos.java (allocating threads, thread churn, counts at known sites that it
prints) with the agent while reports come on kill -QUIT at random moments, the disk fills in the
middle of a report (a file size limit set and lifted on the live JVM with prlimit), and net= peers
misbehave (refuse, close at once, reset, read a little then close, never read), all on the
loopback. Binary runs use gz=y on half the seeds. Afterwards: the program ran to its end, nothing
crashed, every binary output verifies (hprof-verify), every report present is complete, and the
known counts are exact in each.

Two cases, each a Meson test: `chaos.py disk` (the disk-full scenarios) and `chaos.py net` (the
peers). Seeded and reproducible: each prints its seed, and FASTHPROF_CHAOS_SEED=<seed> replays it.
CI runs a few scenarios per JDK; FASTHPROF_SOAK=<seconds> makes each case run random scenarios of
its kinds until that time has passed."""
import gzip
import os
import pathlib
import random
import re
import signal
import socket
import struct
import subprocess
import threading
import time

import hprof_records
from harness import prlimit_fsize, agentpath, check, java_process, jdks, run_cases, verify_binary, wait_for

KNOWN = re.compile(r"^known (\S+) alloc=(\d+) live=(\d+)$", re.M)
CRASH_TEXT = ["terminate called", "#  SIGSEGV", "#  SIGBUS", "# A fatal error has been detected",
              "AddressSanitizer", "runtime error:"]
SECTIONS = [("SITES BEGIN", "SITES END"), ("HEAP DUMP BEGIN", "HEAP DUMP END"),
            ("CPU SAMPLES BEGIN", "CPU SAMPLES END")]


# ---- misbehaving net= peers --------------------------------------------------------------------

class Peer:
    """A loopback TCP listener that treats the agent's connection one way: 'all' reads everything
    (the control), 'close' closes at once, 'reset' resets at once, 'read-close' reads a little then
    closes, 'never' accepts and never reads. 'refuse' has no listener (a closed port)."""

    def __init__(self, mode, rng):
        self.mode = mode
        self.received = bytearray()
        self.limit = rng.randint(64, 256 * 1024)
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.connection = None
        if mode == "refuse":
            self.server.close()
            return
        self.server.listen(1)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        try:
            self.connection, _ = self.server.accept()
        except OSError:
            return
        conn = self.connection
        if self.mode == "close":
            conn.close()
        elif self.mode == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()
        elif self.mode in ("all", "read-close"):
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                self.received += data
                if self.mode == "read-close" and len(self.received) >= self.limit:
                    conn.close()
                    break
        # 'never': keep the connection open and unread until stop().

    def stop(self):
        for s in (self.connection, self.server):
            try:
                if s is not None:
                    s.close()
            except OSError:
                pass


# ---- reading the outputs -------------------------------------------------------------------------

def text_reports(text, label):
    """The SITES sections of a text file as [{class: (live objs, alloc objs)}], after checking
    that every section that begins also ends and that the file ends with a whole line."""
    check(text.endswith("\n"), f"{label}: the text file ends with a whole line")
    lines = text.split("\n")
    reports = []
    open_section = None
    for line in lines:
        for begin, end in SECTIONS:
            if line.startswith(begin):
                check(open_section is None, f"{label}: {begin} inside {open_section}")
                open_section = begin
                if begin == "SITES BEGIN":
                    reports.append({})
            elif line == end:
                check(open_section == begin, f"{label}: {end} without its {begin}")
                open_section = None
        if open_section == "SITES BEGIN":
            row = hprof_records.site_row(line)
            if row:
                live, alloc = reports[-1].get(row["class"], (0, 0))
                reports[-1][row["class"]] = (live + row["live_objs"], alloc + row["alloc_objs"])
    check(open_section is None, f"{label}: the file ends inside {open_section}")
    return reports


def binary_reports(data_path, label):
    """The ALLOC SITES records of a binary file (gz=y: gzip, decompressed here by Python's gzip
    module) as [{class: (live objs, alloc objs)}]."""
    data = pathlib.Path(data_path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data_path = pathlib.Path(str(data_path) + ".plain")
        data_path.write_bytes(gzip.decompress(data))
    records = hprof_records.read(data_path)[3]
    classes = {serial: (name or "?").replace("/", ".") for serial, name in hprof_records.load_classes(records).items()}
    reports = []
    for _, rows in hprof_records.alloc_sites(records):
        report = {}
        for _, cls, _, _, live, _, alloc in rows:
            name = classes.get(cls, f"class {cls}")
            old_live, old_alloc = report.get(name, (0, 0))
            report[name] = (old_live + live, old_alloc + alloc)
        reports.append(report)
    return reports


def check_counts(label, reports, known, exit_known):
    """Fixed counts exact in every report; churned counts exact in the last (exit) report."""
    check(len(reports) >= 1, f"{label}: at least the exit report is present ({len(reports)})")
    for index, report in enumerate(reports):
        for name, (alloc, live) in known.items():
            got = report.get(name, (0, 0))
            check(got == (live, alloc), f"{label}: report {index + 1}/{len(reports)}: {name} live/alloc "
                                        f"{got[0]}/{got[1]}, the program says {live}/{alloc}")
    if reports:
        for name, (alloc, live) in exit_known.items():
            got = reports[-1].get(name, (0, 0))
            check(got == (live, alloc), f"{label}: exit report: {name} live/alloc {got[0]}/{got[1]}, "
                                        f"the program says {live}/{alloc}")


# ---- one scenario ----------------------------------------------------------------------------------

def scenario(jdk, home, kind, rng, seconds):
    """kind: 'text-fill', 'binary-fill' or 'net-<mode>'."""
    seed = rng.randrange(1 << 31)
    binary = kind != "text-fill"
    # A heap dump per report makes megabytes: enough to fill a peer's socket buffers.
    dumps = kind == "binary-fill" or (kind.startswith("net-") and rng.random() < 0.5)
    options = ["heap=all" if dumps else "heap=sites", "cutoff=0",
               "format=b" if binary else "format=a"]
    if rng.random() < 0.3:
        options.append(f"depth={rng.choice([1, 2, 8])}")
    if rng.random() < 0.3 and not binary:
        options.append("thread=y")
    if rng.random() < 0.3 and not kind.startswith("net"):
        options.append("cpu=samples")
    # gz=y on half the binary runs, chosen by the seed's parity so that it draws nothing from rng
    # (the seeds of earlier runs replay as they did).
    compressed = binary and seed % 2 == 1
    if compressed:
        options.append("gz=y")
    peer = None
    if kind.startswith("net-"):
        peer = Peer(kind[4:], rng)
        options.append(f"net=127.0.0.1:{peer.port}")
    else:
        options.append("file=out.hprof" if binary else "file=out.txt")
    label = f"{jdk} chaos {kind} [{','.join(options)}] seed {seed}"
    print(f"{label}: start", flush=True)
    with java_process(home, agentpath(",".join(options)), "Chaos", [str(seconds), str(seed)],
                      keep_failed=True) as (proc, folder):
        try:
            stdout, stderr = folder / "stdout.txt", folder / "stderr.txt"
            quits = 0
            if kind == "net-refuse":
                code = proc.wait(timeout=120)
                err = stderr.read_text()
                check(code == 1 and "can't connect to 127.0.0.1" in err,
                      f"{label}: a refused connection stops the start with the message (exit {code}):\n{err}")
                return
            if not check(wait_for(lambda: "ready" in stdout.read_text() or proc.poll() is not None, 60),
                         f"{label}: the program got ready"):
                return
            out = folder / ("out.hprof" if binary else "out.txt")
            fill_at = rng.uniform(0.2, 0.6) * seconds if kind.endswith("fill") else None
            deadline = time.time() + seconds
            while time.time() < deadline - 0.5 and proc.poll() is None:
                time.sleep(rng.uniform(0.2, 1.5))
                if fill_at is not None and time.time() > deadline - seconds + fill_at and out.exists():
                    # The disk fills: a little room past the current end, then a report that needs more.
                    prlimit_fsize(proc.pid, out.stat().st_size + rng.randint(0, 64 * 1024))
                    os.kill(proc.pid, signal.SIGQUIT)
                    quits += 1
                    time.sleep(rng.uniform(0.5, 2.0))
                    prlimit_fsize(proc.pid, "unlimited")
                    fill_at = None
                    continue
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGQUIT)
                    quits += 1
            try:
                code = proc.wait(timeout=120 + seconds)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
                check(False, f"{label}: the program did not end within {120 + seconds} s of its run time")
            if peer is not None:
                peer.stop()
                if peer.mode == "all":
                    peer.thread.join(timeout=30)
            out_text, err_text = stdout.read_text(), stderr.read_text()
            run_note = f"\n--- stdout (tail)\n{out_text[-1500:]}\n--- stderr (tail)\n{err_text[-3000:]}"
            check(code == 0 and "chaos done" in out_text, f"{label}: the program ran to its end (exit {code}){run_note}")
            for text in CRASH_TEXT:
                check(text not in out_text + err_text, f"{label}: no {text!r}{run_note}")
            crash_files = [p.name for p in folder.iterdir() if p.name.startswith(("hs_err", "core"))]
            check(not crash_files, f"{label}: no crash files {crash_files}")
            errors = [l for l in err_text.splitlines() if "error writing" in l]
            known = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in KNOWN.finditer(out_text)}
            fixed = {k: v for k, v in known.items() if k == "Chaos$Fixed"}
            churned = {k: v for k, v in known.items() if k == "Chaos$Churned"}
            check(fixed and churned, f"{label}: the program printed its known counts")
            reports = []
            if kind.endswith("fill"):
                check(len(errors) >= 1, f"{label}: the full disk gave a message{run_note}")
            if peer is None:
                if binary:
                    ok, output = verify_binary(out)
                    check(ok, f"{label}: the file verifies:\n{output}")
                    reports = binary_reports(out, label) if ok else []
                else:
                    reports = text_reports(out.read_text(errors="replace"), label)
                check(len(reports) <= quits + 1, f"{label}: {len(reports)} reports for {quits} quits and the exit")
                check_counts(label, reports, fixed, churned)
            elif peer.mode == "all":
                received = folder / "received.hprof"
                received.write_bytes(bytes(peer.received))
                ok, output = verify_binary(received)
                check(ok, f"{label}: what the peer received verifies:\n{output}")
                if ok:
                    reports = binary_reports(received, label)
                    check_counts(label, reports, fixed, churned)
            else:
                check(len(errors) <= 1, f"{label}: at most one message for the lost peer: {errors}")
            print(f"{label}: {quits} quits, {len(reports)} complete reports checked, {len(errors)} write errors",
                  flush=True)
        finally:
            if peer is not None:
                peer.stop()


KINDS = ["text-fill", "binary-fill", "net-all", "net-refuse", "net-close", "net-reset", "net-read-close",
         "net-never"]


def run(case, kinds_on_first, kinds_on_others):
    """Runs the scenarios of one case: kinds_on_first(rng) on the first JDK, kinds_on_others(rng)
    on the others; with FASTHPROF_SOAK, random scenarios of the case's kinds for that long."""
    seed = int(os.environ.get("FASTHPROF_CHAOS_SEED") or random.SystemRandom().randrange(1 << 32))
    soak = float(os.environ.get("FASTHPROF_SOAK", "0") or 0)
    print(f"chaos {case}: seed {seed} (FASTHPROF_CHAOS_SEED={seed} replays it)"
          + (f", soak for {soak:.0f} s" if soak else ""), flush=True)
    rng = random.Random(seed)
    homes = jdks()
    if soak:
        kinds = CASE_KINDS[case]
        end = time.time() + soak
        runs = 0
        while time.time() < end:
            jdk, home = rng.choice(homes)
            scenario(jdk, home, rng.choice(kinds), rng, rng.randint(6, 20))
            runs += 1
        print(f"chaos {case} soak: {runs} scenarios", flush=True)
    else:
        for number, (jdk, home) in enumerate(homes):
            for kind in (kinds_on_first if number == 0 else kinds_on_others)(rng):
                scenario(jdk, home, kind, rng, 8)


# CI: the two disk-full scenarios and two misbehaving peers on the first JDK, one of each on the
# others; which peers is the seed's choice.
CASE_KINDS = {"disk": KINDS[:2], "net": KINDS[2:]}

if __name__ == "__main__":
    run_cases("chaos", {
        "disk": lambda: run("disk", lambda rng: list(KINDS[:2]), lambda rng: [rng.choice(KINDS[:2])]),
        "net": lambda: run("net", lambda rng: rng.sample(KINDS[2:], 2), lambda rng: rng.sample(KINDS[2:], 1)),
    })
