"""jemalloc where the process allows it, the system allocator otherwise, said when verbose=y is
written out: plain java, java with LD_PRELOAD of jemalloc, and java with the glibc tunable that
leaves static TLS room for opening it. The default (verbose=y implied) prints only the original's
dump messages: a user's logs see every line the agent prints."""
from harness import agentpath, check, finish, jdks, run_java

for label, home in jdks():
    run = run_java(home, agentpath("verbose=y,heap=sites"))
    check(run.code == 0 and "fasthprof: memory: system allocator (jemalloc not usable:" in run.stderr,
          f"{label}: plain java falls back to the system allocator and says why", run)
    run = run_java(home, agentpath("verbose=y,heap=sites"), env_extra={"LD_PRELOAD": "libjemalloc.so.2"})
    check(run.code == 0 and "(already in the process)" in run.stderr and "Hello, threads!" in run.stdout,
          f"{label}: with LD_PRELOAD the agent shares the preloaded jemalloc", run)
    run = run_java(home, agentpath("verbose=y,heap=sites"),
                   env_extra={"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=8192"})
    check(run.code == 0 and "(opened at start-up)" in run.stderr and "Hello, threads!" in run.stdout,
          f"{label}: with static TLS room the agent opens jemalloc itself", run)
    run = run_java(home, agentpath("verbose=n,heap=sites"))
    check("fasthprof: memory:" not in run.stderr, f"{label}: verbose=n says nothing about memory", run)
    for options in ("heap=sites", "heap=all", "cpu=samples", "heap=dump,format=b"):
        run = run_java(home, agentpath(options))
        own = [line for line in run.stderr.splitlines() if line.startswith("fasthprof:")]
        check(run.code == 0 and not own and "Dumping " in run.stderr,
              f"{label} {options}: the default run prints the dump line and nothing of its own ({own})", run)

finish("memory_paths")
