"""Shared helpers for the integration tests: find the JDKs, run `java` with the agent in a
scratch folder, and read what it wrote. Environment (set by tests/meson.build):
FASTHPROF_AGENT, FASTHPROF_AGENT_DIR, FASTHPROF_VERIFY, JAVA17_HOME, JAVA25_HOME, TEST_CLASSES.

Every JVM a test starts runs with -Xcheck:jni (java_command), and a line of its stdout or stderr
that contains WARNING fails the test (run_java checks its own output; java_process checks its
folder's stdout.txt and stderr.txt when the JVM has ended). The JVM's JNI checks print "WARNING in
native method: ..." and "WARNING: JNI local refs: ...", and neither may ever come from the agent."""
import atexit
import contextlib
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

AGENT = os.environ.get("FASTHPROF_AGENT", "")
AGENT_DIR = os.environ.get("FASTHPROF_AGENT_DIR", "")
VERIFY = os.environ.get("FASTHPROF_VERIFY", "")
TEST_CLASSES = os.environ.get("TEST_CLASSES", "")

failures = []

# At the test's end, the attach sockets (/tmp/.java_pid<pid>) of the JVMs it killed are removed
# (bench/attach_sockets.py: a killed JVM leaves its socket behind).
sys.path.append(str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import attach_sockets  # noqa: E402,F401

JNI_CHECK = "-Xcheck:jni"

# What JDK 21+ itself prints on stderr when an agent is loaded into a running VM (jcmd
# JVMTI.agent_load): the only WARNING lines a test accepts.
ATTACH_WARNINGS = (
    f"WARNING: A JVM TI agent has been loaded dynamically ({AGENT})",
    "WARNING: If a serviceability tool is in use, please run with -XX:+EnableDynamicAgentLoading "
    "to hide this warning",
    "WARNING: Dynamic loading of agents will be disallowed by default in a future release",
)

JDK25_HOME = os.environ.get("JAVA25_HOME", "")
_said_jdk25_absent = False


def jdk25_present():
    return bool(JDK25_HOME) and os.path.exists(os.path.join(JDK25_HOME, "bin", "java"))


def _say_jdk25_absent():
    global _said_jdk25_absent
    if not _said_jdk25_absent:
        print(f"SKIP: JDK 25 not present at {JDK25_HOME!r}; its cases are not run", flush=True)
        _said_jdk25_absent = True


def jdks():
    """(label, java_home) for every JDK to test on. JDK 17 is required; JDK 25 is tested when it
    is installed, and its absence is said on stdout (once)."""
    found = [("jdk17", os.environ["JAVA17_HOME"])]
    if jdk25_present():
        found.append(("jdk25", JDK25_HOME))
    else:
        _say_jdk25_absent()
    return found


def on_each_jdk(run):
    """A case (for run_cases) that calls run(label, home) on every JDK jdks() gives."""
    def case():
        for label, home in jdks():
            run(label, home)
    return case


class Skipped(Exception):
    """Raised by a case of run_cases that cannot run here (its message says why)."""


_in_cases = False


def skip(reason):
    """Says SKIP: reason; inside run_cases the case ends there, otherwise the test exits 77 (Meson's SKIP)."""
    if _in_cases:
        raise Skipped(reason)
    print(f"SKIP: {reason}", flush=True)
    sys.exit(77)


def jdk25():
    """(label, java_home) of JDK 25; without it skip(): the calling case, or the test, is skipped."""
    if not jdk25_present():
        skip(f"JDK 25 not present at {JDK25_HOME!r}")
    return ("jdk25", JDK25_HOME)


def java_bin(home, tool="java"):
    return os.path.join(home, "bin", tool)


def java_command(home, *args, tool="java"):
    """The command line of a JDK launcher with the JNI checks on: `java -Xcheck:jni args...`, or
    for a tool that runs on a JVM of its own (javac, jar) `tool -J-Xcheck:jni args...`."""
    check_flag = JNI_CHECK if tool == "java" else f"-J{JNI_CHECK}"
    return [java_bin(home, tool), check_flag, *args]


def warning_lines(text):
    """The lines of a JVM's output that contain WARNING, less the JVM's own attach warnings."""
    return [line for line in text.splitlines() if "WARNING" in line and line not in ATTACH_WARNINGS]


def check_no_warnings(what, stdout, stderr):
    """Fails the test when the output of a JVM that ran `what` has a WARNING line."""
    found = warning_lines(stdout) + warning_lines(stderr)
    return check(not found, f"{what}: no WARNING on stdout or stderr, found:\n" + "\n".join(found[:20]))


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


def scratch_folder():
    """A new folder for one run's files, removed when the test's process ends."""
    folder = tempfile.mkdtemp(prefix="fasthprof-it-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def run_java(home, agent_arg, main="HelloThreads", args=(), env_extra=None, jvm_args=(),
             folder=None, timeout=120, classpath=None):
    """Runs java with the given -agentpath/-agentlib argument (a full argument string, or None)
    in a scratch folder (kept until the test's process ends) and returns a Run."""
    folder = folder or scratch_folder()
    command = java_command(home, "-Xshare:auto")
    if agent_arg:
        command.append(agent_arg)
    command += list(jvm_args) + ["-cp", classpath or TEST_CLASSES, main] + list(args)
    env = dict(os.environ)
    env.pop("_JAVA_HPROF_OPTIONS", None)
    env.pop("JAVA_TOOL_OPTIONS", None)
    if env_extra:
        env.update(env_extra)
    proc = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True,
                          timeout=timeout)
    check_no_warnings(f"{os.path.basename(home)}: java {agent_arg or ''} {main} {' '.join(map(str, args))}",
                      proc.stdout, proc.stderr)
    return Run(proc, folder)


def run_sites_file(label, home, options, main, args=(), jvm_args=(), timeout=240):
    """Runs `main` with the agent's `options` (writing sites.txt) under -Xcheck:jni; returns (the
    file's text, its SITES rows, the run) when it exits normally (printing "<main> done") with no
    WARNING and one whole SITES section, else None."""
    import hprof_records
    run = run_java(home, agentpath(f"{options},file=sites.txt"), main, list(args),
                   jvm_args=["-Xcheck:jni", *jvm_args], timeout=timeout)
    if not check(run.code == 0 and f"{main} done" in run.stdout, f"{label}: exits normally", run):
        return None
    check_no_warnings(label, run.stdout, run.stderr)
    text = run.text("sites.txt")
    sections = hprof_records.text_sites(text)
    if not check(len(sections) == 1 and sections[0][4], f"{label}: one whole SITES section", run):
        return None
    return text, [r for r in sections[0][3] if r], run


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


def site_markers(source):
    """{name: line number} of the `// SITE:name` markers in a Java source file: the lines whose
    allocations a test expects at known sites."""
    lines = {}
    for number, line in enumerate(pathlib.Path(source).read_text().splitlines(), 1):
        found = re.search(r"// SITE:(\w+)", line)
        if found:
            lines[found.group(1)] = number
    return lines


def wait_for(predicate, timeout=30.0, step=0.1):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


def cleanup(folder):
    """Removes a scratch folder (run_java's, or one a test made)."""
    shutil.rmtree(folder, ignore_errors=True)


def javac_sources(folder, files, methods):
    """Writes `files` generated Java sources Gen0..Gen<files-1> into folder, each class with `methods`
    methods that name the next class and build collections (work for javac's attribution and code
    generation), and returns their paths: the program nobody here wrote that several tests compile
    with an agent."""
    sources = []
    for i in range(files):
        path = os.path.join(folder, f"Gen{i}.java")
        other = f"Gen{(i + 1) % files}"
        with open(path, "w") as f:
            f.write(f"import java.util.*;\npublic class Gen{i} {{\n")
            for m in range(methods):
                f.write(f"  public List<Map<String, Integer>> m{m}({other} o, int x) {{\n"
                        f"    List<Map<String, Integer>> r = new ArrayList<>();\n"
                        f"    for (int k = 0; k < x; k++) {{ Map<String, Integer> h = new HashMap<>();"
                        f" h.put(\"k\" + k + o, k * {m}); r.add(h); }}\n"
                        f"    return r.isEmpty() ? Collections.emptyList() : r;\n  }}\n")
            f.write("}\n")
        sources.append(path)
    return sources


def remove_attach_socket(pid):
    """A JVM that was killed (rather than exiting) leaves HotSpot's attach socket /tmp/.java_pid<pid>
    behind (dumper=vm starts the attach listener): removed, once the JVM is reaped, so that a suite
    run leaves nothing in /tmp."""
    path = pathlib.Path("/tmp") / f".java_pid{pid}"
    if path.is_socket():
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def java_process(home, agent_arg, main="HelloThreads", args=(), jvm_args=(), env_extra=None, folder=None,
                 classpath=None, stdin=None, keep_failed=False):
    """Starts java in the background in a scratch folder (or the given one) and yields
    (Popen, folder); its stdout and stderr go to stdout.txt and stderr.txt there. agent_arg is a
    full -agentpath/-agentlib argument or None; jvm_args come before it. On leaving the block, a JVM
    still running is killed, then its output is checked for WARNING lines and the folder (given or
    not) is removed, or with keep_failed kept (and named) when a check failed in the block."""
    folder = pathlib.Path(folder or tempfile.mkdtemp(prefix="fasthprof-it-"))
    command = java_command(home, *jvm_args)
    if agent_arg:
        command.append(agent_arg)
    command += ["-cp", classpath or TEST_CLASSES, main] + [str(a) for a in args]
    env = dict(os.environ)
    env.pop("_JAVA_HPROF_OPTIONS", None)
    env.pop("JAVA_TOOL_OPTIONS", None)
    if env_extra:
        env.update(env_extra)
    with open(folder / "stdout.txt", "w") as out, open(folder / "stderr.txt", "w") as err:
        proc = subprocess.Popen(command, cwd=folder, env=env, stdin=stdin, stdout=out, stderr=err, text=True)
    what = f"{os.path.basename(home)}: " + " ".join(["java", *jvm_args, *([agent_arg] if agent_arg else []), main,
                                                      *map(str, args)])
    failures_before = len(failures)
    try:
        yield proc, folder
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        remove_attach_socket(proc.pid)
        if proc.stdin:
            proc.stdin.close()
        check_no_warnings(what, read_text(folder / "stdout.txt"), read_text(folder / "stderr.txt"))
        if keep_failed and len(failures) > failures_before:
            print(f"kept {folder}", flush=True)
        else:
            shutil.rmtree(folder, ignore_errors=True)


def prlimit_fsize(pid, soft_limit):
    """Sets the file size limit of a live process (a "disk" that fills at soft_limit bytes, or
    "unlimited"). Only the soft limit moves: raising a hard limit again needs CAP_SYS_RESOURCE."""
    subprocess.run(["prlimit", f"--pid={pid}", f"--fsize={soft_limit}:"], check=True, capture_output=True)


def read_text(path):
    """A file's text, or "" while it does not exist."""
    path = pathlib.Path(path)
    return path.read_text(errors="replace") if path.exists() else ""


def terminate(proc, timeout=120):
    """SIGTERM: an orderly shutdown (VM death, the reports at exit). Returns the exit code, or None
    when the JVM had to be killed."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return None


def run_cases(name, cases):
    """Runs the cases named on the command line (tests/meson.build declares one test per case or
    group of cases, so that Meson reports each), or all of them without arguments, then finish().
    cases: {case name: function of no arguments}. A case that calls skip() is left; when every case
    run was, the test exits 77 (Meson's SKIP)."""
    global _in_cases
    wanted = sys.argv[1:] or list(cases)
    unknown = [case for case in wanted if case not in cases]
    if unknown:
        print(f"{name}: unknown case(s) {unknown}; the cases are: {' '.join(cases)}")
        sys.exit(2)
    skipped = 0
    _in_cases = True
    for case in wanted:
        print(f"--- {name} {case}", flush=True)
        try:
            cases[case]()
        except Skipped as reason:
            print(f"SKIP: {case}: {reason}", flush=True)
            skipped += 1
    _in_cases = False
    if skipped == len(wanted) and not failures:
        sys.exit(77)
    finish(" ".join([name, *sys.argv[1:]]))


CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def browser():
    """Headless Debian chromium under chromedriver (tools/install-deps.sh --tests), or skip()."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        # Debian's python3-selenium is installed for the system's python3; a python3 of its own
        # (pyenv, a venv) of the same version reads it from there.
        sys.path.append("/usr/lib/python3/dist-packages")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        skip("python3-selenium is not installed (tools/install-deps.sh --tests)")
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        skip("chromium and chromium-driver are not installed (tools/install-deps.sh --tests)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,900"):
        options.add_argument(argument)
    # A profile folder of the test's own, removed when the test ends: left to itself, Chromium
    # leaves an org.chromium.Chromium.* folder in /tmp per run.
    options.add_argument(f"--user-data-dir={scratch_folder()}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
