"""The installed Debian package as a user meets it (tools/package-test.sh runs this after `dpkg -i`,
from a folder outside the tree, without LD_LIBRARY_PATH): `java -agentlib:hprof=heap=sites` and
`java -Xrunhprof:cpu=samples` on JDK 17 and 25, `fasthprof attach` and `jcmd <pid> JVMTI.agent_load
libhprof.so` into running JVMs, `man fasthprof` and `man fasthprof-agent`, and bash completion of a
verb. Every JVM runs with -Xcheck:jni and a WARNING line fails the test (tests/integration/harness.py).
Environment: JAVA17_HOME, JAVA25_HOME (absent: its cases are skipped, said), FASTHPROF_LIBDIR (where
the package puts the agent)."""
import os
import pathlib
import re
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "integration"))
import harness  # noqa: E402
from harness import check, java_command, java_process, jdks, run_java, scratch_folder, wait_for  # noqa: E402

LIBDIR = pathlib.Path(os.environ.get("FASTHPROF_LIBDIR", "/usr/lib/x86_64-linux-gnu"))
AGENT = LIBDIR / "fasthprof" / "libfasthprof.so"
# What JDK 21+ prints when an agent is loaded into a running JVM, for each name it is loaded by.
LOADED_LINES = tuple(f"WARNING: A JVM TI agent has been loaded dynamically ({name})"
                     for name in (AGENT, "libhprof.so", LIBDIR / "libhprof.so"))
harness.ATTACH_WARNINGS = LOADED_LINES + harness.ATTACH_WARNINGS[1:]

# Allocates and computes until `seconds` have passed or the file `stop` exists.
PROGRAM = """
import java.nio.file.*;
public class Busy {
  static Object keep;
  public static void main(String[] args) throws Exception {
    long end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000_000L;
    Path stop = Paths.get(args.length > 1 ? args[1] : "stop");
    System.out.println("started");
    long sum = 0;
    while (System.nanoTime() < end && !Files.exists(stop)) {
      for (int i = 0; i < 10000; i++) { keep = new int[16]; sum += i * 31L; }
      Thread.sleep(1);
    }
    System.out.println("done " + (sum > 0));
  }
}
"""


def compile_program():
    folder = scratch_folder()
    source = pathlib.Path(folder) / "Busy.java"
    source.write_text(PROGRAM)
    home = os.environ["JAVA17_HOME"]
    result = subprocess.run(java_command(home, "--release", "17", "-d", folder, str(source), tool="javac"),
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"installed_package: javac failed:\n{result.stderr}")
    harness.check_no_warnings("javac Busy.java", result.stdout, result.stderr)
    return folder


def by_name(label, home, classes):
    run = run_java(home, "-agentlib:hprof=heap=sites", main="Busy", args=["1"], classpath=classes)
    check(run.code == 0 and "SITES BEGIN" in run.text("java.hprof.txt"),
          f"{label}: java -agentlib:hprof=heap=sites writes SITES to java.hprof.txt", run)
    run = run_java(home, "-Xrunhprof:cpu=samples", main="Busy", args=["2"], classpath=classes)
    check(run.code == 0 and "CPU SAMPLES BEGIN" in run.text("java.hprof.txt"),
          f"{label}: java -Xrunhprof:cpu=samples writes CPU SAMPLES to java.hprof.txt", run)


def started(folder):
    return wait_for(lambda: "started" in harness.read_text(folder / "stdout.txt"), timeout=60)


def attached(label, home, classes):
    """`fasthprof attach` with the agent it finds beside itself, and --duration's reports."""
    with java_process(home, None, main="Busy", args=["120"], classpath=classes) as (proc, folder):
        check(started(folder), f"{label}: the program starts")
        output = folder / "attach.txt"
        result = subprocess.run(["fasthprof", "attach", "--duration", "1", str(proc.pid),
                                 f"heap=sites,file={output}"], capture_output=True, text=True, timeout=120,
                                env={k: v for k, v in os.environ.items() if k != "FASTHPROF_AGENT"})
        check(result.returncode == 0 and "SITES BEGIN" in harness.read_text(output),
              f"{label}: fasthprof attach --duration 1 loads {AGENT} and the reports come\n"
              f"{result.stdout}{result.stderr}")
        (folder / "stop").touch()
        check(proc.wait(timeout=60) == 0, f"{label}: the program ends after the attach")


def jcmd_loads(label, home, classes):
    """jcmd's JVMTI.agent_load by the link's file name alone: the JVM dlopen()s it as given, so the
    dynamic linker's search finds libhprof.so (`hprof`, as -agentlib takes it, is not found)."""
    with java_process(home, None, main="Busy", args=["120"], classpath=classes) as (proc, folder):
        check(started(folder), f"{label}: the program starts")
        output = folder / "jcmd.txt"
        command = java_command(home, str(proc.pid), "JVMTI.agent_load", "libhprof.so", f'"heap=sites,file={output}"',
                               tool="jcmd")
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        harness.check_no_warnings(f"{label}: jcmd", result.stdout, result.stderr)
        check("return code: 0" in result.stdout, f"{label}: jcmd JVMTI.agent_load libhprof.so loads the agent\n"
              f"{result.stdout}{result.stderr}")
        (folder / "stop").touch()
        check(proc.wait(timeout=60) == 0 and "SITES BEGIN" in harness.read_text(output),
              f"{label}: the agent loaded by jcmd writes SITES at exit")


def man(*page):
    """`man page` as plain text (without the overstrikes of bold that man-db keeps for a pipe): the
    page man finds (`man -w`), formatted from the file itself (`-l`), not from man-db's cache of
    formatted pages, which keeps an earlier install's page when the package's files carry an older
    date (they have the changelog's) than the cached one."""
    where = subprocess.run(["man", "-w", *page], capture_output=True, text=True)
    if where.returncode != 0:
        return where
    result = subprocess.run(["man", "-P", "cat", "-l", where.stdout.split()[0]], capture_output=True, text=True,
                            env=dict(os.environ, MANWIDTH="80"))
    result.stdout = re.sub(".\b", "", result.stdout)
    return result


def manual_pages():
    verbs = re.findall(r"^  (\S+) ", subprocess.run(["fasthprof", "help"], capture_output=True, text=True).stdout,
                       re.M)
    page = man("fasthprof")
    check(page.returncode == 0 and "VERBS" in page.stdout, f"man fasthprof works\n{page.stderr}")
    for verb in verbs:
        check(f"fasthprof {verb}" in page.stdout, f"man fasthprof describes the verb {verb}")
    agent = man("7", "fasthprof-agent")
    check(agent.returncode == 0 and "heap=dump|sites|all" in agent.stdout and "-agentlib:hprof" in agent.stdout,
          f"man 7 fasthprof-agent lists the agent's options\n{agent.stderr}")
    return verbs


def complete(words):
    """What bash completion offers for the last word of `words`, loaded as an interactive shell
    loads it (bash-completion's loader finds /usr/share/bash-completion/completions/fasthprof)."""
    script = ("source /usr/share/bash-completion/bash_completion; "
              "_completion_loader fasthprof; "
              f"COMP_WORDS=({' '.join(words)}); COMP_CWORD={len(words) - 1}; "
              "_fasthprof; printf '%s\\n' \"${COMPREPLY[@]}\"")
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    return result.stdout.split()


def completion(verbs):
    check(complete(["fasthprof", "ver"]) == ["verify"], "bash completes `fasthprof ver` to verify")
    offered = [word for word in complete(["fasthprof", "''"]) if not word.startswith("-") and word != "help"]
    check(sorted(offered) == sorted(verbs), f"bash completion offers the verbs of `fasthprof help`: {offered}")
    check("--duration" in complete(["fasthprof", "attach", "--d"]), "bash completes attach's --duration")


def main():
    check("LD_LIBRARY_PATH" not in os.environ, "runs without LD_LIBRARY_PATH")
    check(not pathlib.Path.cwd().joinpath("meson.build").exists(), "runs outside the source tree")
    classes = compile_program()
    for label, home in jdks():
        print(f"--- {label}: -agentlib:hprof, -Xrunhprof, fasthprof attach, jcmd JVMTI.agent_load", flush=True)
        by_name(label, home, classes)
        attached(label, home, classes)
        jcmd_loads(label, home, classes)
    print("--- man fasthprof, man fasthprof-agent, bash completion", flush=True)
    verbs = manual_pages()
    completion(verbs)
    harness.finish("installed_package")


if __name__ == "__main__":
    main()
