// A client of HotSpot's attach mechanism: from inside the VM it talks to, how the agent asks the
// JVM's own heap dumper for a dump (agent/heap/vm_heap_dump.h); from another process of the same
// user, how `fasthprof attach` loads the agent (tools/fasthprof/verb_attach.cpp). Plain system
// calls, no JNI.
//
// The protocol (HotSpot on Linux): the "Attach Listener" thread serves the Unix socket
// /tmp/.java_pid<pid>. It is started lazily: by a SIGQUIT that finds the file .attach_pid<pid> (in
// the process's working folder, else /tmp) owned by the VM's user; -Xrs and
// -XX:+StartAttachListener start it with the VM, -XX:+DisableAttachMechanism never. A request is
// "1\0<command>\0<arg0>\0<arg1>\0<arg2>\0"; the reply is a status line ("0" when the command ran)
// and the command's output, then the listener closes the connection.
#pragma once

#include <sys/types.h>

#include <string>

namespace fasthprof {

struct AttachReply {
  bool answered = false;  // a status line came back
  int status = -1;        // its value: 0 when the command was run
  std::string text;       // the command's output after the status line
  std::string error;      // why there is no answer (connect, write, read), empty otherwise
};

class HotSpotAttach {
 public:
  explicit HotSpotAttach(pid_t pid);

  // Where the listener's socket is.
  const std::string& socket_path() const { return socket_path_; }

  // Whether the socket is there now and is the VM's user's (a listener was started, by us or anyone).
  bool socket_exists() const;

  // Starts the listener: creates /tmp/.attach_pid<pid> (0600, removed again before returning),
  // sends SIGQUIT to the target and waits up to timeout_ms for the socket. Call only when attach
  // is enabled and signals are not reduced (-Xrs): otherwise the signal prints a thread dump or ends
  // the VM. A SIGQUIT the user sends while the trigger exists is taken by the JVM as part of this
  // start (docs/heap-dumps.md "How the JVM's dumper is asked" says so). Returns false with
  // *error set when the socket did not appear, or at once when another user's file is at the
  // trigger's name (the JVM ignores it).
  bool start_listener(int timeout_ms, std::string* error);

  // Sends "jcmd <command line>" and waits for the whole reply (the command has finished then).
  // Blocks in read(): call on a thread that the VM does not wait for. A socket that a process other
  // than the target listens on is refused before anything is sent (reply.error says so).
  AttachReply jcmd(const std::string& command_line) const { return execute("jcmd", command_line); }

  // Any attach operation with up to three arguments ("load", path, "true", options loads an agent),
  // as jcmd() does.
  AttachReply execute(const std::string& command, const std::string& arg0 = "", const std::string& arg1 = "",
                      const std::string& arg2 = "") const;

 private:
  pid_t pid_;
  std::string socket_path_;
  std::string trigger_path_;
};

}  // namespace fasthprof
