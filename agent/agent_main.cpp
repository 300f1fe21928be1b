// The three symbols the library exports (see exports.map); everything else is hidden.
#include <jvmti.h>

#include "entry_guard.h"
#include "profiler.h"

using fasthprof::guard_entry;
using fasthprof::Profiler;

extern "C" JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM* vm, char* options, void*) {
  return guard_entry<jint>(
      "Agent_OnLoad", "the agent did not start", JNI_ERR,
      [&] { return Profiler::load(vm, options, /*attach=*/false); },
      [] { Profiler::abandon_load(/*attach=*/false); });
}

extern "C" JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM* vm, char* options, void*) {
  return guard_entry<jint>(
      "Agent_OnAttach", "the agent did not start; the VM runs on without it", JNI_ERR,
      [&] { return Profiler::load(vm, options, /*attach=*/true); },
      [] { Profiler::abandon_load(/*attach=*/true); });
}

extern "C" JNIEXPORT void JNICALL Agent_OnUnload(JavaVM*) {
  guard_entry("Agent_OnUnload", "nothing more is done", [] { Profiler::unload(); }, [] {});
}
