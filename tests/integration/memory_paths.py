"""jemalloc where the process allows it, the system allocator otherwise, said under verbose=y:
plain java, java with LD_PRELOAD of jemalloc, and java with the glibc tunable that leaves static
TLS room for opening it."""
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

finish("memory_paths")
