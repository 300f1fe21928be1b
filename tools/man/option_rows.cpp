// option-rows: prints the agent's option table for tools/man/make_manuals.py, which writes the
// fasthprof-agent(7) manual page from it at build time (so the page cannot drift from the parser).
//   option-rows          one line per row: block, name, syntax, description, default, note, removed,
//                        separated by tabs; a note's line breaks written as \n
//   option-rows --usage  the agent's `help` text, as java -agentlib:hprof=help prints it
// Not installed.
#include <cstdio>
#include <cstring>
#include <string>

#include "options/option_table.h"
#include "options/options.h"

namespace {

const char* block_name(fasthprof::HelpBlock block) {
  switch (block) {
    case fasthprof::HelpBlock::kMain: return "main";
    case fasthprof::HelpBlock::kObsolete: return "obsolete";
    case fasthprof::HelpBlock::kDebug: return "debug";
    case fasthprof::HelpBlock::kFasthprof: return "fasthprof";
  }
  return "unknown";
}

std::string escaped_note(const char* note) {
  std::string out;
  for (const char* c = note == nullptr ? "" : note; *c != '\0'; ++c) {
    if (*c == '\n') {
      out += "\\n";
    } else {
      out += *c;
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--usage") == 0) {
    std::fputs(fasthprof::usage_text().c_str(), stdout);
    return 0;
  }
  for (const fasthprof::OptionRow& row : fasthprof::option_table()) {
    std::printf("%s\t%s\t%s\t%s\t%s\t%s\t%d\n", block_name(row.block), row.name, row.help_syntax,
                row.description, row.default_text, escaped_note(row.help_note).c_str(),
                row.syntax == fasthprof::ValueSyntax::kRemoved ? 1 : 0);
  }
  return 0;
}
