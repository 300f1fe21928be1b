#include "fork_dump/fork_child.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/fd_io.h"

namespace fasthprof {

namespace {

// The decimal digits of value at the end of buffer; returns where they start. Async-signal-safe.
char* format_decimal(uint64_t value, char* end) {
  do {
    *--end = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  return end;
}

// The "<field>: <n> kB" value of an smaps_rollup text, in kB; -1 when absent.
int64_t rollup_kb(const char* text, size_t size, const char* field) {
  size_t length = std::strlen(field);
  for (size_t at = 0; at + length < size; ++at) {
    if ((at != 0 && text[at - 1] != '\n') || std::memcmp(text + at, field, length) != 0) continue;
    size_t digit = at + length;
    while (digit < size && (text[digit] == ' ' || text[digit] == '\t')) ++digit;
    if (digit >= size || text[digit] < '0' || text[digit] > '9') return -1;
    int64_t value = 0;
    while (digit < size && text[digit] >= '0' && text[digit] <= '9') value = value * 10 + (text[digit++] - '0');
    return value;
  }
  return -1;
}

}  // namespace

bool prepare_fork_child(uint64_t watchdog_ms, const char** failure) {
  int fd = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  bool adjusted = fd >= 0 && write_all(fd, "1000", 4);
  if (fd >= 0) ::close(fd);
  if (!adjusted) {
    *failure = "cannot set the child's oom_score_adj";
    return false;
  }
  // Through the system call itself: glibc's timer_create is not on the async-signal-safe list.
  struct sigevent event{};
  event.sigev_notify = SIGEV_SIGNAL;
  event.sigev_signo = SIGKILL;
  int timer = -1;
  if (::syscall(SYS_timer_create, CLOCK_MONOTONIC, &event, &timer) != 0) {
    *failure = "cannot create the child's watchdog timer";
    return false;
  }
  struct itimerspec when{};
  when.it_value.tv_sec = static_cast<time_t>(watchdog_ms / 1000);
  when.it_value.tv_nsec = static_cast<long>((watchdog_ms % 1000) * 1000000);
  if (when.it_value.tv_sec == 0 && when.it_value.tv_nsec == 0) when.it_value.tv_nsec = 1;
  if (::syscall(SYS_timer_settime, timer, 0, &when, nullptr) != 0) {
    *failure = "cannot arm the child's watchdog timer";
    return false;
  }
  return true;
}

int64_t private_memory_bytes(pid_t pid) {
  char path[64] = "/proc/";
  char digits[24];
  char* end = digits + sizeof(digits);
  const char* number = pid == 0 ? "self" : format_decimal(static_cast<uint64_t>(pid), end);
  size_t number_length = pid == 0 ? 4 : static_cast<size_t>(end - number);
  std::memcpy(path + 6, number, number_length);
  std::memcpy(path + 6 + number_length, "/smaps_rollup", 14);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[4096];
  size_t size = 0;
  while (size < sizeof(text)) {
    ssize_t got = ::read(fd, text + size, sizeof(text) - size);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    size += static_cast<size_t>(got);
  }
  ::close(fd);
  int64_t clean = rollup_kb(text, size, "Private_Clean:");
  int64_t dirty = rollup_kb(text, size, "Private_Dirty:");
  if (clean < 0 || dirty < 0) return -1;
  return (clean + dirty) * 1024;
}

std::string ChildExit::describe() const {
  if (exited) return "exited with status " + std::to_string(status);
  return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
}

ChildReaper::ChildReaper(pid_t child) : child_(child) {
  // A plain thread: the VM's signals (SIGQUIT above all) stay with the VM's own threads.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  try {
    thread_ = std::thread([this] { run(); });
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

ChildReaper::~ChildReaper() {
  kill();
  thread_.join();
}

// The child is waited for without being reaped first (WNOWAIT): until it is reaped its pid stays
// its own, so kill() never signals a process that took the pid over.
void ChildReaper::run() {
  siginfo_t info{};
  int waited;
  do {
    waited = ::waitid(P_PID, static_cast<id_t>(child_), &info, WEXITED | WNOWAIT);
  } while (waited < 0 && errno == EINTR);
  ChildExit exit;
  if (waited == 0 && info.si_code == CLD_EXITED) {
    exit.exited = true;
    exit.status = info.si_status;
  } else if (waited == 0) {
    exit.signal = info.si_status;
  } else {
    exit.exited = true;  // not a child of ours to wait for (reaped elsewhere)
    exit.status = -1;
  }
  std::lock_guard<std::mutex> hold(mutex_);
  if (waited == 0) {
    int status = 0;
    while (::waitpid(child_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  exit_ = exit;
  done_ = true;
  ended_.notify_all();
}

bool ChildReaper::wait_for(uint64_t timeout_ms, ChildExit* exit) {
  std::unique_lock<std::mutex> hold(mutex_);
  if (!ended_.wait_for(hold, std::chrono::milliseconds(timeout_ms), [this] { return done_; })) return false;
  *exit = exit_;
  return true;
}

void ChildReaper::kill() {
  std::lock_guard<std::mutex> hold(mutex_);
  // Once reaped, the pid may belong to another process: never signal it then.
  if (!done_) ::kill(child_, SIGKILL);
}

}  // namespace fasthprof
