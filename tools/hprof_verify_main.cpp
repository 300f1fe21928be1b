// hprof-verify: the name `fasthprof verify` had before the command existed, kept for scripts; the
// same code under either name (tools/fasthprof/verb_verify.cpp).
#include <cstdio>
#include <cstring>

#include "verbs.h"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--version") == 0) {
      std::printf("hprof-verify (fasthprof %s)\n", FASTHPROF_VERSION);
      return 0;
    }
  }
  return fasthprof::cli::verify_command("hprof-verify", argc, argv);
}
