// The verifier against hand-built heap dumps (hprof_file_builder.h): dangling references, class
// order, roots, and the JDK's own dumps that fasthprof inserted (VM dumps).
#include "hprof_file_builder.h"

namespace fasthprof {
namespace {

using namespace verifier_test;

// A one-segment dump with Object, Point and one Point, then what fill appends; extra is the offset
// fill returns, inside the segment body.
struct DumpCase {
  File file;
  size_t segment = 0;
  size_t extra = 0;
};

template <typename Fill>
DumpCase dump_case(Fill fill) {
  DumpCase c;
  c.file.prologue();
  Segment s = c.file.point_segment_body();
  c.extra = fill(c.file, s);
  c.segment = c.file.segment(s);
  c.file.end();
  return c;
}

TEST(VerifierDump, RejectsDanglingObjectReferenceInAField) {
  DumpCase c = dump_case([](File& f, Segment& s) {
    return s.instance(kPointC, kPointClass, f.point_values(1, 0x2999));
  });
  uint64_t value_at = c.file.at(c.segment, c.extra) + 1 + 8 + 4 + 8 + 4 + 4;
  EXPECT_FAILS_AT(c.file.verify(), value_at, "INSTANCE DUMP field value 0x2999 is not an object");
}

TEST(VerifierDump, RejectsDanglingRoot) {
  DumpCase c = dump_case([](File&, Segment& s) { return s.root(0x05, 0x1777); });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra) + 1, "ROOT STICKY CLASS 0x1777");
}

TEST(VerifierDump, DoesNotResolveTheJniGlobalReferenceId) {
  DumpCase c = dump_case([](File&, Segment& s) {
    size_t at = s.root(0x01, kPointA);
    s.id(0x123456);
    return at;
  });
  VerifyResult r = c.file.verify();
  EXPECT_TRUE(r.ok) << r.error;
}

TEST(VerifierDump, RejectsDanglingObjectArrayElement) {
  DumpCase c = dump_case([](File&, Segment& s) {
    s.class_dump(kPointArrayClass, kObjectClass, {});
    return s.object_array(kArray, kPointArrayClass, {kPointA, 0x2888});
  });
  uint64_t element_at = c.file.at(c.segment, c.extra) + 1 + 8 + 4 + 4 + 8 + 8;
  EXPECT_FAILS_AT(c.file.verify(), element_at, "OBJECT ARRAY DUMP element 0x2888");
  // The JDK's dumper leaves out objects that arrays of the VM still reference: counted, not an error.
  VerifyResult lenient = c.file.verify(false, false);
  ASSERT_TRUE(lenient.ok) << lenient.error;
  EXPECT_EQ(1u, lenient.dumps.at(0).unresolved_references);
}

TEST(VerifierDump, RejectsInstanceBeforeItsClassWhenStrict) {
  DumpCase c = dump_case([](File& f, Segment& s) {
    size_t at = s.instance(kPoint3B, kPoint3Class, f.body().u8(1).append(f.point_values(1, 0)));
    s.class_dump(kPoint3Class, kPointClass, {{kNameZ, kLong, 0}});
    return at;
  });
  EXPECT_FAILS_AT(c.file.verify(false, true), c.file.at(c.segment, c.extra),
                  "INSTANCE DUMP's class 0x1002 is dumped later");
  VerifyResult lenient = c.file.verify(false, false);
  EXPECT_TRUE(lenient.ok) << lenient.error;
}

TEST(VerifierDump, RejectsInstanceOfClassNotInTheDump) {
  DumpCase c = dump_case([](File& f, Segment& s) { return s.instance(kPointC, kPoint3Class, f.body()); });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "0x1002 has no CLASS DUMP in this dump");
}

TEST(VerifierDump, RejectsObjectArrayWhoseClassIsAnInstance) {
  DumpCase c = dump_case([](File&, Segment& s) { return s.object_array(kArray, kPointA, {}); });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "class 0x2001 is not a CLASS DUMP");
}

TEST(VerifierDump, RejectsSubclassBeforeSuperclassWhenStrict) {
  File f;
  f.prologue();
  Segment s = f.segment_body();
  s.class_dump(kObjectClass, 0, {});
  size_t sub = s.class_dump(kPoint3Class, kPointClass, {{kNameZ, kLong, 0}});
  s.class_dump(kPointClass, kObjectClass, {{kNameX, kInt, 0}});
  s.instance(kPoint3B, kPoint3Class, f.body().u8(1).u4(1));
  size_t seg = f.segment(s);
  f.end();
  EXPECT_FAILS_AT(f.verify(false, true), f.at(seg, sub), "super class 0x1001 is dumped later");
  VerifyResult lenient = f.verify(false, false);  // the instance's layout comes from the whole chain
  EXPECT_TRUE(lenient.ok) << lenient.error;
}

TEST(VerifierDump, RejectsSuperClassCycle) {
  File f;
  f.prologue();
  Segment s = f.segment_body();
  s.class_dump(kPoint3Class, kPointClass, {});
  s.class_dump(kPointClass, kPoint3Class, {});
  f.segment(s);
  f.end();
  VerifyResult result = f.verify(false, false);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(std::string::npos, result.error.find("is its own super class")) << result.error;
}

TEST(VerifierDump, RejectsWrongInstanceByteCount) {
  DumpCase c = dump_case([](File& f, Segment& s) {
    s.class_dump(kPoint3Class, kPointClass, {{kNameZ, kLong, 0}});
    return s.instance(kPoint3B, kPoint3Class, f.body().u4(1).append(f.point_values(1, 0)));
  });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "has 16 bytes of field values, its class chain declares 20");
  write_seed("wrong-instance-size", c.file);
}

TEST(VerifierDump, RejectsDuplicateObjectId) {
  DumpCase c = dump_case([](File& f, Segment& s) { return s.instance(kPointA, kPointClass, f.point_values(1, 0)); });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "object ID 0x2001 is already defined in this dump");
}

TEST(VerifierDump, RejectsClassDumpWithoutLoadClass) {
  DumpCase c = dump_case([](File&, Segment& s) { return s.class_dump(0x1050, kObjectClass, {}); });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "CLASS DUMP 0x1050 has no LOAD CLASS before it");
}

TEST(VerifierDump, RejectsInvalidFieldType) {
  DumpCase c = dump_case([](File&, Segment& s) {
    return s.class_dump(kPoint3Class, kPointClass, {{kNameZ, 3, 0}});
  });
  uint64_t type_at = c.file.at(c.segment, c.extra) + 1 + 7 * 8 + 8 + 2 + 2 + 2 + 8;
  EXPECT_FAILS_AT(c.file.verify(), type_at, "instance field has invalid basic type 3");
}

TEST(VerifierDump, RejectsPrimitiveArrayOfObjects) {
  DumpCase c = dump_case([](File&, Segment& s) { return s.primitive_array(kInts, kObj, {}); });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "PRIMITIVE ARRAY DUMP with element type 2");
}

TEST(VerifierDump, RejectsIllegalBooleanField) {
  DumpCase c = dump_case([](File&, Segment& s) {
    return s.class_dump(kPoint3Class, kPointClass, {}, {{kNameFlag, kBool, 2}});
  });
  uint64_t value_at = c.file.at(c.segment, c.extra) + 1 + 7 * 8 + 8 + 2 + 2 + 8 + 1;
  EXPECT_FAILS_AT(c.file.verify(), value_at, "CLASS DUMP static field has boolean value 2");
}

TEST(VerifierDump, RejectsUnknownTraceSerialOnAnInstance) {
  DumpCase c = dump_case([](File& f, Segment& s) {
    return s.instance(kPointC, kPointClass, f.point_values(1, 0), 300099);
  });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "INSTANCE DUMP names stack trace serial 300099");
}

TEST(VerifierRoots, RejectsJavaFrameRootBeforeItsThreadRoot) {
  DumpCase c = dump_case([](File&, Segment& s) {
    size_t at = s.frame_root(0x03, kPointA, kMainThread, 0);
    s.thread_object(0, kMainThread, kMainTrace);
    return at;
  });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra),
                  "ROOT JAVA FRAME names thread serial 200001, which has no ROOT THREAD OBJECT");
}

TEST(VerifierRoots, RejectsThreadBlockWithoutThreadRoot) {
  DumpCase c = dump_case([](File&, Segment& s) {
    size_t at = s.root(0x06, kPointA);
    s.u4(kMainThread);
    return at;
  });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "ROOT THREAD BLOCK names thread serial 200001");
}

TEST(VerifierRoots, RejectsFrameNumberOutOfRange) {
  DumpCase c = dump_case([](File&, Segment& s) {
    s.thread_object(0, kMainThread, kMainTrace);
    s.frame_root(0x03, kPointA, kMainThread, 1);
    return s.frame_root(0x02, kPointA, kMainThread, 2);
  });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra),
                  "ROOT JNI LOCAL frame number 2 is outside the 2 frames");
}

TEST(VerifierRoots, RejectsThreadRootWithUnknownTrace) {
  DumpCase c = dump_case([](File&, Segment& s) { return s.thread_object(kPointA, kMainThread, 300042); });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "ROOT THREAD OBJECT names stack trace serial 300042");
}

TEST(VerifierRoots, ThreadRootsDoNotCarryOverToTheNextDump) {
  File f;
  f.prologue();
  Segment one = f.segment_body();
  one.thread_object(0, kMainThread, kMainTrace);
  f.segment(one);
  f.end();
  Segment two = f.segment_body();
  size_t at = two.frame_root(0x03, 0, kMainThread, 0);
  size_t seg = f.segment(two);
  f.end();
  EXPECT_FAILS_AT(f.verify(), f.at(seg, at), "no ROOT THREAD OBJECT earlier in this dump");
}

// ---- VM dumps: JDK dumps that fasthprof inserted (JDK addresses, serials from kFirstVmDumpSerial) ----

constexpr uint64_t kVmObject = 0x600000100, kVmPoint = 0x600000200, kVmA = 0x600001000, kVmB = 0x600001100;

// One VM dump: LOAD CLASS of Object and Point under JDK addresses with VM-dump serials from
// first_serial, then Point before Object (the JDK's order) and one Point naming an object the dump
// leaves out.
void vm_dump(File& f, uint32_t first_serial, uint64_t object = kVmObject, uint64_t point = kVmPoint) {
  f.load_class(first_serial, object, kEmptyTrace, kNameObject);
  f.load_class(first_serial + 1, point, kEmptyTrace, kNamePoint);
  Segment s = f.segment_body();
  s.class_dump(point, object, {{kNameX, kInt, 0}, {kNameNext, kObj, 0}});
  s.class_dump(object, 0, {});
  s.instance(kVmA, point, f.point_values(1, kVmB));
  f.segment(s);
  f.end();
}

TEST(VerifierVmDumps, ScopesClassIdsToTheirDump) {
  File f;
  f.prologue();
  vm_dump(f, kFirstVmDumpSerial);
  vm_dump(f, kFirstVmDumpSerial + 2);                              // the same mirrors again
  vm_dump(f, kFirstVmDumpSerial + 4, kVmPoint, kVmObject + 0x40);  // moved: Point where Object was
  VerifyResult r = f.verify(true);
  ASSERT_TRUE(r.ok) << r.error << " at " << r.error_offset;
  ASSERT_EQ(r.dumps.size(), 3u);
  for (const DumpSummary& dump : r.dumps) {
    EXPECT_EQ(dump.unresolved_references, 1u);  // the left-out object, counted
    ASSERT_EQ(dump.class_counts.size(), 1u);
    EXPECT_EQ(dump.class_counts[0].first, "Point");  // names resolve within the dump
  }
  write_seed("vm-dumps", f);
}

TEST(VerifierVmDumps, RejectsAVmClassLoadedTwiceInOneDump) {
  File f;
  f.prologue();
  f.load_class(kFirstVmDumpSerial, kVmObject, kEmptyTrace, kNameObject);
  size_t at = f.load_class(kFirstVmDumpSerial + 1, kVmObject, kEmptyTrace, kNameObject);
  EXPECT_FAILS_AT(f.verify(), at, "LOAD CLASS of class object ID 0x600000100, which the LOAD CLASS of class serial 1073741824");
}

TEST(VerifierVmDumps, KeepsSerialsAndFasthprofIdsGlobal) {
  // A VM-dump serial is never defined again, not even after its dump.
  File f;
  f.prologue();
  vm_dump(f, kFirstVmDumpSerial);
  size_t at = f.load_class(kFirstVmDumpSerial, kVmObject, kEmptyTrace, kNameObject);
  EXPECT_FAILS_AT(f.verify(), at, "LOAD CLASS of class serial 1073741824, which the LOAD CLASS at byte");
  // An ID of fasthprof's (top byte not 0) is one class for the whole file, whatever its serial.
  File g;
  g.prologue();
  constexpr uint64_t kAgentClass = 0x0301000000000009;
  g.load_class(kFirstVmDumpSerial, kAgentClass, kEmptyTrace, kNameObject);
  Segment s = g.segment_body();
  s.class_dump(kAgentClass, 0, {});
  g.segment(s);
  g.end();
  size_t again = g.load_class(kFirstVmDumpSerial + 1, kAgentClass, kEmptyTrace, kNameObject);
  EXPECT_FAILS_AT(g.verify(), again, "LOAD CLASS of class object ID 0x301000000000009");
  // With fasthprof's serials, a JDK-looking ID is not a VM dump's: loaded once for the file.
  File h;
  h.prologue();
  h.load_class(100010, kVmObject, kEmptyTrace, kNameObject);
  Segment t = h.segment_body();
  t.class_dump(kVmObject, 0, {});
  h.segment(t);
  h.end();
  size_t reload = h.load_class(100011, kVmObject, kEmptyTrace, kNameObject);
  EXPECT_FAILS_AT(h.verify(), reload, "LOAD CLASS of class object ID 0x600000100");
}

TEST(VerifierVmDumps, HoldsOtherDumpsToTheStrictRules) {
  // The same dump as vm_dump() with fasthprof's serials: class order and the missing object fail.
  File f;
  f.prologue();
  f.load_class(100010, kVmObject, kEmptyTrace, kNameObject);
  f.load_class(100011, kVmPoint, kEmptyTrace, kNamePoint);
  Segment s = f.segment_body();
  size_t sub = s.class_dump(kVmPoint, kVmObject, {{kNameX, kInt, 0}, {kNameNext, kObj, 0}});
  s.class_dump(kVmObject, 0, {});
  size_t seg = f.segment(s);
  f.end();
  EXPECT_FAILS_AT(f.verify(), f.at(seg, sub), "super class 0x600000100 is dumped later");
  // A VM dump still needs its classes loaded, its names written and its traces defined.
  File g;
  g.prologue();
  g.load_class(kFirstVmDumpSerial, kVmObject, kEmptyTrace, kNameObject);
  Segment t = g.segment_body();
  t.class_dump(kVmObject, 0, {});
  size_t unloaded = t.class_dump(kVmPoint, kVmObject, {});
  size_t seg2 = g.segment(t);
  g.end();
  EXPECT_FAILS_AT(g.verify(), g.at(seg2, unloaded), "CLASS DUMP 0x600000200 has no LOAD CLASS before it");
  File h;
  h.prologue();
  size_t trace = h.load_class(kFirstVmDumpSerial, kVmObject, 0x40000005, kNameObject);
  EXPECT_FAILS_AT(h.verify(), trace, "LOAD CLASS names stack trace serial 1073741829, which no earlier STACK TRACE");
}


}  // namespace
}  // namespace fasthprof
