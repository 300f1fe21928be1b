#include "records/profile_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/memory.h"
#include "hprof_verifier.h"
#include "memory_stream.h"

namespace fasthprof {
namespace {

uint64_t test_thread_id(uint64_t index) { return make_registry_object_id(RegistryObjectKind::kThread, index); }

Options options_for(OutputFormat format) {
  ParseResult parsed = parse_options(format == OutputFormat::kBinary ? "format=b,heap=sites,depth=6"
                                                                     : "heap=sites",
                                     nullptr);
  EXPECT_EQ(parsed.kind, ParseResult::Kind::kOk);
  return parsed.options;
}


TEST(ProfileWriter, TextHeaderThenThreadLines) {
  MemoryStream stream;
  auto output = std::make_unique<ProfileWriter>(options_for(OutputFormat::kText), stream, nullptr);
  output->write_header(0, 0);
  ThreadIdentity main = output->thread_started(test_thread_id(1), {"main", "main", "system"});
  ThreadIdentity worker = output->thread_started(test_thread_id(2), {"worker \"1\"", "workers", "main"});
  output->thread_ended(worker.serial);
  output->thread_ended(worker.serial);  // a second end is ignored
  output->thread_ended(123);            // unknown serials are ignored
  output->flush();

  EXPECT_EQ(main.serial, 200001u);
  EXPECT_EQ(worker.serial, 200002u);
  EXPECT_NE(main.object_id, worker.object_id);
  std::string text = stream.text();
  ASSERT_EQ(text.rfind("JAVA PROFILE 1.0.1, created ", 0), 0u);
  size_t body = text.find("\n--------\n\n");
  ASSERT_NE(body, std::string::npos);
  char expected[512];
  std::snprintf(expected, sizeof(expected),
                "THREAD START (obj=%llx, id = 200001, name=\"main\", group=\"main\")\n"
                "THREAD START (obj=%llx, id = 200002, name=\"worker \"1\"\", group=\"workers\")\n"
                "THREAD END (id = 200002)\n",
                static_cast<unsigned long long>(main.object_id),
                static_cast<unsigned long long>(worker.object_id));
  EXPECT_EQ(text.substr(body + 11), expected);
}

// Two methods of one class, with line tables.
class FakeResolver final : public MethodResolver {
 public:
  bool resolve_method(uint64_t method, MethodInfo* out) override {
    ++calls;
    out->class_signature = "Lcom/example/Shop$Cart;";
    out->name = method == 1 ? "add" : "total";
    out->signature = "()V";
    out->source_file = method == 1 ? "Shop.java" : "";
    out->class_serial = 100000;
    out->line_table = {{0, 10}, {5, 70000}};
    return true;
  }
  int calls = 0;
};

TEST(ProfileWriter, BinaryHeaderControlSettingsEmptyTraceAndThreads) {
  FakeResolver resolver;
  MemoryStream stream;
  auto output = std::make_unique<ProfileWriter>(options_for(OutputFormat::kBinary), stream, &resolver);
  output->write_header(0, 0x0102030405060708ull);
  ThreadIdentity main = output->thread_started(test_thread_id(1), {"main", "main", "system"});
  ThreadIdentity other = output->thread_started(test_thread_id(2), {"other", "main", "system"});
  output->thread_ended(main.serial);
  output->flush();
  const std::vector<uint8_t>& b = stream.bytes;

  const char kMagic[] = "JAVA PROFILE 1.0.2";
  ASSERT_GE(b.size(), sizeof(kMagic) + 12);
  EXPECT_EQ(std::memcmp(b.data(), kMagic, sizeof(kMagic)), 0);
  size_t at = sizeof(kMagic);
  EXPECT_EQ(u4_at(b, at), 8u);
  EXPECT_EQ(u4_at(b, at + 4), 0x01020304u);
  EXPECT_EQ(u4_at(b, at + 8), 0x05060708u);
  at += 12;
  // CONTROL SETTINGS: alloc traces on (heap=sites), depth 6.
  EXPECT_EQ(b[at], 0x0E);
  EXPECT_EQ(u4_at(b, at + 5), 6u);
  EXPECT_EQ(u4_at(b, at + 9), 1u);
  EXPECT_EQ(b[at + 13], 0);
  EXPECT_EQ(b[at + 14], 6);
  at += 15;
  // The empty trace 300000.
  EXPECT_EQ(b[at], 0x05);
  EXPECT_EQ(u4_at(b, at + 5), 12u);
  EXPECT_EQ(u4_at(b, at + 9), 300000u);
  EXPECT_EQ(u4_at(b, at + 17), 0u);

  VerifyOptions verify_options;
  VerifyResult result = verify_hprof(b.data(), b.size(), verify_options);
  ASSERT_TRUE(result.ok) << result.error << " at " << result.error_offset;
  EXPECT_EQ(result.record_counts[0x0A], 2u);  // START THREAD
  EXPECT_EQ(result.record_counts[0x0B], 1u);  // END THREAD
  // Group names are shared (main, system); each thread's name has an ID of its own (main, other).
  EXPECT_EQ(result.record_counts[0x01], 4u);
  EXPECT_NE(other.serial, main.serial);
}

// A program that starts threads all day: what the writer keeps must not grow with the threads that
// ended (their names included), in either format.
TEST(ProfileWriter, EndedThreadsAreNotKept) {
  for (OutputFormat format : {OutputFormat::kBinary, OutputFormat::kText}) {
    FakeResolver resolver;
    MemoryStream stream;
    ProfileWriter writer(options_for(format), stream, &resolver);
    writer.write_header(0, 0);
    writer.thread_started(test_thread_id(1), {"main", "main", "system"});
    auto churn = [&](int from, int to) {
      for (int n = from; n < to; ++n) {
        std::string name = "pool-1-thread-with-a-rather-long-name-" + std::to_string(n);
        ThreadIdentity thread = writer.thread_started(test_thread_id(2 + n), {name, "main", "system"});
        writer.thread_ended(thread.serial);
        if (n % 1000 == 0) {
          writer.flush();
          stream.bytes.clear();
        }
      }
    };
    churn(0, 1000);  // the pools and tables reach their size
    uint64_t before = memory::bytes_in_use();
    churn(1000, 51000);
    EXPECT_EQ(memory::bytes_in_use(), before) << (format == OutputFormat::kBinary ? "binary" : "text");
    EXPECT_EQ(writer.threads().size(), 51001u);
  }
}

TEST(ProfileWriter, TextTracesAreWrittenOnceWithJavaNamesAndLines) {
  FakeResolver resolver;
  MemoryStream stream;
  ProfileWriter writer(options_for(OutputFormat::kText), stream, &resolver);
  StackFrame frames[] = {{1, 7}, {2, 0}, {1, 0}, {2, 3}, {1, 1}};  // deeper than depth=4
  uint32_t serial = writer.intern_trace(200001, frames);
  EXPECT_EQ(serial, 300001u);
  EXPECT_EQ(writer.intern_trace(200002, frames), serial) << "thread=n keeps threads out of the key";
  writer.write_trace(serial);
  writer.write_trace(serial);
  writer.write_unwritten_traces();
  writer.flush();
  EXPECT_EQ(stream.text(),
            "TRACE 300001:\n"
            "\tcom.example.Shop$Cart.add(Shop.java:70000)\n"
            "\tcom.example.Shop$Cart.total(<Unknown Source>:10)\n"
            "\tcom.example.Shop$Cart.add(Shop.java:10)\n"
            "\tcom.example.Shop$Cart.total(<Unknown Source>:10)\n"
            "TRACE 300000:\n"
            "\t<empty>\n");
  EXPECT_EQ(resolver.calls, 2);
}

TEST(ProfileWriter, BinaryTraceWritesFramesAndNamesFirstAndVerifies) {
  FakeResolver resolver;
  MemoryStream stream;
  ParseResult parsed = parse_options("format=b,heap=sites,thread=y", nullptr);
  ProfileWriter writer(parsed.options, stream, &resolver);
  writer.write_header(0, 0);
  ThreadIdentity thread = writer.thread_started(test_thread_id(1), {"main", "main", ""});
  writer.class_loaded("Lcom/example/Shop$Cart;", 0);
  StackFrame frames[] = {{1, 7}, {2, 0}};
  uint32_t first = writer.intern_trace(thread.serial, frames);
  uint32_t second = writer.intern_trace(thread.serial + 1, frames);
  EXPECT_NE(first, second) << "thread=y puts the thread in the key";
  writer.write_unwritten_traces();
  writer.flush();
  VerifyResult result = verify_hprof(stream.bytes.data(), stream.bytes.size(), VerifyOptions{});
  ASSERT_TRUE(result.ok) << result.error << " at " << result.error_offset;
  EXPECT_EQ(result.record_counts[0x04], 2u);  // two FRAMEs, shared by both traces
  EXPECT_EQ(result.record_counts[0x05], 3u);  // the empty trace and two
  EXPECT_EQ(result.record_counts[0x02], 1u);  // LOAD CLASS
}

// After the sink cuts the file back, later records must still name records that are in the file.
TEST(ProfileWriter, AfterOutputIsLostLiveClassesAndThreadsAreAnnouncedAgain) {
  FakeResolver resolver;
  MemoryStream stream;
  ProfileWriter writer(options_for(OutputFormat::kBinary), stream, &resolver);
  writer.write_header(0, 0);
  writer.thread_started(test_thread_id(1), {"main", "main", "system"});
  writer.flush();
  size_t complete = stream.bytes.size();
  ThreadIdentity late = writer.thread_started(test_thread_id(2), {"late", "workers", "main"});
  writer.class_loaded("Lcom/example/Shop$Cart;", 0);
  StackFrame frames[] = {{1, 7}};
  writer.write_trace(writer.intern_trace(late.serial, frames));
  writer.flush();
  stream.bytes.resize(complete);  // what a cut back to the last complete report leaves

  writer.output_lost();
  writer.reannounce();
  writer.write_trace(writer.intern_trace(late.serial, frames));
  writer.thread_ended(late.serial);
  writer.flush();
  VerifyResult result = verify_hprof(stream.bytes.data(), stream.bytes.size(), VerifyOptions{});
  ASSERT_TRUE(result.ok) << result.error << " at " << result.error_offset;
  EXPECT_EQ(result.record_counts[0x02], 1u);  // LOAD CLASS again
  EXPECT_EQ(result.record_counts[0x0A], 3u);  // main, then main and late again
  EXPECT_EQ(result.record_counts[0x04], 1u);  // the FRAME again
}


// A full disk fails report after report: each cut goes back to where the failed report began,
// and what the writer repeats after it must not pile up (21 110 LOAD CLASS for 675 classes after
// 32 failed reports, before).
TEST(ProfileWriter, RepeatedlyLostReportsLeaveEachClassAndThreadOnce) {
  FakeResolver resolver;
  MemoryStream stream;
  ProfileWriter writer(options_for(OutputFormat::kBinary), stream, &resolver);
  writer.write_header(0, 0);
  writer.thread_started(test_thread_id(1), {"main", "main", "system"});
  writer.class_loaded("Ljava/lang/Object;", 0);
  writer.flush();
  writer.report_complete();
  size_t complete = stream.bytes.size();
  ThreadIdentity late = writer.thread_started(test_thread_id(2), {"late", "workers", "main"});
  writer.class_loaded("Lcom/example/Shop$Cart;", 0);
  for (int failed = 0; failed < 32; ++failed) {
    StackFrame frames[] = {{1, 7}};
    writer.write_trace(writer.intern_trace(late.serial, frames));
    writer.flush();
    stream.bytes.resize(complete);  // the cut back to where this report began
    writer.output_lost();
    writer.reannounce();
  }
  writer.flush();
  writer.report_complete();
  VerifyResult result = verify_hprof(stream.bytes.data(), stream.bytes.size(), VerifyOptions{});
  ASSERT_TRUE(result.ok) << result.error << " at " << result.error_offset;
  EXPECT_EQ(result.record_counts[0x02], 2u);  // Object, and the cart class once
  EXPECT_EQ(result.record_counts[0x0A], 2u);  // main, and late once
  EXPECT_EQ(result.record_counts[0x05], 1u);  // the empty trace, from the header only
}

}  // namespace
}  // namespace fasthprof
