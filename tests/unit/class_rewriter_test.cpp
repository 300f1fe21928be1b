// runtime/class_rewriter on class files javac compiled at build time (tests/class_rewriter/java,
// --release 8 and 17) and on class files built here byte by byte (jsr/ret, widened branches,
// methods near 64 KiB, every constant-pool tag, a pool that would overflow, malformed input).
// Each rewritten method is checked by a reader written apart from the rewriter: the entry call
// first, the exit call before every return, the original instructions in their order, and every
// offset (branches, switches, handlers, line numbers, local variables, stack map frames and their
// uninitialized types, type annotations) naming the same instruction as before. tests/integration/
// class_rewriter_jvm.py runs rewritten classes in a JVM.
#include "class_rewriter.h"

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

namespace fasthprof {
namespace {

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
void write_for_jvm(const std::string& name, const Data& d) {
  if (const char* folder = std::getenv("FASTHPROF_WRITE_CLASS_REWRITER_CLASSES")) {
    std::ofstream(std::filesystem::path(folder) / (name + ".class"), std::ios::binary)
        .write(reinterpret_cast<const char*>(d.data()), static_cast<std::streamsize>(d.size()));
  }
}

// ---- reading class files (apart from the rewriter's reader) -------------------------------------

uint16_t be2(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t be4(const uint8_t* p) { return static_cast<uint32_t>(be2(p)) << 16 | be2(p + 2); }

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
Parsed parse(const Data& d) {
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

std::vector<Insn> decode(const Data& code) {
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

bool is_return(uint8_t op) { return op >= 0xac && op <= 0xb1; }
bool is_conditional(uint8_t op) { return (op >= 0x99 && op <= 0xa6) || op == 0xc6 || op == 0xc7; }
uint8_t inverse(uint8_t op) { return op >= 0xc6 ? op ^ 1 : static_cast<uint8_t>(0x99 + ((op - 0x99) ^ 1)); }

// Stack map frames: absolute offsets and, per frame, the offsets of its uninitialized types.
std::vector<std::pair<uint32_t, std::vector<uint32_t>>> frames(const Data& table) {
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

size_t skip_annotation(const Data& d, size_t e);
size_t skip_element(const Data& d, size_t e) {
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
size_t skip_annotation(const Data& d, size_t e) {
  uint16_t pairs = be2(&d[e + 2]);
  e += 4;
  for (uint16_t i = 0; i < pairs; ++i) e = skip_element(d, e + 2);
  return e;
}

// Checks one rewritten method against its original (see the file's comment).
void check_method(const Parsed& before, const Method& old_method, const Parsed& after, const Method& new_method,
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

Rewrite rewrite(const Data& d, const TrackerCalls& tracker = {}, uint32_t first_id = 100) {
  Rewrite r;
  uint32_t next = first_id;
  r.result = rewrite_class(d.data(), d.size(), tracker, [&](std::string_view c, std::string_view m, std::string_view s) {
    r.asked.emplace_back(std::string(c), std::string(m), std::string(s));
    return next++;
  });
  return r;
}

// Rewrites and checks every method.
RewriteResult check_class(const Data& original, const TrackerCalls& tracker = {}) {
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

Data read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::filesystem::path> javac_classes() {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(CLASS_REWRITER_CLASSES))
    if (e.path().extension() == ".class") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ClassRewriter, JavacClassesKeepEveryOffsetOnItsInstruction) {
  auto classes = javac_classes();
  ASSERT_GE(classes.size(), 20u);
  size_t rewritten = 0;
  for (const auto& p : classes) {
    SCOPED_TRACE(p.string());
    RewriteResult r = check_class(read_file(p));
    if (r.outcome == RewriteOutcome::kRewritten) ++rewritten;
    EXPECT_EQ(r.methods_left_alone, 0u);
  }
  EXPECT_GE(rewritten, 15u);
}

const Method& method_named(const Parsed& c, const std::string& name) {
  for (const Method& m : c.methods)
    if (m.name == name) return m;
  static Method none;
  ADD_FAILURE() << "no method " << name;
  return none;
}

Data javac_class(const std::string& release, const std::string& name) {
  return read_file(std::filesystem::path(CLASS_REWRITER_CLASSES) / release / (name + ".class"));
}

TEST(ClassRewriter, LoopBackToOffsetZeroDoesNotEnterAgain) {
  Data d = javac_class("release17", "CallGraphs");
  Rewrite r = rewrite(d);
  ASSERT_EQ(r.result.outcome, RewriteOutcome::kRewritten);
  Parsed old_class = parse(d), new_class = parse(r.result.bytes);
  const Method& before = method_named(old_class, "spin");
  const Method& after = method_named(new_class, "spin");
  auto old_insns = decode(before.code->code);
  ASSERT_TRUE(std::any_of(old_insns.begin(), old_insns.end(),
                          [](const Insn& i) { return i.op == 0xa7 && i.targets[0] == 0; }))
      << "javac's loop jumps back to offset 0";
  for (const Insn& i : decode(after.code->code)) {
    if (i.op == 0xa7) {
      EXPECT_EQ(i.targets[0], 5u) << "to the original first instruction, after the entry call";
    }
  }
}

TEST(ClassRewriter, BranchToReturnRunsTheExitCall) {
  Data d = javac_class("release17", "CallGraphs");
  Rewrite r = rewrite(d);
  Parsed new_class = parse(r.result.bytes);
  const Method& after = method_named(new_class, "early");
  auto insns = decode(after.code->code);
  const Insn& branch = *std::find_if(insns.begin(), insns.end(), [](const Insn& i) { return i.op == 0x9e; });  // ifle
  auto target = std::find_if(insns.begin(), insns.end(), [&](const Insn& i) { return i.at == branch.targets[0]; });
  ASSERT_NE(target, insns.end());
  EXPECT_EQ(target->op, 0x12) << "the branch lands on the exit call's ldc";
  EXPECT_EQ((target + 2)->op, 0xb1);
}

TEST(ClassRewriter, AssignerCalledOncePerMethodWithCodeInOrder) {
  ClassBuilder b;
  b.methods.push_back({0x0401, "abstract", "()V", false});
  b.methods.push_back({0x0009, "a", "()V", true, 1, 0, {0xb1}});
  b.methods.push_back({0x0109, "native", "()V", false});
  b.methods.push_back({0x0009, "b", "(I)I", true, 1, 1, {0x1a, 0xac}});
  Data d = b.build();
  Rewrite r = rewrite(d);
  ASSERT_EQ(r.result.outcome, RewriteOutcome::kRewritten);
  ASSERT_EQ(r.asked.size(), 2u);
  EXPECT_EQ(r.asked[0], std::make_tuple(std::string("Hand"), std::string("a"), std::string("()V")));
  EXPECT_EQ(r.asked[1], std::make_tuple(std::string("Hand"), std::string("b"), std::string("(I)I")));
  ASSERT_EQ(r.result.methods.size(), 2u);
  EXPECT_EQ(r.result.methods[1].id, 101u);
  EXPECT_EQ(r.result.class_name, "Hand");
  check_class(d);
}

TEST(ClassRewriter, SameIdSharesOneConstant) {
  ClassBuilder b;
  b.methods.push_back({0x0009, "a", "()V", true, 1, 0, {0xb1}});
  b.methods.push_back({0x0009, "b", "()V", true, 1, 0, {0xb1}});
  Data d = b.build();
  RewriteResult one = rewrite_class(d.data(), d.size(), {}, [](auto, auto, auto) { return 7u; });
  RewriteResult two = rewrite(d).result;
  ASSERT_EQ(one.outcome, RewriteOutcome::kRewritten);
  EXPECT_EQ(two.bytes.size() - one.bytes.size(), 5u) << "one CONSTANT_Integer fewer";
}

TEST(ClassRewriter, TrackerClassItselfIsNotTouched) {
  ClassBuilder b;
  b.name = "java/lang/FasthprofTracker";
  b.methods.push_back({0x0009, "enter", "(I)V", true, 1, 1, {0xb1}});
  Data d = b.build();
  Rewrite r = rewrite(d);
  EXPECT_EQ(r.result.outcome, RewriteOutcome::kNothingToDo);
  EXPECT_TRUE(r.asked.empty());
}

// Old class files: jsr/ret, and branches that no longer reach once 2000 returns have grown by
// their exit calls: a conditional branch inverted around a goto_w, a jsr become jsr_w.
Data far_branches(uint16_t major, uint8_t second_branch) {
  ClassBuilder b;
  b.major = major;
  b.name = "Far";
  uint16_t this_class = b.class_entry("Far");
  uint16_t far_nat = b.entry(Bytes().u1(12).u2(b.utf8("far")).u2(b.utf8("()V")).data);
  uint16_t far_ref = b.entry(Bytes().u1(10).u2(this_class).u2(far_nat).data);
  Bytes main;
  main.u1(0xb8).u2(far_ref).u1(0xb8).u2(far_ref).u1(0xb1);  // far() twice
  b.methods.push_back({0x0009, "main", "([Ljava/lang/String;)V", true, 0, 1, main.data});
  Bytes code;
  code.u1(0x03);         // 0: iconst_0
  code.u1(0x99).u2(0);   // 1: ifeq FAR (patched)
  code.u1(second_branch).u2(0);  // 4: jsr SUB / goto FAR (patched)
  code.u1(0xb1);         // 7: return
  for (int i = 0; i < 2000; ++i) {
    code.u1(0xb1);  // unreachable returns, each grows by an exit call
    for (int k = 0; k < 14; ++k) code.u1(0x00);
  }
  uint32_t far = static_cast<uint32_t>(code.data.size());
  code.u1(0xa8).u2(4);   // FAR: jsr SUB
  code.u1(0xb1);         //      return
  uint32_t sub = static_cast<uint32_t>(code.data.size());
  code.u1(0x4c);         // SUB: astore_1
  code.u1(0xa9).u1(1);   //      ret 1
  auto patch = [&](uint32_t at, uint32_t target) {
    code.data[at + 1] = static_cast<uint8_t>((target - at) >> 8);
    code.data[at + 2] = static_cast<uint8_t>(target - at);
  };
  patch(1, far);
  patch(4, second_branch == 0xa8 ? sub : far);
  EXPECT_LT(sub, 32767u);
  b.methods.push_back({0x0009, "far", "()V", true, 1, 2, code.data});
  return b.build();
}

TEST(ClassRewriter, OldClassFileWidensJsrAndInvertsConditionalBranch) {
  Data d = far_branches(49, 0xa8);
  write_for_jvm("Far", d);
  RewriteResult r = check_class(d);
  ASSERT_EQ(r.outcome, RewriteOutcome::kRewritten);
  EXPECT_EQ(r.branches_widened, 2u);
  auto insns = decode(parse(r.bytes).methods[1].code->code);
  EXPECT_EQ(insns[3].op, 0x9a) << "ifeq inverted to ifne";
  EXPECT_EQ(insns[4].op, 0xc8);
  EXPECT_EQ(insns[5].op, 0xc9) << "jsr_w";
}

TEST(ClassRewriter, ConditionalThatNoLongerReachesLeavesMethodAloneWithStackMaps) {
  Data d = far_branches(52, 0xa7);
  Rewrite r = rewrite(d);
  EXPECT_EQ(r.result.outcome, RewriteOutcome::kRewritten) << "main is rewritten";
  EXPECT_EQ(r.result.methods.size(), 1u);
  EXPECT_EQ(r.result.methods_left_alone, 1u);
  EXPECT_EQ(r.asked.size(), 2u) << "far's ID was given before it was left alone";
}

TEST(ClassRewriter, GotoWidenedInStackMapClassFile) {
  // A backward goto to offset 0 over code that grows past 32 KiB; a frame at 0 and after the goto.
  ClassBuilder b;
  b.major = 52;
  Bytes code;
  code.u1(0x1a);        // 0: iload_0
  code.u1(0x9a).u2(0);  // 1: ifne L (patched)
  code.u1(0xb1);        // 4: return
  for (int i = 0; i < 2000; ++i) code.u1(0x00).u1(0x00).u1(0x00).u1(0xb1).u1(0x00).u1(0x00).u1(0x00).u1(0x00)
                                      .u1(0x00).u1(0x00).u1(0x00).u1(0x00).u1(0x00).u1(0x00).u1(0x00);
  uint32_t l = static_cast<uint32_t>(code.data.size());
  code.u1(0xa7).u2(static_cast<uint32_t>(-static_cast<int32_t>(l)));  // L: goto 0
  code.data[2] = static_cast<uint8_t>((l - 1) >> 8);
  code.data[3] = static_cast<uint8_t>(l - 1);
  Bytes frames;
  frames.u2(2).u1(0);                   // same_frame at 0
  frames.u1(251).u2(l - 1);             // same_frame_extended at L
  b.methods.push_back({0x0009, "loop", "(I)V", true, 1, 1, code.data, {}, {{"StackMapTable", frames.data}}});
  Data d = b.build();
  // The ifne's short forward branch also spans the growth: this method is left alone; without
  // the returns inside the ifne's span the goto alone widens.
  Rewrite alone = rewrite(d);
  EXPECT_EQ(alone.result.methods_left_alone, 1u);
  // Now the same with the returns after the ifne's target: move the ifne to jump over one nop.
  code.data[1] = 0x9a;
  code.data[2] = 0;
  code.data[3] = 4;  // ifne 5 (the first nop)
  b.methods[0].code = code.data;
  Bytes frames2;
  frames2.u2(3).u1(0).u1(4).u1(251).u2(l - 5 - 1);  // at 0, at 5, at L
  b.methods[0].attributes = {{"StackMapTable", frames2.data}};
  d = b.build();
  RewriteResult r = check_class(d);
  ASSERT_EQ(r.outcome, RewriteOutcome::kRewritten);
  EXPECT_EQ(r.branches_widened, 1u);
  auto insns = decode(parse(r.bytes).methods[0].code->code);
  EXPECT_EQ(insns.back().op, 0xc8);
  EXPECT_EQ(insns.back().targets[0], 5u) << "back to the first instruction, after the entry call";
}

TEST(ClassRewriter, SwitchPaddingFollowsTheNewOffset) {
  for (int lead = 0; lead < 4; ++lead) {
    ClassBuilder b;
    b.major = 52;
    Bytes code;
    for (int i = 0; i < lead; ++i) code.u1(0x00);
    code.u1(0x1a);  // iload_0
    uint32_t sw = static_cast<uint32_t>(code.data.size());
    code.u1(0xaa);
    while (code.data.size() % 4) code.u1(0);
    uint32_t body = static_cast<uint32_t>(code.data.size());
    code.u4(0).u4(0).u4(2).u4(0).u4(0).u4(0);  // default, low 0, high 2, three offsets (patched)
    uint32_t ret = static_cast<uint32_t>(code.data.size());
    code.u1(0xb1);
    code.u1(0x03).u1(0xac);  // unreachable iconst_0; ireturn... (for variety: never reached)
    for (int k = 0; k < 4; ++k) {
      uint32_t off = ret - sw;
      code.data[body + (k == 0 ? 0 : 8 + 4 * k)] = static_cast<uint8_t>(off >> 24);
      code.data[body + (k == 0 ? 0 : 8 + 4 * k) + 3] = static_cast<uint8_t>(off);
    }
    b.methods.push_back({0x0009, "sw", "(I)V", true, 1, 1, code.data});
    SCOPED_TRACE(lead);
    RewriteResult r = check_class(b.build());
    EXPECT_EQ(r.outcome, RewriteOutcome::kRewritten);
  }
}

TEST(ClassRewriter, MethodsNearThe64KiBLimit) {
  for (uint32_t length : {65535u - 15u, 65535u - 14u}) {
    ClassBuilder b;
    Data code(length - 2, 0x00);
    code.push_back(0xb1);  // one return: 5 bytes for the exit call, 5 for the entry call
    code.push_back(0xb1);
    b.methods.push_back({0x0009, "big", "()V", true, 1, 0, code});
    Rewrite r = rewrite(b.build());
    if (length + 15 <= 65535) {
      EXPECT_EQ(r.result.outcome, RewriteOutcome::kRewritten) << length;
    } else {
      EXPECT_EQ(r.result.outcome, RewriteOutcome::kNothingToDo) << length;
      EXPECT_EQ(r.result.methods_left_alone, 1u);
    }
  }
  ClassBuilder fits;
  fits.methods.push_back({0x0009, "big", "()V", true, 1, 0, Data(65535 - 5 - 5 - 1, 0x00)});
  fits.methods[0].code.push_back(0xb1);
  RewriteResult r = check_class(fits.build());
  EXPECT_EQ(r.outcome, RewriteOutcome::kRewritten) << "exactly 65535 bytes once rewritten";
  EXPECT_EQ(parse(r.bytes).methods[0].code->code.size(), 65535u);
}

TEST(ClassRewriter, EveryConstantPoolTagAndLdcW) {
  ClassBuilder b;
  b.major = 69;
  b.entry(Bytes().u1(3).u4(1).data);
  b.entry(Bytes().u1(4).u4(2).data);
  b.entry(Bytes().u1(5).u4(0).u4(3).data, 2);
  b.entry(Bytes().u1(6).u4(0).u4(4).data, 2);
  uint16_t s = b.utf8("s");
  b.entry(Bytes().u1(8).u2(s).data);
  uint16_t nat = b.entry(Bytes().u1(12).u2(s).u2(b.utf8("()V")).data);
  uint16_t cls = b.class_entry("Other");
  b.entry(Bytes().u1(9).u2(cls).u2(nat).data);
  uint16_t ref = b.entry(Bytes().u1(10).u2(cls).u2(nat).data);
  b.entry(Bytes().u1(11).u2(cls).u2(nat).data);
  b.entry(Bytes().u1(15).u1(6).u2(ref).data);
  b.entry(Bytes().u1(16).u2(b.utf8("()V")).data);
  b.entry(Bytes().u1(17).u2(0).u2(nat).data);
  b.entry(Bytes().u1(18).u2(0).u2(nat).data);
  b.entry(Bytes().u1(19).u2(b.utf8("mod")).data);
  b.entry(Bytes().u1(20).u2(b.utf8("pkg")).data);
  for (int i = 0; i < 300; ++i) b.utf8("filler" + std::to_string(i));
  b.methods.push_back({0x0009, "m", "()V", true, 1, 0, {0xb1}});
  Data d = b.build();
  RewriteResult r = check_class(d);
  ASSERT_EQ(r.outcome, RewriteOutcome::kRewritten);
  EXPECT_EQ(parse(r.bytes).methods[0].code->code[0], 0x13) << "ldc_w: the Integer's index is past 255";
}

TEST(ClassRewriter, PoolThatWouldOverflowStaysUnchanged) {
  ClassBuilder b;
  for (int i = 0; b.pool_count < 65520; ++i) b.utf8(std::to_string(i));
  b.methods.push_back({0x0009, "m", "()V", true, 1, 0, {0xb1}});
  Rewrite r = rewrite(b.build());
  EXPECT_EQ(r.result.outcome, RewriteOutcome::kNothingToDo);
  EXPECT_EQ(r.result.methods_left_alone, 1u);
}

TEST(ClassRewriter, StackMapFramesChooseEncodingsThatFit) {
  // Frames whose deltas pass 63 once 13 returns before them have grown (same_frame and
  // same_locals_1_stack_item take their extended forms), and a full frame with uninitialized types.
  ClassBuilder b;
  b.major = 52;
  uint16_t cls = b.class_entry("java/lang/Object");
  uint16_t init_nat = b.entry(Bytes().u1(12).u2(b.utf8("<init>")).u2(b.utf8("()V")).data);
  uint16_t init = b.entry(Bytes().u1(10).u2(cls).u2(init_nat).data);
  Bytes code;
  code.u1(0x1a).u1(0x1a).u1(0x99).u2(16);     // 0: iload_0; 1: iload_0; 2: ifeq 18
  for (int i = 0; i < 13; ++i) code.u1(0xb1);  // 5..17: returns
  code.u1(0x57);                               // 18: pop          frame: same_locals_1_stack_item(int)
  code.u1(0x03).u1(0x99).u2(4);                // 19: iconst_0; 20: ifeq 24
  code.u1(0x00);                               // 23: nop
  code.u1(0xbb).u2(cls);                       // 24: new Object   frame: same
  code.u1(0x59);                               // 27: dup
  code.u1(0x1a).u1(0x99).u2(4);                // 28: iload_0; 29: ifeq 33
  code.u1(0x00);                               // 32: nop
  code.u1(0xb7).u2(init);                      // 33: invokespecial  frame: full [int] [uninit 24, uninit 24]
  code.u1(0x57);                               // 36: pop
  code.u1(0xb1);                               // 37: return       frame: same (extended form, delta 3)
  Bytes frames;
  frames.u2(4).u1(64 + 18).u1(1).u1(5);
  frames.u1(255).u2(8).u2(1).u1(1).u2(2).u1(8).u2(24).u1(8).u2(24);
  frames.u1(251).u2(3);
  b.methods.push_back({0x0009, "frames", "(I)V", true, 3, 1, code.data, {}, {{"StackMapTable", frames.data}}});
  Bytes same_code;
  same_code.u1(0x1a).u1(0x99).u2(16);          // 0: iload_0; 1: ifeq 17
  for (int i = 0; i < 13; ++i) same_code.u1(0xb1);
  same_code.u1(0xb1);                          // 17: return       frame: same
  Bytes same_frames;
  same_frames.u2(1).u1(17);
  b.methods.push_back({0x0009, "same", "(I)V", true, 1, 1, same_code.data, {}, {{"StackMapTable", same_frames.data}}});
  RewriteResult r = check_class(b.build());
  ASSERT_EQ(r.outcome, RewriteOutcome::kRewritten);
  Parsed after = parse(r.bytes);
  const Data& table = after.methods[0].code->attributes.at("StackMapTable");
  EXPECT_EQ(table[2], 247) << "same_locals_1_stack_item became its extended form";
  EXPECT_EQ(table[6], 5) << "a same_frame whose delta still fits";
  EXPECT_EQ(table[table.size() - 1], 3) << "the last frame in its short form";
  EXPECT_EQ(after.methods[1].code->attributes.at("StackMapTable")[2], 251) << "same_frame became same_frame_extended";
}

// A small old class file with jsr/ret, both switches, a handler and a line table; also a fuzz seed
// (FASTHPROF_WRITE_CLASS_REWRITER_CORPUS=tests/fuzz/corpus/class_rewriter writes it there).
TEST(ClassRewriter, SmallOldClassWithSubroutineSwitchesAndHandler) {
  ClassBuilder b;
  b.major = 45;
  uint16_t throwable = b.class_entry("java/lang/Throwable");
  uint16_t this_class = b.class_entry("Hand");
  uint16_t int_void = b.utf8("(I)V");
  uint16_t old_ref = b.entry(Bytes().u1(10).u2(this_class).u2(b.entry(Bytes().u1(12).u2(b.utf8("old")).u2(int_void).data)).data);
  uint16_t look_ref = b.entry(Bytes().u1(10).u2(this_class).u2(b.entry(Bytes().u1(12).u2(b.utf8("look")).u2(int_void).data)).data);
  Bytes code;
  code.u1(0x1a);                          // 0: iload_0
  code.u1(0xaa).u1(0).u1(0);              // 1: tableswitch, padded to 4
  code.u4(32).u4(0).u4(1).u4(32).u4(27);  //    default and 0 -> 33, 1 -> 28 (a return)
  code.u1(0xa8).u2(6);                    // 24: jsr 30
  code.u1(0x00);                          // 27: nop
  code.u1(0xb1);                          // 28: return
  code.u1(0x00);                          // 29: nop
  code.u1(0x4c).u1(0xa9).u1(1);           // 30: astore_1; 31: ret 1
  code.u1(0xb1);                          // 33: return (also the handler)
  Bytes look;
  look.u1(0x1a);                          // 0: iload_0
  look.u1(0xab).u1(0).u1(0);              // 1: lookupswitch, padded to 4
  look.u4(19).u4(1).u4(7).u4(20);         //    default -> 20, 7 -> 21 (a return)
  look.u1(0x00);                          // 20: nop
  look.u1(0xb1);                          // 21: return
  Bytes main;
  main.u1(0x03).u1(0xb8).u2(old_ref).u1(0x04).u1(0xb8).u2(old_ref);
  main.u1(0x10).u1(7).u1(0xb8).u2(look_ref).u1(0x05).u1(0xb8).u2(look_ref).u1(0xb1);
  b.name = "Hand";
  b.methods.push_back({0x0009, "look", "(I)V", true, 1, 1, look.data});
  b.methods.push_back({0x0009, "main", "([Ljava/lang/String;)V", true, 1, 1, main.data});
  Bytes lines;
  lines.u2(3).u2(0).u2(10).u2(24).u2(11).u2(30).u2(12);
  b.methods.push_back({0x0009, "old", "(I)V", true, 2, 2, code.data, {{{24, 28, 33, throwable}}},
                       {{"LineNumberTable", lines.data}}});
  Data d = b.build();
  write_for_jvm("Hand", d);
  RewriteResult r = check_class(d);
  EXPECT_EQ(r.outcome, RewriteOutcome::kRewritten);
  if (const char* folder = std::getenv("FASTHPROF_WRITE_CLASS_REWRITER_CORPUS")) {
    std::ofstream(std::filesystem::path(folder) / "old-jsr-switches-handler.class", std::ios::binary)
        .write(reinterpret_cast<const char*>(d.data()), static_cast<std::streamsize>(d.size()));
  }
}

// ---- malformed input: a one-line reason, never a crash ----------------------------------------

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
