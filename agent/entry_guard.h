// The wall between the agent's C++ and the JVM. Every way in from the VM (Agent_OnLoad, OnAttach,
// OnUnload, each JVMTI event and heap-walk callback, the main function of each agent thread) runs
// its body through guard_entry(), because an exception that unwinds into HotSpot's frames ends the
// process in std::terminate. The SIGPROF handler is the one exception: it neither allocates nor
// throws.
//
//   guard_entry("ThreadStart", [&] { ...work... }, [&] { ...switch the feature off... });
#pragma once

#include <exception>
#include <new>
#include <utility>

namespace fasthprof {

// Writes "HPROF ERROR: fasthprof: <cause> in <where>; <consequence>\n" on stderr in one write,
// from a fixed buffer (the cause may be an exhausted heap). Never allocates, never throws. Any
// thread, outside signal handlers.
void report_entry_failure(const char* where, const char* cause, const char* consequence) noexcept;

// The consequence of a failure that stops all profiling (the profiler's own callbacks, the writer).
inline constexpr const char* kProfilingStopped = "profiling stopped; the file keeps every complete report";

// Runs body(); if it throws, reports what was thrown (std::bad_alloc as "out of memory") with
// `consequence`, then runs on_failure() (whose own exceptions are swallowed) and returns
// `fallback`. Returns body()'s result otherwise. Allocates nothing itself. Any thread.
template <typename Result, typename Body, typename OnFailure>
Result guard_entry(const char* where, const char* consequence, Result fallback, Body&& body,
                   OnFailure&& on_failure) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    report_entry_failure(where, "out of memory", consequence);
  } catch (const std::exception& error) {
    report_entry_failure(where, error.what(), consequence);  // what() lives only in this block
  } catch (...) {
    report_entry_failure(where, "an unknown exception", consequence);
  }
  try {
    on_failure();
  } catch (...) {
  }
  return fallback;
}

// The same for a body that returns nothing.
template <typename Body, typename OnFailure>
void guard_entry(const char* where, const char* consequence, Body&& body, OnFailure&& on_failure) noexcept {
  guard_entry<int>(
      where, consequence, 0,
      [&] {
        body();
        return 0;
      },
      std::forward<OnFailure>(on_failure));
}

}  // namespace fasthprof
