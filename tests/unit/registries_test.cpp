#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/hprof_format.h"
#include "base/ids.h"
#include "base/java_names.h"
#include "base/memory.h"
#include "registries/class_registry.h"
#include "registries/frame_registry.h"
#include "registries/name_table.h"
#include "registries/thread_registry.h"

namespace fasthprof {
namespace {

// ---- IDs ----------------------------------------------------------------------------------------

TEST(Ids, SpacesNeverOverlap) {
  uint64_t name = make_id(IdSpace::kName, 1);
  uint64_t frame = make_id(IdSpace::kFrame, 1);
  uint64_t klass = make_registry_object_id(RegistryObjectKind::kClass, 1);
  uint64_t thread = make_registry_object_id(RegistryObjectKind::kThread, 1);
  std::set<uint64_t> ids = {name, frame, klass, thread};
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_EQ(id_space(name), IdSpace::kName);
  EXPECT_EQ(id_space(frame), IdSpace::kFrame);
  EXPECT_EQ(id_space(klass), IdSpace::kRegistryObject);
  EXPECT_EQ(registry_object_index(RegistryObjectKind::kClass, klass), 1u);
  EXPECT_EQ(registry_object_index(RegistryObjectKind::kThread, klass), 0u);
  EXPECT_LT(static_cast<uint8_t>(IdSpace::kRegistryObject), static_cast<uint8_t>(IdSpace::kFirstObjectTag));
  // Every ID is a positive jlong when used as a JVMTI tag.
  EXPECT_GT(static_cast<int64_t>(make_id(IdSpace::kLastObjectTag, kIdIndexMask)), 0);
}

// ---- NameTable ----------------------------------------------------------------------------------

TEST(NameTable, InternsEachContentOnce) {
  NameTable names;
  NameRef a = names.intern("java.lang.String");
  NameRef b = names.intern("main");
  NameRef a_again = names.intern(std::string("java.lang.") + "String");
  EXPECT_TRUE(a.is_new);
  EXPECT_TRUE(b.is_new);
  EXPECT_FALSE(a_again.is_new);
  EXPECT_EQ(a.id, a_again.id);
  EXPECT_NE(a.id, b.id);
  EXPECT_NE(a.id, 0u);
  EXPECT_EQ(id_space(a.id), IdSpace::kName);
  EXPECT_EQ(names.size(), 2u);
  EXPECT_EQ(names.text(a.id), "java.lang.String");
  EXPECT_EQ(names.find("main"), b.id);
  EXPECT_EQ(names.find("absent"), 0u);
}

TEST(NameTable, EmptyAndPrefixNamesAreDistinct) {
  NameTable names;
  NameRef empty = names.intern("");
  NameRef ab = names.intern("ab");
  NameRef a = names.intern("a");
  EXPECT_TRUE(empty.is_new);
  EXPECT_NE(empty.id, 0u);
  EXPECT_NE(ab.id, a.id);
  EXPECT_FALSE(names.intern("").is_new);
  EXPECT_EQ(names.text(empty.id), "");
}

TEST(NameTable, IdsStayStableAcrossGrowth) {
  NameTable names;
  std::vector<uint64_t> ids;
  for (int i = 0; i < 20000; ++i) ids.push_back(names.intern("name" + std::to_string(i)).id);
  std::set<uint64_t> distinct(ids.begin(), ids.end());
  EXPECT_EQ(distinct.size(), ids.size());
  for (int i = 0; i < 20000; ++i) {
    NameRef again = names.intern("name" + std::to_string(i));
    ASSERT_FALSE(again.is_new);
    ASSERT_EQ(again.id, ids[i]);
    ASSERT_EQ(names.text(ids[i]), "name" + std::to_string(i));
  }
}

TEST(NameTable, ResetStartsANewFileWithoutReusingIds) {
  NameTable names;
  NameRef before = names.intern("x");
  names.reset();
  bool ok = true;
  EXPECT_EQ(names.text(before.id, &ok), "");
  EXPECT_FALSE(ok);
  EXPECT_EQ(names.size(), 0u);
  NameRef after = names.intern("x");
  EXPECT_TRUE(after.is_new);
  EXPECT_NE(after.id, before.id);
  EXPECT_EQ(names.text(after.id, &ok), "x");
  EXPECT_TRUE(ok);
}

TEST(NameTable, RejectsIdsOfOtherSpaces) {
  NameTable names;
  NameRef ref = names.intern("x");
  bool ok = true;
  names.text(make_id(IdSpace::kFrame, id_index(ref.id)), &ok);
  EXPECT_FALSE(ok);
  names.text(0, &ok);
  EXPECT_FALSE(ok);
}

// ---- ClassRegistry ------------------------------------------------------------------------------

TEST(ClassRegistry, SerialsStartAtTheOriginalBase) {
  ClassRegistry classes;
  ClassRef object = classes.register_class("Ljava/lang/Object;", 0);
  ClassRef string = classes.register_class("Ljava/lang/String;", 0);
  EXPECT_TRUE(object.is_new);
  EXPECT_EQ(object.serial, kFirstClassSerial);
  EXPECT_EQ(string.serial, kFirstClassSerial + 1);
  EXPECT_NE(object.object_id, string.object_id);
  EXPECT_EQ(registry_object_index(RegistryObjectKind::kClass, object.object_id), 1u);
}

TEST(ClassRegistry, SameClassKeepsSerialAndObjectId) {
  ClassRegistry classes;
  ClassRef first = classes.register_class("[[I", 7);
  ClassRef again = classes.register_class("[[I", 7);
  EXPECT_FALSE(again.is_new);
  EXPECT_EQ(first.serial, again.serial);
  EXPECT_EQ(first.object_id, again.object_id);
  const ClassInfo* info = classes.find_by_serial(first.serial);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->signature, "[[I");
  EXPECT_EQ(info->name, "int[][]");
  EXPECT_EQ(info->loader_key, 7u);
  EXPECT_EQ(classes.find_by_object_id(first.object_id), info);
  EXPECT_EQ(classes.find("[[I", 7), info);
}

TEST(ClassRegistry, LoaderIsPartOfTheKey) {
  ClassRegistry classes;
  ClassRef boot = classes.register_class("Lapp/Main;", 0);
  ClassRef app = classes.register_class("Lapp/Main;", 42);
  EXPECT_TRUE(app.is_new);
  EXPECT_NE(boot.serial, app.serial);
  EXPECT_NE(boot.object_id, app.object_id);
  EXPECT_EQ(classes.find_by_serial(app.serial)->name, "app.Main");
}

TEST(ClassRegistry, JavaNamesFollowTheOriginal) {
  ClassRegistry classes;
  EXPECT_EQ(classes.find_by_serial(classes.register_class("[C", 0).serial)->name, "char[]");
  EXPECT_EQ(classes.find_by_serial(classes.register_class("[Ljava/lang/String;", 0).serial)->name,
            "java.lang.String[]");
  EXPECT_EQ(classes.find_by_serial(classes.register_class("Ljava/util/HashMap$Entry;", 0).serial)->name,
            "java.util.HashMap$Entry");
}

TEST(ClassRegistry, HiddenClassesAreSpelledAsHotSpotsDumperSpellsThem) {
  ClassRegistry classes;
  // JVMTI's signature of a hidden class has a '.' before the address; HotSpot's name a '+'.
  EXPECT_EQ(classes.find_by_serial(classes.register_class("Lapp/Main$$Lambda$2.0x00007f1730002800;", 0).serial)->name,
            "app.Main$$Lambda$2+0x00007f1730002800");
  EXPECT_EQ(classes.find_by_serial(classes.register_class("[Lapp/Main$$Lambda.0x0000000062040210;", 0).serial)->name,
            "app.Main$$Lambda+0x0000000062040210[]");
  EXPECT_EQ(java_name("Ljava/lang/invoke/LambdaForm$MH.0x0000000800c04000;"),
            "java.lang.invoke.LambdaForm$MH+0x0000000800c04000");
}

TEST(ClassRegistry, UnloadReportsOnceAndPointersSurviveGrowth) {
  ClassRegistry classes;
  ClassRef gone = classes.register_class("Lapp/Gone;", 3);
  const ClassInfo* info = classes.find_by_serial(gone.serial);
  for (int i = 0; i < 5000; ++i) classes.register_class("Lapp/C" + std::to_string(i) + ";", 3);
  EXPECT_EQ(classes.find_by_serial(gone.serial), info);  // stable address
  EXPECT_EQ(classes.loaded_count(), 5001u);
  EXPECT_TRUE(classes.unload(gone.serial));
  EXPECT_FALSE(classes.unload(gone.serial));
  EXPECT_FALSE(classes.unload(kFirstClassSerial + 999999));
  EXPECT_FALSE(classes.unload(1));
  EXPECT_EQ(classes.loaded_count(), 5000u);
  EXPECT_EQ(classes.find("Lapp/Gone;", 3), nullptr);
  // Still known by serial and ID, for records written earlier.
  ASSERT_NE(classes.find_by_object_id(gone.object_id), nullptr);
  EXPECT_FALSE(classes.find_by_object_id(gone.object_id)->loaded);
  // Loaded again (a new Class object): a new class.
  ClassRef reloaded = classes.register_class("Lapp/Gone;", 3);
  EXPECT_TRUE(reloaded.is_new);
  EXPECT_NE(reloaded.serial, gone.serial);
  EXPECT_NE(reloaded.object_id, gone.object_id);
}

TEST(ClassRegistry, IteratesLoadedClassesInSerialOrder) {
  ClassRegistry classes;
  ClassRef a = classes.register_class("La;", 0);
  ClassRef b = classes.register_class("Lb;", 0);
  ClassRef c = classes.register_class("Lc;", 0);
  classes.unload(b.serial);
  std::vector<uint32_t> seen;
  classes.for_each_loaded([&](const ClassInfo& info) { seen.push_back(info.serial); });
  EXPECT_EQ(seen, (std::vector<uint32_t>{a.serial, c.serial}));
}

TEST(ClassRegistry, LookupRejectsForeignIds) {
  ClassRegistry classes;
  ClassRef a = classes.register_class("La;", 0);
  uint64_t as_thread = make_registry_object_id(RegistryObjectKind::kThread, 1);
  EXPECT_EQ(classes.find_by_object_id(as_thread), nullptr);
  EXPECT_EQ(classes.find_by_object_id(0), nullptr);
  EXPECT_EQ(classes.find_by_serial(a.serial + 1), nullptr);
  EXPECT_EQ(classes.find_by_serial(kFirstClassSerial - 1), nullptr);
}

// ---- ThreadRegistry -----------------------------------------------------------------------------

uint64_t thread_id(uint64_t index) { return make_registry_object_id(RegistryObjectKind::kThread, index); }

TEST(ThreadRegistry, SerialFollowsTheClaimedId) {
  ThreadRegistry threads;
  EXPECT_EQ(kUnknownThreadSerial, 200000u);
  ThreadIdClaims claims;
  uint64_t first = claims.claim(), second = claims.claim();
  EXPECT_EQ(first, thread_id(1));
  EXPECT_EQ(second, thread_id(2));
  // Registered in another order than claimed (two threads announced at once).
  ThreadRef worker = threads.start_thread(second);
  ThreadRef main = threads.start_thread(first);
  EXPECT_TRUE(main.is_new);
  EXPECT_EQ(main.serial, 200001u);
  EXPECT_EQ(worker.serial, 200002u);
  EXPECT_EQ(main.object_id, first);
  EXPECT_EQ(id_space(main.object_id), IdSpace::kRegistryObject);
  EXPECT_EQ(threads.find_by_serial(kUnknownThreadSerial), nullptr);
  EXPECT_EQ(threads.end_thread(kUnknownThreadSerial), false);
  EXPECT_EQ(threads.start_thread(make_registry_object_id(RegistryObjectKind::kClass, 1)).serial, 0u);
  EXPECT_EQ(threads.start_thread(0).serial, 0u);
}

TEST(ThreadRegistry, SameIdKeepsSerialWhileAlive) {
  ThreadRegistry threads;
  ThreadRef first = threads.start_thread(thread_id(5));
  ThreadRef again = threads.start_thread(thread_id(5));
  EXPECT_FALSE(again.is_new);
  EXPECT_EQ(first.serial, again.serial);
  EXPECT_EQ(first.object_id, again.object_id);
  const ThreadInfo* info = threads.find_by_object_id(thread_id(5));
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->serial, first.serial);
  EXPECT_EQ(threads.find_by_serial(first.serial), info);
}

TEST(ThreadRegistry, EndThreadReportsOnce) {
  ThreadRegistry threads;
  ThreadRef first = threads.start_thread(thread_id(1));
  ThreadRef other = threads.start_thread(thread_id(2));
  EXPECT_TRUE(threads.end_thread(first.serial));
  EXPECT_FALSE(threads.end_thread(first.serial));
  EXPECT_FALSE(threads.end_thread(other.serial + 1));
  EXPECT_EQ(threads.find_by_serial(first.serial), nullptr) << "an ended thread is forgotten";
  EXPECT_EQ(threads.find_by_object_id(first.object_id), nullptr);
  EXPECT_EQ(threads.serial_of_object_id(first.object_id), first.serial) << "its serial is still known";
  ThreadRef third = threads.start_thread(thread_id(3));
  std::vector<uint32_t> alive;
  threads.for_each_alive([&](const ThreadInfo& info) { alive.push_back(info.serial); });
  EXPECT_EQ(alive, (std::vector<uint32_t>{other.serial, third.serial}));
}

TEST(ThreadRegistry, SerialOfObjectIdOnlyUpToTheIdsRegistered) {
  ThreadRegistry threads;
  ThreadRef only = threads.start_thread(thread_id(1));
  EXPECT_EQ(threads.serial_of_object_id(only.object_id), only.serial);
  EXPECT_EQ(threads.serial_of_object_id(only.object_id + 1), 0u);
  EXPECT_EQ(threads.serial_of_object_id(make_registry_object_id(RegistryObjectKind::kClass, 1)), 0u);
  EXPECT_EQ(threads.serial_of_object_id(0), 0u);
}

TEST(ThreadRegistry, MemoryStaysBoundedWhileThreadsComeAndGo) {
  ThreadRegistry threads;
  // Warm up: as many threads alive at once as later, so that the pool holds what they need.
  std::vector<uint32_t> alive;
  for (uint64_t index = 1; index <= 64; ++index) alive.push_back(threads.start_thread(thread_id(index)).serial);
  for (uint32_t serial : alive) threads.end_thread(serial);
  uint64_t before = memory::bytes_in_use();
  for (uint64_t index = 1000; index < 101000; ++index) {
    ThreadRef ref = threads.start_thread(thread_id(index));
    ASSERT_TRUE(threads.end_thread(ref.serial));
  }
  EXPECT_EQ(memory::bytes_in_use(), before) << "100000 ended threads must not be kept";
  EXPECT_EQ(threads.alive_count(), 0u);
  EXPECT_EQ(threads.size(), 100064u);
}

// ---- FrameRegistry ------------------------------------------------------------------------------

class FakeResolver : public MethodResolver {
 public:
  bool resolve_method(uint64_t method, MethodInfo* out) override {
    ++calls[method];
    auto it = methods.find(method);
    if (it == methods.end()) return false;
    *out = it->second;
    return true;
  }
  std::map<uint64_t, MethodInfo> methods;
  std::map<uint64_t, int> calls;
};

MethodInfo method_info(std::string name, std::vector<LineNumberEntry> lines, std::string source = "Main.java") {
  MethodInfo info;
  info.class_signature = "Lapp/Main;";
  info.name = std::move(name);
  info.signature = "()V";
  info.source_file = std::move(source);
  info.class_serial = kFirstClassSerial + 8;
  info.line_table = std::move(lines);
  return info;
}

TEST(FrameRegistry, OneFramePerMethodAndLocation) {
  FakeResolver resolver;
  resolver.methods[1] = method_info("run", {{0, 10}, {5, 11}});
  resolver.methods[2] = method_info("call", {{0, 20}});
  FrameRegistry frames(&resolver);
  FrameRef a = frames.intern(1, 0);
  FrameRef b = frames.intern(1, 3);  // same line as a, still its own frame
  FrameRef c = frames.intern(2, 0);
  FrameRef a_again = frames.intern(1, 0);
  EXPECT_TRUE(a.is_new);
  EXPECT_TRUE(b.is_new);
  EXPECT_FALSE(a_again.is_new);
  EXPECT_EQ(a.frame_id, a_again.frame_id);
  EXPECT_NE(a.frame_id, b.frame_id);
  EXPECT_NE(a.frame_id, c.frame_id);
  EXPECT_EQ(id_space(a.frame_id), IdSpace::kFrame);
  EXPECT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames.method_count(), 2u);
  EXPECT_EQ(resolver.calls[1], 1);  // resolved once per method
  EXPECT_EQ(resolver.calls[2], 1);
  std::optional<FrameView> view = frames.find(b.frame_id);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->method, 1u);
  EXPECT_EQ(view->location, 3);
  EXPECT_EQ(view->line, 10);
  EXPECT_EQ(view->class_name, "app.Main");
  EXPECT_EQ(view->method_info->name, "run");
}

TEST(FrameRegistry, FrameIdsStayStableAcrossGrowth) {
  FakeResolver resolver;
  FrameRegistry frames(&resolver);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 10000; ++i) ids.push_back(frames.intern(i % 97, i).frame_id);
  for (int i = 0; i < 10000; ++i) {
    FrameRef again = frames.intern(i % 97, i);
    ASSERT_FALSE(again.is_new);
    ASSERT_EQ(again.frame_id, ids[i]);
  }
  EXPECT_EQ(std::set<uint64_t>(ids.begin(), ids.end()).size(), ids.size());
  EXPECT_EQ(frames.method_count(), 97u);
}

TEST(FrameRegistry, LineSearchFindsTheEntryAtOrBeforeTheLocation) {
  FakeResolver resolver;
  // Unsorted on purpose; lines above 65535 must not wrap.
  resolver.methods[7] = method_info("big", {{40, 70001}, {4, 65535}, {10, 65536}, {20, 123456}});
  FrameRegistry frames(&resolver);
  EXPECT_EQ(frames.line_for(7, 0), kUnknownLine);  // before the first entry
  EXPECT_EQ(frames.line_for(7, 3), kUnknownLine);
  EXPECT_EQ(frames.line_for(7, 4), 65535);
  EXPECT_EQ(frames.line_for(7, 9), 65535);
  EXPECT_EQ(frames.line_for(7, 10), 65536);
  EXPECT_EQ(frames.line_for(7, 19), 65536);
  EXPECT_EQ(frames.line_for(7, 20), 123456);
  EXPECT_EQ(frames.line_for(7, 39), 123456);
  EXPECT_EQ(frames.line_for(7, 40), 70001);
  EXPECT_EQ(frames.line_for(7, 100000), 70001);
  EXPECT_EQ(frames.line_for(7, -1), kUnknownLine);  // unknown location
  EXPECT_EQ(resolver.calls[7], 1);
  FrameRef frame = frames.intern(7, 25);
  EXPECT_EQ(frames.find(frame.frame_id)->line, 123456);
}

TEST(FrameRegistry, LineSearchOverManyEntries) {
  FakeResolver resolver;
  std::vector<LineNumberEntry> table;
  for (int i = 0; i < 1000; ++i) table.push_back({i * 3, 100000 + i});
  resolver.methods[1] = method_info("long", table);
  FrameRegistry frames(&resolver);
  for (int location = 0; location < 3000; ++location) {
    ASSERT_EQ(frames.line_for(1, location), 100000 + location / 3) << location;
  }
}

TEST(FrameRegistry, NoLineNumbersOrNoTableGiveUnknownLine) {
  FakeResolver resolver;
  resolver.methods[1] = method_info("run", {{0, 10}});
  resolver.methods[2] = method_info("noTable", {});
  FrameRegistry without_lines(&resolver, /*line_numbers=*/false);
  FrameRef a = without_lines.intern(1, 0);
  FrameRef b = without_lines.intern(1, 1);
  EXPECT_NE(a.frame_id, b.frame_id);  // lineno=n keeps frames distinct by location
  EXPECT_EQ(without_lines.find(a.frame_id)->line, kUnknownLine);
  FrameRegistry with_lines(&resolver);
  EXPECT_EQ(with_lines.line_for(2, 0), kUnknownLine);
  EXPECT_EQ(with_lines.line_for(1, 0), 10);
}

TEST(FrameRegistry, NativeMethodsGetTheNativeLineUnlessLinesAreOff) {
  FakeResolver resolver;
  resolver.methods[3] = method_info("sleep0", {});
  resolver.methods[3].native_method = true;
  FrameRegistry with_lines(&resolver);
  FrameRef frame = with_lines.intern(3, 0);
  EXPECT_EQ(with_lines.find(frame.frame_id)->line, kNativeMethodLine);
  EXPECT_EQ(with_lines.line_for(3, -1), kNativeMethodLine);  // cpu=times traces have no location
  NameTable names;
  EXPECT_EQ(with_lines.claim_record(frame.frame_id, &names).line, kNativeMethodLine);
  FrameRegistry without_lines(&resolver, /*line_numbers=*/false);  // lineno=n: every line unknown
  EXPECT_EQ(without_lines.find(without_lines.intern(3, 0).frame_id)->line, kUnknownLine);
}

TEST(FrameRegistry, ClaimRecordOncePerFileWithNewNames) {
  FakeResolver resolver;
  resolver.methods[1] = method_info("run", {{0, 10}});
  resolver.methods[2] = method_info("run", {{0, 30}}, "");  // no source file
  FrameRegistry frames(&resolver);
  NameTable names;
  FrameRef a = frames.intern(1, 0);
  FrameRef b = frames.intern(2, 0);

  FrameRecord first = frames.claim_record(a.frame_id, &names);
  EXPECT_TRUE(first.needed);
  EXPECT_EQ(first.frame_id, a.frame_id);
  EXPECT_TRUE(first.method_name.is_new);
  EXPECT_TRUE(first.method_signature.is_new);
  EXPECT_TRUE(first.source_file.is_new);
  EXPECT_EQ(names.text(first.method_name.id), "run");
  EXPECT_EQ(names.text(first.method_signature.id), "()V");
  EXPECT_EQ(names.text(first.source_file.id), "Main.java");
  EXPECT_EQ(first.class_serial, kFirstClassSerial + 8);
  EXPECT_EQ(first.line, 10);
  EXPECT_FALSE(frames.claim_record(a.frame_id, &names).needed);
  EXPECT_TRUE(frames.find(a.frame_id)->written);

  FrameRecord second = frames.claim_record(b.frame_id, &names);
  EXPECT_TRUE(second.needed);
  EXPECT_FALSE(second.method_name.is_new);  // shared with the first frame
  EXPECT_EQ(second.method_name.id, first.method_name.id);
  EXPECT_EQ(second.source_file.id, 0u);
  EXPECT_FALSE(second.source_file.is_new);
  EXPECT_EQ(second.line, 30);

  EXPECT_FALSE(frames.claim_record(make_id(IdSpace::kFrame, 99), &names).needed);
  EXPECT_FALSE(frames.claim_record(make_id(IdSpace::kName, 1), &names).needed);

  // A new file: records and names are needed again.
  frames.reset_written();
  names.reset();
  FrameRecord again = frames.claim_record(a.frame_id, &names);
  EXPECT_TRUE(again.needed);
  EXPECT_TRUE(again.method_name.is_new);
}

TEST(FrameRegistry, UnresolvableMethodIsUnknownButStillAFrame) {
  FakeResolver resolver;
  FrameRegistry frames(&resolver);
  NameTable names;
  FrameRef frame = frames.intern(404, 12);
  EXPECT_TRUE(frame.is_new);
  std::optional<FrameView> view = frames.find(frame.frame_id);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->line, kUnknownLine);
  EXPECT_EQ(view->method_info->name, "<unknown method>");
  EXPECT_EQ(view->class_name, "<unknown class>");
  FrameRecord record = frames.claim_record(frame.frame_id, &names);
  EXPECT_TRUE(record.needed);
  // A STACK FRAME names a method and a signature (hprof-verify refuses ID 0 for either).
  EXPECT_NE(record.method_name.id, 0u);
  EXPECT_EQ(names.text(record.method_name.id), "<unknown method>");
  EXPECT_NE(record.method_signature.id, 0u);
  EXPECT_EQ(names.text(record.method_signature.id), "()V");
  EXPECT_EQ(record.source_file.id, 0u);
  EXPECT_EQ(resolver.calls[404], 1);
  frames.intern(404, 13);
  EXPECT_EQ(resolver.calls[404], 1);  // a failed resolution is not retried for every frame
}

}  // namespace
}  // namespace fasthprof
