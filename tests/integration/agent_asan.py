"""The agent built with -fsanitize=address,undefined (-Db_sanitize=address,undefined), inside a real
JVM: java runs with the sanitizer runtime preloaded (LIBASAN, found by tests/meson.build) and options
that leave HotSpot's own signal handling and memory alone. Every run must end normally with no
sanitizer report. Registered only in a sanitizer build (suite asan-jvm, which tools/test.sh runs there)."""
import os
import signal
import time

from harness import agentpath, check, cleanup, finish, java_process, jdks, run_java, verify_binary, wait_for

LIBASAN = os.environ["LIBASAN"]
# HotSpot uses SIGSEGV, SIGBUS and SIGFPE itself (implicit null checks, safepoint polls); the JVM
# keeps memory the sanitizer cannot see as leaked; its stacks and guard pages make the
# use-after-return and stack checks misfire.
ASAN_OPTIONS = ":".join([
    "handle_segv=0", "handle_sigbus=0", "handle_sigfpe=0", "handle_sigill=0", "allow_user_segv_handler=1",
    "detect_leaks=0", "detect_stack_use_after_return=0", "use_sigaltstack=0", "abort_on_error=1",
    "halt_on_error=1", "print_stacktrace=1", "log_path=asan"])
ENV = {"LD_PRELOAD": LIBASAN, "ASAN_OPTIONS": ASAN_OPTIONS,
       "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:log_path=ubsan"}
REPORTS = ("AddressSanitizer", "runtime error:", "LeakSanitizer", "terminate called", "# A fatal error")


def sanitizer_logs(folder):
    found = []
    for path in folder.iterdir():
        if path.name.startswith(("asan.", "ubsan.", "hs_err")):
            found.append(f"--- {path.name}\n{path.read_text(errors='replace')[-4000:]}")
    return found


def clean(label, run, codes=(0,)):
    logs = sanitizer_logs(run.folder)
    output = run.stdout + run.stderr
    return check(run.code in codes and not logs and not any(r in output for r in REPORTS),
                 f"{label}: exit {run.code} (expected {codes}), no sanitizer report\n" + "\n".join(logs), run)


def runs(jdk, home):
    t0 = time.time()
    run = run_java(home, agentpath("heap=all,format=b,file=all.hprof,cpu=samples,thread=y"), "HeapShapes",
                   env_extra=ENV, timeout=600)
    if clean(f"{jdk} heap=all format=b", run):
        ok, output = verify_binary(run.file("all.hprof"))
        check(ok, f"{jdk} heap=all format=b: the dump verifies:\n{output}")
    cleanup(run.folder)

    run = run_java(home, agentpath("heap=dump,format=a,file=dump.txt"), "HeapShapes", env_extra=ENV, timeout=600)
    if clean(f"{jdk} heap=dump format=a", run):
        check("HEAP DUMP END" in run.text("dump.txt"), f"{jdk} heap=dump format=a: the dump is complete")
    cleanup(run.folder)

    run = run_java(home, agentpath("heap=sites,depth=8,file=sites.txt"), "AllocSites", ["threads"],
                   env_extra=ENV, timeout=600)
    if clean(f"{jdk} heap=sites threads", run):
        check("SITES END" in run.text("sites.txt"), f"{jdk} heap=sites threads: SITES written")
    cleanup(run.folder)

    # alloc=inject at depth 4: the frame walk's native reads the allocating threads' own frames.
    run = run_java(home, agentpath("heap=sites,live=n,alloc=inject,depth=4,file=inject.txt"), "AllocSites", ["threads"],
                   env_extra=ENV, timeout=600)
    if clean(f"{jdk} alloc=inject depth=4 threads", run):
        check("SITES END" in run.text("inject.txt"), f"{jdk} alloc=inject depth=4 threads: SITES written")
    cleanup(run.folder)

    run = run_java(home, agentpath("heap=sites,depth=100000000"), "HelloThreads", env_extra=ENV, timeout=600)
    clean(f"{jdk} absurd depth", run, codes=(0, 1))
    cleanup(run.folder)

    run = run_java(home, agentpath("heap=dump,nonsense=1"), "HelloThreads", env_extra=ENV, timeout=600)
    clean(f"{jdk} option error", run, codes=(1,))
    cleanup(run.folder)

    # Reports on kill -QUIT while threads start, end and allocate.
    label = f"{jdk} kill -QUIT"
    with java_process(home, agentpath("heap=sites,cpu=samples,format=b,file=quit.hprof"), "Chaos",
                      ["10", "7"], env_extra=ENV) as (proc, folder):
        if check(wait_for(lambda: "ready" in (folder / "stdout.txt").read_text(), 120), f"{label}: ready"):
            for _ in range(4):
                time.sleep(1.5)
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGQUIT)
        code = proc.wait(timeout=600)
        logs = sanitizer_logs(folder)
        err = (folder / "stderr.txt").read_text(errors="replace")
        check(code == 0 and not logs and not any(r in err for r in REPORTS),
              f"{label}: exit {code}, no sanitizer report\n{err[-3000:]}\n" + "\n".join(logs))
        ok, output = verify_binary(folder / "quit.hprof")
        check(ok, f"{label}: the file verifies:\n{output}")
    print(f"{jdk}: agent under AddressSanitizer: {time.time() - t0:.0f} s", flush=True)


for jdk, home in jdks():
    runs(jdk, home)
finish("agent_asan")
