// Which `invokespecial <init>` initializes the object of one `new`, for the mark calls the class
// rewriter (class_rewriter.h, RewritePlan::marks) puts after an allocation. An object made by
// `new C` is uninitialized until a constructor ran on it, and the verifier rejects passing it to
// any method before then; so its mark call goes after each invokespecial <init> whose receiver is
// a copy of it, where javac leaves another copy on top (`new C; dup; <args>; invokespecial`). The
// receiver sits below the arguments, anywhere in the code after the `new` (`new A(c ? x : y)`,
// `new A(new B())`), so the code is walked from the `new` along every branch, switch case and
// fall-through with a model of the operand stack: each entry of category 1 or 2, either a copy of
// that `new`'s object or anything else; every opcode's pops and pushes (field and method
// descriptors and ldc constants read from the pool). Exception handlers are not followed (an
// exception drops the operand stack, and with it the copies). The verifier makes the stack agree
// where paths meet, so each offset is walked once. The walk gives up (no mark call for that `new`)
// where it cannot be sure: a copy stored to a local or consumed by anything but its
// initializer, jsr/ret, a walk of more than kMaxSteps instructions, any code it cannot read, or an
// initializer after which the top of the stack is not a copy. Internal to the rewriter.
#pragma once

#include <cstdint>
#include <vector>

#include "classfile/class_file.h"

namespace fasthprof::class_file {

// The walk's length, in instructions, before it gives up.
inline constexpr uint32_t kMaxSteps = 20000;

// The original offsets of the invokespecial <init> instructions that initialize the object of the
// `new` at `new_at`, each leaving a copy of it on top, in code order, into *out. False (out
// unspecified) when the walk gives up or finds no initializer. `code` is a method's whole code,
// whose instructions and branch targets the caller has checked.
bool find_initializers(const uint8_t* code, uint32_t code_length, const ConstantPool& pool, uint32_t new_at,
                       std::vector<uint32_t>* out);

}  // namespace fasthprof::class_file
