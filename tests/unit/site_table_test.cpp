#include "sections/site_table.h"

#include "base/hprof_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

namespace fasthprof {
namespace {

// Resolves every slot as (class 100000 + slot % classes, trace 300000 + slot / classes).
struct FakeResolver {
  uint32_t classes = 1000;
  std::vector<uint32_t> asked;
  bool operator()(uint32_t slot, SiteIdentity* site) {
    asked.push_back(slot);
    site->class_serial = 100000 + slot % classes;
    site->trace_serial = 300000 + slot / classes;
    return true;
  }
};

std::vector<AllocationEvent> events(std::initializer_list<std::pair<uint32_t, uint64_t>> list) {
  std::vector<AllocationEvent> out;
  for (auto [slot, size] : list) out.push_back({slot, 0, size});
  return out;
}

TEST(SiteTable, CountsAllocationsPerSiteAndResolvesEachSlotOnce) {
  SiteTable table;
  FakeResolver resolver;
  auto batch = events({{1, 16}, {2, 24}, {1, 16}, {1, 16}});
  table.apply(batch, std::ref(resolver));
  EXPECT_EQ(resolver.asked, (std::vector<uint32_t>{1, 2}));
  SiteTotals totals;
  auto rows = table.report_rows(0.0, &totals);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(totals.alloc_objects, 4u);
  EXPECT_EQ(totals.alloc_bytes, 72u);
  EXPECT_EQ(totals.sites, 2u);
  // No live bytes at all: cutoff 0 keeps every row, sorted by allocated bytes among ties.
  EXPECT_EQ(rows[0].site.class_serial, 100001u);
  EXPECT_EQ(rows[0].counts.alloc_objects, 3u);
  EXPECT_EQ(rows[0].counts.alloc_bytes, 48u);
  EXPECT_EQ(rows[1].counts.alloc_objects, 1u);
}

TEST(SiteTable, SlotsOfOneSiteShareOneRow) {
  SiteTable table;
  table.bind_slot(5, {100001, 300001, 0});
  table.bind_slot(9, {100001, 300001, 0});
  table.bind_slot(7, {100002, 300001, 0});
  auto batch = events({{5, 10}, {9, 10}, {7, 10}});
  table.apply(batch, [](uint32_t, SiteIdentity*) { return false; });
  EXPECT_EQ(table.site_count(), 2u);
  auto rows = table.report_rows(0.0, nullptr);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].counts.alloc_objects, 2u);
  EXPECT_EQ(rows[0].site.class_serial, 100001u);
}

// Counts made by injected code land on the row of their site, shared with slots of the same site.
TEST(SiteTable, CountedElsewhereAddsToTheSitesRow) {
  SiteTable table;
  table.bind_slot(5, {100001, 300001, 0});
  auto batch = events({{5, 16}});
  table.apply(batch, [](uint32_t, SiteIdentity*) { return false; });
  table.add_counted({100001, 300001, 0}, 10, 160);
  table.add_counted({100002, 300001, 2}, 3, 72);
  table.add_counted({100002, 300001, 2}, 1, 24);
  EXPECT_EQ(table.site_count(), 2u);
  SiteTotals totals;
  auto rows = table.report_rows(0.0, &totals);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].site.class_serial, 100001u);
  EXPECT_EQ(rows[0].counts.alloc_objects, 11u);
  EXPECT_EQ(rows[0].counts.alloc_bytes, 176u);
  EXPECT_EQ(rows[1].counts.alloc_objects, 4u);
  EXPECT_EQ(rows[1].counts.alloc_bytes, 96u);
  EXPECT_EQ(totals.alloc_objects, 15u);
}

TEST(SiteTable, UnresolvableSlotsAreCountedAsUnattributed) {
  SiteTable table;
  auto batch = events({{3, 8}, {3, 8}});
  table.apply(batch, [](uint32_t, SiteIdentity*) { return false; });
  EXPECT_EQ(table.unattributed(), 2u);
  EXPECT_EQ(table.site_count(), 0u);
}

TEST(SiteTable, SortsByLiveBytesAndStopsAtTheFirstRowBelowCutoff) {
  SiteTable table;
  for (uint32_t slot = 1; slot <= 4; ++slot) table.bind_slot(slot, {100000 + slot, 300000 + slot, 0});
  table.clear_live();
  ASSERT_TRUE(table.add_live(1, 1, 100));     // 10%
  ASSERT_TRUE(table.add_live(2, 2, 890));     // 89%
  ASSERT_TRUE(table.add_live(3, 1, 10));      // 1%
  EXPECT_FALSE(table.add_live(42, 1, 1000));  // unknown slot: ignored
  SiteTotals totals;
  auto rows = table.report_rows(0.05, &totals);
  EXPECT_EQ(totals.live_bytes, 1000u);
  EXPECT_EQ(totals.live_objects, 4u);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].site.class_serial, 100002u);
  EXPECT_EQ(rows[1].site.class_serial, 100001u);
  // cutoff 0 prints every site, dead ones included; the default-like cutoff drops dead sites.
  EXPECT_EQ(table.report_rows(0.0, nullptr).size(), 4u);
  EXPECT_EQ(table.report_rows(0.0001, nullptr).size(), 3u);
}

// net= ALLOC SITES flag 0x2: by allocated bytes, cut at the allocated share, so a site whose objects
// all died stays listed when it allocated the most (the original cut it at its live share of 0).
TEST(SiteTable, SortsAndCutsByAllocatedBytesWhenAsked) {
  SiteTable table;
  for (uint32_t slot = 1; slot <= 3; ++slot) table.bind_slot(slot, {100000 + slot, 300000 + slot, 0});
  table.apply(events({{1, 700}, {2, 200}, {3, 100}}), [](uint32_t, SiteIdentity*) { return false; });
  table.clear_live();
  table.add_live(2, 1, 200);
  table.add_live(3, 1, 100);
  SiteSelection by_alloc;
  by_alloc.by_allocation = true;
  SiteTotals totals;
  auto rows = table.report_rows(0.15, &totals, by_alloc);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].site.class_serial, 100001u);  // 70% of the allocated bytes, none live
  EXPECT_EQ(rows[1].site.class_serial, 100002u);  // 20%; site 3's 10% is below the cutoff
  EXPECT_EQ(totals.alloc_bytes, 1000u);
  // By live bytes, site 1 (dead) is last and the same cutoff drops it.
  rows = table.report_rows(0.15, nullptr);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].site.class_serial, 100002u);
  EXPECT_EQ(rows[1].site.class_serial, 100003u);
}

// net= ALLOC SITES flag 0x1: only the sites whose counts moved since the last SITES output, or that
// are new; the totals stay those of every site.
TEST(SiteTable, IncrementalListsOnlySitesChangedSinceTheLastReport) {
  SiteTable table;
  for (uint32_t slot = 1; slot <= 3; ++slot) table.bind_slot(slot, {100000 + slot, 300000 + slot, 0});
  table.apply(events({{1, 10}, {2, 20}, {3, 30}}), [](uint32_t, SiteIdentity*) { return false; });
  table.clear_live();
  for (uint32_t slot = 1; slot <= 3; ++slot) table.add_live(slot, 1, slot * 10);
  SiteSelection changed;
  changed.changed_only = true;
  // Nothing reported yet: every site is new.
  EXPECT_EQ(table.report_rows(0.0, nullptr, changed).size(), 3u);
  table.mark_reported();
  EXPECT_EQ(table.report_rows(0.0, nullptr, changed).size(), 0u);
  // Site 1 allocates again, site 2's object dies (the next walk no longer sees it), a new site 4.
  table.bind_slot(4, {100004, 300004, 0});
  table.apply(events({{1, 10}, {4, 40}}), [](uint32_t, SiteIdentity*) { return false; });
  table.clear_live();
  table.add_live(1, 2, 20);
  table.add_live(3, 1, 30);
  table.add_live(4, 1, 40);
  SiteTotals totals;
  auto rows = table.report_rows(0.0, &totals, changed);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].site.class_serial, 100004u);
  EXPECT_EQ(rows[1].site.class_serial, 100001u);
  EXPECT_EQ(rows[2].site.class_serial, 100002u);
  EXPECT_EQ(totals.live_bytes, 90u);  // every site's
  EXPECT_EQ(totals.sites, 4u);
  // The whole table is still there for a report that asks for it.
  EXPECT_EQ(table.report_rows(0.0, nullptr).size(), 4u);
  table.mark_reported();
  EXPECT_EQ(table.report_rows(0.0, nullptr, changed).size(), 0u);
}

TEST(SiteTable, LiveCountsStartOverAtEachReport) {
  SiteTable table;
  table.bind_slot(1, {100001, 300001, 0});
  table.add_live(1, 5, 50);
  table.clear_live();
  table.add_live(1, 2, 20);
  auto rows = table.report_rows(0.0, nullptr);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].counts.live_objects, 2u);
  EXPECT_EQ(rows[0].counts.live_bytes, 20u);
}

// live=n: no heap walk; every row's live counts repeat its allocated ones, also after a reset of
// the allocated counts (net= CONTROL) and with sample= (the rounded estimates).
TEST(SiteTable, LiveFromAllocatedRepeatsTheAllocatedCounts) {
  for (uint64_t interval : {uint64_t{0}, uint64_t{4096}}) {
    SiteTable table(interval);
    FakeResolver resolve;
    auto batch = events({{1, 16}, {1, 16}, {2, 4000}, {1001, 24}});
    table.apply(batch, resolve);
    table.live_from_allocated();
    auto rows = table.report_rows(0.0, nullptr);
    ASSERT_EQ(rows.size(), 3u);
    for (const SiteRow& row : rows) {
      EXPECT_EQ(row.counts.live_objects, row.counts.alloc_objects) << interval;
      EXPECT_EQ(row.counts.live_bytes, row.counts.alloc_bytes) << interval;
      EXPECT_GT(row.counts.alloc_objects, 0u);
    }
    if (interval == 0) EXPECT_EQ(rows[0].counts.live_bytes, 4000u);  // sorted by (live = allocated) bytes
    table.reset_allocated();
    auto more = events({{2, 4000}});
    table.apply(more, resolve);
    table.live_from_allocated();
    SiteTotals totals;
    rows = table.report_rows(0.0, &totals);
    EXPECT_EQ(totals.live_bytes, totals.alloc_bytes);
    EXPECT_EQ(totals.live_objects, totals.alloc_objects);
    EXPECT_EQ(rows[0].counts.live_objects, rows[0].counts.alloc_objects);
  }
}

// With sample= a row's live count sums the rounded counts of its slots while its allocated count
// rounds the row's own sum: all objects alive, the live figure must not come out above.
TEST(SiteTable, SampledLiveNeverExceedsAllocated) {
  constexpr uint64_t kInterval = 4096;
  SiteTable table(kInterval);
  table.bind_slot(1, {100001, 300001, 0});
  table.bind_slot(2, {100001, 300001, 0});  // the same site: one row
  // Sizes whose weights make each slot's estimate end in .5 or so: rounded each, they add up
  // above the rounded total.
  uint64_t size = 0;
  for (uint64_t candidate = 2000; candidate < 4000; ++candidate) {
    double weight = sample_weight(candidate, kInterval);
    double fraction = weight - std::floor(weight);
    if (fraction > 0.5 && fraction < 0.6) {
      size = candidate;
      break;
    }
  }
  ASSERT_NE(size, 0u);
  auto batch = events({{1, size}, {2, size}});
  table.apply(batch, [](uint32_t, SiteIdentity*) { return false; });
  SampledTally one;
  one.add(size, kInterval);
  table.add_live(1, one.reported_objects(kInterval), one.reported_bytes(kInterval));
  table.add_live(2, one.reported_objects(kInterval), one.reported_bytes(kInterval));
  auto rows = table.report_rows(0.0, nullptr);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_GT(2 * one.reported_objects(kInterval), rows[0].counts.alloc_objects) << "the case rounds up twice";
  EXPECT_EQ(rows[0].counts.live_objects, rows[0].counts.alloc_objects);
  EXPECT_LE(rows[0].counts.live_bytes, rows[0].counts.alloc_bytes);
}

TEST(SiteTable, CountersAreSixtyFourBit) {
  SiteTable table;
  table.bind_slot(1, {100001, 300001, 0});
  uint64_t big = uint64_t{3} << 32;
  auto batch = events({{1, big}, {1, big}});
  table.apply(batch, [](uint32_t, SiteIdentity*) { return false; });
  auto rows = table.report_rows(0.0, nullptr);
  EXPECT_EQ(rows[0].counts.alloc_bytes, 2 * big);
}

TEST(SampleWeight, IsOneForExactTrackingAndInverseProbabilityOtherwise) {
  EXPECT_EQ(sample_weight(16, 0), 1.0);
  EXPECT_NEAR(sample_weight(16, 512 * 1024), 512.0 * 1024 / 16, 1.0);
  EXPECT_NEAR(sample_weight(64 << 20, 512 * 1024), 1.0, 1e-9);
  EXPECT_NEAR(sample_weight(512 * 1024, 512 * 1024), 1.0 / (1.0 - std::exp(-1.0)), 1e-9);
}

TEST(SampledTally, ReportsExactCountsOrRoundedEstimates) {
  SampledTally tally;
  for (uint64_t size : {16, 16, 1 << 20}) tally.add(size, 512 * 1024);
  EXPECT_EQ(tally.reported_objects(0), 3u);
  EXPECT_EQ(tally.reported_bytes(0), 32u + (1 << 20));
  double objects = 2 * sample_weight(16, 512 * 1024) + sample_weight(1 << 20, 512 * 1024);
  EXPECT_EQ(tally.reported_objects(512 * 1024), static_cast<uint64_t>(std::llround(objects)));
  double bytes = 32 * sample_weight(16, 512 * 1024) + (1 << 20) * sample_weight(1 << 20, 512 * 1024);
  EXPECT_EQ(tally.reported_bytes(512 * 1024), static_cast<uint64_t>(std::llround(bytes)));
}

TEST(SampleWeight, EstimatesAreUnbiasedUnderExponentialSampling) {
  // Each object is sampled with probability 1 - exp(-size / interval), as the JVM's exponential
  // sampling does; the weighted counts must come back near the true ones for every size.
  std::mt19937_64 random(12345);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const uint64_t interval = 64 * 1024;
  for (uint64_t size : {uint64_t{16}, uint64_t{4096}, uint64_t{64 * 1024}, uint64_t{1 << 20}}) {
    SiteTable table(interval);
    table.bind_slot(1, {100001, 300001, 0});
    const int objects = 20'000'000;
    std::vector<AllocationEvent> sampled;
    double probability = -std::expm1(-static_cast<double>(size) / interval);
    auto no_resolver = [](uint32_t, SiteIdentity*) { return false; };
    for (int i = 0; i < objects; ++i) {
      if (uniform(random) < probability) sampled.push_back({1, 0, size});
      if (sampled.size() == 4096) {
        table.apply(sampled, no_resolver);
        sampled.clear();
      }
    }
    table.apply(sampled, no_resolver);
    auto rows = table.report_rows(0.0, nullptr);
    ASSERT_EQ(rows.size(), 1u);
    double tolerance = size < 1024 ? 0.05 : 0.01;
    EXPECT_NEAR(static_cast<double>(rows[0].counts.alloc_objects), objects, objects * tolerance) << size;
    EXPECT_NEAR(static_cast<double>(rows[0].counts.alloc_bytes), double(objects) * size,
                double(objects) * size * tolerance)
        << size;
  }
}

TEST(ArrayKind, FollowsTheAllocSitesCodes) {
  // Each signature with its kind: 0 not an array, 2 an array of objects, else the element type.
  const std::pair<const char*, int> kinds[] = {
      {"Ljava/lang/String;", 0}, {"[Ljava/lang/String;", 2}, {"[[I", 2}, {"[Z", 4}, {"[C", 5}, {"[F", 6},
      {"[D", 7}, {"[B", 8}, {"[S", 9}, {"[I", 10}, {"[J", 11}, {"", 0}};
  for (auto [signature, kind] : kinds) EXPECT_EQ(array_kind_of(signature), kind) << "signature " << signature;
}

// The one letter -> basic type mapping that array kinds and heap-dump field types share.
TEST(BasicTypeOfSignature, LettersAndSizes) {
  struct Case {
    char letter;
    BasicType type;
    size_t size;
  };
  for (const Case& c : {Case{'Z', BasicType::kBoolean, 1}, Case{'B', BasicType::kByte, 1},
                        Case{'C', BasicType::kChar, 2}, Case{'S', BasicType::kShort, 2},
                        Case{'I', BasicType::kInt, 4}, Case{'F', BasicType::kFloat, 4},
                        Case{'J', BasicType::kLong, 8}, Case{'D', BasicType::kDouble, 8},
                        Case{'L', BasicType::kObject, kIdSize}, Case{'[', BasicType::kObject, kIdSize},
                        Case{'V', BasicType::kObject, kIdSize}, Case{'\0', BasicType::kObject, kIdSize}}) {
    EXPECT_EQ(basic_type_of_signature(c.letter), c.type) << c.letter;
    EXPECT_EQ(basic_type_size(basic_type_of_signature(c.letter)), c.size) << c.letter;
  }
  static_assert(basic_type_of_signature('J') == BasicType::kLong);
}

}  // namespace
}  // namespace fasthprof
