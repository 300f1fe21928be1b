// hprof-verify: the name `fasthprof verify` had before the command existed, kept for scripts; the
// same code under either name (tools/fasthprof/verb_verify.cpp).
#include "verbs.h"

int main(int argc, char** argv) { return fasthprof::cli::verify_command("hprof-verify", argc, argv); }
