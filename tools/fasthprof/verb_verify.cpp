// `fasthprof verify` and `hprof-verify`: one implementation, the verifier library's
// (hprof/hprof_verifier.h), with the same options and exit status under either name.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/hprof_format.h"
#include "hprof_input.h"
#include "hprof_verifier.h"
#include "json_writer.h"
#include "verbs.h"

namespace fasthprof::cli {

const char kVerifyUsage[] =
    "usage: fasthprof verify [--strict] [--classes] [--quiet] [--json]\n"
    "                        [--max-expanded SIZE] [-o OUT] FILE...\n"
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
    "  --json     one JSON document instead: {\"files\": [...]}, each file with \"ok\",\n"
    "             its error and byte offset when it fails, else the summary's figures\n"
    "             (records and sub-records by tag name, each dump's counts)\n"
    "  -o OUT     write the summaries to OUT instead of standard output\n"
    "  --help     print this text\n"
    FASTHPROF_MAX_EXPANDED_HELP
    "Exit status: 0 if every file passes, 1 if one fails (first error and its byte\n"
    "offset on stderr), 2 on a usage error or an unreadable file.\n";

namespace {

// {"name": count, ...} of the tags counted, by their names in the binary format.
void tag_counts(JsonWriter* json, const std::array<uint64_t, 256>& counts, bool heap) {
  json->begin_object();
  for (size_t tag = 0; tag < counts.size(); ++tag) {
    if (counts[tag] == 0) continue;
    const auto name = static_cast<uint8_t>(tag);
    json->field(heap ? heap_tag_name(name) : record_tag_name(name), counts[tag]);
  }
  json->end_object();
}

// One file's entry of --json: what the text summary says, as figures.
void file_json(JsonWriter* json, const char* path, const fasthprof::VerifyResult& result,
               const fasthprof::HprofInput& file) {
  json->begin_object();
  json->field("file", std::string_view(path));
  json->field("ok", result.ok);
  if (!result.ok) {
    json->field("error", std::string_view(result.error));
    json->field("error_offset", result.error_offset);
    json->end_object();
    return;
  }
  json->field("version", std::string_view(result.version));
  json->field("identifier_size", result.id_size);
  json->field("timestamp_millis", result.timestamp_millis);
  json->key("records");
  tag_counts(json, result.record_counts, false);
  json->key("heap_dumps");
  json->begin_array();
  for (const fasthprof::DumpSummary& dump : result.dumps) {
    json->begin_object();
    json->field("offset", dump.offset);
    json->field("segments", dump.segments);
    json->field("classes", dump.classes);
    json->field("instances", dump.instances);
    json->field("object_arrays", dump.object_arrays);
    json->field("primitive_arrays", dump.primitive_arrays);
    json->field("roots", dump.roots);
    json->field("unresolved_references", dump.unresolved_references);
    json->key("sub_records");
    tag_counts(json, dump.sub_record_counts, true);
    if (!dump.class_counts.empty()) {
      json->key("objects_per_class");
      json->begin_object();
      for (const auto& [name, count] : dump.class_counts) json->field(name, count);
      json->end_object();
    }
    json->end_object();
  }
  json->end_array();
  if (file.compressed()) {
    json->key("gzip");
    json->begin_object();
    json->field("members", file.members());
    json->field("stored_bytes", file.stored_size());
    json->field("hprof_bytes", static_cast<uint64_t>(file.size()));
    json->end_object();
  }
  json->end_object();
}

// A file that failed before the verifier read it, as a failed result (byte 0).
fasthprof::VerifyResult refused(std::string error) {
  fasthprof::VerifyResult result;
  result.error = std::move(error);
  return result;
}

}  // namespace

int verify_command(const char* program, int argc, char** argv) {
  bool classes = false;
  bool as_json = false;
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
    } else if (std::strcmp(argv[i], "--json") == 0) {
      as_json = true;
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
  // With --json the document closes on every way out, a refusal (exit 2) included: what was
  // checked before it stays readable.
  JsonWriter json(out);
  if (as_json) {
    json.begin_object();
    json.key("files");
    json.begin_array();
  }
  auto leave = [&](int code) {
    if (as_json) {
      json.end_array();
      json.end_object();
      json.finish();
    }
    return output.close("verify") ? code : kExitBadInput;
  };
  for (const char* path : files) {
    fasthprof::HprofInput file;
    std::string error;
    if (max_expanded != nullptr) {
      uint64_t bytes = 0;
      if (!parse_size(max_expanded, &bytes) || bytes == 0) {
        std::fprintf(stderr, "%s: --max-expanded takes a size in bytes, with K, M, G or T: 512M\n", program);
        return leave(kExitBadInput);
      }
      file.set_max_expanded(bytes);
    }
    if (!file.open(path, &error)) {
      // Past the limit the file was not checked: a refusal, not a verdict.
      if (file.expansion_limited()) {
        std::fprintf(stderr, "%s: %s: %s; --max-expanded SIZE allows more\n", program, path, error.c_str());
        return leave(kExitBadInput);
      }
      // A gzip file that does not decompress is a bad file, not an unreadable one.
      if (file.compressed()) {
        std::fprintf(stderr, "%s: %s: %s\n", program, path, error.c_str());
        status = kExitVerdict;
        if (as_json) file_json(&json, path, refused(error), file);
        continue;
      }
      std::fprintf(stderr, "%s: %s: cannot read: %s\n", program, path, error.c_str());
      return leave(kExitBadInput);
    }
    if (looks_like_text_profile(file.data(), file.size())) {
      std::fprintf(stderr, "%s: %s: a text profile (format=a); only binary files are verified\n", program, path);
      status = kExitVerdict;
      if (as_json) file_json(&json, path, refused("a text profile (format=a); only binary files are verified"), file);
      continue;
    }
    options.input = &file;
    fasthprof::VerifyResult result = fasthprof::verify_hprof(file.data(), file.size(), options);
    if (!result.ok) {
      std::fprintf(stderr, "%s: %s: error at byte %" PRIu64 ": %s\n", program, path, result.error_offset,
                   result.error.c_str());
      status = kExitVerdict;
      if (as_json) file_json(&json, path, result, file);
      continue;
    }
    if (as_json) {
      file_json(&json, path, result, file);
    } else if (!quiet) {
      std::fprintf(out, "%s: ok\n%s", path, fasthprof::format_verify_summary(result, classes).c_str());
      if (file.compressed()) {
        std::fprintf(out, "gzip: %" PRIu64 " members, %" PRIu64 " bytes stored, %" PRIu64 " bytes of HPROF\n",
                     file.members(), file.stored_size(), file.size());
      }
    }
  }
  return leave(status);
}

int verify_main(int argc, char** argv) { return verify_command("fasthprof verify", argc, argv); }

}  // namespace fasthprof::cli
