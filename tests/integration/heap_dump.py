"""heap=dump: complete heap dumps on kill -QUIT and at exit, binary and text, checked with
tools/hprof-verify AND with VisualVM's heap library (tests/visualvm/HeapCheck.java) on a heap of known
shapes (tests/java/HeapShapes.java), compared per class with the JDK's own dump of the same heap
(`jcmd GC.heap_dump`), on JDK 17 and 25 with G1 and ZGC, without compressed oops, with
primfields=n/primarrays=n, while 8 threads allocate, while threads start and end, and with a file
size limit reached in the middle of a dump.

Each case is a Meson test of its own (`heap_dump.py <case>`, suite heap_dump).
FASTHPROF_HEAP_MATRIX=full adds Serial, Parallel and Shenandoah (where the JDK has it) on every JDK
to the collectors case:
  FASTHPROF_HEAP_MATRIX=full meson test -C build heap_dump_collectors
"""
import os
import pathlib
import re
import signal
import subprocess
import tempfile
import time

import heap_model
from harness import (prlimit_fsize, AGENT, TEST_CLASSES, agentpath, check, check_no_warnings, java_bin, java_command, java_process,
                     jdks, read_text, run_cases, terminate, verify_binary, wait_for)

HEAP_CHECK = os.environ.get("HEAP_CHECK_CLASSES", "")
JAVA17 = os.environ["JAVA17_HOME"]
FULL = os.environ.get("FASTHPROF_HEAP_MATRIX", "") == "full"


def heap_shapes(home, options, main="HeapShapes", args=(), jvm_args=(), classpath=TEST_CLASSES):
    """java_process for main (HeapShapes unless named) with the agent and options (None: without the
    agent), its dump statistics on stderr (verbose=y is added: its figures line tells when a dump is
    done)."""
    if options is not None and "verbose=" not in options:
        options += ",verbose=y"
    # These cases test fasthprof's own walk; tests/integration/vm_dump.py tests dumper=auto|vm.
    if options is not None and "dumper=" not in options:
        options += ",dumper=jvmti"
    return java_process(home, agentpath(options) if options is not None else None, main, args, jvm_args,
                        classpath=classpath)


def dumps_done(folder):
    # The verbose line, written whole once the report's bytes are in the file, ends a report; the
    # stats line (verbose=y written out) comes on a line of its own before it.
    stderr = read_text(folder / "stderr.txt")
    return min(stderr.count("fasthprof: heap dump stats:"), stderr.count(" done.\n"))


def heap_check(mode, path, dump=0):
    """Runs the VisualVM-based checker; returns (ok, output)."""
    if not HEAP_CHECK or not os.path.isdir(HEAP_CHECK.split(":")[0]):
        return False, "the VisualVM checker is not built: install `visualvm` (tools/install-deps.sh --tests)"
    proc = subprocess.run(java_command(JAVA17, "-cp", HEAP_CHECK, "HeapCheck", mode, str(path), str(dump)),
                          capture_output=True, text=True, timeout=300)
    check_no_warnings(f"HeapCheck {mode} {path.name}", proc.stdout, proc.stderr)
    return proc.returncode == 0, proc.stdout + proc.stderr


def quit_and_wait(proc, folder, count, timeout=60):
    os.kill(proc.pid, signal.SIGQUIT)
    return wait_for(lambda: dumps_done(folder) >= count, timeout)


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


# Threads that JVMTI hides (GetAllThreads, the heap walk's thread roots) while the JDK's dump
# holds their thread objects, measured with -Xshare:off.
HIDDEN_THREADS = {"jdk17": {"Service Thread", "Monitor Deflation Thread", "Sweeper thread"},
                  "jdk25": {"Service Thread", "Monitor Deflation Thread"}}
# Fields that JVMTI's GetClassFields leaves out (HotSpot's reflection filter), by JDK.
JVMTI_FILTERED_FIELDS = {"jdk17": {}, "jdk25": {"jdk.internal.reflect.ConstantPool": 1}}


def class_shapes(model):
    """{Java class name: (instance fields, static fields)} of the names with one CLASS DUMP, without
    the JDK dumper's synthetic statics (<resolved_references>, <init_lock>)."""
    by_name = {}
    for heap_class in model.classes.values():
        by_name.setdefault(heap_model.java_name(heap_class.name or "?"), []).append(heap_class)
    return {name: (len(found[0].fields), sum(not s[0].startswith("<") for s in found[0].statics))
            for name, found in by_name.items() if len(found) == 1}


def compare_class_fields(label, jdk, ours_model, jdk_model):
    """Every class in both dumps declares as many instance and static fields here as in the JDK's
    dump (a class loaded but not linked included)."""
    ours, theirs = class_shapes(ours_model), class_shapes(jdk_model)
    filtered = JVMTI_FILTERED_FIELDS[jdk]
    wrong = [f"{name}: {ours[name]} here, {theirs[name]} in the JDK's dump" for name in sorted(set(ours) & set(theirs))
             if ours[name] != (theirs[name][0] - filtered.get(name, 0), theirs[name][1])]
    check(len(set(ours) & set(theirs)) > 400, f"{label}: classes in both dumps ({len(set(ours) & set(theirs))})")
    check(not wrong, f"{label}: {len(wrong)} classes with other field counts than the JDK's dump:\n  " +
          "\n  ".join(wrong[:50]))


def reachable(model, starts):
    stack, seen = list(starts), set()
    while stack:
        at = stack.pop()
        if at not in seen:
            seen.add(at)
            stack += model.references_of(at)
    return seen


def explained_differences(label, jdk, model, main_class):
    """{category: object IDs} of the JDK's dump that JVMTI cannot see, each category measured and
    explained in docs/heap-dumps.md. Objects that nothing in the JDK's dump reaches are either held by the
    fields of java.lang.Class objects (which its CLASS DUMPs do not show; fasthprof has them) or
    in one of these categories."""
    everything = set(model.instances) | set(model.object_arrays) | set(model.primitive_arrays)
    unreached = everything - reachable(model, [oid for _, oid in model.roots] + list(model.classes))
    referenced = {r for oid in everything for r in model.references_of(oid)}

    def named(oid, name):
        heap_class = model.class_of(oid)
        return heap_class is not None and heap_model.java_name(heap_class.name) == name

    def thread_name(oid):
        name = model.fields_of(oid).get("name")
        return model.string_value(name) if name else None

    threads = [oid for oid in unreached if oid in model.instances and
               any(named_class == "java.lang.Thread" for named_class in superclass_names(model, oid))]
    check({thread_name(oid) for oid in threads} == HIDDEN_THREADS[jdk],
          f"{label}: threads JVMTI hides: {sorted(map(str, (thread_name(oid) for oid in threads)))}, "
          f"expected {sorted(HIDDEN_THREADS[jdk])}")
    # The launcher keeps the main class's name in a JNI local reference outside any Java frame:
    # neither dumper reports it as a root. (Another String of that text, Class.name's cache, is
    # unreferenced in the JDK's dump too, and fasthprof has it.)
    names = sorted(oid for oid in unreached - referenced if named(oid, "java.lang.String")
                   and model.string_value(oid) == main_class)
    launcher = set(names[:1])
    mirrors = {oid for oid in unreached - referenced if named(oid, "java.lang.Class")}
    return {
        "held only by the VM's handles": only_vm_held(model, init_locks=jdk != "jdk17"),
        "hidden threads": reachable(model, threads) & unreached,
        "the launcher's main class name": reachable(model, launcher),
        "unnamed class mirrors": reachable(model, mirrors) & unreached,
        "int[] nothing refers to": {oid for oid in unreached - referenced if oid in model.primitive_arrays
                                    and model.primitive_arrays[oid][0] == 10},
    }


def superclass_names(model, oid):
    heap_class = model.class_of(oid)
    while heap_class is not None:
        yield heap_model.java_name(heap_class.name)
        heap_class = model.classes.get(heap_class.super_id)


def compare_exactly_with_jdk(label, jdk, ours_path, dump, jdk_path, main_class):
    """Instance counts per class, exactly, after the measured differences (explained_differences);
    field counts per class as in compare_class_fields."""
    jdk_model = heap_model.read(jdk_path, 0)
    ours_model = heap_model.read(ours_path, dump)
    compare_class_fields(label, jdk, ours_model, jdk_model)
    ours = ours_model.histogram()
    explained = explained_differences(label, jdk, jdk_model, main_class)
    left_out = set().union(*explained.values())
    theirs = {name: count - jdk_model.histogram(left_out).get(name, 0) for name, count in jdk_model.histogram().items()}
    theirs = {name: count for name, count in theirs.items() if count}
    wrong = [f"{name}: {ours.get(name, 0)} here, {theirs.get(name, 0)} in the JDK's dump"
             for name in sorted(set(ours) | set(theirs)) if ours.get(name, 0) != theirs.get(name, 0)]
    check(len(theirs) > 100, f"{label}: the JDK's dump read ({len(theirs)} classes)")
    check(not wrong, f"{label}: {len(wrong)} classes with other instance counts than the JDK's dump:\n  " +
          "\n  ".join(wrong[:50]))
    print(f"{label}: {sum(ours.values())} objects, as in the JDK's dump after leaving out " +
          ", ".join(f"{len(ids)} {what}" for what, ids in explained.items()))


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
    with tempfile.TemporaryDirectory(prefix="fasthprof-signed-") as scratch:
        folder = pathlib.Path(scratch)
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
        with heap_shapes(home, "heap=dump,format=b,file=dump.hprof,doe=n", main="SignedApp", args=[30],
                         classpath=str(jar)) as (proc, run):
            check(wait_for(lambda: "ready" in read_text(run / "stdout.txt"), 60), f"{label}: program ready")
            check("signers 1" in read_text(run / "stdout.txt"), f"{label}: the class is signed: {read_text(run / 'stdout.txt')}")
            check(quit_and_wait(proc, run, 1), f"{label}: a dump")
            proc.kill()
            proc.wait()
            ok, output = verify_binary(run / "dump.hprof")
            check(ok, f"{label}: the verifier accepts the dump:\n{output[-2000:]}")
            ok, output = heap_check("generic", run / "dump.hprof", 0)
            check(ok, f"{label}: VisualVM reads the dump:\n{output[-2000:]}")
            check_class_references(label, home, run / "dump.hprof", "SignedApp", classpath=str(jar), signed=True)


def binary_run(jdk, home, gc, compare=False, jvm_args=()):
    label = f"{jdk} {gc} {' '.join(jvm_args)}".strip()
    with heap_shapes(home, "heap=dump,format=b,file=dump.hprof", args=[60],
                     jvm_args=[f"-XX:+Use{gc}GC", *jvm_args]) as (proc, folder):
        dump = folder / "dump.hprof"
        if not check(wait_for(lambda: "ready" in read_text(folder / "stdout.txt"), 60), f"{label}: program ready"):
            print(read_text(folder / "stderr.txt"))
            return
        if compare:
            jcmd = subprocess.run([java_bin(home, "jcmd"), str(proc.pid), "GC.heap_dump", str(folder / "jdk.hprof")],
                                  capture_output=True, text=True, timeout=120)
            check(jcmd.returncode == 0, f"{label}: jcmd GC.heap_dump: {jcmd.stdout}{jcmd.stderr}")
            ok, output = verify_binary(folder / "jdk.hprof", strict=False)
            check(ok, f"{label}: hprof-verify accepts the JDK's own dump:\n{output[-2000:]}")
        check(quit_and_wait(proc, folder, 1), f"{label}: kill -QUIT gives a dump:\n{read_text(folder / 'stderr.txt')}")
        ok, output = heap_check("shapes", dump, 0)
        check(ok, f"{label}: VisualVM reads the dump and finds the known heap:\n{output[-3000:]}")
        if compare:
            check_class_references(label, home, dump, "HeapShapes")
            skip = ("java.lang.Class",) if jdk == "jdk17" else ("java.lang.Class", "int[]")
            compare_with_jdk(label, dump, folder / "jdk.hprof", skip, init_locks=jdk != "jdk17")
            compare_class_fields(label, jdk, heap_model.read(dump, 0), heap_model.read(folder / "jdk.hprof", 0))
        code = terminate(proc)
        check(code in (0, 143), f"{label}: the program ends (exit {code})")
        check(dumps_done(folder) == 2, f"{label}: a second dump at exit:\n{read_text(folder / 'stderr.txt')}")
        ok, output = verify_binary(dump)
        check(ok and "heap dumps: 2" in output, f"{label}: the verifier accepts both dumps:\n{output[-3000:]}")
        ok, output = heap_check("generic", dump, 1)
        check(ok, f"{label}: VisualVM reads the exit dump:\n{output[-3000:]}")
        check("HPROF ERROR" not in read_text(folder / "stderr.txt"), f"{label}: no error:\n{read_text(folder / 'stderr.txt')}")


def quiescent_run(jdk, home, attach=False):
    """-Xshare:off, -Xcheck:jni: a first dump (which links the classes loaded but not linked), the
    JDK's dump, a second dump; the second compared with the JDK's exactly, class by class. With
    attach, the agent is loaded by jcmd once the program is ready."""
    label = f"{jdk} quiescent -Xshare:off{' attached' if attach else ''}"
    options = "heap=dump,format=b,file=dump.hprof,doe=n,verbose=y,dumper=jvmti"
    quiet = ["-XX:+EnableDynamicAgentLoading"] if attach and jdk != "jdk17" else []
    with heap_shapes(home, None if attach else options, args=[60],
                     jvm_args=["-Xshare:off", "-Xcheck:jni", *quiet]) as (proc, folder):
        dump = folder / "dump.hprof"
        if not check(wait_for(lambda: "ready" in read_text(folder / "stdout.txt"), 60), f"{label}: program ready"):
            return
        if attach:
            loaded = subprocess.run([java_bin(home, "jcmd"), str(proc.pid), "JVMTI.agent_load", AGENT, f'"{options}"'],
                                    capture_output=True, text=True, timeout=120)
            check(loaded.returncode == 0 and "return code: 0" in loaded.stdout,
                  f"{label}: jcmd JVMTI.agent_load: {loaded.stdout}{loaded.stderr}")
        check(quit_and_wait(proc, folder, 1), f"{label}: a first dump:\n{read_text(folder / 'stderr.txt')}")
        linked = re.search(r"classes_linked=(\d+)", read_text(folder / "stderr.txt"))
        check(linked is not None and int(linked.group(1)) > 10,
              f"{label}: the first dump linked the classes loaded but not linked ({linked and linked.group(1)})")
        jcmd = subprocess.run([java_bin(home, "jcmd"), str(proc.pid), "GC.heap_dump", str(folder / "jdk.hprof")],
                              capture_output=True, text=True, timeout=120)
        check(jcmd.returncode == 0, f"{label}: jcmd GC.heap_dump: {jcmd.stdout}{jcmd.stderr}")
        check(quit_and_wait(proc, folder, 2), f"{label}: a second dump:\n{read_text(folder / 'stderr.txt')}")
        proc.kill()
        proc.wait()
        compare_class_fields(f"{label}, first dump", jdk, heap_model.read(dump, 0), heap_model.read(folder / "jdk.hprof", 0))
        compare_exactly_with_jdk(label, jdk, dump, 1, folder / "jdk.hprof", "HeapShapes")
        stderr = read_text(folder / "stderr.txt")
        check("WARNING" not in stderr and "could not be linked" not in stderr, f"{label}: no warning:\n{stderr}")


LINK_FAILURE_SOURCES = {
    "Base.java": "public class Base {}\n",
    "Missing.java": "public class Missing extends Base {}\n",
    # Verifying pick() needs Missing (is it a Base?), whose class file is deleted below.
    "Unlinkable.java": "public class Unlinkable { static int constant = 7; static Base pick(Missing m) { return m; } }\n",
    "LinkFailure.java": """import java.nio.file.*;
public class LinkFailure {
    public static void main(String[] args) throws Exception {
        Class<?> unlinkable = Class.forName("Unlinkable", false, LinkFailure.class.getClassLoader());
        System.out.println("ready " + unlinkable.getName());
        while (!Files.exists(Paths.get("go"))) Thread.sleep(50);
        try {
            unlinkable.getDeclaredMethod("pick", Class.forName("Base"));
        } catch (Throwable t) {
            System.out.println("program sees " + t.getClass().getName());
        }
        try {
            Class.forName("Unlinkable").getDeclaredField("constant");
            System.out.println("program linked Unlinkable");
        } catch (Throwable t) {
            System.out.println("program sees " + t.getClass().getName());
        }
        System.out.println("done");
    }
}
""",
}


def link_failure_run(home):
    """A class whose linking fails (its verifier needs a class file that is missing): the dump says
    so once, has the class without fields, and the program sees the same error as without the agent."""
    label = "jdk17 class that cannot be linked"
    with tempfile.TemporaryDirectory(prefix="fasthprof-link-") as scratch:
        folder = pathlib.Path(scratch)
        classes = folder / "classes"
        for name, source in LINK_FAILURE_SOURCES.items():
            (folder / name).write_text(source)
        made = subprocess.run([java_bin(home, "javac"), "-d", str(classes), *[str(folder / n) for n in LINK_FAILURE_SOURCES]],
                              capture_output=True, text=True, timeout=120)
        if not check(made.returncode == 0, f"{label}: javac: {made.stdout}{made.stderr}"):
            return
        (classes / "Missing.class").unlink()
        with heap_shapes(home, "heap=dump,format=b,file=dump.hprof,doe=n", main="LinkFailure",
                         jvm_args=["-Xcheck:jni"], classpath=str(classes)) as (proc, run):
            check(wait_for(lambda: "ready" in read_text(run / "stdout.txt"), 60), f"{label}: program ready")
            check(quit_and_wait(proc, run, 1), f"{label}: a dump:\n{read_text(run / 'stderr.txt')}")
            (run / "go").write_text("")
            check(proc.wait(timeout=60) == 0, f"{label}: the program ends normally")
            stderr, stdout = read_text(run / "stderr.txt"), read_text(run / "stdout.txt")
            check("fasthprof: warning: 1 classes could not be linked and are dumped without fields "
                  "(first: Unlinkable: java.lang.NoClassDefFoundError)" in stderr, f"{label}: the failure is reported:\n{stderr}")
            check("WARNING" not in stderr, f"{label}: no JNI warning:\n{stderr}")
            check(stdout.count("program sees java.lang.NoClassDefFoundError") == 2 and "done" in stdout,
                  f"{label}: the program sees the linkage error itself:\n{stdout}")
            ok, output = verify_binary(run / "dump.hprof")
            check(ok, f"{label}: the verifier accepts the dump:\n{output[-2000:]}")
            model = heap_model.read(run / "dump.hprof", 0)
            unlinkable, base = model.class_named("Unlinkable"), model.class_named("Base")
            check(unlinkable is not None and not unlinkable.statics and base is not None,
                  f"{label}: Unlinkable is dumped, without fields")


def blank_run(home):
    label = "jdk17 primfields=n,primarrays=n"
    with heap_shapes(home, "heap=dump,format=b,file=dump.hprof,primfields=n,primarrays=n",
                     args=[30]) as (proc, folder):
        check(wait_for(lambda: "ready" in read_text(folder / "stdout.txt"), 60), f"{label}: program ready")
        check(quit_and_wait(proc, folder, 1), f"{label}: a dump")
        terminate(proc)
        ok, output = verify_binary(folder / "dump.hprof")
        check(ok, f"{label}: the verifier accepts the dump:\n{output[-2000:]}")
        ok, output = heap_check("blank", folder / "dump.hprof", 0)
        check(ok, f"{label}: primitive values are 0 and arrays empty, references intact:\n{output[-3000:]}")
        check("not implemented" not in read_text(folder / "stderr.txt"), f"{label}: no 'not implemented' warning")


def text_run(jdk, home):
    label = f"{jdk} format=a"
    with heap_shapes(home, "heap=dump,format=a,file=dump.txt", args=[30]) as (proc, folder):
        check(wait_for(lambda: "ready" in read_text(folder / "stdout.txt"), 60), f"{label}: program ready")
        check(quit_and_wait(proc, folder, 1), f"{label}: a dump")
        terminate(proc)
        body = read_text(folder / "dump.txt")
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
            system = [row for row in rows if "(kind=<system class>" in row]
            unnamed = [row for row in system if not re.match(r"^ROOT \w+ \(kind=<system class>, name=[\w.$\[\]/]+\)$", row)]
            check(len(system) > 100 and not unnamed,
                  f"{label}: every system class root names its class ({len(system)} roots; {unnamed[:3]})")
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
        # The main thread sleeps in a native method: its frame says so (line -3, as HotSpot's dumps).
        check(re.search(r"^\tjava\.lang\.Thread\.sleep\w*\(Thread\.java:Native method\)$", body, re.M),
              f"{label}: the native Thread.sleep frame reads 'Native method'")
        check(not re.search(r"^\tjava\.lang\.Thread\.sleep\w*\(Thread\.java:Unknown line\)$", body, re.M),
              f"{label}: no native frame reads 'Unknown line'")
        leftovers = [p.name for p in folder.iterdir() if p.name.startswith(".fasthprof-heap")]
        check(not leftovers, f"{label}: no staging file left: {leftovers}")


def busy_run(home):
    label = "jdk17 8 allocating threads"
    with heap_shapes(home, "heap=dump,format=b,file=dump.hprof,doe=n", args=[30, 8],
                     jvm_args=["-Xmx256m"]) as (proc, folder):
        check(wait_for(lambda: "ready" in read_text(folder / "stdout.txt"), 60), f"{label}: program ready")
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


def churn_run(home):
    label = "jdk17 threads starting and ending"
    with heap_shapes(home, "heap=dump,format=b,file=dump.hprof,doe=n", main="ThreadChurn",
                     args=[8, 2]) as (proc, folder):
        check(wait_for(lambda: "churning" in read_text(folder / "stdout.txt"), 60), f"{label}: program ready")
        for n in range(1, 4):
            check(quit_and_wait(proc, folder, n), f"{label}: dump {n} while threads come and go")
            time.sleep(0.2)
        proc.wait(timeout=60)
        ok, output = verify_binary(folder / "dump.hprof")
        check(ok and "heap dumps: 3" in output, f"{label}: the verifier accepts the dumps:\n{output[-2000:]}")
        ok, output = heap_check("generic", folder / "dump.hprof", 2)
        check(ok, f"{label}: VisualVM reads the last dump:\n{output[-2000:]}")


def disk_full_run(home):
    label = "jdk17 file size limit"
    with heap_shapes(home, "heap=dump,format=b,file=dump.hprof,doe=n", args=[30]) as (proc, folder):
        dump = folder / "dump.hprof"
        check(wait_for(lambda: "ready" in read_text(folder / "stdout.txt"), 60), f"{label}: program ready")
        check(quit_and_wait(proc, folder, 1), f"{label}: a first dump")
        time.sleep(0.3)
        complete = dump.stat().st_size
        prlimit_fsize(proc.pid, complete + 200000)
        check(quit_and_wait(proc, folder, 2), f"{label}: the second dump ends")
        stderr = read_text(folder / "stderr.txt")
        check(wait_for(lambda: "File too large" in read_text(folder / "stderr.txt"), 10),
              f"{label}: one clear message:\n{stderr}")
        time.sleep(0.3)
        check(dump.stat().st_size == complete, f"{label}: the file is cut back to the complete dump "
              f"({dump.stat().st_size} vs {complete})")
        check(proc.poll() is None, f"{label}: the JVM keeps running")
        prlimit_fsize(proc.pid, "unlimited")
        check(quit_and_wait(proc, folder, 3), f"{label}: the next dump works once there is room")
        time.sleep(0.3)
        proc.kill()
        proc.wait()
        ok, output = verify_binary(dump)
        check(ok and "heap dumps: 2" in output, f"{label}: two complete dumps in the file:\n{output[-2000:]}")
        ok, output = heap_check("shapes", dump, 1)
        check(ok, f"{label}: VisualVM reads the dump written after the error:\n{output[-2000:]}")


def heap_all_run(home):
    label = "jdk17 heap=all"
    with heap_shapes(home, "heap=all,format=b,file=dump.hprof", args=[30]) as (proc, folder):
        check(wait_for(lambda: "ready" in read_text(folder / "stdout.txt"), 60), f"{label}: program ready")
        check(quit_and_wait(proc, folder, 1), f"{label}: a dump")
        terminate(proc)
        ok, output = verify_binary(folder / "dump.hprof")
        check(ok, f"{label}: the verifier accepts the file:\n{output[-2000:]}")
        ok, output = heap_check("shapes", folder / "dump.hprof", 0)
        check(ok, f"{label}: VisualVM finds the known heap (allocation-tagged objects and threads):\n{output[-2000:]}")
        model = heap_model.read(folder / "dump.hprof", 0)
        written = model.traces
        named = [t for t in model.instance_traces.values() if t != 300000]
        check(len(named) >= 100, f"{label}: objects allocated while tracking name their allocation trace ({len(named)})")
        check(all(t in written for t in named), f"{label}: every such trace is written")


def has_gc(home, gc):
    probe = subprocess.run(java_command(home, f"-XX:+Use{gc}GC", "-version"), capture_output=True, text=True)
    return probe.returncode == 0


def other_collectors():
    for jdk, home in jdks():
        binary_run(jdk, home, "Z")
        if FULL:
            for gc in ("Serial", "Parallel", "Shenandoah"):
                if has_gc(home, gc):
                    binary_run(jdk, home, gc)
                else:
                    print(f"SKIP: {jdk} has no {gc} collector")
            binary_run(jdk, home, "G1", jvm_args=["-XX:-UseCompressedOops"])
    binary_run("jdk17", JAVA17, "Parallel", jvm_args=["-XX:-UseCompressedOops"])


run_cases("heap_dump", {
    "g1": lambda: [binary_run(jdk, home, "G1", compare=True) for jdk, home in jdks()],
    "collectors": other_collectors,
    "quiescent": lambda: [quiescent_run(jdk, home) for jdk, home in jdks()],
    "attached": lambda: [quiescent_run(jdk, home, attach=True) for jdk, home in jdks()],
    "text": lambda: [text_run(jdk, home) for jdk, home in jdks()],
    "blank": lambda: blank_run(JAVA17),
    "signed": lambda: signed_run(JAVA17),
    "link_failure": lambda: link_failure_run(JAVA17),
    "heap_all": lambda: heap_all_run(JAVA17),
    "busy": lambda: busy_run(JAVA17),
    "churn": lambda: churn_run(JAVA17),
    "disk_full": lambda: disk_full_run(JAVA17),
})
