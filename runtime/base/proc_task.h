// What the agent reads about its own threads in /proc/self/task/<tid>/: the run state in `stat`
// and the name in `comm`. Pure text functions, so that the fuzz target reaches them
// (tests/fuzz/proc_task_fuzz.cpp); the agent does the reading.
#pragma once

#include <string_view>

namespace fasthprof {

// The state letter of a task from the text of its stat file ("tid (name) S ppid ..."), or '\0'
// when the text has no state where the kernel puts it. The name may hold spaces and parentheses,
// so the state is the letter after the last ") ". Allocates nothing; any thread.
char task_stat_state(std::string_view stat);

// True when comm (a thread's name, with or without its newline) names a thread of a garbage
// collector that does its work on its own threads (ZGC's ZDriver / ZDirector, Shenandoah's).
bool is_concurrent_collector_thread(std::string_view comm);

}  // namespace fasthprof
