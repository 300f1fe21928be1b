"""Random and mutated option strings through the agent's real load path: `java -agentpath:...=<opts>
-version` (sometimes with _JAVA_HPROF_OPTIONS too, and -Xcheck:jni) on every JDK. An option string may be refused
(exit 1) or run (exit 0); anything else is a failure: another exit code, a signal, an hs_err file,
`terminate called`, a HotSpot fatal error banner, or a hang: every run has RUN_SECONDS, and runs
start only while they can end within the time cap. One string in ten is cpu=times with a large
depth (and other options), run on a program that makes deep and many traces (CpuTimes recursion)
in a 256 MB heap, where a tracker that retried a failed allocation on every call never ended.

The strings are seeded and reproducible: the seed is printed, and FASTHPROF_FUZZ_SEED=<seed>
replays it (FASTHPROF_OPTION_RUNS sets how many strings, FASTHPROF_OPTION_SECONDS the time cap).
Outputs stay in a scratch folder per run: every '/' becomes '_', net= only ever names a loopback
address, and pause=y (which waits for a debugger) is never generated."""
import os
import random
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from harness import AGENT, TEST_CLASSES, check, finish, java_command, jdks, warning_lines

NAMES = ["heap", "cpu", "monitor", "format", "file", "net", "depth", "interval", "cutoff", "lineno",
         "thread", "doe", "msa", "force", "verbose", "gc_okay", "primfields", "primarrays", "debugflags",
         "logflags", "coredump", "errorexit", "debug", "X", "exitpause", "precrash", "sample", "gz", "cpustacks", "help"]
VALUES = {
    "heap": ["dump", "sites", "all", "", "x"],
    "cpu": ["samples", "times", "old", "y", "n", ""],
    "format": ["a", "b", "c", ""],
    "file": ["out.txt", "x", "", "a b", "dir_out", "." , ".."],
    "net": ["127.0.0.1:1", "localhost:9", "[::1]:7", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",
            "[::1", "127.0.0.1", ":80"],
    "depth": ["0", "1", "4", "100", "1024", "65535", "65536", "-1", "2147483647", "2147483648", "99999999999999999999",
              "0x10", "4k"],
    "interval": ["0", "1", "10", "-5", "2147483647", "1e9"],
    "cutoff": ["0", "0.5", "1", "-0.1", "1e308", "nan", "inf", "0.0001x"],
    "sample": ["0", "1", "512k", "1m", "1g", "99999999999g", "-1", "k"],
    "logflags": ["0", "4", "0xC", "0xffffffff", "z"],
    "debugflags": ["0", "1", "-1"],
    "X": ["0", "010", "0x7fffffff"],
    "cpustacks": ["signal", "deferred", "", "x", "Signal"],
}
SWITCH = ["y", "n", "", "yes", "Y", "1"]
# Values each option accepts, so that about half the strings get past the parser and run.
VALID = {
    "heap": ["dump", "sites", "all"], "cpu": ["samples", "times", "old", "y"], "format": ["a", "b"],
    "file": ["out.txt", "out.hprof"], "depth": ["0", "1", "4", "64", "1024", "65535", "2147483647"], "interval": ["1", "10", "100"],
    "cutoff": ["0", "0.001", "0.5"], "sample": ["0", "1k", "512k"], "logflags": ["0", "4"],
    "debugflags": ["0"], "X": ["0"], "gz": ["n"], "cpustacks": ["signal", "deferred"],
}
VALID_NAMES = ["heap", "cpu", "monitor", "format", "file", "depth", "interval", "cutoff", "lineno", "thread",
               "doe", "msa", "force", "verbose", "gc_okay", "primfields", "primarrays", "logflags", "sample", "gz", "cpustacks"]
ODD = [",", "=", ",,", "==", "=,", "\t", " ", "%", "\\", "\"", "'", "é", "\x7f", ":", "[", "]"]

# A JVM run longer than this is a hang (a run takes 1-5 s on the loaded 2-core machine).
RUN_SECONDS = 20
DEEP_PROGRAM = ["-Xmx256m", "-cp", TEST_CLASSES, "CpuTimes", "recursion"]

FAILURE_TEXT = [("terminate called", "a C++ exception left the agent"),
                ("#  SIGSEGV", "segmentation fault"), ("#  SIGBUS", "bus error"), ("#  SIGILL", "illegal instruction"),
                ("#  SIGFPE", "arithmetic fault"), ("# A fatal error has been detected", "HotSpot fatal error"),
                ("AddressSanitizer", "AddressSanitizer report"), ("runtime error:", "UndefinedBehaviorSanitizer report")]


def one_option(rng):
    name = rng.choice(NAMES)
    if name == "help":
        return "help"
    if rng.random() < 0.08:
        return name
    values = VALUES.get(name, SWITCH)
    return f"{name}={rng.choice(values)}"


def generated(rng):
    return ",".join(one_option(rng) for _ in range(rng.randint(1, 6)))


def plausible(rng):
    """Options that each parse on their own (the cross-checks may still refuse the set)."""
    names = rng.sample(VALID_NAMES, rng.randint(1, 5))
    return ",".join(f"{name}={rng.choice(VALID.get(name, ['y', 'n']))}" for name in names)


def mutated(rng, text):
    chars = list(text)
    for _ in range(rng.randint(1, 5)):
        kind = rng.randrange(6)
        at = rng.randrange(len(chars) + 1)
        if kind == 0 and chars:
            del chars[min(at, len(chars) - 1)]
        elif kind == 1:
            chars[at:at] = list(rng.choice(ODD))
        elif kind == 2:
            chars[at:at] = [chr(rng.randrange(1, 256))]
        elif kind == 3 and chars:
            start = rng.randrange(len(chars))
            piece = chars[start:start + rng.randint(1, 12)]
            chars[at:at] = piece * rng.randint(1, 3)
        elif kind == 4:
            chars[at:at] = list(one_option(rng) + ",")
        elif kind == 5:
            chars[at:at] = list("9" * rng.randint(10, 400))
    return "".join(chars)


def confined(text):
    """The same string, made safe to run: outputs stay in the scratch folder, net= stays on the
    loopback, nothing waits for a debugger."""
    text = text.replace("/", "_").replace("\x00", "")
    text = re.sub(r"pause", "pauze", text)

    def loopback(match):
        value = match.group(1)
        port = value.rsplit(":", 1)[-1] if ":" in value else value
        return f"net=127.0.0.1:{port}"
    return re.sub(r"net=([^,]*)", loopback, text)


DEEP_EXTRAS = ["heap=sites", "thread=y", "cutoff=0", "lineno=n", "doe=n", "verbose=y", "file=out.txt", "monitor=y"]


def deep_times(rng):
    """cpu=times with a large depth, and up to three other options that go with it."""
    extras = rng.sample(DEEP_EXTRAS, rng.randint(0, 3))
    return ",".join([f"cpu=times,depth={rng.choice(['512', '1024', '4096', '65535'])}"] + extras)


def strings(seed, count):
    """[(option string, _JAVA_HPROF_OPTIONS or None, program or None for -version)]."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        if rng.random() < 0.1:
            out.append((confined(deep_times(rng)), None, DEEP_PROGRAM))
            continue
        if rng.random() < 0.5:
            text = plausible(rng)
        else:
            base = generated(rng)
            text = base if rng.random() < 0.3 else mutated(rng, base)
        env = None
        if rng.random() < 0.15:
            env = confined(mutated(rng, generated(rng)) if rng.random() < 0.5 else generated(rng))
        out.append((confined(text), env, None))
    return out


def run_one(home, options, env_value, program):
    folder = tempfile.mkdtemp(prefix="fasthprof-opts-")
    env = dict(os.environ)
    env.pop("JAVA_TOOL_OPTIONS", None)
    env.pop("_JAVA_HPROF_OPTIONS", None)
    if env_value is not None:
        env["_JAVA_HPROF_OPTIONS"] = env_value
    command = java_command(home, "-Xshare:auto", "-XX:TieredStopAtLevel=1", f"-agentpath:{AGENT}={options}",
                           *(program or ["-version"]))
    try:
        try:
            proc = subprocess.run(command, cwd=folder, env=env, capture_output=True, timeout=RUN_SECONDS,
                                  stdin=subprocess.DEVNULL)
            code, output = proc.returncode, (proc.stdout + proc.stderr).decode(errors="replace")
        except subprocess.TimeoutExpired as timeout:
            code, output = "timeout", ((timeout.stdout or b"") + (timeout.stderr or b"")).decode(errors="replace")
        problems = []
        if code == "timeout":
            problems.append(f"no exit within {RUN_SECONDS} s")
        elif code < 0:
            problems.append(f"killed by signal {-code}")
        elif code not in (0, 1):
            problems.append(f"exit code {code}")
        problems += [why for text, why in FAILURE_TEXT if text in output]
        problems += [f"a WARNING line: {line}" for line in warning_lines(output)[:1]]
        problems += [f"{name} written" for name in os.listdir(folder) if name.startswith(("hs_err", "core"))]
        return problems, code, output
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main():
    seed = int(os.environ.get("FASTHPROF_FUZZ_SEED") or random.SystemRandom().randrange(1 << 32))
    runs = int(os.environ.get("FASTHPROF_OPTION_RUNS", "300"))
    seconds = float(os.environ.get("FASTHPROF_OPTION_SECONDS", "75"))
    print(f"option strings: seed {seed} (FASTHPROF_FUZZ_SEED={seed} replays it), {runs} strings per JDK, "
          f"at most {seconds:.0f} s", flush=True)
    cases = strings(seed, runs)
    homes = jdks()
    # Both JDKs take turns over one list, so that a time cap leaves each with its share.
    work = [(label, home, index) for index in range(len(cases)) for label, home in homes]
    # The last runs start RUN_SECONDS before the cap, so that a hang among them ends within it too.
    deadline = time.time() + max(seconds - RUN_SECONDS, 1)
    exits = {}
    done = 0

    def task(item):
        label, home, index = item
        if time.time() > deadline:
            return None
        options, env_value, program = cases[index]
        return item, run_one(home, options, env_value, program)

    with ThreadPoolExecutor(max_workers=2) as pool:
        for result in pool.map(task, work):
            if result is None:
                continue
            (label, _, index), (problems, code, output) = result
            done += 1
            exits[code] = exits.get(code, 0) + 1
            options, env_value, program = cases[index]
            env_note = f" with _JAVA_HPROF_OPTIONS={env_value!r}" if env_value is not None else ""
            env_note += f" on {' '.join(program[-2:])}" if program else ""
            tail = "\n".join(output.splitlines()[-15:])
            check(not problems, f"{label} string #{index} (seed {seed}): {options!r}{env_note}: "
                                f"{', '.join(problems)}\n{tail}")
    print(f"option strings: {done} runs of {len(work)} in the time cap; exit codes {exits}")
    check(done >= min(len(work), 40), f"at least 40 runs in the time cap (ran {done})")
    finish("option_strings")


if __name__ == "__main__":
    main()
