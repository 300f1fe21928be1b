"""A heap dump written by the JVM's dumper into a folder that other users may write (mode 1777, as
/tmp), while another user (`nobody`, tests/integration/planted_names.py) plants links to a file of
root's and files it holds open at every name of the agent's it can guess, and tries to enter the
agent's folders there. HotSpot 22+ first writes the dump into "<pipe>.p0", opened with O_TRUNC and
following links: beside a guessable pipe name, that overwrote the victim or wrote the heap into the
other user's file. The checks: the victim unchanged, the other user read nothing and entered
nothing, both dumps by the JVM's dumper (dumper=vm on kill -QUIT through attach, dumper=fork at exit in a
forked child), the side file still read in place of the pipe on JDK 25, hprof-verify --strict accepts the file, and nothing
of the agent's is left in the folder. Then (`refused`) a JVM of nobody's that may write its output
file but cannot make the private folder beside it: one line says why and the walk writes the dump.
On JDK 17 and 25; root only (skipped otherwise, or without setpriv or runuser)."""
import json
import os
import pathlib
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile

from harness import (TEST_CLASSES, agentpath, check, check_no_warnings, java_command, java_process, jdks, read_text,
                     run_cases, skip, terminate, verify_binary, wait_for)

ATTACKER = pathlib.Path(__file__).with_name("planted_names.py")
VICTIM_TEXT = b"a file of root's that no heap dump may overwrite\n" * 64
# Pipe numbers the other user plants for: the agent's counter started at 0 and gave one per dump.
GUESSED_PIPES = 8
USED = re.compile(r"fasthprof: heap dump: dumper=[a-z+]+: (the JVM's own dumper|the JVMTI walk)")


def as_nobody(command):
    """command run as the user nobody (no groups), or None when this process cannot do that."""
    try:
        user = pwd.getpwnam("nobody")
    except KeyError:
        return None
    if shutil.which("setpriv"):
        return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", *command]
    if shutil.which("runuser"):
        return ["runuser", "-u", "nobody", "--", *command]
    return None


def side_files(stderr):
    """side_files= of every stats line of HotSpot's dumper (by attach or fork)."""
    return [int(n) for n in re.findall(r"heap dump stats: dumper=(?:vm|fork) .*?side_files=(\d+)", stderr)]


def attacked_run(jdk, home, shared, victim, attacker_copy):
    label = f"{jdk} shared folder"
    dump = shared / "dump.hprof"
    options = f"heap=dump,format=b,file={dump},verbose=y,dumper=vm+fork"
    with java_process(home, agentpath(options), "HeapShapes", [120]) as (proc, folder):
        attacker = subprocess.Popen(as_nobody([sys.executable, str(attacker_copy), str(shared), str(proc.pid),
                                               str(victim), str(GUESSED_PIPES)]),
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            planted = attacker.stdout.readline().strip() == "planted"
            check(planted, f"{label}: the other user planted its names")
            ok = wait_for(lambda: "ready" in read_text(folder / "stdout.txt") or proc.poll() is not None, 60)
            if not check(ok and proc.poll() is None, f"{label}: program ready:\n{read_text(folder / 'stderr.txt')}"):
                return
            os.kill(proc.pid, signal.SIGQUIT)
            check(wait_for(lambda: read_text(folder / "stderr.txt").count(" done.\n") >= 1, 120),
                  f"{label}: kill -QUIT gives a dump:\n{read_text(folder / 'stderr.txt')}")
            terminate(proc)
        finally:
            attacker.send_signal(signal.SIGTERM)
            said = attacker.communicate(timeout=60)[0]
        stderr = read_text(folder / "stderr.txt")
    try:
        got = json.loads(said.splitlines()[-1])
    except (ValueError, IndexError):
        check(False, f"{label}: the other user's report:\n{said}")
        return
    print(f"{label}: the other user planted {got['planted']} names")
    check(victim.read_bytes() == VICTIM_TEXT, f"{label}: root's file is unchanged ({victim.stat().st_size} bytes)")
    check(got["held_bytes"] == 0 and got["read_bytes"] == 0,
          f"{label}: the other user read nothing of the dump: {got}")
    check(not got["entered"], f"{label}: the other user entered none of the agent's folders: {got['entered']}")
    used = re.findall(r"heap dump stats: dumper=(vm|fork) ", stderr)
    check(used == ["vm", "fork"] and stderr.count(" done.\n") == 2,
          f"{label}: both dumps by the JVM's dumper, through attach and by fork: {used}\n{stderr}")
    expected = [0, 0] if jdk == "jdk17" else [1, 1]
    check(side_files(stderr) == expected, f"{label}: side files read in place of the pipe: {side_files(stderr)} "
          f"(expected {expected})\n{stderr}")
    ok, output = verify_binary(dump)
    check(ok and "heap dumps: 2" in output, f"{label}: hprof-verify --strict accepts both dumps:\n{output[-3000:]}")
    nobody = pwd.getpwnam("nobody").pw_uid
    left = sorted(p.name for p in shared.iterdir() if p.lstat().st_uid != nobody and p.name != "dump.hprof")
    check(not left, f"{label}: nothing of the agent's left in the folder: {left}")


def attacked():
    if os.geteuid() != 0:
        skip("needs root, to run the other user (nobody) beside the JVM")
    if as_nobody(["true"]) is None:
        skip("no user nobody, or neither setpriv nor runuser")
    victims = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-victim-"))
    victims.chmod(0o755)
    victim = victims / "victim"
    victim.write_bytes(VICTIM_TEXT)
    victim.chmod(0o644)
    # The attacker's script, where nobody may read it whatever the checkout's permissions.
    attacker_copy = victims / ATTACKER.name
    shutil.copy(ATTACKER, attacker_copy)
    attacker_copy.chmod(0o644)
    try:
        for jdk, home in jdks():
            shared = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-shared-"))
            shared.chmod(0o1777)
            try:
                attacked_run(jdk, home, shared, victim, attacker_copy)
            finally:
                shutil.rmtree(shared, ignore_errors=True)
    finally:
        shutil.rmtree(victims, ignore_errors=True)


def refused_run(jdk, home):
    """A JVM of nobody's that may write its output file but not make a folder beside it: the one
    line that says why, the walk writes the dump, nothing else is made there."""
    label = f"{jdk} no private folder"
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-readonly-"))
    try:
        folder.chmod(0o755)
        classes = folder / "classes"
        classes.mkdir(mode=0o755)
        for name in os.listdir(TEST_CLASSES):
            if name.startswith("HeapShapes"):
                shutil.copy(os.path.join(TEST_CLASSES, name), classes / name)
                (classes / name).chmod(0o644)
        dump = folder / "dump.hprof"
        dump.touch(mode=0o600)
        nobody = pwd.getpwnam("nobody")
        os.chown(dump, nobody.pw_uid, nobody.pw_gid)
        options = f"heap=dump,format=b,file={dump},verbose=y,dumper=vm"
        command = as_nobody(java_command(home, agentpath(options), "-cp", str(classes), "HeapShapes", "1"))
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300)
        check_no_warnings(label, done.stdout, done.stderr)
        check(done.returncode == 0, f"{label}: the program ends normally (exit {done.returncode}):\n{done.stderr}")
        said = [line for line in done.stderr.splitlines() if "private folder" in line]
        expected = (f"fasthprof: the JVM's heap dumper cannot be used (cannot make a private folder in {folder}: "
                    "Permission denied); the JVMTI walk writes this dump")
        check(said == [expected], f"{label}: one line says why: {said}\n{done.stderr}")
        check(done.stderr.count(" done.\n") == 1, f"{label}: the walk wrote the dump:\n{done.stderr}")
        ok, output = verify_binary(dump)
        check(ok and "heap dumps: 1" in output, f"{label}: hprof-verify --strict accepts the dump:\n{output[-3000:]}")
        left = sorted(os.listdir(folder))
        check(left == ["classes", "dump.hprof"], f"{label}: nothing else in the folder: {left}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def refused():
    if os.geteuid() != 0:
        skip("needs root, to run the JVM as nobody in a folder of root's")
    if as_nobody(["true"]) is None:
        skip("no user nobody, or neither setpriv nor runuser")
    for jdk, home in jdks():
        refused_run(jdk, home)


run_cases("shared_folder", {"attacked": attacked, "refused": refused})
