"""Every feature together on the concurrent collectors, exit report included: HotSpot stops ZGC's
and Shenandoah's threads before it posts VMDeath, so nothing at exit may wait for a collection
(it hung here once). Each run must end, and its file must verify."""
import subprocess

from harness import agentpath, check, finish, java_command, jdks, run_java, verify_binary

for label, home in jdks():
    for collector in ("-XX:+UseZGC", "-XX:+UseShenandoahGC", "-XX:+UseSerialGC"):
        probe = subprocess.run(java_command(home, collector, "-version"), capture_output=True, text=True)
        if probe.returncode != 0:
            print(f"SKIP: {label} has no {collector}")
            continue
        name = f"{label} {collector}"
        try:
            run = run_java(home, agentpath("heap=all,cpu=samples,format=b,file=all.hprof"), main="HeapShapes",
                           args=["2", "4"], jvm_args=[collector], timeout=180)
        except subprocess.TimeoutExpired:
            check(False, f"{name}: the program with the agent ends within 180 s")
            continue
        check(run.code == 0 and "done." in run.stderr, f"{name}: ends normally with its exit report", run)
        ok, output = verify_binary(run.file("all.hprof"))
        check(ok, f"{name}: the file verifies:\n{output[-1500:]}", run)

finish("collectors")
