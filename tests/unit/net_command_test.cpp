// The net= command parser (runtime/options/net_command.h): every command round-trips through the encoder
// at any split; each malformed command costs one message and only itself; a length that cannot be
// skipped ends the stream.
#include "options/net_command.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace fasthprof {
namespace {

struct Parsed {
  std::vector<NetCommand> commands;
  std::vector<std::string> messages;
};

Parsed parse(const std::vector<uint8_t>& bytes, size_t chunk = 1 << 20, bool finish = true) {
  NetCommandParser parser;
  Parsed out;
  for (size_t at = 0; at < bytes.size(); at += chunk) {
    size_t n = std::min(chunk, bytes.size() - at);
    parser.feed(bytes.data() + at, n, &out.commands, &out.messages);
  }
  if (finish) parser.finish(&out.messages);
  return out;
}

NetCommand make(NetCommandTag tag, uint32_t serial) {
  NetCommand command;
  command.tag = tag;
  command.serial = serial;
  return command;
}

void append(std::vector<uint8_t>& bytes, const NetCommand& command) {
  std::vector<uint8_t> one = encode_net_command(command);
  bytes.insert(bytes.end(), one.begin(), one.end());
}

std::vector<uint8_t> raw(uint8_t tag, uint32_t serial, uint32_t length, std::vector<uint8_t> body) {
  std::vector<uint8_t> out = {tag,
                              uint8_t(serial >> 24), uint8_t(serial >> 16), uint8_t(serial >> 8), uint8_t(serial),
                              uint8_t(length >> 24), uint8_t(length >> 16), uint8_t(length >> 8), uint8_t(length)};
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::vector<uint8_t> every_command() {
  std::vector<uint8_t> bytes;
  append(bytes, make(NetCommandTag::kGc, 1));
  append(bytes, make(NetCommandTag::kDumpHeap, 2));
  NetCommand sites = make(NetCommandTag::kAllocSites, 3);
  sites.flags = kSitesIncremental | kSitesForceGc;
  sites.cutoff = 0.25f;
  append(bytes, sites);
  append(bytes, make(NetCommandTag::kHeapSummary, 4));
  append(bytes, make(NetCommandTag::kDumpTraces, 6));
  NetCommand cpu = make(NetCommandTag::kCpuSamples, 7);
  cpu.cutoff = 0.5f;
  append(bytes, cpu);
  NetCommand sampling = make(NetCommandTag::kControl, 8);
  sampling.control = NetControl::kSamplingOff;
  sampling.thread_id = 0x0102030405060708ULL;
  append(bytes, sampling);
  NetCommand depth = make(NetCommandTag::kControl, 9);
  depth.control = NetControl::kSetDepth;
  depth.depth = 3;
  append(bytes, depth);
  NetCommand clear = make(NetCommandTag::kControl, 10);
  clear.control = NetControl::kClearCpu;
  append(bytes, clear);
  append(bytes, make(NetCommandTag::kExit, 11));
  return bytes;
}

void expect_every_command(const Parsed& parsed) {
  ASSERT_TRUE(parsed.messages.empty()) << parsed.messages[0];
  ASSERT_EQ(parsed.commands.size(), 10u);
  EXPECT_EQ(parsed.commands[0].tag, NetCommandTag::kGc);
  EXPECT_EQ(parsed.commands[1].tag, NetCommandTag::kDumpHeap);
  EXPECT_EQ(parsed.commands[2].tag, NetCommandTag::kAllocSites);
  EXPECT_EQ(parsed.commands[2].serial, 3u);
  EXPECT_EQ(parsed.commands[2].flags, kSitesIncremental | kSitesForceGc);
  EXPECT_EQ(parsed.commands[2].cutoff, 0.25f);
  EXPECT_EQ(parsed.commands[5].tag, NetCommandTag::kCpuSamples);
  EXPECT_EQ(parsed.commands[5].cutoff, 0.5f);
  EXPECT_EQ(parsed.commands[6].control, NetControl::kSamplingOff);
  EXPECT_EQ(parsed.commands[6].thread_id, 0x0102030405060708ULL);
  EXPECT_EQ(parsed.commands[7].control, NetControl::kSetDepth);
  EXPECT_EQ(parsed.commands[7].depth, 3);
  EXPECT_EQ(parsed.commands[8].control, NetControl::kClearCpu);
  EXPECT_EQ(parsed.commands[9].tag, NetCommandTag::kExit);
  EXPECT_EQ(parsed.commands[9].serial, 11u);
}

TEST(NetCommand, EveryCommandAtAnySplit) {
  std::vector<uint8_t> bytes = every_command();
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{9}, size_t{10}, bytes.size()}) {
    SCOPED_TRACE(chunk);
    expect_every_command(parse(bytes, chunk));
  }
}

TEST(NetCommand, ThreadIdIsBigEndian) {
  Parsed parsed = parse(raw(0x08, 1, 10, {0, 3, 0, 0, 0, 0, 0, 0, 0x12, 0x34}));
  ASSERT_EQ(parsed.commands.size(), 1u);
  EXPECT_EQ(parsed.commands[0].control, NetControl::kSamplingOn);
  EXPECT_EQ(parsed.commands[0].thread_id, 0x1234u);
}

TEST(NetCommand, BadFloatsAreIgnoredAndTheStreamGoesOn) {
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), -0.5f, 1.5f};
  for (float cutoff : bad) {
    std::vector<uint8_t> bytes;
    NetCommand cpu = make(NetCommandTag::kCpuSamples, 5);
    cpu.cutoff = cutoff;
    append(bytes, cpu);
    append(bytes, make(NetCommandTag::kGc, 6));
    Parsed parsed = parse(bytes);
    ASSERT_EQ(parsed.messages.size(), 1u);
    EXPECT_NE(parsed.messages[0].find("CPU SAMPLES, serial 5): cutoff"), std::string::npos) << parsed.messages[0];
    ASSERT_EQ(parsed.commands.size(), 1u);
    EXPECT_EQ(parsed.commands[0].tag, NetCommandTag::kGc);
  }
}

TEST(NetCommand, UnknownTagBadLengthUnknownControlAndFlags) {
  std::vector<uint8_t> bytes = raw(0x2a, 1, 3, {1, 2, 3});             // unknown: skipped by its length
  std::vector<uint8_t> more = raw(0x01, 2, 4, {9, 9, 9, 9});          // GC with a body
  bytes.insert(bytes.end(), more.begin(), more.end());
  more = raw(0x08, 3, 2, {0, 9});                                      // CONTROL 9
  bytes.insert(bytes.end(), more.begin(), more.end());
  more = raw(0x08, 4, 2, {0, 3});                                      // sampling on without its ID
  bytes.insert(bytes.end(), more.begin(), more.end());
  more = raw(0x03, 5, 6, {0, 0x10, 0, 0, 0, 0});                      // unknown flag bit
  bytes.insert(bytes.end(), more.begin(), more.end());
  append(bytes, make(NetCommandTag::kHeapSummary, 6));
  Parsed parsed = parse(bytes);
  ASSERT_EQ(parsed.messages.size(), 5u);
  EXPECT_NE(parsed.messages[0].find("tag 0x2a, serial 1): unknown command; ignored"), std::string::npos);
  EXPECT_NE(parsed.messages[1].find("GC, serial 2): bad length 4; ignored"), std::string::npos);
  EXPECT_NE(parsed.messages[2].find("unknown sub-command 9"), std::string::npos);
  EXPECT_NE(parsed.messages[3].find("bad length 2 for sub-command 3"), std::string::npos);
  EXPECT_NE(parsed.messages[4].find("unknown flags 0x10"), std::string::npos);
  ASSERT_EQ(parsed.commands.size(), 1u);
  EXPECT_EQ(parsed.commands[0].tag, NetCommandTag::kHeapSummary);
}

TEST(NetCommand, AnUnskippableLengthEndsTheStreamOnce) {
  std::vector<uint8_t> bytes = raw('G', 0x45542f20, 0x48545450, {});  // "GET / HTTP" from a browser
  std::vector<uint8_t> gc = encode_net_command(make(NetCommandTag::kGc, 1));
  for (int i = 0; i < 3; ++i) bytes.insert(bytes.end(), gc.begin(), gc.end());
  NetCommandParser parser;
  Parsed out;
  parser.feed(bytes.data(), bytes.size(), &out.commands, &out.messages);
  parser.feed(gc.data(), gc.size(), &out.commands, &out.messages);
  parser.finish(&out.messages);
  EXPECT_TRUE(parser.out_of_step());
  EXPECT_TRUE(out.commands.empty());
  ASSERT_EQ(out.messages.size(), 1u);
  EXPECT_NE(out.messages[0].find("out of step"), std::string::npos);
}

TEST(NetCommand, ATruncatedCommandIsReportedAtTheEnd) {
  std::vector<uint8_t> bytes = encode_net_command(make(NetCommandTag::kGc, 1));
  NetCommand cpu = make(NetCommandTag::kCpuSamples, 2);
  std::vector<uint8_t> cut = encode_net_command(cpu);
  bytes.insert(bytes.end(), cut.begin(), cut.begin() + 12);
  Parsed parsed = parse(bytes, 5);
  ASSERT_EQ(parsed.commands.size(), 1u);
  ASSERT_EQ(parsed.messages.size(), 1u);
  EXPECT_NE(parsed.messages[0].find("cut short"), std::string::npos);
  // A header cut short too.
  parsed = parse({0x01, 0, 0});
  EXPECT_TRUE(parsed.commands.empty());
  ASSERT_EQ(parsed.messages.size(), 1u);
}

TEST(NetCommand, AThousandInABurst) {
  std::vector<uint8_t> bytes;
  for (uint32_t i = 0; i < 1000; ++i) append(bytes, make(NetCommandTag::kDumpTraces, i));
  Parsed parsed = parse(bytes, 4096);
  ASSERT_EQ(parsed.commands.size(), 1000u);
  EXPECT_EQ(parsed.commands[999].serial, 999u);
  EXPECT_TRUE(parsed.messages.empty());
}

}  // namespace
}  // namespace fasthprof
