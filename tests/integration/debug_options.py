"""The original's debug options that still mean something: pause=y waits for a debugger with the
original's message, logflags=4 verifies the binary file at exit; and fasthprof's cpustacks=, whose
figures line verbose=y prints."""
import re
import time

from harness import agentpath, check, finish, java_process, jdks, run_java, wait_for

for label, home in jdks():
    run = run_java(home, agentpath("format=b,heap=sites,logflags=4,verbose=y"))
    check(run.code == 0 and re.search(r"fasthprof: verified .*java\.hprof: \d+ records", run.stderr),
          f"{label}: logflags=4 verifies the file at exit", run)
    run = run_java(home, agentpath("format=b,heap=sites,logflags=4,verbose=n"))
    check(run.code == 0 and "verified" not in run.stderr and "HPROF ERROR" not in run.stderr,
          f"{label}: logflags=4 with verbose=n is silent when the file is good", run)

    # cpustacks= picks the CPU sampler's stack path; its figures line comes with verbose=y only.
    run = run_java(home, agentpath("cpu=samples,cpustacks=deferred,verbose=y,file=cpu.txt"))
    check(run.code == 0 and "fasthprof cpu sampler: mode=deferred rounds=" in run.stderr,
          f"{label}: cpustacks=deferred with verbose=y prints the sampler's figures", run)
    run = run_java(home, agentpath("cpu=samples,cpustacks=deferred,file=cpu.txt"))
    check(run.code == 0 and "fasthprof cpu sampler:" not in run.stderr,
          f"{label}: without verbose=y written out the sampler prints no figures", run)

    with java_process(home, agentpath("pause=y"), "HelloThreads") as (proc, folder):
        stderr = folder / "stderr.txt"
        check(wait_for(lambda: f"HPROF pause for PID {proc.pid}" in stderr.read_text(), 20),
              f"{label}: pause=y prints the original's message")
        time.sleep(1)
        check(proc.poll() is None and "Hello" not in (folder / "stdout.txt").read_text(),
              f"{label}: pause=y holds the VM before main")

finish("debug_options")
