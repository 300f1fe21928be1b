// fasthprof listen: the collector for agents started with net=host:port. It accepts many agents at
// once, writes each connection to a file of its own (mode 0600: a heap dump holds the program's
// secrets), and sends the agents commands (runtime/options/net_command.h) from its command line or from
// standard input, one per line (a prompt when that is a terminal).
//
// One thread, one poll() loop: the listening sockets, standard input and every connection. A
// connection's bytes go to its file as they come through a StreamRecorder (stream_recorder.h),
// which follows the records so that a stream that stops inside one, or a file that cannot be
// written, is cut back to the end of the last complete record. A connection is forgotten once
// closed, so that the collector's memory does not grow with the agents it has seen.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "options/net_command.h"
#include "stream_recorder.h"
#include "verbs.h"

namespace fasthprof::cli {

const char kListenUsage[] =
    "usage: fasthprof listen [--port N] [--address ADDR]... [--dir DIR] [--wait N]\n"
    "                        [-c COMMAND]... [--stay]\n"
    "Collects the output of fasthprof agents started with net=HOST:PORT, one file per\n"
    "connection (mode 0600) in DIR (default .), named\n"
    "<peer address>_<peer port>[_pid<PID>]_<UTC time>.hprof (the pid of an agent on\n"
    "this host, found through /proc; .txt for format=a, .hprof.gz for gz=y; an IPv6\n"
    "peer as ip6_<address with - for :>_...), and sends them commands. Listens on\n"
    "loopback (127.0.0.1 and ::1) unless --address is given (0.0.0.0, ::, or any\n"
    "local address); --port 0 picks a free port.\n"
    "The channel is plaintext and unauthenticated: anyone who can reach the port can\n"
    "send profiles or ask for heap dumps, which hold the program's secrets. Tunnel it\n"
    "(docs/net.md).\n"
    "\n"
    "On start it prints `listening on ADDR:PORT` per socket; then one line per event:\n"
    "  connected ID PEER [pid PID]\n"
    "  file ID FILE\n"
    "  closed ID PEER BYTES bytes [cut back to N[: WHY] | kept as it came: WHY]\n"
    "         [: the collector stopped]\n"
    "A file is cut back to its last complete record when the stream stops inside one\n"
    "or when the file cannot be written (a full disk: one message on stderr, the rest\n"
    "of that stream dropped).\n"
    "\n"
    "Commands (from -c, run in order once --wait N agents are connected, then from\n"
    "standard input; TARGET is a connection ID or `all`, the default; a first number\n"
    "is always the TARGET, so a CUTOFF alone is written with a decimal point:\n"
    "`sites 0.0`, `sites 2 0`):\n"
    "  list                    the open connections: ID, peer, file, bytes\n"
    "  dump [TARGET]           heap dump (heap=dump|all)\n"
    "  sites [TARGET] [CUTOFF] [gc] [incremental] [alloc]\n"
    "                          allocation sites cut at CUTOFF (0..1; 0 = every site),\n"
    "                          gc: force a GC first; incremental: only the sites\n"
    "                          changed since the last SITES output; alloc: by\n"
    "                          allocated bytes (heap=sites|all)\n"
    "  summary [TARGET]        HEAP SUMMARY record (heap=sites|all, format=b)\n"
    "  traces [TARGET]         every TRACE not written yet\n"
    "  cpu [TARGET] [CUTOFF]   CPU SAMPLES (cpu=samples), else CPU TIME (cpu=times)\n"
    "  gc [TARGET]             force a garbage collection\n"
    "  control TARGET alloc on|off | sampling on|off [THREAD_OBJECT_ID] | clear-cpu\n"
    "                | reset-sites | depth N\n"
    "  exit [TARGET]           the agent's program exits (System.exit(0))\n"
    "  raw TARGET HEX          send bytes as they are (testing)\n"
    "  sleep SECONDS | wait N  pause; wait until N agents have connected in all\n"
    "  quit                    stop collecting (end of input too, unless --stay)\n"
    "--stay: keep collecting after the end of standard input until every agent has\n"
    "disconnected (and at least --wait N have connected).\n";

namespace {

// Standard output: event lines, and the prompt when standard input is a terminal. The prompt is
// shown again only after something was printed (a command's or an event's lines), not at every
// turn of the poll loop; an event that comes while it is shown writes over it (\r).
bool prompt_on_terminal = false;
bool prompt_shown = false;

__attribute__((format(printf, 1, 2))) void out(const char* format, ...) {
  if (prompt_shown) std::fputs("\r", stdout);
  prompt_shown = false;
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::fflush(stdout);
}

void show_prompt() {
  if (!prompt_on_terminal || prompt_shown) return;
  std::fputs("> ", stdout);
  std::fflush(stdout);
  prompt_shown = true;
}

// An agent's connection, from accept to close; the collector forgets it once closed.
struct Connection {
  int id = 0;
  int fd = -1;
  std::string peer;      // "127.0.0.1:5555", "[::1]:5555"
  std::string peer_tag;  // for the file name
  std::string path;      // "" until the file is opened
  std::string time_tag;
  long pid = 0;  // a peer on this host, when /proc tells
  std::unique_ptr<StreamRecorder> stream;
  bool closed = false;
};

class Collector {
 public:
  explicit Collector(std::string dir) : dir_(std::move(dir)) {}

  bool listen_on(const std::string& address, int port);
  int port() const { return port_; }
  // One command line; false for quit.
  bool run_line(const std::string& line);
  // Runs the loop until quit/end of input (or, with stay, until every agent has gone).
  void loop(bool interactive, bool stay, int wait_for);
  void close_all();
  int accepted() const { return next_id_ - 1; }
  void poll_once(int timeout_ms, bool with_stdin, std::string* input_line, bool* input_ended);

 private:
  void accept_from(int listener);
  void read_from(Connection& c);
  int open_file(Connection& c, StreamFrame::Kind kind);
  void forget_closed();
  void end(Connection& c, const char* why);
  std::vector<Connection*> targets(const std::string& target);
  void send(const std::string& target, NetCommand command);

  std::string dir_;
  std::vector<int> listeners_;
  std::vector<std::unique_ptr<Connection>> connections_;
  int next_id_ = 1;
  int port_ = 0;
  uint32_t serial_ = 1;
  std::string stdin_buffer_;
};

// The pid of a peer on this host, found as `ss -p` finds it: the inode of the socket whose local
// port is the peer's port and whose remote port is ours (/proc/net/tcp, tcp6), then the process
// holding that inode. 0 when not found (another host, another user's process, no /proc).
long local_peer_pid(int peer_port, int our_port) {
  unsigned long inode = 0;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    FILE* f = std::fopen(table, "r");
    if (f == nullptr) continue;
    char line[512];
    std::fgets(line, sizeof(line), f);  // the header
    while (inode == 0 && std::fgets(line, sizeof(line), f) != nullptr) {
      char local[64], remote[64];
      unsigned long node = 0;
      // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
      if (std::sscanf(line, "%*s %63s %63s %*s %*s %*s %*s %*s %*s %lu", local, remote, &node) != 3) continue;
      const char* lp = std::strrchr(local, ':');
      const char* rp = std::strrchr(remote, ':');
      if (lp == nullptr || rp == nullptr) continue;
      if (std::strtol(lp + 1, nullptr, 16) == peer_port && std::strtol(rp + 1, nullptr, 16) == our_port) inode = node;
    }
    std::fclose(f);
    if (inode != 0) break;
  }
  if (inode == 0) return 0;
  std::string wanted = "socket:[" + std::to_string(inode) + "]";
  long found = 0;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return 0;
  while (dirent* entry = readdir(proc)) {
    if (found != 0) break;
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    std::string fds = std::string("/proc/") + entry->d_name + "/fd";
    DIR* dir = opendir(fds.c_str());
    if (dir == nullptr) continue;
    while (dirent* fd = readdir(dir)) {
      char target[64];
      ssize_t n = readlink((fds + "/" + fd->d_name).c_str(), target, sizeof(target) - 1);
      if (n <= 0) continue;
      target[n] = '\0';
      if (wanted == target) {
        found = std::atol(entry->d_name);
        break;
      }
    }
    closedir(dir);
  }
  closedir(proc);
  return found;
}

ssize_t send_bytes(int fd, const std::vector<uint8_t>& bytes) {
  for (;;) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    return n;
  }
}

std::string describe_address(const sockaddr_storage& address, std::string* tag) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (address.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
    if (tag != nullptr) *tag = std::string(host) + "_" + std::to_string(port);
    return std::string(host) + ":" + std::to_string(port);
  }
  auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
  inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
  port = ntohs(in6->sin6_port);
  if (tag != nullptr) {
    std::string name = host;
    for (char& c : name) {
      if (c == ':') c = '-';
    }
    // "ip6_" first: a name such as "--1_..." (::1) would read as an option to the next tool.
    *tag = "ip6_" + name + "_" + std::to_string(port);
  }
  return "[" + std::string(host) + "]:" + std::to_string(port);
}

bool Collector::listen_on(const std::string& address, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port_ != 0 ? port_ : port);
  int rc = getaddrinfo(address.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) {
    fail("listen", "cannot listen on %s: %s", address.c_str(), gai_strerror(rc));
    return false;
  }
  bool ok = false;
  for (addrinfo* ai = found; ai != nullptr && !ok; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
      fail("listen", "cannot listen on %s port %d: %s", address.c_str(), port, std::strerror(errno));
      close(fd);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
    std::string text = describe_address(bound, nullptr);
    if (port_ == 0) port_ = ntohs(bound.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                                              : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
    out("listening on %s\n", text.c_str());
    listeners_.push_back(fd);
    ok = true;
  }
  freeaddrinfo(found);
  std::fflush(stdout);
  return ok;
}

void Collector::accept_from(int listener) {
  sockaddr_storage peer{};
  socklen_t length = sizeof(peer);
  int fd = accept4(listener, reinterpret_cast<sockaddr*>(&peer), &length, SOCK_CLOEXEC);
  if (fd < 0) return;
  auto c = std::make_unique<Connection>();
  c->stream = std::make_unique<StreamRecorder>(
      [this, connection = c.get()](StreamFrame::Kind kind) { return open_file(*connection, kind); });
  c->id = next_id_++;
  c->fd = fd;
  c->peer = describe_address(peer, &c->peer_tag);
  sockaddr_storage local{};
  socklen_t local_length = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) == 0) {
    auto port_of = [](const sockaddr_storage& a) {
      return ntohs(a.ss_family == AF_INET ? reinterpret_cast<const sockaddr_in*>(&a)->sin_port
                                          : reinterpret_cast<const sockaddr_in6*>(&a)->sin6_port);
    };
    c->pid = local_peer_pid(port_of(peer), port_of(local));
    if (c->pid != 0) c->peer_tag += "_pid" + std::to_string(c->pid);
  }
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &utc);
  c->time_tag = stamp;
  if (c->pid != 0) {
    out("connected %d %s pid %ld\n", c->id, c->peer.c_str(), c->pid);
  } else {
    out("connected %d %s\n", c->id, c->peer.c_str());
  }
  std::fflush(stdout);
  connections_.push_back(std::move(c));
}

int Collector::open_file(Connection& c, StreamFrame::Kind kind) {
  const char* ext = ".hprof";
  if (kind == StreamFrame::Kind::kText) ext = ".txt";
  if (kind == StreamFrame::Kind::kGzip) ext = ".hprof.gz";
  int file = -1;
  for (int attempt = 0; attempt < 100 && file < 0; ++attempt) {
    std::string path = dir_ + "/" + c.peer_tag + "_" + c.time_tag + (attempt ? "_" + std::to_string(attempt) : "") + ext;
    // Read too: a gzip stream's cut-back reads its last member back.
    file = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (file >= 0) c.path = path;
    else if (errno != EEXIST) break;
  }
  if (file < 0) {
    std::fprintf(stderr, "fasthprof listen: connection %d: cannot create its file in %s: %s; its bytes are dropped\n",
                 c.id, dir_.c_str(), std::strerror(errno));
    return -1;
  }
  out("file %d %s\n", c.id, c.path.c_str());
  return file;
}

void Collector::read_from(Connection& c) {
  static std::vector<uint8_t> buffer(1 << 20);
  ssize_t n = recv(c.fd, buffer.data(), buffer.size(), 0);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    end(c, n < 0 ? std::strerror(errno) : nullptr);
    return;
  }
  if (!c.stream->take(buffer.data(), static_cast<size_t>(n))) {
    std::fprintf(stderr, "fasthprof listen: connection %d: cannot write %s: %s\n", c.id, c.path.c_str(),
                 c.stream->failure().c_str());
  }
}

void Collector::end(Connection& c, const char* why) {
  if (c.closed) return;
  c.closed = true;
  std::string note = c.stream->finish();
  close(c.fd);
  c.fd = -1;
  out("closed %d %s %llu bytes%s%s%s%s\n", c.id, c.peer.c_str(), static_cast<unsigned long long>(c.stream->received()),
      note.empty() ? "" : " ", note.c_str(), why ? ": " : "", why ? why : "");
}

// A closed connection's line was printed: it is forgotten (its memory freed), so that a collector
// that runs for months does not grow with the agents it has seen.
void Collector::forget_closed() {
  std::erase_if(connections_, [](const std::unique_ptr<Connection>& c) { return c->closed; });
}

std::vector<Connection*> Collector::targets(const std::string& target) {
  std::vector<Connection*> out;
  for (auto& c : connections_) {
    if (c->closed) continue;
    if (target.empty() || target == "all" || target == std::to_string(c->id)) out.push_back(c.get());
  }
  if (out.empty()) std::fprintf(stderr, "fasthprof listen: no connected agent %s\n", target.empty() ? "" : target.c_str());
  return out;
}

void Collector::send(const std::string& target, NetCommand command) {
  for (Connection* c : targets(target)) {
    command.serial = serial_++;
    std::vector<uint8_t> bytes = encode_net_command(command);
    // Commands are a few bytes: the socket's buffer takes them; an agent that reads no commands
    // for so long that it is full gets none more rather than stalling every other connection.
    ssize_t n = send_bytes(c->fd, bytes);
    if (n != static_cast<ssize_t>(bytes.size())) {
      std::fprintf(stderr, "fasthprof listen: connection %d: the command was not sent (%s)\n", c->id,
                   n < 0 ? std::strerror(errno) : "the agent reads no commands");
    } else {
      out("sent %d %s serial %u\n", c->id, net_command_name(static_cast<uint8_t>(command.tag)).c_str(),
                  command.serial);
    }
  }
  std::fflush(stdout);
}

bool parse_cutoff(const std::string& text, float* cutoff) {
  char* end = nullptr;
  float value = std::strtof(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(value >= 0.0f && value <= 1.0f)) return false;
  *cutoff = value;
  return true;
}

bool is_target(const std::string& word) {
  if (word == "all") return true;
  if (word.empty()) return false;
  for (char c : word) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool Collector::run_line(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  if (words.empty() || words[0][0] == '#') return true;
  const std::string& verb = words[0];
  size_t at = 1;
  std::string target;
  auto take_target = [&] {
    if (at < words.size() && is_target(words[at])) target = words[at++];
  };
  auto bad = [&](const char* why) {
    std::fprintf(stderr, "fasthprof listen: %s: %s (help: fasthprof listen --help)\n", line.c_str(), why);
    return true;
  };
  NetCommand command;
  if (verb == "quit") return false;
  if (verb == "list") {
    for (auto& c : connections_) {
      out("%d %s %s %llu bytes\n", c->id, c->peer.c_str(), c->path.empty() ? "-" : c->path.c_str(),
          static_cast<unsigned long long>(c->stream->received()));
    }
    std::fflush(stdout);
    return true;
  }
  if (verb == "sleep") {
    double seconds = words.size() > 1 ? std::atof(words[1].c_str()) : 1;
    std::time_t until_ms = 0;
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    double end = now.tv_sec + now.tv_nsec / 1e9 + seconds;
    for (;;) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      double left = end - (now.tv_sec + now.tv_nsec / 1e9);
      if (left <= 0) break;
      poll_once(static_cast<int>(left * 1000) + 1, false, nullptr, nullptr);
    }
    (void)until_ms;
    return true;
  }
  if (verb == "wait") {
    int n = words.size() > 1 ? std::atoi(words[1].c_str()) : 1;
    while (accepted() < n) poll_once(1000, false, nullptr, nullptr);
    return true;
  }
  if (verb == "raw") {
    take_target();
    if (at >= words.size()) return bad("raw needs hex bytes");
    std::vector<uint8_t> bytes;
    for (; at < words.size(); ++at) {
      const std::string& hex = words[at];
      for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes.push_back(static_cast<uint8_t>(std::strtoul(hex.substr(i, 2).c_str(), nullptr, 16)));
    }
    for (Connection* c : targets(target)) {
      if (send_bytes(c->fd, bytes) != static_cast<ssize_t>(bytes.size())) std::fprintf(stderr, "fasthprof listen: connection %d: not sent\n", c->id);
      else out("sent %d raw %zu bytes\n", c->id, bytes.size());
    }
    std::fflush(stdout);
    return true;
  }
  take_target();
  if (verb == "dump") {
    command.tag = NetCommandTag::kDumpHeap;
  } else if (verb == "gc") {
    command.tag = NetCommandTag::kGc;
  } else if (verb == "summary") {
    command.tag = NetCommandTag::kHeapSummary;
  } else if (verb == "traces") {
    command.tag = NetCommandTag::kDumpTraces;
  } else if (verb == "exit") {
    command.tag = NetCommandTag::kExit;
  } else if (verb == "sites" || verb == "cpu") {
    command.tag = verb == "sites" ? NetCommandTag::kAllocSites : NetCommandTag::kCpuSamples;
    command.cutoff = 0;
    for (; at < words.size(); ++at) {
      if (verb == "sites" && words[at] == "gc") {
        command.flags |= kSitesForceGc;
      } else if (verb == "sites" && words[at] == "incremental") {
        command.flags |= kSitesIncremental;
      } else if (verb == "sites" && words[at] == "alloc") {
        command.flags |= kSitesSortedByAllocation;
      } else if (!parse_cutoff(words[at], &command.cutoff)) {
        return bad("a cutoff is a number from 0 to 1");
      }
    }
  } else if (verb == "control") {
    command.tag = NetCommandTag::kControl;
    std::string what = at < words.size() ? words[at++] : "";
    std::string arg = at < words.size() ? words[at++] : "";
    if (what == "alloc" && (arg == "on" || arg == "off")) {
      command.control = arg == "on" ? NetControl::kAllocOn : NetControl::kAllocOff;
    } else if (what == "sampling" && (arg == "on" || arg == "off")) {
      command.control = arg == "on" ? NetControl::kSamplingOn : NetControl::kSamplingOff;
      if (at < words.size()) command.thread_id = std::strtoull(words[at++].c_str(), nullptr, 0);
    } else if (what == "clear-cpu") {
      command.control = NetControl::kClearCpu;
    } else if (what == "reset-sites") {
      command.control = NetControl::kResetSites;
    } else if (what == "depth" && !arg.empty()) {
      command.control = NetControl::kSetDepth;
      command.depth = static_cast<uint16_t>(std::atoi(arg.c_str()));
    } else {
      return bad("control alloc on|off, sampling on|off [ID], clear-cpu, reset-sites, depth N");
    }
  } else {
    return bad("unknown command");
  }
  send(target, command);
  return true;
}

void Collector::poll_once(int timeout_ms, bool with_stdin, std::string* input_line, bool* input_ended) {
  std::vector<pollfd> fds;
  for (int fd : listeners_) fds.push_back({fd, POLLIN, 0});
  size_t first_connection = fds.size();
  std::vector<Connection*> open;
  for (auto& c : connections_) {
    if (c->closed) continue;
    fds.push_back({c->fd, POLLIN, 0});
    open.push_back(c.get());
  }
  if (with_stdin) fds.push_back({STDIN_FILENO, POLLIN, 0});
  int ready = poll(fds.data(), fds.size(), timeout_ms);
  if (ready <= 0) return;
  for (size_t i = 0; i < listeners_.size(); ++i) {
    if (fds[i].revents & POLLIN) accept_from(fds[i].fd);
  }
  for (size_t i = 0; i < open.size(); ++i) {
    if (fds[first_connection + i].revents & (POLLIN | POLLHUP | POLLERR)) read_from(*open[i]);
  }
  forget_closed();
  if (with_stdin && (fds.back().revents & (POLLIN | POLLHUP | POLLERR))) {
    char buffer[4096];
    ssize_t n = read(STDIN_FILENO, buffer, sizeof(buffer));
    if (n <= 0) {
      *input_ended = true;
    } else {
      stdin_buffer_.append(buffer, static_cast<size_t>(n));
    }
    size_t newline = stdin_buffer_.find('\n');
    if (newline != std::string::npos) {
      *input_line = stdin_buffer_.substr(0, newline);
      stdin_buffer_.erase(0, newline + 1);
    } else if (*input_ended && !stdin_buffer_.empty()) {
      *input_line = stdin_buffer_;
      stdin_buffer_.clear();
    }
  }
}

void Collector::loop(bool interactive, bool stay, int wait_for) {
  bool input_ended = false;
  prompt_on_terminal = interactive;
  show_prompt();
  for (;;) {
    std::string line;
    poll_once(1000, !input_ended, &line, &input_ended);
    // A line may still wait in the buffer after the one taken.
    while (!line.empty() || !stdin_buffer_.empty()) {
      // The terminal echoed the line's newline: the prompt is no longer on screen.
      if (!line.empty()) prompt_shown = false;
      if (!line.empty() && !run_line(line)) return;
      line.clear();
      size_t newline = stdin_buffer_.find('\n');
      if (newline == std::string::npos) break;
      line = stdin_buffer_.substr(0, newline);
      stdin_buffer_.erase(0, newline + 1);
      if (line.empty()) continue;
    }
    if (!input_ended) show_prompt();
    if (input_ended) {
      if (!stay) return;
      bool any_open = false;
      for (auto& c : connections_) any_open = any_open || !c->closed;
      if (!any_open && accepted() >= wait_for) return;
    }
  }
}

void Collector::close_all() {
  // Whatever is still in the sockets' buffers is taken first.
  for (auto& c : connections_) {
    while (!c->closed) {
      pollfd fd{c->fd, POLLIN, 0};
      if (poll(&fd, 1, 0) <= 0) break;
      read_from(*c);
    }
    end(*c, "the collector stopped");
  }
}

}  // namespace

int listen_main(int argc, char** argv) {
  Args args;
  if (!parse_args("listen", argc, argv, {"--stay"}, {"--port", "--address", "--dir", "--wait", "-c"}, &args)) {
    return kExitBadInput;
  }
  if (args.help) {
    std::fputs(kListenUsage, stdout);
    return kExitOk;
  }
  uint64_t port = 0;
  if (!parse_count(args.value("--port", "0"), &port) || port > 65535) return fail("listen", "--port takes 0 to 65535");
  uint64_t wait_for = 0;
  if (!parse_count(args.value("--wait", "0"), &wait_for)) return fail("listen", "--wait takes a count");
  std::string dir(args.value("--dir", "."));
  struct stat st{};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return fail("listen", "%s is not a directory", dir.c_str());
  if (!args.operands.empty()) return fail("listen", "no operands (commands go with -c)");
  // A file size limit then fails a write (EFBIG), which cuts that one file back, instead of
  // killing the collector and every other agent's stream with it.
  std::signal(SIGXFSZ, SIG_IGN);
  Collector collector(dir);
  std::vector<std::string_view> addresses = args.values("--address");
  if (addresses.empty()) addresses = {"127.0.0.1", "::1"};
  bool any = false;
  for (std::string_view address : addresses) any = collector.listen_on(std::string(address), static_cast<int>(port)) || any;
  if (!any) return kExitBadInput;
  if (wait_for > 0) collector.run_line("wait " + std::to_string(wait_for));
  for (std::string_view line : args.values("-c")) {
    if (!collector.run_line(std::string(line))) {
      collector.close_all();
      return kExitOk;
    }
  }
  collector.loop(isatty(STDIN_FILENO) != 0, args.has("--stay"), static_cast<int>(wait_for));
  collector.close_all();
  return kExitOk;
}

}  // namespace fasthprof::cli
