"""heap=dump: complete heap dumps on kill -QUIT and at exit, binary and text, checked with
tools/hprof-verify AND with VisualVM's heap library (tests/visualvm/HeapCheck.java) on a heap of known
shapes (tests/java/HeapShapes.java), compared per class with the JDK's own dump of the same heap
(`jcmd GC.heap_dump`), on JDK 17 and 25 with G1 and ZGC, without compressed oops, with
primfields=n/primarrays=n, while 8 threads allocate, while threads start and end, and with a file
size limit reached in the middle of a dump.

FASTHPROF_HEAP_MATRIX=full adds Serial, Parallel and Shenandoah (where the JDK has it) on every JDK:
  FASTHPROF_HEAP_MATRIX=full meson test -C build heap_dump
"""
import os
import pathlib
import re
import signal
import subprocess
import tempfile
import time

import heap_model
from harness import (TEST_CLASSES, agentpath, check, check_no_warnings, cleanup, finish, java_bin,
                     java_command, jdks, verify_binary, wait_for, watch)

HEAP_CHECK = os.environ.get("HEAP_CHECK_CLASSES", "")
JAVA17 = os.environ["JAVA17_HOME"]
FULL = os.environ.get("FASTHPROF_HEAP_MATRIX", "") == "full"


def start(home, options, main="HeapShapes", args=(), jvm_args=(), classpath=TEST_CLASSES):
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-heap-"))
    command = java_command(home, *jvm_args, agentpath(options), "-cp", classpath, main, *map(str, args))
    env = dict(os.environ)
    env.pop("_JAVA_HPROF_OPTIONS", None)
    env.pop("JAVA_TOOL_OPTIONS", None)
    env["FASTHPROF_DUMP_STATS"] = "1"
    out = open(folder / "stdout.txt", "w")
    err = open(folder / "stderr.txt", "w")
    proc = subprocess.Popen(command, cwd=folder, env=env, stdout=out, stderr=err)
    watch(folder, f"{main} {options} {' '.join(jvm_args)}")
    return proc, folder


def text(path):
    return path.read_text(errors="replace") if path.exists() else ""


def dumps_done(folder):
    # The stats line (FASTHPROF_DUMP_STATS) lands inside the verbose line; " done." ends a report
    # once its bytes are in the file.
    stderr = text(folder / "stderr.txt")
    return min(stderr.count("fasthprof: heap dump stats:"), stderr.count(" done.\n"))


def heap_check(mode, path, dump=0):
    """Runs the VisualVM-based checker; returns (ok, output)."""
    if not HEAP_CHECK or not os.path.isdir(HEAP_CHECK.split(":")[0]):
        return False, "the VisualVM checker is not built: install `visualvm` (tools/install-deps.sh)"
    proc = subprocess.run(java_command(JAVA17, "-cp", HEAP_CHECK, "HeapCheck", mode, str(path), str(dump)),
                          capture_output=True, text=True, timeout=300)
    check_no_warnings(f"HeapCheck {mode} {path.name}", proc.stdout, proc.stderr)
    return proc.returncode == 0, proc.stdout + proc.stderr


def quit_and_wait(proc, folder, count, timeout=60):
    os.kill(proc.pid, signal.SIGQUIT)
    return wait_for(lambda: dumps_done(folder) >= count, timeout)


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # orderly shutdown: VM death, the doe=y dump
    try:
        return proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        return None


def only_vm_held(model, init_locks):
    """Objects of a JDK dump that only the VM's own handles reach, which JVMTI cannot report: what
    the constant-pool caches of classes outside the boot loader and of hidden classes hold (the
    JDK's dumper shows each as a "<resolved_references>" static; of its elements FollowReferences
    reports only the Strings, as constant-pool references) and, with init_locks, JDK 25's class
    initialization locks ("<init_lock>")."""
    def is_string(object_id):
        heap_class = model.class_of(object_id)
        return heap_class is not None and heap_class.name == "java/lang/String"

    def reachable(cut):
        stack, seen = [oid for _, oid in model.roots] + list(model.classes), set()
        while stack:
            at = stack.pop()
            if at in seen:
                continue
            seen.add(at)
            hidden = {}
            if cut and at in model.classes:
                heap_class = model.classes[at]
                # HotSpot reports the boot loader's handles as roots, not other loaders' or
                # hidden classes' (which have loader data of their own).
                vm_only = heap_class.loader_id != 0 or "+0x" in (heap_class.name or "")
                hidden = {v: name for name, _, v in heap_class.statics
                          if (vm_only and name == "<resolved_references>") or (init_locks and name == "<init_lock>")}
            for reference in model.references_of(at):
                if reference not in hidden:
                    stack.append(reference)
                elif hidden[reference] == "<resolved_references>":
                    stack += [e for e in model.references_of(reference) if is_string(e)]
        return seen
    return reachable(False) - reachable(True)


def compare_with_jdk(label, ours_path, jdk_path, skip=("java.lang.Class",), init_locks=False):
    """Instance counts per class, read by tests/integration/heap_model.py from both files: the
    program's classes exactly; JDK classes within 1 % or 5 objects (the attach mechanism allocates
    some). The JDK's counts leave out what only the VM's handles reach (only_vm_held). With CDS the
    walk also meets the mirrors of archived classes that were never loaded, written as instances of
    java.lang.Class, which the JDK's dumper leaves out: java.lang.Class is not compared. JDK 25's
    dump also holds int[]s of its archived heap that nothing references: int[] is not compared
    there."""
    jdk_model = heap_model.read(jdk_path, 0)
    ours = heap_model.read(ours_path, 0).histogram()
    jdk = jdk_model.histogram()
    for name, count in jdk_model.histogram(only_vm_held(jdk_model, init_locks)).items():
        jdk[name] -= count
    check(len(jdk) > 100 and len(ours) > 100, f"{label}: both histograms read ({len(ours)}, {len(jdk)} classes)")
    worst = (0, "")
    for name in sorted(set(ours) | set(jdk)):
        a, b = ours.get(name, 0), jdk.get(name, 0)
        if name in skip:
            continue
        if name.startswith("HeapShapes"):
            check(a == b, f"{label}: {name}: {a} here, {b} in the JDK's dump")
        else:
            check(abs(a - b) <= max(5, b // 100), f"{label}: {name}: {a} here, {b} in the JDK's dump")
            worst = max(worst, (abs(a - b), name))
    total_ours = sum(v for k, v in ours.items() if k not in skip)
    total_jdk = sum(v for k, v in jdk.items() if k not in skip)
    check(abs(total_ours - total_jdk) <= total_jdk // 100,
          f"{label}: total objects within 1 %: {total_ours} here, {total_jdk} in the JDK's dump")
    print(f"{label}: {total_ours} objects here, {total_jdk} in the JDK's dump; largest difference "
          f"{worst[0]} ({worst[1]})")


def javap_constants(home, class_name, classpath=TEST_CLASSES):
    """{index: ("String", text) or ("Class", name)} from the class file, as javap reads it."""
    proc = subprocess.run([java_bin(home, "javap"), "-v", "-cp", classpath, class_name],
                          capture_output=True, text=True, timeout=60)
    out = {}
    for line in proc.stdout.splitlines():
        match = re.match(r"^\s+#(\d+) = (String|Class)\s+#\d+\s+// (.*)$", line)
        if match:
            value = match.group(3).encode().decode("unicode_escape") if match.group(2) == "String" else match.group(3)
            out[int(match.group(1))] = (match.group(2), value)
    return out


def check_class_references(label, home, path, class_name, classpath=TEST_CLASSES, signed=False):
    """The CLASS DUMP of class_name names its protection domain, its signers when signed, and its
    resolved String and class constants at their constant-pool indices, as javap reads them."""
    model = heap_model.read(path, 0)
    heap_class = model.class_named(class_name)
    if not check(heap_class is not None, f"{label}: one CLASS DUMP of {class_name}"):
        return
    domain = model.class_of(heap_class.domain_id)
    check(domain is not None and domain.name == "java.security.ProtectionDomain",
          f"{label}: {class_name}'s protection domain is a ProtectionDomain instance ({heap_class.domain_id:#x})")
    if signed:
        signers = model.object_arrays.get(heap_class.signers_id)
        check(signers is not None and len(signers[1]) >= 1 and all(model.class_of(e) is not None and
                                                                    "X509" in model.class_of(e).name
                                                                    for e in signers[1]),
              f"{label}: {class_name}'s signers are an array of X.509 certificates ({heap_class.signers_id:#x})")
    else:
        check(heap_class.signers_id == 0, f"{label}: {class_name} has no signers")
    constants = javap_constants(home, class_name, classpath)
    indices = [entry[0] for entry in heap_class.constant_pool]
    check(indices == sorted(indices, reverse=True), f"{label}: constants listed highest index first")
    strings = classes = 0
    for index, kind, value in heap_class.constant_pool:
        expected = constants.get(index)
        if not check(kind == 2 and expected is not None, f"{label}: constant #{index} is a String or Class in javap"):
            continue
        if expected[0] == "String":
            strings += 1
            check(model.string_value(value) == expected[1],
                  f"{label}: constant #{index} is the String {expected[1]!r} ({model.string_value(value)!r})")
        else:
            classes += 1
            named = model.classes.get(value)
            check(named is not None and named.name == heap_model.java_name(expected[1].strip('"')),
                  f"{label}: constant #{index} is class {expected[1]} ({named.name if named else hex(value)})")
    check(strings >= 1 and classes >= 2, f"{label}: {class_name} lists resolved constants "
          f"({strings} strings, {classes} classes)")


def signed_run(home):
    label = "jdk17 signed jar"
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-signed-"))
    proc = None
    try:
        jar = folder / "app.jar"
        steps = [[java_bin(home, "jar"), "cf", str(jar), "-C", TEST_CLASSES, "SignedApp.class"],
                 [java_bin(home, "keytool"), "-genkeypair", "-alias", "test", "-keyalg", "EC", "-keystore",
                  str(folder / "keys.p12"), "-storepass", "fasthprof", "-dname", "CN=fasthprof test", "-validity", "2"],
                 [java_bin(home, "jarsigner"), "-keystore", str(folder / "keys.p12"), "-storepass", "fasthprof",
                  str(jar), "test"]]
        for step in steps:
            made = subprocess.run(step, capture_output=True, text=True, timeout=120)
            if not check(made.returncode == 0, f"{label}: {' '.join(step[:2])}: {made.stdout}{made.stderr}"):
                return
        proc, run = start(home, "heap=dump,format=b,file=dump.hprof,doe=n", main="SignedApp", args=[30],
                          classpath=str(jar))
        check(wait_for(lambda: "ready" in text(run / "stdout.txt"), 60), f"{label}: program ready")
        check("signers 1" in text(run / "stdout.txt"), f"{label}: the class is signed: {text(run / 'stdout.txt')}")
        check(quit_and_wait(proc, run, 1), f"{label}: a dump")
        proc.kill()
        proc.wait()
        ok, output = verify_binary(run / "dump.hprof")
        check(ok, f"{label}: the verifier accepts the dump:\n{output[-2000:]}")
        ok, output = heap_check("generic", run / "dump.hprof", 0)
        check(ok, f"{label}: VisualVM reads the dump:\n{output[-2000:]}")
        check_class_references(label, home, run / "dump.hprof", "SignedApp", classpath=str(jar), signed=True)
        cleanup(run)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        cleanup(folder)


def binary_run(jdk, home, gc, compare=False, jvm_args=()):
    label = f"{jdk} {gc} {' '.join(jvm_args)}".strip()
    proc, folder = start(home, "heap=dump,format=b,file=dump.hprof", args=[60], jvm_args=[f"-XX:+Use{gc}GC", *jvm_args])
    try:
        dump = folder / "dump.hprof"
        if not check(wait_for(lambda: "ready" in text(folder / "stdout.txt"), 60), f"{label}: program ready"):
            print(text(folder / "stderr.txt"))
            return
        if compare:
            jcmd = subprocess.run([java_bin(home, "jcmd"), str(proc.pid), "GC.heap_dump", str(folder / "jdk.hprof")],
                                  capture_output=True, text=True, timeout=120)
            check(jcmd.returncode == 0, f"{label}: jcmd GC.heap_dump: {jcmd.stdout}{jcmd.stderr}")
        check(quit_and_wait(proc, folder, 1), f"{label}: kill -QUIT gives a dump:\n{text(folder / 'stderr.txt')}")
        ok, output = heap_check("shapes", dump, 0)
        check(ok, f"{label}: VisualVM reads the dump and finds the known heap:\n{output[-3000:]}")
        if compare:
            check_class_references(label, home, dump, "HeapShapes")
            skip = ("java.lang.Class",) if jdk == "jdk17" else ("java.lang.Class", "int[]")
            compare_with_jdk(label, dump, folder / "jdk.hprof", skip, init_locks=jdk != "jdk17")
        code = stop(proc)
        check(code in (0, 143), f"{label}: the program ends (exit {code})")
        check(dumps_done(folder) == 2, f"{label}: a second dump at exit:\n{text(folder / 'stderr.txt')}")
        ok, output = verify_binary(dump)
        check(ok and "heap dumps: 2" in output, f"{label}: the verifier accepts both dumps:\n{output[-3000:]}")
        ok, output = heap_check("generic", dump, 1)
        check(ok, f"{label}: VisualVM reads the exit dump:\n{output[-3000:]}")
        check("HPROF ERROR" not in text(folder / "stderr.txt"), f"{label}: no error:\n{text(folder / 'stderr.txt')}")
    finally:
        if proc.poll() is None:
            proc.kill()
        cleanup(folder)


def blank_run(home):
    label = "jdk17 primfields=n,primarrays=n"
    proc, folder = start(home, "heap=dump,format=b,file=dump.hprof,primfields=n,primarrays=n", args=[30])
    try:
        check(wait_for(lambda: "ready" in text(folder / "stdout.txt"), 60), f"{label}: program ready")
        check(quit_and_wait(proc, folder, 1), f"{label}: a dump")
        stop(proc)
        ok, output = verify_binary(folder / "dump.hprof")
        check(ok, f"{label}: the verifier accepts the dump:\n{output[-2000:]}")
        ok, output = heap_check("blank", folder / "dump.hprof", 0)
        check(ok, f"{label}: primitive values are 0 and arrays empty, references intact:\n{output[-3000:]}")
        check("not implemented" not in text(folder / "stderr.txt"), f"{label}: no 'not implemented' warning")
    finally:
        if proc.poll() is None:
            proc.kill()
        cleanup(folder)


def text_run(jdk, home):
    label = f"{jdk} format=a"
    proc, folder = start(home, "heap=dump,format=a,file=dump.txt", args=[30])
    try:
        check(wait_for(lambda: "ready" in text(folder / "stdout.txt"), 60), f"{label}: program ready")
        check(quit_and_wait(proc, folder, 1), f"{label}: a dump")
        stop(proc)
        body = text(folder / "dump.txt")
        dumps = re.findall(r"HEAP DUMP BEGIN \((\d+) objects, (\d+) bytes\) [^\n]+\n(.*?)HEAP DUMP END\n", body, re.S)
        check(len(dumps) == 2, f"{label}: two complete text dumps (found {len(dumps)})")
        for objects, size, lines in dumps[:1]:
            rows = lines.splitlines()
            kinds = [row.split(" ", 1)[0] for row in rows if not row.startswith("\t")]
            check(int(objects) == kinds.count("OBJ") + kinds.count("ARR"),
                  f"{label}: HEAP DUMP BEGIN's total {objects} = OBJ + ARR lines {kinds.count('OBJ') + kinds.count('ARR')}")
            check(int(size) > 0, f"{label}: a byte total")
            first_object = min(kinds.index("OBJ"), kinds.index("ARR"))
            check(all(k == "ROOT" for k in kinds[:first_object]), f"{label}: roots first")
            check("ROOT" not in kinds[first_object:], f"{label}: no root after the objects")
            check(all(k == "CLS" for k in kinds[kinds.index("CLS"):]), f"{label}: classes last")
            check(sum("class=HeapShapes$Leaf@" in row for row in rows) == 100, f"{label}: 100 Leaf objects")
            check(any(re.match(r"^ROOT \w+ \(kind=<Java stack>, thread=2000\d\d, frame=\d+\)$", row) for row in rows),
                  f"{label}: Java stack roots name their thread and frame")
            check(any(re.match(r"^ARR \w+ \(sz=\d+, trace=300000, nelems=5, elem type=java.lang.Object\[\]@\w+\)$", row)
                      for row in rows), f"{label}: an object array with its full length (nulls included)")
            check(any(re.match(r"^\tstr\t\t\w+$", row) for row in rows), f"{label}: reference fields listed")
            block = re.search(r"^CLS \w+ \(name=HeapShapes, trace=\d+\)\n((?:\t.*\n)*)", lines, re.M)
            ready = [i for i, (kind, value) in javap_constants(home, "HeapShapes").items()
                     if kind == "String" and value == "ready"]
            check(block is not None and re.search(r"^\tdomain\t\t\w+$", block.group(1), re.M) is not None
                  and len(ready) == 1 and f"\tconstant pool entry {ready[0]}\t" in block.group(1),
                  f"{label}: HeapShapes's CLS lines name its protection domain and its constant #{ready}:\n"
                  f"{block.group(0)[:600] if block else ''}")
        leftovers = [p.name for p in folder.iterdir() if p.name.startswith(".fasthprof-heap")]
        check(not leftovers, f"{label}: no staging file left: {leftovers}")
    finally:
        if proc.poll() is None:
            proc.kill()
        cleanup(folder)


def busy_run(home):
    label = "jdk17 8 allocating threads"
    proc, folder = start(home, "heap=dump,format=b,file=dump.hprof,doe=n", args=[30, 8], jvm_args=["-Xmx256m"])
    try:
        check(wait_for(lambda: "ready" in text(folder / "stdout.txt"), 60), f"{label}: program ready")
        time.sleep(1)
        check(quit_and_wait(proc, folder, 1), f"{label}: a dump while 8 threads allocate")
        check(quit_and_wait(proc, folder, 2), f"{label}: another one")
        check(proc.poll() is None, f"{label}: the program keeps running")
        proc.kill()
        proc.wait()
        ok, output = verify_binary(folder / "dump.hprof")
        check(ok and "heap dumps: 2" in output, f"{label}: the verifier accepts both dumps:\n{output[-2000:]}")
        for dump in (0, 1):
            ok, output = heap_check("generic", folder / "dump.hprof", dump)
            check(ok, f"{label}: VisualVM reads dump {dump}:\n{output[-2000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
        cleanup(folder)


def churn_run(home):
    label = "jdk17 threads starting and ending"
    proc, folder = start(home, "heap=dump,format=b,file=dump.hprof,doe=n", main="ThreadChurn", args=[8, 2])
    try:
        check(wait_for(lambda: "churning" in text(folder / "stdout.txt"), 60), f"{label}: program ready")
        for n in range(1, 4):
            check(quit_and_wait(proc, folder, n), f"{label}: dump {n} while threads come and go")
            time.sleep(0.2)
        proc.wait(timeout=60)
        ok, output = verify_binary(folder / "dump.hprof")
        check(ok and "heap dumps: 3" in output, f"{label}: the verifier accepts the dumps:\n{output[-2000:]}")
        ok, output = heap_check("generic", folder / "dump.hprof", 2)
        check(ok, f"{label}: VisualVM reads the last dump:\n{output[-2000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
        cleanup(folder)


def disk_full_run(home):
    label = "jdk17 file size limit"
    proc, folder = start(home, "heap=dump,format=b,file=dump.hprof,doe=n", args=[30])
    try:
        dump = folder / "dump.hprof"
        check(wait_for(lambda: "ready" in text(folder / "stdout.txt"), 60), f"{label}: program ready")
        check(quit_and_wait(proc, folder, 1), f"{label}: a first dump")
        time.sleep(0.3)
        complete = dump.stat().st_size
        subprocess.run(["prlimit", f"--pid={proc.pid}", f"--fsize={complete + 200000}:"], check=True)
        check(quit_and_wait(proc, folder, 2), f"{label}: the second dump ends")
        stderr = text(folder / "stderr.txt")
        check(wait_for(lambda: "File too large" in text(folder / "stderr.txt"), 10),
              f"{label}: one clear message:\n{stderr}")
        time.sleep(0.3)
        check(dump.stat().st_size == complete, f"{label}: the file is cut back to the complete dump "
              f"({dump.stat().st_size} vs {complete})")
        check(proc.poll() is None, f"{label}: the JVM keeps running")
        subprocess.run(["prlimit", f"--pid={proc.pid}", "--fsize=unlimited:"], check=True)
        check(quit_and_wait(proc, folder, 3), f"{label}: the next dump works once there is room")
        time.sleep(0.3)
        proc.kill()
        proc.wait()
        ok, output = verify_binary(dump)
        check(ok and "heap dumps: 2" in output, f"{label}: two complete dumps in the file:\n{output[-2000:]}")
        ok, output = heap_check("shapes", dump, 1)
        check(ok, f"{label}: VisualVM reads the dump written after the error:\n{output[-2000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
        cleanup(folder)


def heap_all_run(home):
    label = "jdk17 heap=all"
    proc, folder = start(home, "heap=all,format=b,file=dump.hprof", args=[30])
    try:
        check(wait_for(lambda: "ready" in text(folder / "stdout.txt"), 60), f"{label}: program ready")
        check(quit_and_wait(proc, folder, 1), f"{label}: a dump")
        stop(proc)
        ok, output = verify_binary(folder / "dump.hprof")
        check(ok, f"{label}: the verifier accepts the file:\n{output[-2000:]}")
        ok, output = heap_check("shapes", folder / "dump.hprof", 0)
        check(ok, f"{label}: VisualVM finds the known heap (allocation-tagged objects and threads):\n{output[-2000:]}")
        model = heap_model.read(folder / "dump.hprof", 0)
        written = model.traces
        named = [t for t in model.instance_traces.values() if t != 300000]
        check(len(named) >= 100, f"{label}: objects allocated while tracking name their allocation trace ({len(named)})")
        check(all(t in written for t in named), f"{label}: every such trace is written")
    finally:
        if proc.poll() is None:
            proc.kill()
        cleanup(folder)


def has_gc(home, gc):
    probe = subprocess.run(java_command(home, f"-XX:+Use{gc}GC", "-version"), capture_output=True, text=True)
    return probe.returncode == 0


for jdk, home in jdks():
    binary_run(jdk, home, "G1", compare=True)
    binary_run(jdk, home, "Z")
    text_run(jdk, home)
    if FULL:
        for gc in ("Serial", "Parallel", "Shenandoah"):
            if has_gc(home, gc):
                binary_run(jdk, home, gc)
            else:
                print(f"SKIP: {jdk} has no {gc} collector")
        binary_run(jdk, home, "G1", jvm_args=["-XX:-UseCompressedOops"])

binary_run("jdk17", JAVA17, "Parallel", jvm_args=["-XX:-UseCompressedOops"])
blank_run(JAVA17)
signed_run(JAVA17)
heap_all_run(JAVA17)
busy_run(JAVA17)
churn_run(JAVA17)
disk_full_run(JAVA17)
finish("heap_dump")
