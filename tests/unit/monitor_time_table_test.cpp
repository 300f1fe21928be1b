#include "sections/monitor_time_table.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "section_writer.h"

namespace fasthprof {
namespace {

constexpr uint64_t kMs = 1000000;

TEST(MonitorTimeTable, RanksByTimeThenCountAndCutsAtCutoff) {
  MonitorTimeTable table;
  table.add(300002, "Ljava/lang/Object;", 30 * kMs);
  table.add(300002, "Ljava/lang/Object;", 30 * kMs);  // same key: 60 ms, 2 hits
  table.add(300003, "LLock;", 30 * kMs);
  table.add(300004, "LLock;", 30 * kMs);
  table.add(300004, "LLock;", 0);                      // 30 ms in 2 hits: ranks before 300003
  table.add(300002, "LLock;", kMs / 100);              // 0.01 ms of 120: below cutoff 0.001
  MonitorTimeReport report = table.take_report(0.001);
  EXPECT_EQ(report.total_ns, 120 * kMs + kMs / 100);
  EXPECT_EQ(report.events, 6u);
  ASSERT_EQ(report.rows.size(), 3u);
  EXPECT_EQ(report.rows[0].trace_serial, 300002u);
  EXPECT_EQ(report.rows[0].count, 2u);
  EXPECT_EQ(report.rows[0].signature, "Ljava/lang/Object;");
  EXPECT_EQ(report.rows[1].trace_serial, 300004u);
  EXPECT_EQ(report.rows[2].trace_serial, 300003u);
  EXPECT_EQ(report.rows[2].rank, 3u);
  EXPECT_NEAR(report.rows[0].self_percent, 60.0 / 120.01 * 100, 1e-9);
  EXPECT_NEAR(report.rows[2].accumulated_percent, 120.0 / 120.01 * 100, 1e-9);
}

TEST(MonitorTimeTable, ReportRestartsTimesAndCounts) {
  MonitorTimeTable table;
  table.add(300002, "LLock;", 5 * kMs);
  EXPECT_FALSE(table.empty());
  table.take_report(0.0001);
  EXPECT_TRUE(table.empty());
  MonitorTimeReport second = table.take_report(0.0001);
  EXPECT_EQ(second.events, 0u);
  EXPECT_TRUE(second.rows.empty());
  table.add(300002, "LLock;", 7 * kMs);
  MonitorTimeReport third = table.take_report(0.0001);
  ASSERT_EQ(third.rows.size(), 1u);
  EXPECT_EQ(third.rows[0].count, 1u);
  EXPECT_EQ(third.rows[0].time_ns, 7 * kMs);
}

// Method 1 is Counter.bump.
const std::vector<FakeMethod> kMethods = {{"LCounter;", "bump", "Counter.java"}};

TEST(MonitorTimeSection, TotalInMillisecondsTracesFirstNothingWithoutContention) {
  SectionWriter out("monitor=y,depth=1", kMethods);
  StackFrame bump[] = {{1, -1}};
  uint32_t serial = out.writer.intern_trace(200001, bump);
  size_t header_end = out.mark();

  MonitorTimeTable table;
  table.add(serial, "LCounter;", 1500 * kMs);  // the original printed 1500/10^6 = 0: nothing
  table.add(serial, "LCounter;", 500 * kMs);
  write_monitor_time_section(out.writer, table.take_report(0.0001), 0);
  char expected[512];
  std::snprintf(expected, sizeof(expected),
                "TRACE %u:\n\tCounter.bump(Counter.java:Unknown line)\n"
                "MONITOR TIME BEGIN (total = 2000 ms) Thu Jan  1 00:00:00 1970\n"
                "rank   self  accum   count trace monitor\n"
                "   1 100.00%% 100.00%%       2 %5u Counter (Java)\n"
                "MONITOR TIME END\n",
                serial, serial);
  EXPECT_EQ(out.text_since(header_end), expected);

  size_t before = out.mark();
  write_monitor_time_section(out.writer, table.take_report(0.0001), 0);
  EXPECT_EQ(out.mark(), before);
}

}  // namespace
}  // namespace fasthprof
