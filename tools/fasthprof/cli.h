// What every verb of the `fasthprof` command shares: its argument loop (-o FILE, --help), the
// output (standard output or -o FILE), reading an input file (plain, or gzip of any layout: the
// JDK's chunked -gz files, fasthprof's gz=y, plain gzip) into the HPROF model, and the one-line
// error messages with their exit status.
//
// Exit status of every verb: 0 done; 1 the verb's own verdict (diff --fail-if met, verify found a
// file bad); 2 bad usage or bad input (unreadable, not HPROF binary, truncated, malformed), with one
// line on stderr.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hprof_input.h"
#include "hprof_model.h"
#include "text_profile.h"

namespace fasthprof::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitVerdict = 1;
inline constexpr int kExitBadInput = 2;

// One verb of the command.
struct Verb {
  const char* name;
  const char* summary;  // one line for `fasthprof help`
  const char* usage;    // the --help text
  int (*run)(int argc, char** argv);  // argv[0] is the verb's name
};

// The verbs, in the order `fasthprof help` lists them.
const std::vector<Verb>& verbs();

// Prints "fasthprof <verb>: <message>" on stderr; returns kExitBadInput.
__attribute__((format(printf, 2, 3))) int fail(const char* verb, const char* format, ...);

// The arguments of one verb: options with and without a value, and operands. -o FILE and --help
// are every verb's; a verb names its own with `flags` (no value) and `valued` (one value).
struct Args {
  std::vector<std::string_view> operands;
  std::vector<std::pair<std::string_view, std::string_view>> options;  // name, value ("" for a flag)
  const char* output = nullptr;
  bool help = false;

  bool has(std::string_view name) const;
  // Value of the last occurrence of an option, or fallback.
  std::string_view value(std::string_view name, std::string_view fallback = {}) const;
  // Values of every occurrence, in order.
  std::vector<std::string_view> values(std::string_view name) const;
};

// Parses argv[1..argc) of the verb of that name. False after a message (fail()) for an unknown option or a
// missing value.
bool parse_args(const char* verb, int argc, char** argv, const std::vector<std::string_view>& flags,
                const std::vector<std::string_view>& valued, Args* args);

// Parses a decimal count (for --top and the like). False when text is not one.
bool parse_count(std::string_view text, uint64_t* value);
// Parses a byte count, optionally with K, M, G or T (powers of 1024): "512M". False when text is not one.
bool parse_size(std::string_view text, uint64_t* value);

// --max-expanded SIZE: every verb that reads a file takes it (listed in its `valued` options),
// and its --help prints this line.
inline constexpr char kMaxExpandedOption[] = "--max-expanded";
#define FASTHPROF_MAX_EXPANDED_HELP                                                                     \
  "  --max-expanded SIZE  how far a gzip FILE may decompress (K, M, G suffixes;\n" \
  "             default 100 times the file, at least 256M, and never past 90 % of\n"      \
  "             $TMPDIR's free space)\n"

// The verb's output: standard output, or the -o file (created, truncated, mode 0644 less umask).
class Output {
 public:
  Output() = default;
  ~Output();
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  // False after a message when the file cannot be created.
  bool open(const char* verb, const char* path);
  FILE* file() const { return file_; }
  // Flushes and closes; false after a message when a write failed (a full disk).
  bool close(const char* verb);

 private:
  FILE* file_ = stdout;
  const char* path_ = nullptr;
};

// An input file read into the model, or with text a text file (format=a, cpu=old) into text_profile.
struct Loaded {
  HprofInput input;
  HprofModel model;
  bool text = false;
  TextProfile text_profile;
};

// Opens path (decompressing gzip, up to --max-expanded of args) and loads it. On failure prints
// the one-line message (cannot read, a text file where binary is needed, a gzip file past its
// limit, not HPROF, truncated or malformed at byte N or line N) and returns nullptr. text_too:
// the verb reads text files too (TextProfile). keep_pages: the pages read stay in the process
// (a verb that goes over the dump again at once, such as dominators, would only fault them back).
// observer: told of each heap dump sub-record during the model's pass (HprofModel::load).
std::unique_ptr<Loaded> load(const char* verb, const char* path, const Args& args, bool text_too = false,
                             bool keep_pages = false, HeapDumpObserver* observer = nullptr);

// Whether data starts like a format=a (text) file of the original agent or fasthprof.
bool looks_like_text_profile(const uint8_t* data, uint64_t size);

// text with <, >, & and " written as HTML entities, for a page's text and attribute values.
std::string html_text(std::string_view text);

}  // namespace fasthprof::cli
