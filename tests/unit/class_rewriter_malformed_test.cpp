// runtime/classfile/class_rewriter on malformed class files: every truncation, bad headers, pools and code
// are refused as malformed with a one-line reason (class_file_tools.h builds them).
#include "class_file_tools.h"

namespace fasthprof {
namespace {

using namespace class_test;

void expect_malformed(const Data& d, const std::string& why) {
  Rewrite r = rewrite(d);
  EXPECT_EQ(r.result.outcome, RewriteOutcome::kMalformed) << why;
  EXPECT_FALSE(r.result.error.empty()) << why;
  EXPECT_EQ(r.result.error.find('\n'), std::string::npos) << r.result.error;
  EXPECT_TRUE(r.result.bytes.empty());
}

TEST(ClassRewriter, EveryTruncationIsMalformed) {
  Data d = javac_class("release17", "CallGraphs");
  for (size_t n = 0; n < d.size(); n += (n < 64 ? 1 : 7)) expect_malformed(Data(d.begin(), d.begin() + static_cast<long>(n)), std::to_string(n));
  Data longer = d;
  longer.push_back(0);
  expect_malformed(longer, "a byte after the end");
}

TEST(ClassRewriter, MalformedHeadersPoolsAndCode) {
  ClassBuilder b;
  b.methods.push_back({0x0009, "m", "()V", true, 1, 0, {0xb1}});
  Data good = b.build();
  check_class(good);
  Data bad = good;
  bad[0] = 0xca;
  bad[1] = 0xfe;
  bad[3] = 0;
  expect_malformed(bad, "magic");
  for (uint16_t major : {44, 70}) {
    bad = good;
    bad[7] = static_cast<uint8_t>(major);
    expect_malformed(bad, "version " + std::to_string(major));
  }
  bad = good;
  bad[10] = 2;  // the first entry's tag
  expect_malformed(bad, "tag 2");
  auto with_code = [](Data code, std::vector<std::array<uint16_t, 4>> handlers = {}) {
    ClassBuilder c;
    c.methods.push_back({0x0009, "m", "()V", true, 1, 1, code, handlers});
    return c.build();
  };
  expect_malformed(with_code({0xa7, 0x00, 0x02, 0xb1}), "goto into an instruction");
  expect_malformed(with_code({0xa7, 0x80, 0x00}), "goto before the code");
  expect_malformed(with_code({0xb1, 0xff}), "opcode 255");
  expect_malformed(with_code({0xc4, 0x10, 0x00, 0x00}), "wide bipush");
  expect_malformed(with_code({0xaa, 0, 0, 0,  // padding
                              0, 0, 0, 0,  // default
                              0, 0, 0, 5,  // low
                              0, 0, 0, 1}),  // high
                   "tableswitch low > high");
  expect_malformed(with_code({0xab, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff}), "lookupswitch past the end");
  expect_malformed(with_code({}), "empty code");
  expect_malformed(with_code({0x11, 0, 0, 0xb1}, {{{0, 2, 3, 0}}}), "handler range ends inside sipush");
  expect_malformed(with_code({0x00, 0xb1}, {{{1, 1, 1, 0}}}), "empty handler range");
  // Found by fuzzing: a long in the pool's last slot (its second slot would be the first
  // appended entry), an attribute whose name is no Utf8 entry, a newline in a method's name.
  ClassBuilder last_long;
  last_long.methods.push_back({0x0009, "m", "()V", true, 1, 0, {0xb1}});
  Data long_data = last_long.build();
  Bytes long_entry;
  long_entry.u1(5).u4(0).u4(1);
  size_t pool_end = 10;
  for (uint32_t i = 1; i < last_long.pool_count; ++i) pool_end = parse(long_data).offsets[i];
  pool_end += 3 + be2(&long_data[pool_end + 1]);  // the last entry is a Utf8
  long_data.insert(long_data.begin() + static_cast<long>(pool_end), long_entry.data.begin(), long_entry.data.end());
  long_data[9] = static_cast<uint8_t>(long_data[9] + 1);
  expect_malformed(long_data, "long in the last slot");
  ClassBuilder bad_name;
  bad_name.methods.push_back({0x0009, "m", "()V", true, 1, 0, {0xb1}, {}, {{"X", {}}}});
  Data bad_name_data = bad_name.build();
  Parsed bad_name_parsed = parse(bad_name_data);
  size_t code_attribute = bad_name_data.size() - 2 - 6;  // X, the last attribute of the last Code
  ASSERT_EQ(bad_name_parsed.utf8(be2(&bad_name_data[code_attribute])), "X");
  bad_name_data[code_attribute] = 0;
  bad_name_data[code_attribute + 1] = 2;  // index 2: the Class entry of Hand
  expect_malformed(bad_name_data, "attribute named by a Class entry");
  ClassBuilder newline;
  newline.methods.push_back({0x0009, "m\nx", "()V", true, 1, 0, {0x11, 0}});  // sipush cut short
  expect_malformed(newline.build(), "a newline in the name, in the error on one line");

  // A line-number entry inside the last instruction stays inside the code.
  ClassBuilder inside;
  Bytes inside_lines;
  inside_lines.u2(1).u2(2).u2(7);
  inside.methods.push_back({0x0009, "m", "()V", true, 1, 0, {0x00, 0x11, 0, 0, 0xb1}, {},
                            {{"LineNumberTable", inside_lines.data}}});
  Rewrite r = rewrite(inside.build());
  ASSERT_EQ(r.result.outcome, RewriteOutcome::kRewritten);
  Parsed parsed = parse(r.result.bytes);
  EXPECT_EQ(be2(&parsed.methods[0].code->attributes.at("LineNumberTable")[2]), 6u) << "the sipush's group";

  // A frame that names no instruction.
  ClassBuilder f;
  f.major = 52;
  f.methods.push_back({0x0009, "m", "()V", true, 1, 1, {0x11, 0, 0, 0xb1}, {}, {{"StackMapTable", {0, 1, 1}}}});
  expect_malformed(f.build(), "frame inside sipush");
}


}  // namespace
}  // namespace fasthprof
