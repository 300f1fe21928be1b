#include "sections/cpu_sample_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/hprof_format.h"
#include "hprof_verifier.h"
#include "section_writer.h"

namespace fasthprof {
namespace {

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

// Methods 1..3 are Hot.spin, Warm.stir and java.lang.Thread.run, so that the rows can name their
// top frames.
const std::vector<FakeMethod> kMethods = {
    {"LHot;", "spin", "X.java"}, {"LWarm;", "stir", "X.java"}, {"Ljava/lang/Thread;", "run", "X.java"}};

TEST(CpuSampleSection, TextRowsFollowTheirTraces) {
  SectionWriter out("cpu=samples,depth=2", kMethods);
  StackFrame hot[] = {{1, 0}, {3, 4}};
  StackFrame warm[] = {{2, 0}, {3, 4}};
  uint32_t hot_serial = out.writer.intern_trace(200001, hot);
  uint32_t warm_serial = out.writer.intern_trace(200002, warm);
  uint32_t empty_serial = out.writer.intern_trace(200003, {});
  size_t header_end = out.mark();

  CpuSampleTable table;
  table.add(hot_serial, 7);
  table.add(warm_serial, 2);
  table.add(empty_serial, 1);
  write_cpu_samples_section(out.writer, table.take_report(0.0001), 0);
  std::string text = out.text_since(header_end);
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
  size_t before = out.mark();
  write_cpu_samples_section(out.writer, table.take_report(0.0001), 0);
  EXPECT_EQ(out.text_since(before),
            "CPU SAMPLES BEGIN (total = 0) Thu Jan  1 00:00:00 1970\nCPU SAMPLES END\n");
}

TEST(CpuSampleSection, BinaryRecordVerifies) {
  SectionWriter out("cpu=samples,format=b", kMethods);
  StackFrame hot[] = {{1, 0}};
  uint32_t hot_serial = out.writer.intern_trace(200001, hot);
  CpuSampleTable table;
  table.add(hot_serial, 5);
  table.add(kFirstTraceSerial, 1);
  write_cpu_samples_section(out.writer, table.take_report(0.0001), 0);
  out.writer.flush();

  // The last record is CPU SAMPLES: total 6, two rows, the hot trace first.
  const std::vector<uint8_t>& bytes = out.stream.bytes;
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
