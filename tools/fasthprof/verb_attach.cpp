// fasthprof attach: loads the agent into a running JVM through HotSpot's attach socket (the "load"
// operation `jcmd <pid> JVMTI.agent_load` sends), with the options checked here first, so that a
// mistake is said on the caller's side rather than on the target's stderr; with --duration, asks the
// target for its reports (kill -QUIT) after that long and waits for the file.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "base/clock.h"
#include "options/options.h"
#include "verbs.h"
#include "vm_dump/hotspot_attach.h"

namespace fasthprof::cli {

const char kAttachUsage[] =
    "usage: fasthprof attach [--agent PATH] [--duration SECONDS] [--timeout SECONDS]\n"
    "                        PID [OPTIONS]\n"
    "Loads the fasthprof agent into the running JVM PID (of the same user), as\n"
    "  jcmd PID JVMTI.agent_load <agent> OPTIONS\n"
    "would, after checking OPTIONS here (the agent's option string, e.g.\n"
    "heap=sites,file=/tmp/s.txt; several operands are joined with commas; `help`\n"
    "prints the agent's options). What the JVM answers is printed; a refusal exits 1\n"
    "with the reason.\n"
    "  --agent PATH   the agent library (default: $FASTHPROF_AGENT, else the build\n"
    "                 tree's ../agent/libfasthprof.so, else where it was installed\n"
    "                 with this command,\n"
    "                 " FASTHPROF_AGENT_INSTALLED ",\n"
    "                 else libfasthprof.so in ../lib, ../lib/<multiarch> or\n"
    "                 ../lib/fasthprof)\n"
    "  --duration S   then, S seconds later, ask the JVM for the agent's reports\n"
    "                 (kill -QUIT, as the original HPROF took them) and wait for the\n"
    "                 output file to be written. The agent cannot be unloaded: it\n"
    "                 goes on profiling until the JVM ends, and the next kill -QUIT\n"
    "                 (or the JVM's exit) appends the next reports to the same file.\n"
    "  --timeout S    how long to wait for the JVM's attach listener and for the file\n"
    "                 (default 30)\n"
    "A JVM started with -XX:+DisableAttachMechanism cannot be attached; one started\n"
    "with -Xrs only when its attach listener runs already (-XX:+StartAttachListener).\n"
    "Exit status: 0 loaded (and, with --duration, the file written); 1 the JVM or the\n"
    "agent "
    "refused; 2 bad usage, bad options, no such JVM.\n";

namespace {

std::string directory_of_this_program() {
  char path[PATH_MAX];
  ssize_t length = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (length <= 0) return ".";
  std::string exe(path, static_cast<size_t>(length));
  size_t slash = exe.rfind('/');
  return slash == std::string::npos ? "." : exe.substr(0, slash);
}

bool is_file(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The agent library: --agent, $FASTHPROF_AGENT, or beside the installed command. Absolute.
std::string find_agent(std::string_view given) {
  std::vector<std::string> candidates;
  if (!given.empty()) {
    candidates.emplace_back(given);
  } else if (const char* env = std::getenv("FASTHPROF_AGENT"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  } else {
    // The build tree's agent for the build tree's command, then the installed one.
    const std::string here = directory_of_this_program();
    candidates.push_back(here + "/../agent/libfasthprof.so");
    candidates.emplace_back(FASTHPROF_AGENT_INSTALLED);
    for (const char* relative : {"/../lib/", "/../lib/x86_64-linux-gnu/", "/../lib/aarch64-linux-gnu/",
                                 "/../lib/fasthprof/"}) {
      candidates.push_back(here + relative + "libfasthprof.so");
    }
  }
  for (const std::string& candidate : candidates) {
    if (!is_file(candidate)) continue;
    char resolved[PATH_MAX];
    if (::realpath(candidate.c_str(), resolved) != nullptr) return resolved;
  }
  return "";
}

// Whether a library whose file name ends with `name` ("/libjvm.so") is mapped into pid.
bool maps_library(pid_t pid, const char* name) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  const size_t length = std::strlen(name);
  while (std::getline(maps, line)) {
    if (line.size() >= length && line.compare(line.size() - length, length, name) == 0) return true;
  }
  return false;
}

// The output file as the target sees it (relative names are the target's working folder's).
std::string target_path(pid_t pid, const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  return "/proc/" + std::to_string(pid) + "/cwd/" + path;
}

off_t file_size(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

bool parse_seconds(std::string_view text, int* seconds) {
  uint64_t value = 0;
  if (!parse_count(text, &value) || value > 86400) return false;
  *seconds = static_cast<int>(value);
  return true;
}

// After kill -QUIT: waits until the file has grown past `before` and then stays one size for a
// second (the reports are written in one go by the agent's writer thread).
bool wait_for_reports(const std::string& path, off_t before, int timeout_seconds, off_t* size) {
  const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(timeout_seconds) * 1000000000u;
  off_t last = -1;
  uint64_t steady_since = 0;
  while (monotonic_ns() < deadline) {
    off_t now = file_size(path);
    if (now > before && now == last) {
      if (monotonic_ns() - steady_since >= 1000000000u) {
        *size = now;
        return true;
      }
    } else {
      steady_since = monotonic_ns();
    }
    last = now;
    ::usleep(100000);
  }
  *size = last;
  return false;
}

}  // namespace

int attach_main(int argc, char** argv) {
  Args args;
  if (!parse_args("attach", argc, argv, {}, {"--agent", "--duration", "--timeout"}, &args)) return kExitBadInput;
  if (args.help) {
    std::fputs(kAttachUsage, stdout);
    return kExitOk;
  }
  if (args.operands.empty()) return fail("attach", "needs the PID of a JVM (see fasthprof attach --help)");
  std::string options;
  for (size_t i = 1; i < args.operands.size(); ++i) options += (i > 1 ? "," : "") + std::string(args.operands[i]);
  if (options == "help") {
    std::fputs(usage_text().c_str(), stdout);
    return kExitOk;
  }
  uint64_t pid_value = 0;
  if (!parse_count(args.operands[0], &pid_value) || pid_value == 0 || pid_value > INT_MAX) {
    return fail("attach", "%.*s is not a process ID", static_cast<int>(args.operands[0].size()), args.operands[0].data());
  }
  const pid_t pid = static_cast<pid_t>(pid_value);
  int duration = -1;
  int timeout = 30;
  if (args.has("--duration") && !parse_seconds(args.value("--duration"), &duration)) {
    return fail("attach", "--duration takes whole seconds, up to 86400");
  }
  if (args.has("--timeout") && (!parse_seconds(args.value("--timeout"), &timeout) || timeout == 0)) {
    return fail("attach", "--timeout takes whole seconds, 1 to 86400");
  }
  ParseResult parsed = parse_options(options.c_str(), nullptr);
  if (parsed.kind != ParseResult::Kind::kOk) {
    std::string message = format_option_error(parsed);
    while (!message.empty() && message.back() == '\n') message.pop_back();
    return fail("attach", "the agent would refuse these options, nothing was loaded: %s", message.c_str());
  }
  struct stat process{};
  if (::stat(("/proc/" + std::to_string(pid)).c_str(), &process) != 0) return fail("attach", "no process %d", pid);
  if (process.st_uid != ::geteuid()) {
    return fail("attach", "process %d is user %u's: attach as that user (sudo -u '#%u' fasthprof attach ...)", pid,
                process.st_uid, process.st_uid);
  }
  const std::string agent = find_agent(args.value("--agent"));
  if (agent.empty()) {
    return fail("attach", "no agent library found (%s); give it with --agent PATH",
                args.has("--agent") ? "--agent names no file" : "set FASTHPROF_AGENT or install libfasthprof.so");
  }
  // A process without HotSpot must not get the SIGQUIT that starts a listener (it would end it).
  if (!maps_library(pid, "/libjvm.so")) return fail("attach", "process %d is not a Java VM (no libjvm.so in it)", pid);
  if (maps_library(pid, "/libfasthprof.so")) {
    std::fprintf(stderr, "fasthprof attach: the agent is loaded in process %d already (one agent per JVM; its "
                         "reports come with kill -QUIT %d)\n", pid, pid);
    return kExitVerdict;
  }
  HotSpotAttach attach(pid);
  std::string error;
  if (!attach.socket_exists() && !attach.start_listener(timeout * 1000, &error)) {
    std::fprintf(stderr, "fasthprof attach: process %d did not open its attach socket: %s (not a JVM, or started "
                         "with -XX:+DisableAttachMechanism or -Xrs?)\n", pid, error.c_str());
    return kExitVerdict;
  }
  AttachReply reply = attach.execute("load", agent, "true", options);
  if (!reply.answered) {
    std::fprintf(stderr, "fasthprof attach: no answer from process %d: %s\n", pid, reply.error.c_str());
    return kExitVerdict;
  }
  if (!reply.text.empty()) std::printf("%s\n", reply.text.c_str());
  // HotSpot answers "return code: N" with Agent_OnAttach's value (0: loaded).
  const bool loaded = reply.status == 0 && (reply.text.empty() || reply.text.find("return code: 0") != std::string::npos);
  if (!loaded) {
    std::fprintf(stderr, "fasthprof attach: process %d did not load the agent (status %d): the agent's reason is "
                         "on the JVM's stderr\n", pid, reply.status);
    return kExitVerdict;
  }
  const std::string output = parsed.options.output_path();
  std::printf("fasthprof attach: the agent is loaded in process %d (%s)%s\n", pid, agent.c_str(),
              output.empty() ? "" : (", writing " + output).c_str());
  if (duration < 0) return kExitOk;
  ::sleep(static_cast<unsigned>(duration));
  const std::string path = output.empty() ? "" : target_path(pid, output);
  const off_t before = path.empty() ? 0 : std::max<off_t>(file_size(path), 0);
  if (::kill(pid, SIGQUIT) != 0) {
    std::fprintf(stderr, "fasthprof attach: cannot ask process %d for the reports: %s\n", pid, std::strerror(errno));
    return kExitVerdict;
  }
  if (path.empty()) {
    std::printf("fasthprof attach: asked process %d for its reports after %d s (sent to the net= peer)\n", pid, duration);
    return kExitOk;
  }
  off_t size = 0;
  if (!wait_for_reports(path, before, timeout, &size)) {
    std::fprintf(stderr, "fasthprof attach: asked process %d for its reports after %d s; %s was not written within %d s\n",
                 pid, duration, output.c_str(), timeout);
    return kExitVerdict;
  }
  std::printf("fasthprof attach: the reports after %d s are in %s (%lld bytes)\n", duration, output.c_str(),
              static_cast<long long>(size));
  return kExitOk;
}

}  // namespace fasthprof::cli
