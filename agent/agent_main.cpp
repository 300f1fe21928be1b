// The three symbols the library exports (see exports.map); everything else is hidden.
#include <jvmti.h>

#include "profiler.h"

extern "C" JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM* vm, char* options, void*) {
  return fasthprof::Profiler::load(vm, options, /*attach=*/false);
}

extern "C" JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM* vm, char* options, void*) {
  return fasthprof::Profiler::load(vm, options, /*attach=*/true);
}

extern "C" JNIEXPORT void JNICALL Agent_OnUnload(JavaVM*) { fasthprof::Profiler::unload(); }
