// logflags=0x4 (the original's "verify format=b"): after the file is closed at VM death, read it
// back and check it with the same verifier as tools/hprof-verify.
#pragma once

#include <string>

namespace fasthprof {

// Verifies the binary profile at path. Prints `HPROF ERROR: <path> failed verification at byte N:
// <what>` on failure and, when verbose, one summary line on success. Returns whether it passed.
bool check_binary_file(const std::string& path, bool verbose);

}  // namespace fasthprof
