"""VisualVM's retained-size computation of a heap dump, for bench/dominators_bench.py: the Debian
`visualvm` package's heap library (as tests/visualvm/RetainedCheck.java uses it) run headless by a
small driver compiled here, which opens the dump, computes the retained size of every object (the
library's dominator tree, done at once for all objects by getBiggestObjectsByRetainedSize) and
prints the seconds of each step as it ends.
"""
import os
import pathlib
import selectors
import shutil
import subprocess
import time

JAR = "/usr/share/visualvm/visualvm/modules/org-graalvm-visualvm-lib-jfluid-heap.jar"

DRIVER = r"""
import java.io.File;
import java.util.List;
import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;

public class RetainedBench {
    public static void main(String[] args) throws Exception {
        long start = System.nanoTime();
        Heap heap = HeapFactory.createHeap(new File(args[0]));
        long instances = heap.getSummary().getTotalLiveInstances();
        System.out.println("opened " + (System.nanoTime() - start) / 1e9 + " " + instances);
        System.out.flush();
        List<Instance> top = heap.getBiggestObjectsByRetainedSize(1);
        System.out.println("retained " + (System.nanoTime() - start) / 1e9 + " "
                + (top.isEmpty() ? 0 : top.get(0).getRetainedSize()));
        System.out.flush();
    }
}
"""


def jar():
    """The library's jar, or None when the package is not installed."""
    for part in os.environ.get("HEAP_CHECK_CLASSES", "").split(":") + [JAR]:
        if part.endswith(".jar") and os.path.isfile(part):
            return part
    return None


def run(java_home, dump, folder, heap="8g", timeout=900):
    """{"opened": seconds, "objects": n, "retained": seconds, "cpu": seconds, "rss": MiB} as far as
    VisualVM got: "retained" is missing when it did not finish within timeout seconds (it is then
    killed) or failed, and "error" says which."""
    library = jar()
    if library is None:
        return {"error": "VisualVM's heap library is not installed (Debian package visualvm)"}
    folder = pathlib.Path(folder)
    (folder / "RetainedBench.java").write_text(DRIVER)
    subprocess.run([os.path.join(java_home, "bin", "javac"), "-d", str(folder), "-cp", library,
                    str(folder / "RetainedBench.java")], check=True)
    scratch = folder / "visualvm-tmp"
    scratch.mkdir(exist_ok=True)
    # The library keeps its index in DUMP.hwcache beside the dump, and opens a dump again from it:
    # one made here is removed, and a run on a dump that has one says so (its time is not the same).
    cache = pathlib.Path(f"{dump}.hwcache")
    cached = cache.exists()
    # Other scratch files go to java.io.tmpdir: the bench folder, removed afterwards.
    proc = subprocess.Popen([os.path.join(java_home, "bin", "java"), f"-Xmx{heap}", "-Xcheck:jni",
                             f"-Djava.io.tmpdir={scratch}", "-cp", f"{folder}:{library}", "RetainedBench", str(dump)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    result = {}
    deadline = time.monotonic() + timeout
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    pending = b""
    ended = False
    while "retained" not in result and not ended and time.monotonic() < deadline:
        if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
            continue
        chunk = os.read(proc.stdout.fileno(), 4096)
        ended = not chunk
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            words = line.decode().split()
            if words and words[0] == "opened":
                result["opened"], result["objects"] = float(words[1]), int(words[2])
            elif words and words[0] == "retained":
                result["retained"], result["root_retained"] = float(words[1]), int(words[2])
    if "retained" not in result:
        proc.kill()
        result["error"] = (f"did not finish within {timeout} s" if time.monotonic() >= deadline
                           else f"failed: {proc.stderr.read().decode()[-1000:]}")
    _, status, usage = os.wait4(proc.pid, 0)
    result["cpu"] = usage.ru_utime + usage.ru_stime
    result["rss"] = usage.ru_maxrss / 1024
    result["cached"] = cached
    if not cached:
        shutil.rmtree(cache, ignore_errors=True)
    return result
