#include "socket_backend.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <new>

namespace fasthprof {
namespace {

// Numeric form of a resolved address, for messages ("::1", "127.0.0.1").
std::string numeric_host(const struct addrinfo* address) {
  char text[NI_MAXHOST];
  if (getnameinfo(address->ai_addr, address->ai_addrlen, text, sizeof text, nullptr, 0,
                  NI_NUMERICHOST) != 0) {
    return "?";
  }
  return text;
}

}  // namespace

int connect_socket(const std::string& host, int port, std::string* error) {
  if (port <= 0 || port > 65535) {
    if (error != nullptr) *error = "invalid port number " + std::to_string(port);
    return -1;
  }
  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  hints.ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV;
  struct addrinfo* addresses = nullptr;
  const std::string service = std::to_string(port);
  int status = getaddrinfo(host.c_str(), service.c_str(), &hints, &addresses);
  // AI_ADDRCONFIG hides ::1 and 127.0.0.1 on a host whose only interface is loopback.
  if (status == EAI_NONAME || status == EAI_ADDRFAMILY || status == EAI_NODATA) {
    hints.ai_flags = AI_NUMERICSERV;
    status = getaddrinfo(host.c_str(), service.c_str(), &hints, &addresses);
  }
  if (status != 0) {
    if (error != nullptr) {
      *error = "cannot resolve host '" + host + "': " +
               (status == EAI_SYSTEM ? strerror(errno) : gai_strerror(status));
    }
    return -1;
  }
  std::string last_error = "no address for host '" + host + "'";
  int fd = -1;
  for (const struct addrinfo* address = addresses; address != nullptr; address = address->ai_next) {
    fd = socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC, address->ai_protocol);
    if (fd < 0) {
      last_error = numeric_host(address) + " port " + service + ": " + strerror(errno);
      continue;
    }
    int result;
    do {
      result = ::connect(fd, address->ai_addr, address->ai_addrlen);
    } while (result != 0 && errno == EINTR);
    if (result == 0) break;
    last_error = numeric_host(address) + " port " + service + ": " + strerror(errno);
    ::close(fd);
    fd = -1;
  }
  freeaddrinfo(addresses);
  if (fd < 0 && error != nullptr) *error = last_error;
  return fd;
}

SocketBackend::SocketBackend(int fd, std::string name, int send_timeout_seconds)
    : fd_(fd), name_(std::move(name)), send_timeout_seconds_(send_timeout_seconds > 0 ? send_timeout_seconds : 0) {
  if (send_timeout_seconds_ > 0 && fd_ >= 0) {
    // The kernel restarts the wait at each send(), and a send() that moved some bytes when the
    // time ran out returns that short count: only a peer that takes nothing for the whole time
    // fails a send(), with EAGAIN.
    struct timeval timeout{};
    timeout.tv_sec = send_timeout_seconds_;
    if (setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout) != 0) send_timeout_seconds_ = 0;
  }
}

SocketBackend::~SocketBackend() { close(); }

std::unique_ptr<SocketBackend> SocketBackend::connect(const std::string& host, int port,
                                                      std::string* error, int send_timeout_seconds) {
  const int fd = connect_socket(host, port, error);
  if (fd < 0) return nullptr;
  // IPv6 literals are bracketed so that the port stays readable.
  const bool ipv6_literal = host.find(':') != std::string::npos;
  std::string name = (ipv6_literal ? "[" + host + "]" : host) + ":" + std::to_string(port);
  auto backend = std::unique_ptr<SocketBackend>(
      new (std::nothrow) SocketBackend(fd, std::move(name), send_timeout_seconds));
  if (backend == nullptr) {
    ::close(fd);
    if (error != nullptr) *error = "out of memory";
  }
  return backend;
}

WriteResult SocketBackend::write_all(const void* data, size_t size) {
  if (fd_ < 0) return {EBADF};
  return write_fully(data, size, &offset_, [this](const char* bytes, size_t count) {
    return send(fd_, bytes, count, MSG_NOSIGNAL);
  });
}

std::string SocketBackend::describe_error(int error) const {
  if ((error == EAGAIN || error == EWOULDBLOCK) && send_timeout_seconds_ > 0) {
    return "the peer took no data for " + std::to_string(send_timeout_seconds_) +
           (send_timeout_seconds_ == 1 ? " second" : " seconds");
  }
  return SinkBackend::describe_error(error);
}

WriteResult SocketBackend::truncate_to(uint64_t) { return {ESPIPE}; }

WriteResult SocketBackend::close() {
  if (fd_ < 0) return {};
  shutdown(fd_, SHUT_RDWR);
  const int result = ::close(fd_);
  fd_ = -1;
  if (result != 0 && errno != EINTR) return {errno};
  return {};
}

}  // namespace fasthprof
