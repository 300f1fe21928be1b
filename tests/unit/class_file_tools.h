// Class files for the class rewriter's tests: written byte by byte (ClassBuilder), read back by a
// reader written apart from the rewriter (parse, decode, frames), and each rewrite checked
// (check_class: entry and exit calls, instructions in order, every offset on its instruction).
#pragma once

#include "classfile/class_rewriter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fasthprof::class_test {

using Data = std::vector<uint8_t>;

// ---- writing class files ------------------------------------------------------------------------

struct Bytes {
  Bytes& u1(uint32_t v) { data.push_back(static_cast<uint8_t>(v)); return *this; }
  Bytes& u2(uint32_t v) { return u1(v >> 8).u1(v); }
  Bytes& u4(uint32_t v) { return u2(v >> 16).u2(v); }
  Bytes& str(const std::string& s) { data.insert(data.end(), s.begin(), s.end()); return *this; }
  Bytes& append(const Data& d) { data.insert(data.end(), d.begin(), d.end()); return *this; }
  Data data;
};

struct ClassBuilder {
  struct Method {
    uint16_t access = 0x0009;  // public static
    std::string name, descriptor;
    bool has_code = true;
    uint16_t max_stack = 2, max_locals = 2;
    Data code;
    std::vector<std::array<uint16_t, 4>> handlers;
    std::vector<std::pair<std::string, Data>> attributes;  // of the Code attribute
  };

  uint16_t major = 49;
  Bytes pool;
  uint32_t pool_count = 1;
  std::map<std::string, uint16_t> utf8s;
  std::string name = "Hand";
  std::vector<Method> methods;

  uint16_t entry(const Data& bytes, uint32_t slots = 1) {
    pool.append(bytes);
    pool_count += slots;
    return static_cast<uint16_t>(pool_count - slots);
  }
  uint16_t utf8(const std::string& s) {
    auto it = utf8s.find(s);
    if (it != utf8s.end()) return it->second;
    Bytes b;
    b.u1(1).u2(static_cast<uint32_t>(s.size())).str(s);
    return utf8s[s] = entry(b.data);
  }
  uint16_t class_entry(const std::string& s) {
    uint16_t n = utf8(s);
    return entry(Bytes().u1(7).u2(n).data);
  }
  Data build() {
    uint16_t this_class = class_entry(name), super_class = class_entry("java/lang/Object");
    uint16_t code_name = utf8("Code");
    for (auto& m : methods) {
      utf8(m.name);
      utf8(m.descriptor);
      for (auto& a : m.attributes) utf8(a.first);
    }
    Bytes out;
    out.u4(0xcafebabe).u2(0).u2(major).u2(pool_count).append(pool.data);
    out.u2(0x0021).u2(this_class).u2(super_class).u2(0).u2(0).u2(static_cast<uint32_t>(methods.size()));
    for (auto& m : methods) {
      out.u2(m.access).u2(utf8(m.name)).u2(utf8(m.descriptor));
      if (!m.has_code) {
        out.u2(0);
        continue;
      }
      Bytes code;
      code.u2(m.max_stack).u2(m.max_locals).u4(static_cast<uint32_t>(m.code.size())).append(m.code);
      code.u2(static_cast<uint32_t>(m.handlers.size()));
      for (auto& h : m.handlers) code.u2(h[0]).u2(h[1]).u2(h[2]).u2(h[3]);
      code.u2(static_cast<uint32_t>(m.attributes.size()));
      for (auto& a : m.attributes) code.u2(utf8s[a.first]).u4(static_cast<uint32_t>(a.second.size())).append(a.second);
      out.u2(1).u2(code_name).u4(static_cast<uint32_t>(code.data.size())).append(code.data);
    }
    out.u2(0);
    return out.data;
  }
};

// With FASTHPROF_WRITE_CLASS_REWRITER_CLASSES=<folder>, the hand-made classes that a JVM can run
// are written there as <name>.class (tests/integration/class_rewriter_jvm.py old_class_files).
inline void write_for_jvm(const std::string& name, const Data& d) {
  if (const char* folder = std::getenv("FASTHPROF_WRITE_CLASS_REWRITER_CLASSES")) {
    std::ofstream(std::filesystem::path(folder) / (name + ".class"), std::ios::binary)
        .write(reinterpret_cast<const char*>(d.data()), static_cast<std::streamsize>(d.size()));
  }
}

// ---- reading class files (apart from the rewriter's reader) -------------------------------------

inline uint16_t be2(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
inline uint32_t be4(const uint8_t* p) { return static_cast<uint32_t>(be2(p)) << 16 | be2(p + 2); }

struct Code {
  uint16_t max_stack = 0, max_locals = 0;
  Data code;
  std::vector<std::array<uint16_t, 4>> handlers;
  std::map<std::string, Data> attributes;
};
struct Method {
  std::string name, descriptor;
  Data bytes;  // the whole method_info
  std::optional<Code> code;
};
struct Parsed {
  uint16_t major = 0;
  std::vector<uint8_t> tags;
  std::vector<size_t> offsets;
  Data data;
  std::vector<Method> methods;
  std::string utf8(uint16_t i) const {
    return std::string(reinterpret_cast<const char*>(&data[offsets[i] + 3]), be2(&data[offsets[i] + 1]));
  }
  // "class.name descriptor" of a Methodref
  std::string methodref(uint16_t i) const {
    if (tags[i] != 10) return "?";
    const uint8_t* p = &data[offsets[i] + 1];
    const uint8_t* nat = &data[offsets[be2(p + 2)] + 1];
    return utf8(be2(&data[offsets[be2(p)] + 1])) + "." + utf8(be2(nat)) + " " + utf8(be2(nat + 2));
  }
};

// Parses what the test needs; the input is trusted (a rewriter's output or javac's).
inline Parsed parse(const Data& d) {
  Parsed c;
  c.data = d;
  c.major = be2(&d[6]);
  uint16_t count = be2(&d[8]);
  c.tags.assign(count, 0);
  c.offsets.assign(count, 0);
  size_t at = 10;
  for (uint32_t i = 1; i < count; ++i) {
    uint8_t tag = d[at];
    c.tags[i] = tag;
    c.offsets[i] = at;
    static const std::map<uint8_t, size_t> kSizes = {{3, 4}, {4, 4}, {5, 8}, {6, 8}, {7, 2}, {8, 2}, {9, 4}, {10, 4},
                                                     {11, 4}, {12, 4}, {15, 3}, {16, 2}, {17, 4}, {18, 4}, {19, 2}, {20, 2}};
    at += 1 + (tag == 1 ? 2 + be2(&d[at + 1]) : kSizes.at(tag));
    if (tag == 5 || tag == 6) ++i;
  }
  at += 6;
  at += 2 + 2 * be2(&d[at]);
  auto skip_attributes = [&](size_t p) {
    uint16_t n = be2(&d[p]);
    p += 2;
    for (uint32_t i = 0; i < n; ++i) p += 6 + be4(&d[p + 2]);
    return p;
  };
  uint16_t fields = be2(&d[at]);
  at += 2;
  for (uint32_t i = 0; i < fields; ++i) at = skip_attributes(at + 6);
  uint16_t methods = be2(&d[at]);
  at += 2;
  for (uint32_t i = 0; i < methods; ++i) {
    Method m;
    size_t start = at;
    m.name = c.utf8(be2(&d[at + 2]));
    m.descriptor = c.utf8(be2(&d[at + 4]));
    uint16_t attributes = be2(&d[at + 6]);
    at += 8;
    for (uint32_t a = 0; a < attributes; ++a) {
      uint32_t length = be4(&d[at + 2]);
      if (c.utf8(be2(&d[at])) == "Code") {
        const uint8_t* p = &d[at + 6];
        Code code;
        code.max_stack = be2(p);
        code.max_locals = be2(p + 2);
        uint32_t code_length = be4(p + 4);
        code.code.assign(p + 8, p + 8 + code_length);
        p += 8 + code_length;
        uint16_t handlers = be2(p);
        p += 2;
        for (uint32_t h = 0; h < handlers; ++h, p += 8) code.handlers.push_back({be2(p), be2(p + 2), be2(p + 4), be2(p + 6)});
        uint16_t code_attributes = be2(p);
        p += 2;
        for (uint32_t k = 0; k < code_attributes; ++k) {
          uint32_t n = be4(p + 2);
          code.attributes[c.utf8(be2(p))].assign(p + 6, p + 6 + n);
          p += 6 + n;
        }
        m.code = code;
      }
      at += 6 + length;
    }
    m.bytes.assign(d.begin() + static_cast<long>(start), d.begin() + static_cast<long>(at));
    c.methods.push_back(m);
  }
  return c;
}

struct Insn {
  uint32_t at, length;
  uint8_t op;
  std::vector<uint32_t> targets;
};

inline std::vector<Insn> decode(const Data& code) {
  std::vector<Insn> out;
  uint32_t at = 0;
  while (at < code.size()) {
    uint8_t op = code[at];
    Insn insn{at, 0, op, {}};
    auto s4 = [&](uint32_t p) { return static_cast<int32_t>(be4(&code[p])); };
    if (op == 0xaa || op == 0xab) {
      uint32_t p = at + 1 + (4 - (at + 1) % 4) % 4;
      insn.targets.push_back(at + s4(p));
      if (op == 0xaa) {
        int32_t n = s4(p + 8) - s4(p + 4) + 1;
        for (int32_t i = 0; i < n; ++i) insn.targets.push_back(at + s4(p + 12 + 4 * i));
        insn.length = p + 12 + 4 * n - at;
      } else {
        int32_t n = s4(p + 4);
        for (int32_t i = 0; i < n; ++i) insn.targets.push_back(at + s4(p + 8 + 8 * i + 4));
        insn.length = p + 8 + 8 * n - at;
      }
    } else if (op == 0xc4) {
      insn.length = code[at + 1] == 0x84 ? 6 : 4;
    } else {
      static const uint8_t kLengths[256] = {
          1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 2, 3, 3, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1,
          1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1,
          1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
          1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
          1, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3,
          3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 0, 0, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 5, 5, 3, 2, 3, 1, 1,
          3, 3, 1, 1, 0, 4, 3, 3, 5, 5};
      insn.length = kLengths[op];
      if ((op >= 0x99 && op <= 0xa8) || op == 0xc6 || op == 0xc7)
        insn.targets.push_back(at + static_cast<int16_t>(be2(&code[at + 1])));
      if (op == 0xc8 || op == 0xc9) insn.targets.push_back(at + s4(at + 1));
    }
    EXPECT_GT(insn.length, 0u) << "opcode " << int(op) << " at " << at;
    if (insn.length == 0) break;
    at += insn.length;
    out.push_back(insn);
  }
  return out;
}

inline bool is_return(uint8_t op) { return op >= 0xac && op <= 0xb1; }
inline bool is_conditional(uint8_t op) { return (op >= 0x99 && op <= 0xa6) || op == 0xc6 || op == 0xc7; }
inline uint8_t inverse(uint8_t op) { return op >= 0xc6 ? op ^ 1 : static_cast<uint8_t>(0x99 + ((op - 0x99) ^ 1)); }

// Stack map frames: absolute offsets and, per frame, the offsets of its uninitialized types.
inline std::vector<std::pair<uint32_t, std::vector<uint32_t>>> frames(const Data& table) {
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> out;
  const uint8_t* p = table.data();
  uint16_t count = be2(p);
  p += 2;
  int64_t at = -1;
  for (uint32_t i = 0; i < count; ++i) {
    uint8_t type = *p++;
    uint32_t delta = type < 128 ? type % 64 : be2(p);
    if (type >= 247) p += 2;
    at += delta + 1;
    std::vector<uint32_t> uninitialized;
    auto types = [&](uint32_t n) {
      for (uint32_t k = 0; k < n; ++k) {
        uint8_t tag = *p++;
        if (tag == 7) p += 2;
        if (tag == 8) {
          uninitialized.push_back(be2(p));
          p += 2;
        }
      }
    };
    if (type >= 64 && type < 128) types(1);
    if (type == 247) types(1);
    if (type >= 252 && type <= 254) types(type - 251u);
    if (type == 255) {
      types(be2((p += 2) - 2));
      types(be2((p += 2) - 2));
    }
    out.push_back({static_cast<uint32_t>(at), uninitialized});
  }
  return out;
}

inline size_t skip_annotation(const Data& d, size_t e);
inline size_t skip_element(const Data& d, size_t e) {
  uint8_t tag = d[e++];
  if (tag == 'e') return e + 4;
  if (tag == '@') return skip_annotation(d, e);
  if (tag == '[') {
    uint16_t n = be2(&d[e]);
    e += 2;
    for (uint16_t i = 0; i < n; ++i) e = skip_element(d, e);
    return e;
  }
  return e + 2;
}
inline size_t skip_annotation(const Data& d, size_t e) {
  uint16_t pairs = be2(&d[e + 2]);
  e += 4;
  for (uint16_t i = 0; i < pairs; ++i) e = skip_element(d, e + 2);
  return e;
}

// Checks one rewritten method against its original (see the file's comment).
inline void check_method(const Parsed& before, const Method& old_method, const Parsed& after, const Method& new_method,
                  uint32_t id, const TrackerCalls& tracker) {
  SCOPED_TRACE(old_method.name + old_method.descriptor);
  const Code& old_code = *old_method.code;
  const Code& new_code = *new_method.code;
  EXPECT_EQ(new_code.max_stack, old_code.max_stack + 1);
  EXPECT_EQ(new_code.max_locals, old_code.max_locals);
  std::vector<Insn> old_insns = decode(old_code.code), new_insns = decode(new_code.code);
  std::string enter = tracker.class_name + "." + tracker.enter_name + " (I)V";
  std::string exit = tracker.class_name + "." + tracker.exit_name + " (I)V";
  auto is_call = [&](size_t k, const std::string& target) {
    if (k + 1 >= new_insns.size()) return false;
    const Insn& ldc = new_insns[k];
    const Insn& call = new_insns[k + 1];
    if (ldc.op != 0x12 && ldc.op != 0x13) return false;
    uint16_t index = ldc.op == 0x12 ? new_code.code[ldc.at + 1] : be2(&new_code.code[ldc.at + 1]);
    if (ldc.op == 0x13) {
      EXPECT_GE(index, 256) << "ldc_w where ldc would do";
    }
    if (after.tags[index] != 3 || be4(&after.data[after.offsets[index] + 1]) != id) return false;
    return call.op == 0xb8 && after.methodref(be2(&new_code.code[call.at + 1])) == target;
  };
  ASSERT_TRUE(is_call(0, enter)) << "the entry call first";
  // Walk the new code: group_at[i] is where original instruction i's group starts, insn_at[i]
  // where the instruction itself is.
  std::vector<uint32_t> group_at(old_insns.size()), insn_at(old_insns.size());
  std::map<uint32_t, size_t> old_index;
  for (size_t i = 0; i < old_insns.size(); ++i) old_index[old_insns[i].at] = i;
  size_t k = 2;
  for (size_t i = 0; i < old_insns.size(); ++i) {
    const Insn& o = old_insns[i];
    ASSERT_LT(k, new_insns.size());
    group_at[i] = new_insns[k].at;
    if (is_return(o.op)) {
      ASSERT_TRUE(is_call(k, exit)) << "exit call before the return at " << o.at;
      k += 2;
    }
    ASSERT_LT(k, new_insns.size());
    const Insn& n = new_insns[k];
    insn_at[i] = n.at;
    if (n.op == o.op) {
      if (o.targets.empty()) {
        EXPECT_TRUE(std::equal(old_code.code.begin() + o.at, old_code.code.begin() + o.at + o.length,
                               new_code.code.begin() + n.at))
            << "instruction at " << o.at << " copied";
      }
      ++k;
    } else if ((o.op == 0xa7 && n.op == 0xc8) || (o.op == 0xa8 && n.op == 0xc9)) {
      ++k;
    } else if (is_conditional(o.op) && n.op == inverse(o.op) && k + 1 < new_insns.size() && new_insns[k + 1].op == 0xc8) {
      EXPECT_LT(before.major, 50) << "inverted branch in a class file with stack map frames";
      EXPECT_EQ(n.targets[0], new_insns[k + 1].at + 5) << "inverted branch jumps over the goto_w";
      k += 2;  // the goto_w carries the original target
    } else {
      FAIL() << "instruction " << int(o.op) << " at " << o.at << " became " << int(n.op);
    }
  }
  ASSERT_EQ(k, new_insns.size()) << "nothing after the last instruction";
  auto group_of = [&](uint32_t old_at) {
    return old_at == old_code.code.size() ? static_cast<uint32_t>(new_code.code.size()) : group_at[old_index.at(old_at)];
  };
  // Branch targets: compare per original instruction, through the new instruction at insn_at.
  std::map<uint32_t, const Insn*> new_by_at;
  for (const Insn& n : new_insns) new_by_at[n.at] = &n;
  for (size_t i = 0; i < old_insns.size(); ++i) {
    const Insn& o = old_insns[i];
    if (o.targets.empty()) continue;
    const Insn* n = new_by_at.at(insn_at[i]);
    if (n->op != o.op && n->op != 0xc8 && n->op != 0xc9) n = new_by_at.at(insn_at[i] + 3);  // inverted: the goto_w
    ASSERT_EQ(n->targets.size(), o.targets.size());
    for (size_t t = 0; t < o.targets.size(); ++t)
      EXPECT_EQ(n->targets[t], group_of(o.targets[t])) << "target " << t << " of the branch at " << o.at;
  }
  ASSERT_EQ(new_code.handlers.size(), old_code.handlers.size());
  for (size_t h = 0; h < old_code.handlers.size(); ++h) {
    EXPECT_EQ(new_code.handlers[h][0], group_of(old_code.handlers[h][0]));
    EXPECT_EQ(new_code.handlers[h][1], group_of(old_code.handlers[h][1]));
    EXPECT_EQ(new_code.handlers[h][2], group_of(old_code.handlers[h][2]));
    EXPECT_EQ(new_code.handlers[h][3], old_code.handlers[h][3]);
  }
  for (const auto& [name, body] : old_code.attributes) {
    ASSERT_TRUE(new_code.attributes.count(name)) << name;
    const Data& now = new_code.attributes.at(name);
    if (name == "LineNumberTable") {
      ASSERT_EQ(now.size(), body.size());
      for (size_t e = 2; e < body.size(); e += 4) {
        uint16_t pc = be2(&body[e]);
        EXPECT_EQ(be2(&now[e]), pc == 0 ? 0u : group_of(pc)) << "line entry at " << pc;
        EXPECT_EQ(be2(&now[e + 2]), be2(&body[e + 2]));
      }
    } else if (name == "LocalVariableTable" || name == "LocalVariableTypeTable") {
      ASSERT_EQ(now.size(), body.size());
      for (size_t e = 2; e < body.size(); e += 10) {
        uint16_t start = be2(&body[e]), end = static_cast<uint16_t>(start + be2(&body[e + 2]));
        uint32_t new_start = start == 0 ? 0 : group_of(start);
        EXPECT_EQ(be2(&now[e]), new_start) << name << " entry from " << start;
        EXPECT_EQ(be2(&now[e]) + be2(&now[e + 2]), group_of(end)) << name << " entry to " << end;
        EXPECT_TRUE(std::equal(body.begin() + static_cast<long>(e) + 4, body.begin() + static_cast<long>(e) + 10,
                               now.begin() + static_cast<long>(e) + 4));
      }
    } else if (name == "StackMapTable") {
      auto old_frames = frames(body), new_frames = frames(now);
      ASSERT_EQ(old_frames.size(), new_frames.size());
      for (size_t f = 0; f < old_frames.size(); ++f) {
        EXPECT_EQ(new_frames[f].first, group_of(old_frames[f].first)) << "frame at " << old_frames[f].first;
        ASSERT_EQ(new_frames[f].second.size(), old_frames[f].second.size());
        for (size_t u = 0; u < old_frames[f].second.size(); ++u) {
          EXPECT_EQ(new_frames[f].second[u], insn_at[old_index.at(old_frames[f].second[u])]);
          EXPECT_EQ(new_code.code[new_frames[f].second[u]], 0xbb) << "uninitialized names a new";
        }
      }
    } else if (name == "RuntimeVisibleTypeAnnotations" || name == "RuntimeInvisibleTypeAnnotations") {
      // javac's code targets: localvar (0x40, 0x41) and offsets (0x43..0x4b), checked by kind.
      ASSERT_EQ(now.size(), body.size());
      size_t e = 2;
      for (uint16_t a = be2(&body[0]); a > 0; --a) {
        uint8_t target = body[e++];
        ASSERT_EQ(now[e - 1], target);
        if (target == 0x40 || target == 0x41) {
          uint16_t n = be2(&body[e]);
          e += 2;
          for (uint16_t r = 0; r < n; ++r, e += 6) {
            uint16_t start = be2(&body[e]);
            EXPECT_EQ(be2(&now[e]), start == 0 ? 0u : group_of(start));
          }
        } else if (target >= 0x43 && target <= 0x4b) {
          uint16_t at = be2(&body[e]);
          EXPECT_EQ(be2(&now[e]), insn_at[old_index.at(at)]) << "type annotation on the instruction at " << at;
          EXPECT_EQ(new_code.code[be2(&now[e])], old_code.code[at]);
          e += target >= 0x47 ? 3 : 2;
        } else if (target == 0x42) {
          e += 2;
        } else {
          FAIL() << "target " << int(target);
        }
        e += 1 + 2 * body[e];
        size_t end = skip_annotation(body, e);
        EXPECT_TRUE(std::equal(body.begin() + static_cast<long>(e), body.begin() + static_cast<long>(end),
                               now.begin() + static_cast<long>(e)))
            << "the annotation itself copied";
        e = end;
      }
    }
  }
}

struct Rewrite {
  RewriteResult result;
  std::vector<std::tuple<std::string, std::string, std::string>> asked;
};

inline Rewrite rewrite(const Data& d, const TrackerCalls& tracker = {}, uint32_t first_id = 100) {
  Rewrite r;
  uint32_t next = first_id;
  r.result = rewrite_class(d.data(), d.size(), tracker, [&](std::string_view c, std::string_view m, std::string_view s) {
    r.asked.emplace_back(std::string(c), std::string(m), std::string(s));
    return next++;
  });
  return r;
}

// Rewrites and checks every method.
inline RewriteResult check_class(const Data& original, const TrackerCalls& tracker = {}) {
  Rewrite r = rewrite(original, tracker);
  EXPECT_NE(r.result.outcome, RewriteOutcome::kMalformed) << r.result.error;
  if (r.result.outcome != RewriteOutcome::kRewritten) return r.result;
  Parsed before = parse(original), after = parse(r.result.bytes);
  EXPECT_EQ(after.methods.size(), before.methods.size());
  // The pool is the original one, then the appended entries.
  size_t pool_end = before.offsets.back() + 1;
  EXPECT_TRUE(std::equal(original.begin() + 10, original.begin() + static_cast<long>(before.offsets.back()),
                         r.result.bytes.begin() + 10));
  (void)pool_end;
  size_t instrumented = 0;
  uint32_t id = 100;
  for (size_t i = 0; i < before.methods.size(); ++i) {
    const Method& m = before.methods[i];
    if (!m.code) {
      EXPECT_EQ(after.methods[i].bytes, m.bytes);
      continue;
    }
    uint32_t this_id = id++;
    bool done = instrumented < r.result.methods.size() && r.result.methods[instrumented].name == m.name &&
                r.result.methods[instrumented].descriptor == m.descriptor;
    if (!done) {
      EXPECT_EQ(after.methods[i].bytes, m.bytes) << m.name << " left alone, as it was";
      continue;
    }
    EXPECT_EQ(r.result.methods[instrumented].id, this_id);
    ++instrumented;
    check_method(before, m, after, after.methods[i], this_id, tracker);
  }
  EXPECT_EQ(instrumented, r.result.methods.size());
  // Rewritten output is itself a class file the rewriter reads.
  Rewrite again = rewrite(r.result.bytes);
  EXPECT_NE(again.result.outcome, RewriteOutcome::kMalformed) << again.result.error;
  return r.result;
}

inline Data read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline std::vector<std::filesystem::path> javac_classes() {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(CLASS_REWRITER_CLASSES))
    if (e.path().extension() == ".class") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

inline const Method& method_named(const Parsed& c, const std::string& name) {
  for (const Method& m : c.methods)
    if (m.name == name) return m;
  static Method none;
  ADD_FAILURE() << "no method " << name;
  return none;
}

inline Data javac_class(const std::string& release, const std::string& name) {
  return read_file(std::filesystem::path(CLASS_REWRITER_CLASSES) / release / (name + ".class"));
}


}  // namespace fasthprof::class_test
