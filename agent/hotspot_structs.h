// HotSpot's self-description for the Serviceability Agent (the gHotSpotVMStructs/gHotSpotVMTypes
// tables libjvm.so exports), read from inside the process without Java code: the offsets of the
// fields it names, and through them the -XX flags (JVMFlag::flags, JVMFlag::numFlags and the
// offsets of each entry's name and value address: the value read is the flag itself, whatever set
// it: command line, JAVA_TOOL_OPTIONS, a flags file, ergonomics). Nothing here depends on one JDK's
// struct layout: the tables say where everything is, and a name they do not list gives nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace fasthprof {

// The value of the bool flag `name` (e.g. "DisableAttachMechanism"), or nothing when the VM is not
// HotSpot, does not describe its flags, or has no such flag. Reads memory only; any thread, at any
// time after the VM's flags are parsed (Agent_OnLoad included).
std::optional<bool> hotspot_bool_flag(std::string_view name);

// The value of the flag `name` declared `int` in HotSpot's globals (e.g. LockingMode, JDK 21+), or
// nothing when the VM does not describe its flags or has no such flag. The tables give no type
// name: call it only for a flag whose declaration says int. Any thread, as hotspot_bool_flag.
std::optional<int32_t> hotspot_int_flag(std::string_view name);

// Sets the bool flag `name` to `value`; its type must be that of the bool flag `like` (e.g.
// DisableAttachMechanism). False, with nothing written, when the VM does not describe its flags or
// their types, has no such flag or the types differ. Only before the VM reads the flag (Agent_OnLoad
// for what the compilers read as they compile).
bool hotspot_set_bool_flag(std::string_view name, bool value, std::string_view like);

// Sets the bool flag `name`, which nobody set (its origin is the default), to `value` as HotSpot's
// own ergonomics would: marked as no longer at its default, for the code that asks
// (FLAG_IS_DEFAULT). False, with nothing written, when it was set (command line, JAVA_TOOL_OPTIONS,
// ...), or when the VM does not describe the flag, its type (that of `like`) or its origin. Only
// before the VM reads the flag.
bool hotspot_settle_default_bool_flag(std::string_view name, bool value, std::string_view like);

// Appends `items` (comma separated) to the list flag `name` (a ccstrlist such as
// DisableIntrinsic), whose type must be that of the list flag `like` (e.g. CompileCommand): the
// tables give each flag's type as a number that differs between JDKs. False, with nothing
// written, when the VM does not describe its flags or their types, has no such flag or the types
// differ. Only while the VM has not read the flag: Agent_OnLoad, before the compilers start.
bool hotspot_append_to_list_flag(std::string_view name, std::string_view like, std::string_view items);

// The offset of the non-static field type::field in its VM struct (e.g. "Klass", "_layout_helper"),
// or nothing when the VM does not list it. Any thread.
std::optional<uint64_t> hotspot_field_offset(const char* type, const char* field);

// The size of the VM type `type` (e.g. "HeapBlock"), or nothing when the VM does not list it. Any thread.
std::optional<uint64_t> hotspot_type_size(const char* type);

// The value of the VM constant `name` as gHotSpotVMIntConstants lists it (e.g. "JVM_ACC_STATIC"), or
// nothing when the VM does not list it. Any thread.
std::optional<int32_t> hotspot_int_constant(const char* name);

// The value of the VM constant `name` as gHotSpotVMLongConstants lists it (e.g.
// "markWord::hash_shift"), or nothing when the VM does not list it. Any thread.
std::optional<uint64_t> hotspot_long_constant(const char* name);

// The address of the static field type::field (e.g. "java_lang_Class", "_klass_offset"), or nothing.
std::optional<uint64_t> hotspot_static_address(const char* type, const char* field);

// x86-64 interpreter frames as HotSpot lays them out (frame_x86.hpp, the same on JDK 17 to 25), in
// words from the frame pointer: the Method* it runs, its bytecode pointer.
constexpr int kInterpreterFrameMethod = -3;
constexpr int kInterpreterFrameBcp = -8;

// The top (highest address) of the calling thread's stack, as HotSpot keeps it for a thread whose
// stack it did not make (JavaThread::_stack_base: the pthread stack's end); 0 when unknown.
uintptr_t thread_stack_top();

// The template interpreter's code, [low, high): a return address there is an interpreted frame's.
// False when the VM does not describe it. Live (the interpreter is made before any agent runs Java).
bool hotspot_interpreter_code(uintptr_t* low, uintptr_t* high);

}  // namespace fasthprof
