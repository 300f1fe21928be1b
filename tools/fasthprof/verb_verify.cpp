// `fasthprof verify` and `hprof-verify`: one implementation, the verifier library's
// (hprof/hprof_verifier.h), with the same options and exit status under either name.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "hprof_input.h"
#include "hprof_verifier.h"
#include "verbs.h"

namespace fasthprof::cli {

const char kVerifyUsage[] =
    "usage: fasthprof verify [--strict] [--classes] [--quiet] [--max-expanded SIZE]\n"
    "                        [-o OUT] FILE...\n"
    "       (also installed as hprof-verify, with the same options)\n"
    "Checks HPROF binary files (JAVA PROFILE 1.0.1 / 1.0.2) and prints a summary of\n"
    "each. A gzip file (jcmd GC.heap_dump -gz=N, fasthprof gz=y, plain gzip) is\n"
    "decompressed first. Every file the JDK's own dumper writes passes; --strict adds\n"
    "what fasthprof's files promise.\n"
    "  --strict   also require every trace serial to be defined before a record names\n"
    "             it, and in a dump every class before its subclasses and instances,\n"
    "             every reference resolved\n"
    "  --classes  also print, per heap dump, the number of objects of each class\n"
    "  --quiet    print nothing for files that pass\n"
    "  -o OUT     write the summaries to OUT instead of standard output\n"
    "  --help     print this text\n"
    FASTHPROF_MAX_EXPANDED_HELP
    "Exit status: 0 if every file passes, 1 if one fails (first error and its byte\n"
    "offset on stderr), 2 on a usage error or an unreadable file.\n";

int verify_command(const char* program, int argc, char** argv) {
  bool classes = false;
  bool quiet = false;
  bool strict = false;
  const char* output_path = nullptr;
  const char* max_expanded = nullptr;
  std::vector<const char*> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--classes") == 0) {
      classes = true;
    } else if (std::strcmp(argv[i], "--strict") == 0) {
      strict = true;
    } else if (std::strcmp(argv[i], "--quiet") == 0) {
      quiet = true;
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kVerifyUsage, stdout);
      return kExitOk;
    } else if (std::strcmp(argv[i], kMaxExpandedOption) == 0 && i + 1 < argc) {
      max_expanded = argv[++i];
    } else if (std::strncmp(argv[i], "--max-expanded=", 15) == 0) {
      max_expanded = argv[i] + 15;
    } else if (std::strcmp(argv[i], "-o") == 0 || std::strcmp(argv[i], "--output") == 0) {
      if (i + 1 == argc) {
        std::fprintf(stderr, "%s: %s needs a file name\n", program, argv[i]);
        return kExitBadInput;
      }
      output_path = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      std::fprintf(stderr, "%s: unknown option %s\n%s", program, argv[i], kVerifyUsage);
      return kExitBadInput;
    } else {
      files.push_back(argv[i]);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "%s: no file given\n%s", program, kVerifyUsage);
    return kExitBadInput;
  }
  Output output;
  if (!output.open("verify", output_path)) return kExitBadInput;
  FILE* out = output.file();
  fasthprof::VerifyOptions options;
  options.count_classes = classes;
  options.strict = strict;
  int status = kExitOk;
  for (const char* path : files) {
    fasthprof::HprofInput file;
    std::string error;
    if (max_expanded != nullptr) {
      uint64_t bytes = 0;
      if (!parse_size(max_expanded, &bytes) || bytes == 0) {
        std::fprintf(stderr, "%s: --max-expanded takes a size in bytes, with K, M, G or T: 512M\n", program);
        return kExitBadInput;
      }
      file.set_max_expanded(bytes);
    }
    if (!file.open(path, &error)) {
      // Past the limit the file was not checked: a refusal, not a verdict.
      if (file.expansion_limited()) {
        std::fprintf(stderr, "%s: %s: %s; --max-expanded SIZE allows more\n", program, path, error.c_str());
        return kExitBadInput;
      }
      // A gzip file that does not decompress is a bad file, not an unreadable one.
      if (file.compressed()) {
        std::fprintf(stderr, "%s: %s: %s\n", program, path, error.c_str());
        status = kExitVerdict;
        continue;
      }
      std::fprintf(stderr, "%s: %s: cannot read: %s\n", program, path, error.c_str());
      return kExitBadInput;
    }
    if (looks_like_text_profile(file.data(), file.size())) {
      std::fprintf(stderr, "%s: %s: a text profile (format=a); only binary files are verified\n", program, path);
      status = kExitVerdict;
      continue;
    }
    options.input = &file;
    fasthprof::VerifyResult result = fasthprof::verify_hprof(file.data(), file.size(), options);
    if (!result.ok) {
      std::fprintf(stderr, "%s: %s: error at byte %" PRIu64 ": %s\n", program, path, result.error_offset,
                   result.error.c_str());
      status = kExitVerdict;
      continue;
    }
    if (!quiet) {
      std::fprintf(out, "%s: ok\n%s", path, fasthprof::format_verify_summary(result, classes).c_str());
      if (file.compressed()) {
        std::fprintf(out, "gzip: %" PRIu64 " members, %" PRIu64 " bytes stored, %" PRIu64 " bytes of HPROF\n",
                     file.members(), file.stored_size(), file.size());
      }
    }
  }
  if (!output.close("verify")) return kExitBadInput;
  return status;
}

int verify_main(int argc, char** argv) { return verify_command("fasthprof verify", argc, argv); }

}  // namespace fasthprof::cli
