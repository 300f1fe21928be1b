"""Shared helpers for the integration tests: find the JDKs, run `java` with the agent in a
scratch folder, and read what it wrote. Environment (set by tests/meson.build):
FASTHPROF_AGENT, FASTHPROF_AGENT_DIR, FASTHPROF_VERIFY, JAVA17_HOME, JAVA25_HOME, TEST_CLASSES."""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

AGENT = os.environ.get("FASTHPROF_AGENT", "")
AGENT_DIR = os.environ.get("FASTHPROF_AGENT_DIR", "")
VERIFY = os.environ.get("FASTHPROF_VERIFY", "")
TEST_CLASSES = os.environ.get("TEST_CLASSES", "")

failures = []


def jdks():
    """(label, java_home) for every JDK to test on. JDK 17 is required; JDK 25 is tested when it
    is installed, and its absence is said on stdout."""
    found = [("jdk17", os.environ["JAVA17_HOME"])]
    home25 = os.environ.get("JAVA25_HOME", "")
    if home25 and os.path.exists(os.path.join(home25, "bin", "java")):
        found.append(("jdk25", home25))
    else:
        print(f"SKIP: JDK 25 not installed at {home25!r}; its cases are not run")
    return found


def java_bin(home, tool="java"):
    return os.path.join(home, "bin", tool)


class Run:
    def __init__(self, proc, folder):
        self.code = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.folder = pathlib.Path(folder)

    def file(self, name):
        return self.folder / name

    def text(self, name):
        return (self.folder / name).read_text(errors="replace")

    def describe(self):
        return f"exit {self.code}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def run_java(home, agent_arg, main="HelloThreads", args=(), env_extra=None, jvm_args=(),
             folder=None, timeout=120):
    """Runs java with the given -agentpath/-agentlib argument (a full argument string, or None)
    in a scratch folder (kept until the process ends) and returns a Run."""
    folder = folder or tempfile.mkdtemp(prefix="fasthprof-it-")
    command = [java_bin(home), "-Xshare:auto"]
    if agent_arg:
        command.append(agent_arg)
    command += list(jvm_args) + ["-cp", TEST_CLASSES, main] + list(args)
    env = dict(os.environ)
    env.pop("_JAVA_HPROF_OPTIONS", None)
    env.pop("JAVA_TOOL_OPTIONS", None)
    if env_extra:
        env.update(env_extra)
    proc = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True,
                          timeout=timeout)
    return Run(proc, folder)


def agentpath(options=None):
    return f"-agentpath:{AGENT}" + (f"={options}" if options is not None else "")


def check(condition, message, run=None):
    if condition:
        return True
    detail = f"\n{run.describe()}" if run is not None else ""
    failures.append(message)
    print(f"FAIL: {message}{detail}", flush=True)
    return False


def verify_binary(path, *extra, strict=True):
    """Runs tools/hprof-verify on a binary file (with --strict: what fasthprof's own files promise;
    strict=False for files the JDK wrote); returns (ok, output)."""
    command = [VERIFY, *(["--strict"] if strict else []), *extra, str(path)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    return proc.returncode == 0, proc.stdout + proc.stderr


def finish(name):
    if failures:
        print(f"{name}: {len(failures)} failure(s)")
        sys.exit(1)
    print(f"{name}: all checks passed")
    sys.exit(0)


def wait_for(predicate, timeout=30.0, step=0.1):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


def start_java(home, agent_arg, main, args=(), env_extra=None, folder=None):
    """Starts java in the background; returns (Popen, folder). stdout/stderr go to files there."""
    folder = pathlib.Path(folder or tempfile.mkdtemp(prefix="fasthprof-it-"))
    command = [java_bin(home)]
    if agent_arg:
        command.append(agent_arg)
    command += ["-cp", TEST_CLASSES, main] + list(args)
    env = dict(os.environ)
    env.pop("_JAVA_HPROF_OPTIONS", None)
    if env_extra:
        env.update(env_extra)
    out = open(folder / "stdout.txt", "w")
    err = open(folder / "stderr.txt", "w")
    proc = subprocess.Popen(command, cwd=folder, env=env, stdout=out, stderr=err, text=True)
    return proc, folder


def cleanup(folder):
    shutil.rmtree(folder, ignore_errors=True)
