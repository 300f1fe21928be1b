// The one table of agent options. It drives the parser (options.cpp), the `help` text and the
// unit test that runs over every row; adding an option means adding a row here and nowhere else.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace fasthprof {

struct Options;

// How the tokenizer reads an option's value (docs/compatibility.md §1.2). The buffer limits are the
// original's: a value that does not fit is treated like an empty one (the row's syntax error).
enum class ValueSyntax {
  kText,      // runs to the next ',', at most 4096 bytes (FILENAME_MAX)
  kSwitch,    // y|n, runs to the next ',', at most 79 bytes
  kHostPort,  // host runs to ':' (or "[v6]:"), port to ',' (at most 15 bytes)
  kRemoved,   // no value is read; the option is always an error (syntax_error is the message)
};

// Which block of the help text lists the row.
enum class HelpBlock {
  kMain,       // "Option Name and Value" table
  kObsolete,   // "Obsolete Options": name=syntax only
  kDebug,      // the original's DEBUG block: accepted, never shown
  kFasthprof,  // "fasthprof Options": our own additions
};

// A value as the tokenizer delivered it: `text` is the whole value (the host for kHostPort),
// `port` is set only for kHostPort.
struct OptionValue {
  std::string_view text;
  std::string_view port;
};

struct OptionRow {
  const char* name;          // case-sensitive, as the user types it
  const char* help_syntax;   // the help's value column after "name=", e.g. "dump|sites|all"
  const char* description;   // help description, at most 30 characters
  const char* default_text;  // help Default column
  HelpBlock block;
  ValueSyntax syntax;
  // Message when the value is missing, empty or too long for the tokenizer (for kRemoved: always).
  const char* syntax_error;
  // Message when apply() rejects the value.
  const char* value_error;
  // Stores the value into options; returns false if the value is not acceptable. Does not
  // allocate except for file/host strings. Null for kRemoved rows.
  bool (*apply)(const OptionValue& value, Options* options);
  // Extra help lines printed under the row, each indented 24 spaces; may be null.
  const char* help_note;
  // file= and net= share one "may appear only once" budget.
  bool file_or_net;
};

// Every option the parser accepts, in help order. Static storage, never changes.
std::span<const OptionRow> option_table();

// The row named exactly `name`, or null. Linear search over ~30 rows; no allocation.
const OptionRow* find_option(std::string_view name);

}  // namespace fasthprof
