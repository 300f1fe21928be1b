#include "vm_dump/hotspot_attach.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/clock.h"
#include "base/fd_io.h"

namespace fasthprof {

namespace {

std::string errno_text(int error) { return std::strerror(error); }

}  // namespace

// HotSpot's temporary folder on Linux is always /tmp, whatever java.io.tmpdir says.
HotSpotAttach::HotSpotAttach(pid_t pid)
    : pid_(pid),
      socket_path_("/tmp/.java_pid" + std::to_string(pid)),
      trigger_path_("/tmp/.attach_pid" + std::to_string(pid)) {}

bool HotSpotAttach::socket_exists() const {
  // Another user's socket at that name (/tmp is everyone's) is not the JVM's.
  struct stat st{};
  return ::lstat(socket_path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == ::geteuid();
}

bool HotSpotAttach::start_listener(int timeout_ms, std::string* error) {
  // The trigger file: if one exists already, another client (jcmd) is attaching right now and will
  // signal; ours is then neither created nor removed.
  int fd = ::open(trigger_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  bool own_trigger = fd >= 0;
  if (fd < 0 && errno != EEXIST) {
    *error = "cannot create " + trigger_path_ + ": " + errno_text(errno);
    return false;
  }
  // The JVM ignores a trigger of another user's: no listener would come.
  struct stat st{};
  if (!own_trigger && ::lstat(trigger_path_.c_str(), &st) == 0 && st.st_uid != ::geteuid()) {
    *error = "a file of another user (" + std::to_string(st.st_uid) + ") is at " + trigger_path_;
    return false;
  }
  if (fd >= 0) ::close(fd);
  if (own_trigger && ::kill(pid_, SIGQUIT) != 0) {
    *error = "cannot signal the JVM: " + errno_text(errno);
    ::unlink(trigger_path_.c_str());
    return false;
  }
  uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(timeout_ms) * 1000000u;
  bool found = false;
  while (!(found = socket_exists()) && monotonic_ns() < deadline) ::usleep(2000);
  if (own_trigger) ::unlink(trigger_path_.c_str());
  if (!found) *error = "the JVM's attach listener did not start within " + std::to_string(timeout_ms) + " ms";
  return found;
}

AttachReply HotSpotAttach::execute(const std::string& command, const std::string& arg0, const std::string& arg1,
                                   const std::string& arg2) const {
  AttachReply reply;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    reply.error = "socket: " + errno_text(errno);
    return reply;
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof address.sun_path) {
    ::close(fd);
    reply.error = "the socket path is too long";
    return reply;
  }
  std::memcpy(address.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
  int connected;
  do {
    connected = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  } while (connected != 0 && errno == EINTR);
  if (connected != 0) {
    reply.error = "cannot connect to " + socket_path_ + ": " + errno_text(errno);
    ::close(fd);
    return reply;
  }
  // The listener is a thread of the target: a socket another process listens on (planted at that
  // name) hears nothing of the request.
  ucred peer{};
  socklen_t peer_size = sizeof peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_size) != 0 || peer.pid != pid_) {
    reply.error = socket_path_ + " is not process " + std::to_string(pid_) + "'s (it is process " +
                  std::to_string(peer.pid) + "'s)";
    ::close(fd);
    return reply;
  }
  // Protocol 1: the version, the command, three arguments, each ended by a zero byte.
  std::string request;
  request.append("1", 2);
  for (const std::string* part : {&command, &arg0, &arg1, &arg2}) request.append(part->c_str(), part->size() + 1);
  if (!write_all(fd, request.data(), request.size())) {
    reply.error = "cannot send the request: " + errno_text(errno);
    ::close(fd);
    return reply;
  }
  std::string all;
  char buffer[4096];
  for (;;) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      reply.error = "cannot read the reply: " + errno_text(errno);
      break;
    }
    if (got == 0) break;
    all.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  size_t newline = all.find('\n');
  if (newline == std::string::npos || newline == 0) {
    if (reply.error.empty()) reply.error = all.empty() ? "the JVM closed the connection without a reply" : "a reply without a status line";
    return reply;
  }
  std::string status = all.substr(0, newline);
  char* end = nullptr;
  long value = std::strtol(status.c_str(), &end, 10);
  if (end == status.c_str() || *end != '\0') {
    reply.error = "an unreadable status line in the reply: " + status;
    return reply;
  }
  reply.answered = true;
  reply.status = static_cast<int>(value);
  reply.text = all.substr(newline + 1);
  while (!reply.text.empty() && (reply.text.back() == '\n' || reply.text.back() == '\r')) reply.text.pop_back();
  return reply;
}

}  // namespace fasthprof
