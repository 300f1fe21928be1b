#include "options/options.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>

#include "options/option_table.h"

namespace fasthprof {
namespace {

ParseResult parse(const char* options, const char* env = nullptr) {
  return parse_options(options, env);
}

Options parse_ok(const std::string& options) {
  ParseResult result = parse_options(options.c_str(), nullptr);
  EXPECT_EQ(ParseResult::Kind::kOk, result.kind) << options << " -> " << result.error;
  return result.options;
}

std::string parse_error(const std::string& options, const char* env = nullptr) {
  ParseResult result = parse_options(options.c_str(), env);
  EXPECT_EQ(ParseResult::Kind::kError, result.kind) << options;
  return result.error;
}

// Every one of the option strings is refused with the message.
void expect_errors(const std::string& message, std::initializer_list<const char*> option_strings) {
  for (const char* options : option_strings) EXPECT_EQ(message, parse_error(options)) << options;
}

// What the test expects of each table row. Every row must have an entry here (checked below),
// so a new option cannot be added without tests.
struct RowExpectation {
  std::function<bool(const Options&)> is_default;  // on the result of parsing ""
  std::string valid;                               // a whole accepted option string ("" if none)
  std::function<bool(const Options&)> applied;     // holds after parsing `valid`
  const char* bad_value;                           // rejected with value_error (null: none)
};

const std::map<std::string, RowExpectation>& expectations() {
  static const std::map<std::string, RowExpectation> table = {
      {"heap", {[](const Options& o) { return o.heap_dump && o.alloc_sites; }, "heap=dump",
                [](const Options& o) { return o.heap_dump && !o.alloc_sites; }, "DUMP"}},
      {"cpu", {[](const Options& o) { return !o.cpu_sampling && !o.cpu_timing; }, "cpu=y",
               [](const Options& o) { return o.cpu_sampling && !o.cpu_timing; }, "sample"}},
      {"monitor", {[](const Options& o) { return !o.monitor_tracing; }, "monitor=y",
                   [](const Options& o) { return o.monitor_tracing; }, "Y"}},
      {"format", {[](const Options& o) { return o.format == OutputFormat::kText; }, "format=b",
                  [](const Options& o) { return o.format == OutputFormat::kBinary; }, "c"}},
      {"file", {[](const Options& o) { return o.file.empty() && o.output_path() == "java.hprof.txt"; },
                "file=out.bin", [](const Options& o) { return o.output_path() == "out.bin"; },
                nullptr}},
      {"net", {[](const Options& o) { return o.net_host.empty() && o.net_port == 0; },
               "net=localhost:8000",
               [](const Options& o) {
                 return o.net_host == "localhost" && o.net_port == 8000 && o.output_path().empty();
               },
               "localhost:0"}},
      {"depth", {[](const Options& o) { return o.depth == 4 && o.prof_trace_depth == 4; }, "depth=12",
                 [](const Options& o) { return o.depth == 12 && o.prof_trace_depth == 12; }, "-1"}},
      {"interval", {[](const Options& o) { return o.interval_ms == 10; }, "interval=1",
                    [](const Options& o) { return o.interval_ms == 1; }, "0"}},
      {"cutoff", {[](const Options& o) { return o.cutoff == 0.0001; }, "cutoff=0.5",
                  [](const Options& o) { return o.cutoff == 0.5; }, "-0.1"}},
      {"lineno", {[](const Options& o) { return o.lineno; }, "lineno=n",
                  [](const Options& o) { return !o.lineno; }, "yes"}},
      {"thread", {[](const Options& o) { return !o.thread_in_traces; }, "thread=y",
                  [](const Options& o) { return o.thread_in_traces; }, "1"}},
      {"doe", {[](const Options& o) { return o.doe; }, "doe=n", [](const Options& o) { return !o.doe; },
               "N"}},
      {"msa", {[](const Options& o) { return !o.msa; }, "msa=y", [](const Options& o) { return o.msa; },
               "on"}},
      {"force", {[](const Options& o) { return o.force; }, "force=n",
                 [](const Options& o) { return !o.force; }, "no"}},
      {"verbose", {[](const Options& o) { return o.verbose; }, "verbose=n",
                   [](const Options& o) { return !o.verbose; }, "x"}},
      {"gc_okay", {[](const Options& o) { return !o.gc_okay_given; }, "gc_okay=y",
                   [](const Options& o) { return o.gc_okay_given; }, "maybe"}},
      {"primfields", {[](const Options& o) { return o.primfields; }, "primfields=n",
                      [](const Options& o) { return !o.primfields; }, "0"}},
      {"primarrays", {[](const Options& o) { return o.primarrays; }, "primarrays=n",
                      [](const Options& o) { return !o.primarrays; }, "false"}},
      {"debugflags", {[](const Options& o) { return o.debugflags == 0; }, "debugflags=0x1",
                      [](const Options& o) { return o.debugflags == 1; }, "one"}},
      {"logflags", {[](const Options& o) { return o.logflags == 0; }, "logflags=0xC",
                    [](const Options& o) { return o.logflags == 12; }, "0xZ"}},
      {"coredump", {[](const Options& o) { return !o.coredump; }, "coredump=y",
                    [](const Options& o) { return o.coredump; }, "t"}},
      {"errorexit", {[](const Options& o) { return !o.errorexit; }, "errorexit=y",
                     [](const Options& o) { return o.errorexit; }, "yy"}},
      {"pause", {[](const Options& o) { return !o.pause; }, "pause=y",
                 [](const Options& o) { return o.pause; }, "600"}},
      {"debug", {[](const Options& o) { return !o.debug; }, "debug=y",
                 [](const Options& o) { return o.debug; }, "on"}},
      {"X", {[](const Options& o) { return o.experiment == 0; }, "X=010",
             [](const Options& o) { return o.experiment == 8; }, "x1"}},
      {"exitpause", {[](const Options&) { return true; }, "", nullptr, nullptr}},
      {"precrash", {[](const Options&) { return true; }, "", nullptr, nullptr}},
      {"sample", {[](const Options& o) { return o.sample_bytes == 0; }, "sample=512k",
                  [](const Options& o) { return o.sample_bytes == 512 * 1024; }, "512kb"}},
      {"sites", {[](const Options& o) { return o.max_sites == 262144 && !o.max_sites_given; }, "heap=sites,sites=5000",
                 [](const Options& o) { return o.max_sites == 5000 && o.max_sites_given; }, "1023"}},
      {"live", {[](const Options& o) { return o.live; }, "heap=sites,live=n",
                [](const Options& o) { return !o.live; }, "no"}},
      {"alloc", {[](const Options& o) { return o.alloc == AllocCounting::kAuto; }, "heap=sites,live=n,alloc=inject",
                 [](const Options& o) { return o.alloc == AllocCounting::kInject; }, "events"}},
      {"gz", {[](const Options& o) { return !o.gzip; }, "format=b,gz=y",
              [](const Options& o) { return o.gzip; }, "Y"}},
      {"timeout", {[](const Options& o) { return o.net_timeout_seconds == 10 && !o.net_timeout_given; },
                   "net=localhost:8000,timeout=3",
                   [](const Options& o) { return o.net_timeout_seconds == 3 && o.net_timeout_given; }, "-1"}},
      {"commands",
       {[](const Options& o) { return o.net_commands == Options::NetCommands::kAll && !o.net_commands_given; },
        "net=localhost:8000,commands=noexit",
        [](const Options& o) { return o.net_commands == Options::NetCommands::kNoExit && o.net_commands_given; },
        "none"}},
      {"dumper", {[](const Options& o) { return o.dumpers == std::vector<HeapDumperChoice>{HeapDumperChoice::kAuto}; },
                  "heap=dump,format=b,dumper=vm+jvmti",
                  [](const Options& o) {
                    return o.dumpers == std::vector<HeapDumperChoice>{HeapDumperChoice::kVm, HeapDumperChoice::kJvmti};
                  },
                  "vm+"}},
      {"cpustacks", {[](const Options& o) { return !o.cpu_stacks_deferred; }, "cpu=samples,cpustacks=deferred",
                     [](const Options& o) { return o.cpu_stacks_deferred; }, "Signal"}},
  };
  return table;
}

}  // namespace

void PrintTo(const OptionRow& row, std::ostream* out) { *out << row.name; }

namespace {

class OptionRowTest : public testing::TestWithParam<OptionRow> {
 protected:
  const OptionRow& row() const { return GetParam(); }
  std::string with_value(const std::string& value) const { return std::string(row().name) + "=" + value; }
  const RowExpectation& expected() const { return expectations().at(row().name); }
};

TEST_P(OptionRowTest, HasExpectations) {
  EXPECT_EQ(1u, expectations().count(row().name)) << row().name;
}

TEST_P(OptionRowTest, DefaultValue) {
  ASSERT_EQ(1u, expectations().count(row().name));
  EXPECT_TRUE(expected().is_default(parse_ok(""))) << row().name;
}

TEST_P(OptionRowTest, ValidValueIsApplied) {
  ASSERT_EQ(1u, expectations().count(row().name));
  if (row().syntax == ValueSyntax::kRemoved) {
    EXPECT_EQ(row().syntax_error, parse_error(with_value("y")));
    EXPECT_EQ(row().syntax_error, parse_error(std::string("heap=dump,") + row().name));
    return;
  }
  Options options = parse_ok(expected().valid);
  EXPECT_TRUE(expected().applied(options)) << expected().valid;
}

TEST_P(OptionRowTest, EmptyValueGivesSyntaxError) {
  EXPECT_EQ(row().syntax_error, parse_error(with_value("")));
  EXPECT_EQ(row().syntax_error, parse_error(row().name));  // no '=' at all
  // net's host runs to ':' even across commas, so there the port is what is missing.
  const char* followed = row().syntax == ValueSyntax::kHostPort ? "net option missing port" : row().syntax_error;
  EXPECT_EQ(followed, parse_error(with_value(",heap=dump")));
}

TEST_P(OptionRowTest, BadValueGivesValueError) {
  ASSERT_EQ(1u, expectations().count(row().name));
  if (expected().bad_value == nullptr) return;
  EXPECT_EQ(row().value_error, parse_error(with_value(expected().bad_value)));
  EXPECT_EQ(row().value_error, parse_error("heap=sites," + with_value(expected().bad_value) + ",depth=3"));
}

TEST_P(OptionRowTest, ValueTooLongForTheOriginalBufferIsASyntaxError) {
  switch (row().syntax) {
    case ValueSyntax::kText:
      EXPECT_EQ(row().syntax_error, parse_error(with_value(std::string(4097, '1'))));
      if (std::string(row().name) != "file") {
        EXPECT_EQ(row().value_error, parse_error(with_value(std::string(4096, '@'))));
      } else {
        EXPECT_EQ(std::string(4096, '@'), parse_ok(with_value(std::string(4096, '@'))).file);
      }
      break;
    case ValueSyntax::kSwitch:
      EXPECT_EQ(row().syntax_error, parse_error(with_value(std::string(80, 'y'))));
      EXPECT_EQ(row().value_error, parse_error(with_value(std::string(79, 'y'))));
      break;
    case ValueSyntax::kHostPort:
      EXPECT_EQ(row().syntax_error, parse_error(with_value(std::string(4097, 'h') + ":80")));
      EXPECT_EQ("net option missing port", parse_error(with_value("h:" + std::string(16, '1'))));
      EXPECT_EQ(row().value_error, parse_error(with_value("h:" + std::string(15, '1'))));
      break;
    case ValueSyntax::kRemoved:
      EXPECT_EQ(row().syntax_error, parse_error(with_value(std::string(5000, 'y'))));
      break;
  }
}

TEST_P(OptionRowTest, HelpListsEveryUserFacingRow) {
  std::string help = usage_text();
  std::string line_start = "\n" + std::string(row().name) + "=" + row().help_syntax;
  if (row().block == HelpBlock::kDebug) {
    EXPECT_EQ(std::string::npos, help.find("\n" + std::string(row().name) + "=")) << row().name;
    return;
  }
  size_t at = help.find(line_start);
  ASSERT_NE(std::string::npos, at) << row().name;
  std::string line = help.substr(at + 1, help.find('\n', at + 1) - at - 1);
  if (row().block == HelpBlock::kObsolete) {
    EXPECT_EQ(line_start.substr(1), line);
    return;
  }
  EXPECT_EQ(std::string(row().description), line.substr(23, std::string(row().description).size()));
  EXPECT_EQ(std::string(row().default_text), line.substr(54));
}

TEST_P(OptionRowTest, NamesAreCaseSensitive) {
  std::string upper = row().name;
  for (char& c : upper) {
    if (c >= 'a' && c <= 'z') {
      c = static_cast<char>(c - 'a' + 'A');
    } else if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  if (find_option(upper) != nullptr) return;
  EXPECT_EQ("Unknown option: " + upper, parse_error(upper + "=y"));
}

INSTANTIATE_TEST_SUITE_P(EveryRow, OptionRowTest, testing::ValuesIn(option_table().begin(), option_table().end()),
                         [](const testing::TestParamInfo<OptionRow>& row_info) { return std::string(row_info.param.name); });

TEST(OptionTable, EveryExpectationNamesARow) {
  for (const auto& [name, expectation] : expectations()) {
    EXPECT_NE(nullptr, find_option(name)) << name;
  }
  EXPECT_EQ(expectations().size(), option_table().size());
}

TEST(OptionTable, ErrorTextsOfTheOriginal) {
  EXPECT_STREQ("syntax error parsing heap=dump|sites|all", find_option("heap")->syntax_error);
  EXPECT_STREQ("cpu option value must be y|samples|times|old", find_option("cpu")->value_error);
  EXPECT_STREQ("cutoff option value must be floating point and >= 0", find_option("cutoff")->value_error);
  EXPECT_STREQ("The exitpause option was removed, use -XX:OnError='cmd %%p'",
               find_option("exitpause")->syntax_error);
  EXPECT_STREQ("The precrash option was removed, use -XX:OnError='precrash -p %%p'",
               find_option("precrash")->syntax_error);
}

TEST(CrossChecks, BinaryFormatRefusesCpuTimesAndMonitor) {
  EXPECT_EQ("cpu=times|old is not supported with format=b", parse_error("format=b,cpu=times"));
  EXPECT_EQ("cpu=times|old is not supported with format=b", parse_error("cpu=old,format=b"));
  EXPECT_EQ("monitor=y is not supported with format=b", parse_error("monitor=y,format=b"));
  EXPECT_EQ("cpu=times|old is not supported with format=b", parse_error("format=b,monitor=y,cpu=times"));
  EXPECT_EQ(OutputFormat::kBinary, parse_ok("format=b,cpu=samples,heap=all").format);
  EXPECT_TRUE(parse_ok("format=b,cpu=times,format=a").cpu_timing);
}

TEST(CrossChecks, CpuOldSetsProfDepthTwo) {
  Options options = parse_ok("cpu=old,depth=7");
  EXPECT_EQ(7, options.depth);
  EXPECT_EQ(2, options.prof_trace_depth);
  EXPECT_EQ(4, parse_ok("cpu=times").prof_trace_depth);
}

TEST(CrossChecks, HeapAllOnlyWhenNothingElseIsAsked) {
  Options none = parse_ok("depth=3,file=x");
  EXPECT_TRUE(none.heap_dump && none.alloc_sites);
  for (const char* given : {"cpu=samples", "cpu=times", "cpu=old", "monitor=y"}) {
    Options options = parse_ok(given);
    EXPECT_FALSE(options.heap_dump || options.alloc_sites) << given;
  }
  Options dump = parse_ok("heap=dump");
  EXPECT_TRUE(dump.heap_dump && !dump.alloc_sites);
  Options sites = parse_ok("heap=sites,cpu=samples");
  EXPECT_TRUE(!sites.heap_dump && sites.alloc_sites && sites.cpu_sampling);
}

TEST(CrossChecks, FasthprofOptionsNeedTheirFeature) {
  EXPECT_EQ("gz=y is not supported with format=a", parse_error("gz=y"));
  EXPECT_FALSE(parse_ok("gz=n").gzip);
  expect_errors("sample=<bytes> needs heap=sites or heap=all", {"cpu=samples,sample=1k", "heap=dump,sample=1k"});
  expect_errors("timeout=<seconds> needs net=<host>:<port>", {"timeout=5", "file=x.txt,timeout=5"});
  EXPECT_EQ("commands=<which> needs net=<host>:<port>", parse_error("commands=noexit"));
  EXPECT_EQ(Options::NetCommands::kAll, parse_ok("net=localhost:9").net_commands);
  EXPECT_EQ(Options::NetCommands::kNoExit, parse_ok("net=localhost:9,commands=noexit").net_commands);
  EXPECT_EQ(Options::NetCommands::kReports, parse_ok("net=localhost:9,commands=reports").net_commands);
  EXPECT_EQ(1024u, parse_ok("heap=sites,sample=1k").sample_bytes);
  EXPECT_EQ(1024u, parse_ok("sample=1K").sample_bytes);  // default heap=all tracks
  expect_errors("live=n needs heap=sites without heap=dump (a heap dump names each object's allocation site)",
                {"live=n", "heap=all,live=n", "heap=dump,live=n", "heap=sites,heap=dump,live=n", "cpu=samples,live=n"});
  EXPECT_FALSE(parse_ok("heap=sites,live=n").live);
  expect_errors("alloc=inject needs heap=sites or heap=all", {"heap=dump,alloc=inject", "cpu=times,alloc=inject"});
  // heap=all: a dump names each object's site from its header
  EXPECT_TRUE(counts_by_injection(parse_ok("alloc=inject"), false));
  EXPECT_TRUE(counts_by_injection(parse_ok("heap=all,alloc=inject"), false));
  EXPECT_TRUE(counts_by_injection(parse_ok("heap=sites,heap=dump,alloc=inject"), false));
  EXPECT_TRUE(counts_by_injection(parse_ok("heap=sites,alloc=inject"), false));
  EXPECT_TRUE(counts_by_injection(parse_ok("heap=sites,live=n,alloc=inject,cpu=times"), false));
  EXPECT_EQ("alloc option value must be auto|event|inject", parse_error("heap=sites,live=n,alloc=injected"));
  // alloc=auto counts by injection where every allocation is counted exactly and nothing needs the
  // event; alloc=event and alloc=inject are what they say, attached or not.
  EXPECT_TRUE(counts_by_injection(parse_ok("heap=sites,live=n"), false));
  EXPECT_TRUE(counts_by_injection(parse_ok("heap=sites,live=n,alloc=auto,cpu=times"), false));
  EXPECT_FALSE(counts_by_injection(parse_ok("heap=sites,live=n"), true));
  EXPECT_FALSE(counts_by_injection(parse_ok("heap=sites,live=n,sample=512k"), false));
  // with live counts too (each object's site in its header), but not where a header cannot say it:
  // a thread in traces, cpu=times' shadow stack
  EXPECT_TRUE(counts_by_injection(parse_ok("heap=sites"), false));
  EXPECT_TRUE(counts_by_injection(parse_ok("heap=sites,depth=16"), false));
  EXPECT_FALSE(counts_by_injection(parse_ok("heap=sites"), true));
  EXPECT_FALSE(counts_by_injection(parse_ok("heap=sites,thread=y"), false));
  EXPECT_FALSE(counts_by_injection(parse_ok("heap=sites,cpu=times"), false));
  EXPECT_TRUE(counts_by_injection(parse_ok("heap=sites,live=n,thread=y"), false));
  EXPECT_TRUE(counts_by_injection(parse_ok("heap=all"), false));
  EXPECT_TRUE(counts_by_injection(parse_ok(""), false));  // the default: heap=all
  EXPECT_FALSE(counts_by_injection(parse_ok("heap=all"), true));
  EXPECT_FALSE(counts_by_injection(parse_ok("heap=all,thread=y"), false));
  EXPECT_FALSE(counts_by_injection(parse_ok("heap=all,sample=512k"), false));
  EXPECT_FALSE(counts_by_injection(parse_ok("heap=dump"), false));
  EXPECT_FALSE(counts_by_injection(parse_ok("cpu=times"), false));
  EXPECT_FALSE(counts_by_injection(parse_ok("heap=sites,live=n,alloc=event"), false));
  EXPECT_TRUE(counts_by_injection(parse_ok("heap=sites,live=n,alloc=inject"), true));

  expect_errors("sites=<n> needs heap=sites or heap=all", {"heap=dump,sites=2048", "cpu=samples,sites=2048"});
  EXPECT_EQ(1048575u, parse_ok("heap=sites,sites=1048575").max_sites);
  EXPECT_EQ(1024u, parse_ok("sites=1024").max_sites);  // default heap=all tracks
  EXPECT_EQ("sites option value must be a number from 1024 to 1048575", parse_error("heap=sites,sites=1048576"));
  EXPECT_EQ("sites option value must be a number from 1024 to 1048575", parse_error("heap=sites,sites=lots"));
  EXPECT_FALSE(parse_ok("heap=sites,sample=4k,live=n").live);
  EXPECT_TRUE(parse_ok("heap=all,live=y").live);
}

TEST(Accumulation, HeapAndCpuAccumulateOthersLastWins) {
  Options heap = parse_ok("heap=dump,heap=sites");
  EXPECT_TRUE(heap.heap_dump && heap.alloc_sites);
  Options cpu = parse_ok("cpu=samples,cpu=times");
  EXPECT_TRUE(cpu.cpu_sampling && cpu.cpu_timing && !cpu.old_timing);
  EXPECT_FALSE(parse_ok("cpu=old,cpu=times").old_timing);
  EXPECT_TRUE(parse_ok("cpu=times,cpu=old").old_timing);
  EXPECT_TRUE(parse_ok("cpu=y").cpu_sampling);
  EXPECT_EQ(5, parse_ok("depth=3,depth=5").depth);
  EXPECT_EQ(OutputFormat::kText, parse_ok("format=b,format=a").format);
  EXPECT_TRUE(parse_ok("doe=n,doe=y").doe);
}

TEST(Environment, AppendedWithACommaOnlyWhenBothAreNonEmpty) {
  ParseResult both = parse("heap=sites", "depth=3");
  ASSERT_EQ(ParseResult::Kind::kOk, both.kind);
  EXPECT_EQ("heap=sites,depth=3", both.options.all_options);
  EXPECT_EQ(3, both.options.depth);
  EXPECT_EQ("depth=3", parse(nullptr, "depth=3").options.all_options);
  EXPECT_EQ("depth=3", parse("", "depth=3").options.all_options);
  EXPECT_EQ("heap=sites", parse("heap=sites", "").options.all_options);
  EXPECT_EQ("", parse(nullptr, nullptr).options.all_options);
  EXPECT_EQ(ParseResult::Kind::kOk, parse(nullptr, nullptr).kind);
  EXPECT_EQ(4, parse("depth=9", "depth=4").options.depth);
  EXPECT_EQ("file or net options should only appear once", parse_error("file=a", "file=b"));
}

TEST(Help, OnlyTheExactCommandLineStringHelp) {
  EXPECT_EQ(ParseResult::Kind::kHelp, parse("help").kind);
  EXPECT_EQ(ParseResult::Kind::kHelp, parse("help", "depth=x").kind);
  EXPECT_EQ("Unknown option: help,heap", parse_error("help,heap=sites"));
  EXPECT_EQ("Unknown option: help", parse_error("", "help"));
  EXPECT_EQ("Unknown option: help", parse_error("help=y"));
  EXPECT_EQ("Unknown option: help,", parse_error("help,"));
  EXPECT_EQ("Unknown option: HELP", parse_error("HELP"));
}

TEST(Tokenizer, NameBufferOfSixteen) {
  EXPECT_EQ("Unknown option: abcdefghijklmno", parse_error("abcdefghijklmno=1"));
  expect_errors("general syntax error parsing options",
                {"abcdefghijklmnop=1", "=x", "heap=sites,=x", "heap=dump,cpu=samples,optionnamelongerthan15"});
}

TEST(Tokenizer, CommasAndCase) {
  EXPECT_EQ("Unknown option: ,heap", parse_error(",heap=sites"));
  EXPECT_EQ("Unknown option: ,cpu", parse_error("heap=sites,,cpu=y"));
  EXPECT_TRUE(parse_ok("heap=sites,").alloc_sites);
  EXPECT_EQ("Unknown option: lineno,heap", parse_error("lineno,heap=dump"));
  EXPECT_EQ("doe option value must be y|n", parse_error("heap=sites,doe"));
  EXPECT_EQ("syntax error parsing heap=dump|sites|all", parse_error("heap=,cpu=y"));
  EXPECT_EQ("heap option value must be dump|sites|all", parse_error("heap=Sites"));
  EXPECT_EQ("format option value must be a|b", parse_error("format=B"));
  EXPECT_EQ("Unknown option: Heap", parse_error("Heap=sites"));
  EXPECT_EQ("a=b", parse_ok("file=a=b").file);
}

TEST(Tokenizer, FileAndNetOnlyOnce) {
  expect_errors("file or net options should only appear once",
                {"file=a,file=b", "file=a,net=h:1", "net=h:1,file=a", "file=a,file="});
}

TEST(Net, HostToColonPortToComma) {
  Options options = parse_ok("net=localhost:8000,heap=dump");
  EXPECT_EQ("localhost", options.net_host);
  EXPECT_EQ(8000, options.net_port);
  EXPECT_TRUE(options.heap_dump && !options.alloc_sites);
  EXPECT_EQ(65535, parse_ok("net=h:65535").net_port);
  expect_errors("net option missing ':'", {"net=:80", "net="});
  expect_errors("net option missing port", {"net=host", "net=host:", "net=host,heap=dump"});  // host runs to ':'
  expect_errors("invalid port number",
                {"net=h:0", "net=h:abc", "net=h:65536", "net=h:80x", "net=h:-1", "net=h:+80", "net=h: 80",
                 "net=h:4294967377"});
}

TEST(Net, BracketedIpv6Host) {
  Options options = parse_ok("net=[::1]:9000");
  EXPECT_EQ("::1", options.net_host);
  EXPECT_EQ(9000, options.net_port);
  expect_errors("net option missing ':'", {"net=[::1]", "net=[]:80", "net=[::1"});
}

// Without brackets, an IPv6 literal's last ':' starts the port (the port is required); anything
// else still runs to the first ':' as in the original.
TEST(Net, UnbracketedIpv6Host) {
  Options options = parse_ok("net=::1:9000,heap=dump");
  EXPECT_EQ("::1", options.net_host);
  EXPECT_EQ(9000, options.net_port);
  EXPECT_TRUE(options.heap_dump);
  options = parse_ok("net=fe80::2a0:c9ff:fe00:1:65535");
  EXPECT_EQ("fe80::2a0:c9ff:fe00:1", options.net_host);
  EXPECT_EQ(65535, options.net_port);
  EXPECT_EQ("::ffff:127.0.0.1", parse_ok("net=::ffff:127.0.0.1:80").net_host);
  // An address whole and no port: what is missing is the port.
  expect_errors("net option missing port", {"net=::1", "net=fe80::1,heap=dump"});
  // "2001:db8::" then the port: ":::" is never inside an address, so this reads one way only.
  EXPECT_EQ("2001:db8::", parse_ok("net=2001:db8:::80").net_host);
  EXPECT_EQ("::", parse_ok("net=:::80").net_host);
  EXPECT_EQ("::", parse_ok("net=[::]:80").net_host);
  // Not an IPv6 literal before the last ':': the original's reading (host to the first ':').
  EXPECT_EQ("invalid port number", parse_error("net=host:80:81"));
  EXPECT_EQ("net option missing port", parse_error("net=:::"));
  EXPECT_EQ("invalid port number", parse_error("net=::1:x"));
}

// Every buffer the depth sizes is bounded by the largest depth a binary file can record; above
// it the JVM used to die of std::bad_alloc (depth=2147483647 with heap=sites or cpu=samples).
TEST(Numbers, DepthAboveTheLargestRecordableIsRefused) {
  EXPECT_EQ(kMaxDepth, parse_ok("depth=65535").depth);
  EXPECT_EQ(kMaxDepth, parse_ok("cpu=samples,depth=65535,format=b").depth);
  expect_errors("depth option value must be <= 65535",
                {"depth=65536", "heap=sites,depth=2147483647", "cpu=samples,depth=30000000"});
  // The original's own message still comes first for values it refused.
  EXPECT_EQ("depth option value must be decimal and >= 0", parse_error("depth=-1"));
  EXPECT_NE(std::string::npos, usage_text().find("depth=<size> is at most 65535"));
}

TEST(Numbers, DecimalAndFloatingPointRules) {
  EXPECT_EQ(0, parse_ok("depth=0").depth);
  EXPECT_EQ("depth option value must be decimal and >= 0", parse_error("depth=5x"));
  EXPECT_EQ("depth option value must be decimal and >= 0", parse_error("depth=0x10"));
  EXPECT_EQ("depth option value must be decimal and >= 0", parse_error("depth=99999999999"));
  EXPECT_EQ("interval option value must be decimal and > 0", parse_error("interval=-5"));
  EXPECT_EQ(0.001, parse_ok("cutoff=1e-3").cutoff);
  EXPECT_EQ(0.0, parse_ok("cutoff=0").cutoff);
  EXPECT_EQ("cutoff option value must be floating point and >= 0", parse_error("cutoff=nan"));
  EXPECT_EQ("cutoff option value must be floating point and >= 0", parse_error("cutoff=0.1x"));
  EXPECT_EQ(16, parse_ok("logflags=0x10").logflags);
  EXPECT_EQ(8, parse_ok("debugflags=010").debugflags);
  EXPECT_EQ("X option value must be numeric", parse_error("X="));
}

TEST(Numbers, SampleBytesWithSuffixes) {
  EXPECT_EQ(0u, parse_ok("sample=0").sample_bytes);
  EXPECT_EQ(100u, parse_ok("sample=100").sample_bytes);
  EXPECT_EQ(3u << 20, parse_ok("sample=3m").sample_bytes);
  EXPECT_EQ(1u << 30, parse_ok("sample=1G").sample_bytes);
  EXPECT_EQ(2147483647u, parse_ok("sample=2147483647").sample_bytes);
  const char* kBad = find_option("sample")->value_error;
  for (const char* value : {"2g", "2147483648", "k", "-1", "1.5k", "1kk", " 1", "99999999999k"}) {
    EXPECT_EQ(kBad, parse_error(std::string("sample=") + value)) << value;
  }
}

TEST(Numbers, NetTimeoutSeconds) {
  EXPECT_EQ(0, parse_ok("net=localhost:9,timeout=0").net_timeout_seconds);  // waits for ever
  EXPECT_EQ(86400, parse_ok("net=localhost:9,timeout=86400").net_timeout_seconds);
  const char* kBad = find_option("timeout")->value_error;
  for (const char* value : {"86401", "-1", "1.5", "10s", "x"}) {
    EXPECT_EQ(kBad, parse_error(std::string("net=localhost:9,timeout=") + value)) << value;
  }
}

TEST(Options, OutputPath) {
  EXPECT_EQ("java.hprof.txt", parse_ok("").output_path());
  EXPECT_EQ("java.hprof", parse_ok("format=b").output_path());
  EXPECT_EQ("java.hprof.gz", parse_ok("format=b,gz=y").output_path());
  EXPECT_EQ("dump.bin", parse_ok("format=b,gz=y,file=dump.bin").output_path());  // as named
  EXPECT_EQ("foo", parse_ok("file=foo").output_path());  // .txt is not appended
  EXPECT_EQ("", parse_ok("net=h:1").output_path());
}

TEST(Errors, Format) {
  ParseResult result = parse("foo=1");
  EXPECT_EQ("HPROF ERROR: hprof option error: Unknown option: foo (foo=1)\n", format_option_error(result));
  EXPECT_EQ("HPROF ERROR: hprof option error: syntax error parsing depth=DECIMAL (heap=sites,depth=)\n",
            format_option_error(parse("heap=sites", "depth=")));
  EXPECT_EQ("", format_option_error(parse("heap=sites")));
}

TEST(Errors, ControlCharactersNeverSplitTheLine) {
  ParseResult result = parse("a\nb=1,\x7f");
  ASSERT_EQ(ParseResult::Kind::kError, result.kind);
  EXPECT_EQ("Unknown option: a\\x0ab", result.error);
  EXPECT_EQ("HPROF ERROR: hprof option error: Unknown option: a\\x0ab (a\\x0ab=1,\\x7f)\n",
            format_option_error(result));
  EXPECT_EQ("a\nb", parse_ok("file=a\nb").file);  // only messages are escaped
}

TEST(Usage, KeepsTheOriginalLayout) {
  std::string help = usage_text();
  EXPECT_EQ(0u, help.find("\n     fasthprof: Heap and CPU Profiling Agent (drop-in replacement for JDK HPROF)\n\n"
                          "hprof usage: java -agentlib:hprof=[help]|[<option>=<value>, ...]\n\n"
                          "Option Name and Value  Description                    Default\n"
                          "---------------------  -----------                    -------\n"
                          "heap=dump|sites|all    heap profiling                 all\n"
                          "cpu=samples|times|old  CPU usage                      off\n"));
  for (const char* line : {
           "\nfile=<file>            write data to file             java.hprof[{.txt}]\n",
           "\nmsa=y|n                Solaris micro state accounting n\n",
           "\nverbose=y|n            print messages about dumps     y\n\n"
           "Obsolete Options\n----------------\ngc_okay=y|n\n\n",
           "\nsample=<bytes>         allocation sampling interval   0\n",
           "weight = 1 / (1 - exp(-object size / interval))",
           "\ngz=y|n                 gzip the binary output         n\n",
           "  - cpu=times|old keeps its traces in the Java heap, in at most 1/16 of the\n",
           "\ntimeout=<seconds>      net= peer stall limit          10\n",
           "\ncpustacks=<how>        how cpu=samples takes stacks   signal\n",
           "\ndumper=<who>           who writes a binary heap dump  auto\n",
           "\n  - The option format=b cannot be used with monitor=y.\n",
           "\n  - The option format=b cannot be used with cpu=old|times.\n",
           "\n      java -agentlib:hprof=cpu=samples,interval=20,depth=3 classname\n",
           "\nExamples\n--------\n", "\nNotes\n-----\n", "\nWarnings\n--------\n"}) {
    EXPECT_NE(std::string::npos, help.find(line)) << line;
  }
  EXPECT_EQ(std::string::npos, help.find("DEBUG"));
  EXPECT_EQ(std::string::npos, help.find("logflags"));
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 80u) << line;
}

// One row per feature that the start-up warnings know. A feature issue that finishes its feature
// flips `implemented` in its own row (and the flag in options.cpp).
struct FeatureWarningCase {
  const char* options;  // an option string that asks for the feature and nothing else pending
  const char* warning;  // the exact line while it is pending
  bool implemented;
};

const FeatureWarningCase kFeatureWarnings[] = {
    {"heap=dump", "fasthprof: heap=dump is not implemented yet: no HEAP DUMP will be written", true},
    {"heap=sites", "fasthprof: heap=sites is not implemented yet: no SITES records will be written", true},
    {"cpu=samples", "fasthprof: cpu=samples is not implemented yet: no CPU SAMPLES records will be written", true},
    {"cpu=times", "fasthprof: cpu=times is not implemented yet: no CPU TIME records will be written", true},
    {"cpu=old", "fasthprof: cpu=old is not implemented yet: no CPU TIME records will be written", true},
    {"monitor=y", "fasthprof: monitor=y is not implemented yet: no MONITOR DUMP or MONITOR TIME records will be written", true},
    {"heap=sites,sample=64k", "fasthprof: sample=<bytes> is not implemented yet: allocation sampling is not available", true},
    {"format=b,cpu=samples,gz=y", "fasthprof: gz=y is not implemented yet: output is not compressed", true},
    {"format=b,cpu=samples,logflags=4", "fasthprof: logflags=0x4 is not implemented yet: binary file is not verified at exit", true},
    {"heap=dump,primfields=n", "fasthprof: primfields=n is not implemented yet: primitive field values are still written", true},
    {"heap=dump,primarrays=n", "fasthprof: primarrays=n is not implemented yet: primitive array contents are still written", true},
};

TEST(MissingFeatures, OneLinePerRequestedFeatureStillPending) {
  for (const FeatureWarningCase& row : kFeatureWarnings) {
    std::vector<std::string> lines = missing_feature_warnings(parse_ok(row.options));
    size_t matches = std::count(lines.begin(), lines.end(), std::string(row.warning));
    EXPECT_EQ(row.implemented ? 0u : 1u, matches) << row.options;
    for (const std::string& line : lines) {
      EXPECT_EQ(0u, line.find("fasthprof: ")) << line;
      EXPECT_NE(std::string::npos, line.find(" is not implemented yet: ")) << line;
    }
  }
}

TEST(MissingFeatures, NothingForFeaturesNotAskedFor) {
  for (const std::string& line : missing_feature_warnings(parse_ok("cpu=samples"))) {
    EXPECT_EQ(std::string::npos, line.find("heap=")) << line;
  }
  for (const std::string& line : missing_feature_warnings(parse_ok("heap=dump,format=b"))) {
    EXPECT_EQ(std::string::npos, line.find("sites")) << line;
    EXPECT_EQ(std::string::npos, line.find("cpu=")) << line;
  }
}

TEST(InertOptions, NamedInOneLine) {
  EXPECT_EQ("", inert_debug_options_note(parse_ok("")));
  EXPECT_EQ("", inert_debug_options_note(parse_ok("logflags=4,pause=y,primfields=n,coredump=n")));
  EXPECT_EQ("fasthprof: accepted but without effect: msa=y (Solaris only)",
            inert_debug_options_note(parse_ok("msa=y")));
  std::string note = inert_debug_options_note(
      parse_ok("gc_okay=n,logflags=6,debugflags=1,coredump=y,errorexit=y,debug=y,X=2"));
  EXPECT_EQ(
      "fasthprof: accepted but without effect: gc_okay (obsolete), logflags=0x2 (only 0x4 is used), "
      "debugflags=0x1, coredump=y, errorexit=y, debug=y, X=0x2",
      note);
}

}  // namespace
}  // namespace fasthprof
