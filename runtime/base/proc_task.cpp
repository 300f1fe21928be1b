#include "base/proc_task.h"

namespace fasthprof {

char task_stat_state(std::string_view stat) {
  size_t name_end = stat.rfind(')');
  if (name_end == std::string_view::npos || name_end + 2 >= stat.size() || stat[name_end + 1] != ' ') return '\0';
  char state = stat[name_end + 2];
  bool letter = (state >= 'A' && state <= 'Z') || (state >= 'a' && state <= 'z');
  return letter ? state : '\0';
}

bool is_concurrent_collector_thread(std::string_view comm) {
  return comm.starts_with("ZDriver") || comm.starts_with("ZDirector") || comm.starts_with("Shenandoah");
}

}  // namespace fasthprof
