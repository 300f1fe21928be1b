"""The ways to load the agent: -agentpath, -agentlib:hprof and -Xrunhprof through libhprof.so on
LD_LIBRARY_PATH, a second load refused with the original's message, and attaching to a live VM
with jcmd, where nothing ever exits the target."""
import os
import signal
import subprocess
import time

from harness import (AGENT, AGENT_DIR, agentpath, check, finish, java_bin, java_process, jdks, run_java,
                     verify_binary, wait_for)

TWICE = ("HPROF ERROR: Cannot load this JVM TI agent twice, check your java command line for "
         "duplicate hprof options.")

for label, home in jdks():
    run = run_java(home, agentpath("file=out.txt"))
    check(run.code == 0 and "Hello, threads!" in run.stdout, f"{label}: -agentpath loads", run)
    check(run.file("out.txt").exists(), f"{label}: -agentpath writes file=", run)

    library_path = {"LD_LIBRARY_PATH": AGENT_DIR}
    run = run_java(home, "-agentlib:hprof=file=lib.txt", env_extra=library_path)
    check(run.code == 0 and run.file("lib.txt").exists(), f"{label}: -agentlib:hprof finds libhprof.so", run)
    check(run.text("lib.txt").startswith("JAVA PROFILE 1.0.1, created "),
          f"{label}: -agentlib:hprof is fasthprof", run)
    run = run_java(home, "-Xrunhprof:format=b", env_extra=library_path)
    check(run.code == 0 and run.file("java.hprof").exists(), f"{label}: -Xrunhprof works", run)

    run = run_java(home, agentpath("file=a.txt"), jvm_args=[agentpath("file=b.txt")])
    check(run.code == 9, f"{label}: a second load exits 9 as the original", run)
    check(TWICE in run.stderr.splitlines(), f"{label}: a second load prints the original's message", run)
    run = run_java(home, "-agentlib:hprof=file=a.txt", env_extra=library_path,
                   jvm_args=[agentpath("file=b.txt")])
    check(run.code == 9 and TWICE in run.stderr, f"{label}: -agentlib:hprof plus -agentpath is a second load", run)

    # Attach: a live VM gets the agent through jcmd; errors fail the attach, never the VM.
    with java_process(home, None, "HelloThreads", ["2", "60000"]) as (proc, folder):
        jcmd = java_bin(home, "jcmd")
        wait_for(lambda: (folder / "stdout.txt").read_text().find("Hello, threads!") >= 0, 30)

        def attach(options):
            # jcmd splits unquoted key=value arguments itself; quotes keep the option string whole.
            return subprocess.run([jcmd, str(proc.pid), "JVMTI.agent_load", AGENT, f'"{options}"'],
                                  capture_output=True, text=True, timeout=60)

        bad = attach("bogus=1")
        stderr_text = (folder / "stderr.txt").read_text()
        check("hprof option error: Unknown option: bogus (bogus=1)" in stderr_text,
              f"{label}: attach with a bad option prints the option error in the target\n{bad.stdout}")
        check(proc.poll() is None, f"{label}: attach with a bad option leaves the target running")
        deep = attach(f"heap=sites,depth=2147483647,file={folder}/deep.txt")
        stderr_text = (folder / "stderr.txt").read_text()
        check("hprof option error: depth option value must be <= 65535" in stderr_text,
              f"{label}: attach with an absurd depth prints the option error in the target\n{deep.stdout}")
        check(proc.poll() is None, f"{label}: attach with an absurd depth leaves the target running")
        check("return code: 0" not in deep.stdout, f"{label}: attach with an absurd depth fails\n{deep.stdout}")
        good = attach(f"file={folder}/attached.txt")
        check(proc.poll() is None, f"{label}: a good attach leaves the target running")
        check(wait_for(lambda: (folder / "attached.txt").exists(), 10),
              f"{label}: attach creates the output file\n{good.stdout}{good.stderr}")
        again = attach(f"file={folder}/again.txt")
        stderr_text = (folder / "stderr.txt").read_text()
        check(TWICE in stderr_text, f"{label}: a second attach prints the original's message\n{again.stdout}")
        check(proc.poll() is None, f"{label}: a second attach leaves the target running")
        help_attach = attach("help")
        check(proc.poll() is None, f"{label}: help under attach leaves the target running")
        # The attached agent writes its header and the threads that were already running.
        proc.terminate()
        proc.wait(timeout=30)
        text = (folder / "attached.txt").read_text()
        check(text.startswith("JAVA PROFILE 1.0.1, created "), f"{label}: attached agent wrote the header")
        check('name="main"' in text, f"{label}: attached agent recorded threads that already existed")

    # Attach with every feature that works under attach, a dump on request and one at exit:
    # the binary file must verify (traces of sites interned while the dump waited come first).
    with java_process(home, None, "HelloThreads", ["2", "60000"]) as (proc, folder):
        wait_for(lambda: "Hello, threads!" in (folder / "stdout.txt").read_text(), 30)
        result = subprocess.run([java_bin(home, "jcmd"), str(proc.pid), "JVMTI.agent_load", AGENT,
                                 f'"heap=all,cpu=samples,format=b,file={folder}/all.hprof"'],
                                capture_output=True, text=True, timeout=60)
        check("return code: 0" in result.stdout, f"{label}: attach with heap=all,cpu=samples\n{result.stdout}")
        time.sleep(1)
        os.kill(proc.pid, signal.SIGQUIT)
        stderr = folder / "stderr.txt"
        check(wait_for(lambda: "done." in stderr.read_text(), 60), f"{label}: a dump on request after attach")
        proc.terminate()
        proc.wait(timeout=60)
        check(stderr.read_text().count("done.") == 2, f"{label}: and one at exit:\n{stderr.read_text()}")
        ok, output = verify_binary(folder / "all.hprof")
        check(ok and "heap dumps: 2" in output, f"{label}: the attached agent's file verifies:\n{output[-2000:]}")

finish("agent_load")
