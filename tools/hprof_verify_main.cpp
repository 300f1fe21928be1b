// hprof-verify: checks HPROF binary files with the verifier library and prints what they hold.

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "hprof_input.h"
#include "hprof_verifier.h"

namespace {

constexpr char kUsage[] =
    "usage: hprof-verify [--strict] [--classes] [--quiet] FILE...\n"
    "Checks HPROF binary files (JAVA PROFILE 1.0.1 / 1.0.2) and prints a summary of each.\n"
    "A gzip file (jcmd GC.heap_dump -gz=N, fasthprof gz=y) is decompressed first.\n"
    "Every file the JDK's own dumper writes passes; --strict adds what fasthprof's files promise.\n"
    "  --strict   also require every trace serial to be defined before a record names it\n"
    "  --classes  also print, per heap dump, the number of objects of each class\n"
    "  --quiet    print nothing for files that pass\n"
    "  --help     print this text\n"
    "Exit status: 0 if every file passes, 1 if one fails (first error and its byte offset on stderr),\n"
    "2 on a usage error or an unreadable file.\n";

}  // namespace

int main(int argc, char** argv) {
  bool classes = false;
  bool quiet = false;
  bool strict = false;
  std::vector<const char*> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--classes") == 0) {
      classes = true;
    } else if (std::strcmp(argv[i], "--strict") == 0) {
      strict = true;
    } else if (std::strcmp(argv[i], "--quiet") == 0) {
      quiet = true;
    } else if (std::strcmp(argv[i], "--help") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      std::fprintf(stderr, "hprof-verify: unknown option %s\n%s", argv[i], kUsage);
      return 2;
    } else {
      files.push_back(argv[i]);
    }
  }
  if (files.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  fasthprof::VerifyOptions options;
  options.count_classes = classes;
  options.strict = strict;
  int status = 0;
  for (const char* path : files) {
    fasthprof::HprofInput file;
    std::string error;
    if (!file.open(path, &error)) {
      // A gzip file that does not decompress is a bad file, not an unreadable one.
      if (file.compressed()) {
        std::fprintf(stderr, "hprof-verify: %s: %s\n", path, error.c_str());
        status = 1;
        continue;
      }
      std::fprintf(stderr, "hprof-verify: %s: cannot read: %s\n", path, error.c_str());
      return 2;
    }
    fasthprof::VerifyResult result = fasthprof::verify_hprof(file.data(), file.size(), options);
    if (!result.ok) {
      std::fprintf(stderr, "hprof-verify: %s: error at byte %" PRIu64 ": %s\n", path, result.error_offset,
                   result.error.c_str());
      status = 1;
      continue;
    }
    if (!quiet) {
      std::printf("%s: ok\n%s", path, fasthprof::format_verify_summary(result, classes).c_str());
      if (file.compressed()) {
        std::printf("gzip: %" PRIu64 " members, %" PRIu64 " bytes stored, %" PRIu64 " bytes of HPROF\n",
                    file.members(), file.stored_size(), file.size());
      }
    }
  }
  return status;
}
