"""help, option errors, _JAVA_HPROF_OPTIONS and the warnings for features not built yet, each
checked with a real `java` on every JDK under test."""
import os

from harness import agentpath, check, finish, jdks, run_java

BAD_OPTIONS = {
    # option string -> the <what> part of the message
    "foo=1": "Unknown option: foo",
    "heap=lots": "heap option value must be dump|sites|all",
    "cpu=": "syntax error parsing cpu=y|samples|times|old",
    "format=x": "format option value must be a|b",
    "depth=-1": "depth option value must be decimal and >= 0",
    # Beyond what a binary file can record; these used to end in std::bad_alloc and exit 134.
    "heap=sites,depth=2147483647": "depth option value must be <= 65535",
    "cpu=samples,depth=30000000": "depth option value must be <= 65535",
    "heap=all,format=b,depth=65536": "depth option value must be <= 65535",
    "interval=0": "interval option value must be decimal and > 0",
    "cutoff=abc": "cutoff option value must be floating point and >= 0",
    "lineno=maybe": "lineno option value must be y|n",
    "file=a.txt,file=b.txt": "file or net options should only appear once",
    "net=localhost": "net option missing port",
    "net=:8000": "net option missing ':'",
    "net=localhost:0": "invalid port number",
    "format=b,cpu=times": "cpu=times|old is not supported with format=b",
    "format=b,monitor=y": "monitor=y is not supported with format=b",
    "help,heap=sites": "Unknown option: help,heap",
    ",heap=sites": "Unknown option: ,heap",
    "averyveryverylongoptionname=1": "general syntax error parsing options",
    "exitpause=y": "The exitpause option was removed, use -XX:OnError='cmd %%p'",
    "cpu=samples,cpustacks=fast": "cpustacks option value must be signal|deferred",
}

for label, home in jdks():
    run = run_java(home, agentpath("help"))
    check(run.code == 0, f"{label}: help exits 0", run)
    check("hprof usage: java -agentlib:hprof=[help]|[<option>=<value>, ...]" in run.stdout,
          f"{label}: help prints the usage line on stdout", run)
    check("heap=dump|sites|all    heap profiling                 all" in run.stdout,
          f"{label}: help keeps the original's option table", run)
    check("fasthprof options" in run.stdout.lower() and "sample=<bytes>" in run.stdout and
          "cpustacks=<how>" in run.stdout,
          f"{label}: help lists fasthprof's own options in their own block", run)
    check("Hello, threads!" not in run.stdout, f"{label}: help stops before main runs", run)
    check(run.stderr.strip() == "",
          f"{label}: help writes nothing else on stderr", run)

    for options, what in BAD_OPTIONS.items():
        run = run_java(home, agentpath(options))
        expected = f"HPROF ERROR: hprof option error: {what} ({options})"
        check(run.code == 1, f"{label}: {options!r} exits 1", run)
        check(expected in run.stderr.splitlines(), f"{label}: {options!r} prints {expected!r}", run)
        check("[" not in run.stderr.split("hprof option error:")[-1].split(")")[-1],
              f"{label}: {options!r} has no [file:line] suffix", run)
        check("Hello, threads!" not in run.stdout, f"{label}: {options!r} stops the VM", run)

    # _JAVA_HPROF_OPTIONS is appended after a comma and echoed with the command line's options.
    run = run_java(home, agentpath("heap=dump"), env_extra={"_JAVA_HPROF_OPTIONS": "bogus=1"})
    check(run.code == 1 and "hprof option error: Unknown option: bogus (heap=dump,bogus=1)" in run.stderr,
          f"{label}: _JAVA_HPROF_OPTIONS is appended", run)
    run = run_java(home, agentpath(), env_extra={"_JAVA_HPROF_OPTIONS": "format=q"})
    check(run.code == 1 and "(format=q)" in run.stderr,
          f"{label}: _JAVA_HPROF_OPTIONS alone is used without a comma", run)

    # Every feature is built: no "not implemented yet" line for the last two that were pending.
    run = run_java(home, agentpath("cpu=times,monitor=y,doe=n"))
    check(run.code == 0 and "Hello, threads!" in run.stdout, f"{label}: cpu=times,monitor=y runs", run)
    warnings = [line for line in run.stderr.splitlines() if "is not implemented yet" in line]
    for feature in ("monitor=y", "cpu=times"):
        check(not any(feature in line for line in warnings), f"{label}: {feature} is built: no warning", run)
    check(not any("heap=dump" in line for line in warnings),
          f"{label}: no warning for a feature that was not asked for", run)

    # Every documented option with a valid value loads and lets the program finish.
    valid = ("heap=dump,format=b,depth=8,interval=20,cutoff=0.01,lineno=n,thread=y,doe=y,msa=n,"
             "force=y,verbose=n,gc_okay=y,primfields=n,primarrays=n,logflags=0,debugflags=0,"
             "coredump=n,errorexit=n,debug=n,X=0,sample=0,gz=n,cpustacks=deferred")
    run = run_java(home, agentpath(valid))
    check(run.code == 0 and "Hello, threads!" in run.stdout, f"{label}: the full valid option set loads", run)
    run = run_java(home, agentpath("cpu=y,cpu=times,file=t.txt"))
    check(run.code == 0 and "Hello, threads!" in run.stdout, f"{label}: cpu=y alias with cpu=times loads", run)

finish("options_cli")
