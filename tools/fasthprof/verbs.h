// The verbs of the `fasthprof` command: each one's entry point and --help text. A verb is listed
// in cli::verbs() (main.cpp) once it is built; nothing is listed before.
#pragma once

#include "cli.h"

namespace fasthprof::cli {

// verify: also the whole of hprof-verify, whose messages name `program`.
extern const char kVerifyUsage[];
int verify_command(const char* program, int argc, char** argv);
int verify_main(int argc, char** argv);

extern const char kSummaryUsage[];
int summary_main(int argc, char** argv);
// summary of a text file (verb_summary_text.cpp).
void print_text_summary(FILE* out, const char* path, const TextProfile& text, uint64_t top, bool by_method);
// summary --json, of either (verb_summary_json.cpp).
void print_summary_json(FILE* out, const char* path, const Loaded& loaded, uint64_t top, bool by_method);

// dominators, path and leaks: a heap dump's object graph (hprof/heap_graph.h).
extern const char kDominatorsUsage[];
int dominators_main(int argc, char** argv);
extern const char kPathUsage[];
int path_main(int argc, char** argv);
extern const char kLeaksUsage[];
int leaks_main(int argc, char** argv);
extern const char kReportUsage[];
int report_main(int argc, char** argv);

extern const char kCollapsedUsage[];
int collapsed_main(int argc, char** argv);

extern const char kDiffUsage[];
int diff_main(int argc, char** argv);

extern const char kTextUsage[];
int text_main(int argc, char** argv);

extern const char kFlameUsage[];
int flame_main(int argc, char** argv);

// Built only with Debian's protobuf and profile.proto (tools/meson.build).
extern const char kPprofUsage[];
int pprof_main(int argc, char** argv);

extern const char kListenUsage[];
int listen_main(int argc, char** argv);

extern const char kAttachUsage[];
int attach_main(int argc, char** argv);

}  // namespace fasthprof::cli
