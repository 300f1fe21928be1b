#include "sections/cpu_time_table.h"

#include <gtest/gtest.h>

#include <string>

#include "section_writer.h"

namespace fasthprof {
namespace {

TEST(CpuTimeTable, SortsBySelfTimeSharesFromNanosecondsAndCutsAtCutoff) {
  CpuTimeTable table;
  table.add(300003, {10, 600'000, 900'000});  // 0.6 ms: rounds to 1 ms
  table.add(300001, {1000, 1'000'000'000, 1'000'000'000});
  table.add(300002, {1, 400'000, 400'000});
  table.add(300002, {1, 0, 0});
  table.add(300009, {0, 5, 5});  // no call: nothing
  EXPECT_EQ(table.calls(), 1012u);
  CpuTimeReport report = table.take_report(0.0000005);
  EXPECT_EQ(report.total_ms, 1000u + 1u + 0u);
  ASSERT_EQ(report.rows.size(), 3u);
  EXPECT_EQ(report.rows[0].key, 300001u);
  EXPECT_EQ(report.rows[1].key, 300003u);
  EXPECT_EQ(report.rows[2].key, 300002u);
  EXPECT_EQ(report.rows[2].counts.calls, 2u);
  EXPECT_NEAR(report.rows[0].self_percent, 100.0 * 1e9 / (1e9 + 1e6), 1e-9);
  EXPECT_NEAR(report.rows[2].accumulated_percent, 100.0, 1e-9);
  // A report restarts the counts; a high cutoff keeps the rows above it only.
  EXPECT_EQ(table.take_report(0.0001).rows.size(), 0u);
  table.add(300001, {1, 990, 990});
  table.add(300002, {1, 10, 10});
  EXPECT_EQ(table.take_report(0.05).rows.size(), 1u);
}

TEST(CpuTimeTable, OldReportSortsByCalls) {
  CpuTimeTable table;
  table.add(old_key(1, 2), {1000, 5, 1'300'000'000});
  table.add(old_key(2, 3), {1, 1'300'000'000, 1'301'000'000});
  table.add(old_key(3, 0), {7, 1, 1});
  CpuTimeReport report = table.take_old_report();
  ASSERT_EQ(report.rows.size(), 3u);
  EXPECT_EQ(report.rows[0].key, old_key(1, 2));
  EXPECT_EQ(report.rows[1].key, old_key(3, 0));
  EXPECT_EQ(report.rows[2].key, old_key(2, 3));
}

// Methods 1..3 are Graph.b, Graph.a and Graph.main.
const std::vector<FakeMethod> kMethods = {
    {"LGraph;", "b", "Graph.java"}, {"LGraph;", "a", "Graph.java"}, {"LGraph;", "main", "Graph.java"}};

TEST(CpuTimeSection, TextLayoutAndTitles) {
  SectionWriter out("cpu=times,depth=2", kMethods);
  StackFrame b[] = {{1, -1}, {2, -1}};
  uint32_t serial = out.writer.intern_trace(0, b);
  size_t header_end = out.mark();
  CpuTimeTable table;
  table.add(serial, {1000, 1'250'000'000, 1'250'000'000});
  write_cpu_time_section(out.writer, table.take_report(0.0001), false, 0);
  char expected[512];
  std::snprintf(expected, sizeof(expected),
                "TRACE %u:\n\tGraph.b(Graph.java:Unknown line)\n\tGraph.a(Graph.java:Unknown line)\n"
                "CPU TIME (ms) BEGIN (total = 1250) Thu Jan  1 00:00:00 1970\n"
                "rank   self  accum   count trace method\n"
                "   1 100.00%% 100.00%%    1000 %5u Graph.b\n"
                "CPU TIME (ms) END\n",
                serial, serial);
  EXPECT_EQ(out.text_since(header_end), expected);
  // With cpu=samples too the section is titled CPU SAMPLES; an empty one has no column header.
  size_t before = out.mark();
  write_cpu_time_section(out.writer, table.take_report(0.0001), true, 0);
  EXPECT_EQ(out.text_since(before),
            "CPU SAMPLES BEGIN (total = 0) Thu Jan  1 00:00:00 1970\nCPU SAMPLES END\n");
}

TEST(CpuTimeSection, OldLayout) {
  ListResolver resolver(kMethods);
  MemoryStream stream;
  ProfileWriter writer(parse("cpu=old"), stream, &resolver);
  CpuTimeTable table;
  table.add(old_key(1, 2), {1000, 5, 1'300'400'000});
  table.add(old_key(2, 0), {1, 1, 1'301'000'000});
  write_old_prof_section(writer, table.take_old_report(), [](uint32_t id, OldMethodName* out) {
    if (id == 0) return false;
    *out = {"Graph", id == 1 ? "b" : "a", "()V"};
    return true;
  });
  writer.flush();
  EXPECT_EQ(stream.text(), "count callee caller time\n1000 Graph.b()V Graph.a()V 1300\n1 Graph.a()V <unknown caller> 1301\n");
}

}  // namespace
}  // namespace fasthprof
