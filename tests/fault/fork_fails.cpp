/*
 * Preloaded into a JVM (LD_PRELOAD) by tests/integration/fork_dump.py: fork() fails as it does when
 * the user's process limit (RLIMIT_NPROC) is reached or the kernel cannot commit the copy, with the
 * errno named by FASTHPROF_TEST_FORK_ERRNO ("ENOMEM", else EAGAIN). Threads are made by clone()
 * through pthread_create, which this leaves alone.
 */
#include <sys/types.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

extern "C" pid_t fork() {
  const char* name = std::getenv("FASTHPROF_TEST_FORK_ERRNO");
  errno = name != nullptr && std::strcmp(name, "ENOMEM") == 0 ? ENOMEM : EAGAIN;
  return -1;
}
