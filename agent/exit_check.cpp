#include "exit_check.h"

#include "hprof_input.h"
#include "hprof_verifier.h"
#include "jvmti_support.h"

namespace fasthprof {

bool check_binary_file(const std::string& path, bool verbose) {
  HprofInput file;  // gz=y output is decompressed first
  std::string error;
  if (!file.open(path.c_str(), &error)) {
    jvmti::print_error("cannot read " + path + " to verify it: " + error);
    return false;
  }
  VerifyOptions strict;
  strict.strict = true;  // the agent's own file keeps every promise
  strict.input = &file;
  VerifyResult result = verify_hprof(file.data(), file.size(), strict);
  if (!result.ok) {
    jvmti::print_error(path + " failed verification at byte " + std::to_string(result.error_offset) +
                       ": " + result.error);
    return false;
  }
  if (verbose) {
    uint64_t records = 0;
    for (uint64_t count : result.record_counts) records += count;
    std::string line = "fasthprof: verified " + path + ": " + std::to_string(records) + " records, " +
                       std::to_string(result.dumps.size()) + " heap dump(s)\n";
    write_stderr(line);
  }
  return true;
}

}  // namespace fasthprof
