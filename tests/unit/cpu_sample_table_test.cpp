#include "sections/cpu_sample_table.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "base/hprof_format.h"
#include "hprof_verifier.h"
#include "memory_stream.h"
#include "records/profile_writer.h"

namespace fasthprof {
namespace {

// Methods 1..9 are Hot.spin, Warm.stir, ... so that the rows can name their top frames.
class FakeResolver final : public MethodResolver {
 public:
  bool resolve_method(uint64_t method, MethodInfo* out) override {
    static const char* const kClasses[] = {"", "LHot;", "LWarm;", "Ljava/lang/Thread;"};
    static const char* const kNames[] = {"", "spin", "stir", "run"};
    if (method == 0 || method > 3) return false;
    out->class_signature = kClasses[method];
    out->name = kNames[method];
    out->signature = "()V";
    out->source_file = "X.java";
    return true;
  }
};



// The BEGIN line's ctime date (local time) becomes a fixed one.
std::string without_dates(const std::string& text) {
  return std::regex_replace(text, std::regex(R"(BEGIN \(total = (\d+)\) [^\n]*\n)"),
                            "BEGIN (total = $1) Thu Jan  1 00:00:00 1970\n");
}

TEST(CpuSampleTable, CountsAreSixtyFourBit) {
  CpuSampleTable table;
  table.add(300001, uint64_t{1} << 33);
  table.add(300001);
  EXPECT_EQ(table.count_of(300001), (uint64_t{1} << 33) + 1);
  EXPECT_EQ(table.total(), (uint64_t{1} << 33) + 1);
  table.add(5);  // not a trace serial
  EXPECT_EQ(table.total(), (uint64_t{1} << 33) + 1);
  CpuSampleReport report = table.take_report(0.0001);
  ASSERT_EQ(report.rows.size(), 1u);
  EXPECT_EQ(report.rows[0].count, (uint64_t{1} << 33) + 1);
}

TEST(CpuSampleTable, SortsByCountThenSerialAndAccumulates) {
  CpuSampleTable table;
  table.add(300005, 2);
  table.add(300002, 5);
  table.add(300009, 2);
  table.add(300000, 1);
  CpuSampleReport report = table.take_report(0.0001);
  EXPECT_EQ(report.total, 10u);
  ASSERT_EQ(report.rows.size(), 4u);
  std::vector<uint32_t> serials;
  for (const auto& row : report.rows) serials.push_back(row.trace_serial);
  EXPECT_EQ(serials, (std::vector<uint32_t>{300002, 300005, 300009, 300000}));
  EXPECT_EQ(report.rows[0].rank, 1u);
  EXPECT_EQ(report.rows[3].rank, 4u);
  EXPECT_DOUBLE_EQ(report.rows[0].self_percent, 50.0);
  EXPECT_DOUBLE_EQ(report.rows[1].accumulated_percent, 70.0);
  EXPECT_DOUBLE_EQ(report.rows[3].accumulated_percent, 100.0);
}

TEST(CpuSampleTable, CutoffStopsAtFirstSmallShareButTotalKeepsEverything) {
  CpuSampleTable table;
  table.add(300001, 900);
  table.add(300002, 99);
  table.add(300003, 1);
  CpuSampleReport report = table.take_report(0.01);  // 1 of 1000 is below 1 %
  EXPECT_EQ(report.total, 1000u);
  ASSERT_EQ(report.rows.size(), 2u);
  EXPECT_EQ(report.rows[1].trace_serial, 300002u);
}

TEST(CpuSampleTable, ReportRestartsCounts) {
  CpuSampleTable table;
  table.add(300001, 3);
  EXPECT_EQ(table.take_report(0.0001).total, 3u);
  EXPECT_EQ(table.total(), 0u);
  EXPECT_EQ(table.count_of(300001), 0u);
  CpuSampleReport empty = table.take_report(0.0001);
  EXPECT_EQ(empty.total, 0u);
  EXPECT_TRUE(empty.rows.empty());
  table.add(300001);
  EXPECT_EQ(table.take_report(0.0001).rows.at(0).count, 1u);
}

TEST(CpuSampleSection, TextRowsFollowTheirTraces) {
  FakeResolver resolver;
  MemoryStream stream;
  ProfileWriter writer(parse("cpu=samples,depth=2"), stream, &resolver);
  writer.write_header(0, 0);
  StackFrame hot[] = {{1, 0}, {3, 4}};
  StackFrame warm[] = {{2, 0}, {3, 4}};
  uint32_t hot_serial = writer.intern_trace(200001, hot);
  uint32_t warm_serial = writer.intern_trace(200002, warm);
  uint32_t empty_serial = writer.intern_trace(200003, {});
  writer.flush();
  size_t header_end = stream.bytes.size();

  CpuSampleTable table;
  table.add(hot_serial, 7);
  table.add(warm_serial, 2);
  table.add(empty_serial, 1);
  write_cpu_samples_section(writer, table.take_report(0.0001), 0);
  writer.flush();
  std::string text = without_dates(stream.text().substr(header_end));
  char expected[1024];
  std::snprintf(expected, sizeof(expected),
                "TRACE %u:\n\tHot.spin(X.java:Unknown line)\n\tjava.lang.Thread.run(X.java:Unknown line)\n"
                "TRACE %u:\n\tWarm.stir(X.java:Unknown line)\n\tjava.lang.Thread.run(X.java:Unknown line)\n"
                "TRACE %u:\n\t<empty>\n"
                "CPU SAMPLES BEGIN (total = 10) Thu Jan  1 00:00:00 1970\n"
                "rank   self  accum   count trace method\n"
                "   1 70.00%% 70.00%%       7 %5u Hot.spin\n"
                "   2 20.00%% 90.00%%       2 %5u Warm.stir\n"
                "   3 10.00%% 100.00%%       1 %5u <empty trace>\n"
                "CPU SAMPLES END\n",
                hot_serial, warm_serial, empty_serial, hot_serial, warm_serial, empty_serial);
  EXPECT_EQ(text, expected);

  // A second report with nothing counted: no column header, no rows, no trace written again.
  size_t before = stream.bytes.size();
  write_cpu_samples_section(writer, table.take_report(0.0001), 0);
  writer.flush();
  EXPECT_EQ(without_dates(stream.text().substr(before)),
            "CPU SAMPLES BEGIN (total = 0) Thu Jan  1 00:00:00 1970\nCPU SAMPLES END\n");
}

TEST(CpuSampleSection, BinaryRecordVerifies) {
  FakeResolver resolver;
  MemoryStream stream;
  ProfileWriter writer(parse("cpu=samples,format=b"), stream, &resolver);
  writer.write_header(0, 0);
  StackFrame hot[] = {{1, 0}};
  uint32_t hot_serial = writer.intern_trace(200001, hot);
  CpuSampleTable table;
  table.add(hot_serial, 5);
  table.add(kFirstTraceSerial, 1);
  write_cpu_samples_section(writer, table.take_report(0.0001), 0);
  writer.flush();

  // The last record is CPU SAMPLES: total 6, two rows, the hot trace first.
  const std::vector<uint8_t>& bytes = stream.bytes;
  constexpr size_t kBody = 8 + 2 * 8;
  ASSERT_GT(bytes.size(), 9 + kBody);
  size_t record = bytes.size() - kBody - 9;
  EXPECT_EQ(bytes[record], static_cast<uint8_t>(RecordTag::kCpuSamples));
  EXPECT_EQ(u4_at(bytes, record + 5), kBody);
  EXPECT_EQ(u4_at(bytes, record + 9), 6u);
  EXPECT_EQ(u4_at(bytes, record + 13), 2u);
  EXPECT_EQ(u4_at(bytes, record + 17), 5u);
  EXPECT_EQ(u4_at(bytes, record + 21), hot_serial);
  EXPECT_EQ(u4_at(bytes, record + 25), 1u);
  EXPECT_EQ(u4_at(bytes, record + 29), kFirstTraceSerial);

  VerifyResult result = verify_hprof(bytes.data(), bytes.size(), VerifyOptions{});
  EXPECT_TRUE(result.ok) << result.error;
}

}  // namespace
}  // namespace fasthprof
