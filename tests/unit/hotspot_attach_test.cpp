// HotSpotAttach (runtime/vm_dump/hotspot_attach.h) against what another user or process can put at the
// attach names in /tmp: a socket that this process listens on is asked; one another process
// listens on hears nothing; another user's socket is not taken for the JVM's; another user's
// trigger file fails the listener's start at once.
#include "vm_dump/hotspot_attach.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace fasthprof {
namespace {

// The user `nobody` on Debian (only root can give a file away).
constexpr uid_t kOtherUser = 65534;

// A listening socket at /tmp/.java_pid<pid>, removed on destruction.
class Listener {
 public:
  explicit Listener(pid_t pid) : path_("/tmp/.java_pid" + std::to_string(pid)) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    path_.copy(address.sun_path, sizeof address.sun_path - 1);
    unlink(path_.c_str());
    bound_ = bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 && listen(fd_, 4) == 0;
  }
  ~Listener() {
    close(fd_);
    unlink(path_.c_str());
  }
  // Takes one connection and answers it as HotSpot would; returns the request's bytes.
  std::string answer_one() {
    int client = accept(fd_, nullptr, nullptr);
    if (client < 0) return "";
    char buffer[512];
    ssize_t got = read(client, buffer, sizeof buffer);
    const char reply[] = "0\nHeap dump file created\n";
    (void)!send(client, reply, sizeof reply - 1, MSG_NOSIGNAL);  // the client may have gone
    close(client);
    return got > 0 ? std::string(buffer, static_cast<size_t>(got)) : "";
  }
  bool bound() const { return bound_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

TEST(HotSpotAttach, AsksASocketThisProcessListensOn) {
  Listener listener(getpid());
  ASSERT_TRUE(listener.bound());
  HotSpotAttach attach(getpid());
  EXPECT_TRUE(attach.socket_exists());
  std::string request;
  std::thread server([&] { request = listener.answer_one(); });
  AttachReply reply = attach.jcmd("GC.heap_dump -overwrite /x");
  server.join();
  EXPECT_TRUE(reply.answered) << reply.error;
  EXPECT_EQ(0, reply.status);
  EXPECT_NE(std::string::npos, request.find("GC.heap_dump -overwrite /x"));
}

// An operation with three arguments, as `fasthprof attach` sends "load": each part ends with a zero byte.
TEST(HotSpotAttach, SendsAnyOperationWithItsArguments) {
  Listener listener(getpid());
  ASSERT_TRUE(listener.bound());
  HotSpotAttach attach(getpid());
  std::string request;
  std::thread server([&] { request = listener.answer_one(); });
  AttachReply reply = attach.execute("load", "/a/libfasthprof.so", "true", "heap=sites,file=x");
  server.join();
  EXPECT_TRUE(reply.answered) << reply.error;
  EXPECT_EQ(std::string("1\0load\0/a/libfasthprof.so\0true\0heap=sites,file=x\0", 49), request);
  EXPECT_EQ("Heap dump file created", reply.text);
}

// A child process listens at the name of this process's socket (planted there): the client asking
// its own JVM (the agent's case) must not send it the request (it would learn where the dump goes
// and could answer anything). The same holds for any target: only the target may answer.
TEST(HotSpotAttach, RefusesASocketAnotherProcessListensOn) {
  int ready[2];
  ASSERT_EQ(0, pipe(ready));
  const pid_t target = getpid();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Listener listener(target);
    char byte = listener.bound() ? 1 : 0;
    (void)!write(ready[1], &byte, 1);
    std::string request = listener.answer_one();
    _exit(request.empty() ? 0 : 3);  // 3: the request reached it
  }
  char byte = 0;
  ASSERT_EQ(1, read(ready[0], &byte, 1));
  ASSERT_EQ(1, byte);
  HotSpotAttach attach(target);
  AttachReply reply = attach.jcmd("GC.heap_dump -overwrite /x");
  EXPECT_FALSE(reply.answered);
  EXPECT_NE(std::string::npos, reply.error.find("is not process " + std::to_string(target) + "'s")) << reply.error;
  int status = 0;
  ASSERT_EQ(child, waitpid(child, &status, 0));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the request reached the other process: " << status;
  close(ready[0]);
  close(ready[1]);
}

TEST(HotSpotAttach, AnotherUsersSocketIsNotTheJvms) {
  if (geteuid() != 0) GTEST_SKIP() << "only root can make a socket of another user";
  Listener listener(getpid());
  ASSERT_TRUE(listener.bound());
  ASSERT_EQ(0, chown(listener.path().c_str(), kOtherUser, kOtherUser));
  EXPECT_FALSE(HotSpotAttach(getpid()).socket_exists());
}

TEST(HotSpotAttach, AnotherUsersTriggerFailsTheStartAtOnce) {
  if (geteuid() != 0) GTEST_SKIP() << "only root can make a file of another user";
  std::string trigger = "/tmp/.attach_pid" + std::to_string(getpid());
  int fd = open(trigger.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_EQ(0, chown(trigger.c_str(), kOtherUser, kOtherUser));
  std::string error;
  // No signal is sent (this test program would take a SIGQUIT's default action and end).
  EXPECT_FALSE(HotSpotAttach(getpid()).start_listener(2000, &error));
  EXPECT_EQ("a file of another user (65534) is at " + trigger, error);
  struct stat st{};
  EXPECT_EQ(0, lstat(trigger.c_str(), &st)) << "another user's file is left where it is";
  unlink(trigger.c_str());
}

}  // namespace
}  // namespace fasthprof
