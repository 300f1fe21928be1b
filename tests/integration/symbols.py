"""The library's face to the JVM: the three Agent_ entry points and the natives of the tracker's
java.lang.FasthprofAllocs (which the JVM looks up by name in an agent's library), nothing else;
libstdc++ linked in, libhprof.so beside it."""
import os
import subprocess

from harness import AGENT, AGENT_DIR, check, finish

dynamic = subprocess.run(["nm", "-D", "--defined-only", AGENT], capture_output=True, text=True).stdout
exported = sorted(line.split()[-1] for line in dynamic.splitlines() if line.strip())
check(exported == ["Agent_OnAttach", "Agent_OnLoad", "Agent_OnUnload", "Java_java_lang_FasthprofAllocs_callers",
                  "Java_java_lang_FasthprofAllocs_cloneCallers", "Java_java_lang_FasthprofAllocs_newClassSite"],
      f"only the three Agent_ entry points and the tracker's three natives are exported, got {exported}")
needed = subprocess.run(["readelf", "-d", AGENT], capture_output=True, text=True).stdout
check("libstdc++" not in needed, "libstdc++ is linked statically")
check("libjemalloc" not in needed, "jemalloc is not linked at load time (static TLS)")
link = os.path.join(AGENT_DIR, "libhprof.so")
check(os.path.islink(link) and os.readlink(link) == "libfasthprof.so", "libhprof.so links to libfasthprof.so")

finish("symbols")
