// The SITES section written through either output: the text rows with their percentages and class
// names, the binary ALLOC SITES and HEAP SUMMARY records, and the traces written before both.
#include "sections/sites_section.h"

#include <gtest/gtest.h>

#include <bit>
#include <string>
#include <vector>

#include "base/hprof_format.h"
#include "hprof_verifier.h"
#include "section_writer.h"

namespace fasthprof {
namespace {

// Method 1 is Maker.make, so that the trace of the sites has a frame to print.
const std::vector<FakeMethod> kMethods = {{"LMaker;", "make", "Maker.java"}};

// Two sites (the second one of int arrays) as report_rows() gives them: 600 + 300 of 1000 live
// bytes printed, the rest cut off but counted in the totals.
struct Sites {
  std::vector<SiteRow> rows;
  SiteTotals totals;
};

Sites sample_sites(uint32_t class_serial, uint32_t array_class_serial, uint32_t trace_serial) {
  Sites sites;
  sites.rows.push_back({{class_serial, trace_serial, 0}, {600, 6, 1200, 12}});
  sites.rows.push_back({{array_class_serial, trace_serial, array_kind_of("[I")}, {300, 3, 300, 3}});
  sites.totals = {1000, 10, 1600, 16, 3};
  return sites;
}

TEST(SitesSection, TextRowsRankByLiveBytesAfterEveryUnwrittenTrace) {
  SectionWriter out("heap=sites,depth=1", kMethods);
  uint32_t class_serial = out.writer.class_loaded("LFoo;", 0).serial;
  StackFrame frames[] = {{1, 0}};
  uint32_t trace = out.writer.intern_trace(200001, frames);
  size_t header_end = out.mark();

  // The second site's class is one the registry never saw.
  Sites sites = sample_sites(class_serial, class_serial + 77, trace);
  write_sites_section(out.writer, sites.rows, sites.totals, 0.0001, 0, 0);
  EXPECT_EQ(out.text_since(header_end),
            "TRACE 300000:\n"
            "\t<empty>\n"
            "TRACE 300001:\n"
            "\tMaker.make(Maker.java:Unknown line)\n"
            "SITES BEGIN (ordered by live bytes) Thu Jan  1 00:00:00 1970\n"
            "          percent          live          alloc'ed  stack class\n"
            " rank   self  accum     bytes objs     bytes  objs trace name\n"
            "    1 60.00% 60.00%       600    6      1200    12 300001 Foo\n"
            "    2 30.00% 90.00%       300    3       300     3 300001 <unknown class>\n"
            "SITES END\n");

  // A section with no live bytes at all: every share is 0, nothing is written twice. A net= ALLOC
  // SITES command sorted by allocation says so in its title.
  size_t before = out.mark();
  std::vector<SiteRow> idle = {{{class_serial, trace, 0}, {0, 0, 64, 1}}};
  write_sites_section(out.writer, idle, {0, 0, 64, 1, 1}, 0.0001, kSitesSortedByAllocation, 0);
  EXPECT_EQ(out.text_since(before),
            "SITES BEGIN (ordered by allocated bytes) Thu Jan  1 00:00:00 1970\n"
            "          percent          live          alloc'ed  stack class\n"
            " rank   self  accum     bytes objs     bytes  objs trace name\n"
            "    1  0.00%  0.00%         0    0        64     1 300001 Foo\n"
            "SITES END\n");
}

TEST(SitesSection, BinaryAllocSitesAndHeapSummaryFollowTheirTraces) {
  SectionWriter out("heap=sites,format=b,depth=1", kMethods);
  uint32_t class_serial = out.writer.class_loaded("LFoo;", 0).serial;
  StackFrame frames[] = {{1, 0}};
  uint32_t array_class_serial = out.writer.class_loaded("[I", 0).serial;
  uint32_t trace = out.writer.intern_trace(200001, frames);
  Sites sites = sample_sites(class_serial, array_class_serial, trace);
  size_t before = out.mark();
  // A net= command's flags go into the record as they came.
  write_sites_section(out.writer, sites.rows, sites.totals, 0.0001, kSitesIncremental | kSitesForceGc, 0);
  out.writer.flush();

  // ... STACK TRACE of the sites' trace, ALLOC SITES (2 rows), HEAP SUMMARY.
  const std::vector<uint8_t>& bytes = out.stream.bytes;
  constexpr size_t kSummary = 9 + kHeapSummaryBodySize;
  constexpr size_t kSitesBody = kAllocSitesBodyBaseSize + 2 * kAllocSiteSize;
  ASSERT_GE(bytes.size(), before + kSummary + 9 + kSitesBody);
  size_t summary = bytes.size() - kSummary;
  size_t record = summary - 9 - kSitesBody;
  // The trace came first, right before the section (its one frame and the names before it).
  size_t stack_trace = record - 9 - (kStackTraceBodyBaseSize + kIdSize);
  ASSERT_GT(stack_trace, before);
  EXPECT_EQ(bytes[stack_trace], static_cast<uint8_t>(RecordTag::kStackTrace));
  EXPECT_EQ(u4_at(bytes, stack_trace + 9), trace);

  EXPECT_EQ(bytes[record], static_cast<uint8_t>(RecordTag::kAllocSites));
  EXPECT_EQ(u4_at(bytes, record + 5), kSitesBody);
  size_t body = record + 9;
  EXPECT_EQ(bytes[body], 0);  // flags
  EXPECT_EQ(bytes[body + 1], kSitesIncremental | kSitesForceGc);
  EXPECT_EQ(u4_at(bytes, body + 2), std::bit_cast<uint32_t>(0.0001f));
  EXPECT_EQ(u4_at(bytes, body + 6), 1000u);
  EXPECT_EQ(u4_at(bytes, body + 10), 10u);
  EXPECT_EQ(u8_at(bytes, body + 14), 1600u);
  EXPECT_EQ(u8_at(bytes, body + 22), 16u);
  EXPECT_EQ(u4_at(bytes, body + 30), 2u);
  size_t row = body + kAllocSitesBodyBaseSize;
  EXPECT_EQ(bytes[row], 0);
  EXPECT_EQ(u4_at(bytes, row + 1), class_serial);
  EXPECT_EQ(u4_at(bytes, row + 5), trace);
  EXPECT_EQ(u4_at(bytes, row + 9), 600u);
  EXPECT_EQ(u4_at(bytes, row + 13), 6u);
  EXPECT_EQ(u4_at(bytes, row + 17), 1200u);
  EXPECT_EQ(u4_at(bytes, row + 21), 12u);
  row += kAllocSiteSize;
  EXPECT_EQ(bytes[row], static_cast<uint8_t>(BasicType::kInt));
  EXPECT_EQ(u4_at(bytes, row + 1), array_class_serial);
  EXPECT_EQ(u4_at(bytes, row + 9), 300u);

  EXPECT_EQ(bytes[summary], static_cast<uint8_t>(RecordTag::kHeapSummary));
  EXPECT_EQ(u4_at(bytes, summary + 9), 1000u);
  EXPECT_EQ(u4_at(bytes, summary + 13), 10u);
  EXPECT_EQ(u8_at(bytes, summary + 17), 1600u);
  EXPECT_EQ(u8_at(bytes, summary + 25), 16u);

  VerifyResult result = verify_hprof(bytes.data(), bytes.size(), VerifyOptions{});
  EXPECT_TRUE(result.ok) << result.error;
}

}  // namespace
}  // namespace fasthprof
