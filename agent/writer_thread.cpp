#include "writer_thread.h"

#include "entry_guard.h"
#include "jvmti_support.h"
#include "profile_owner.h"

namespace fasthprof {

bool WriterThread::create(jvmtiEnv* jvmti) {
  jvmti_ = jvmti;
  return jvmti->CreateRawMonitor("fasthprof writer", &lock_) == JVMTI_ERROR_NONE;
}

bool WriterThread::start(JNIEnv* jni, WriterJobs* jobs, int64_t round_ms, std::string* error) {
  jobs_ = jobs;
  round_ms_ = round_ms;
  // Running before the thread exists, so that a report or command posted meanwhile is kept.
  running_ = true;
  if (jvmti::start_agent_thread(jvmti_, jni, "fasthprof writer", &thread_main, this, error)) return true;
  running_ = false;
  return false;
}

void JNICALL WriterThread::thread_main(jvmtiEnv*, JNIEnv* jni, void* arg) {
  auto* self = static_cast<WriterThread*>(arg);
  {
    ProfileOwner::Scope owner;
    guard_entry("the writer thread", kProfilingStopped, [&] { self->loop(jni); },
                [&] { self->jobs_->loop_failed(); });
  }
  self->jvmti_->RawMonitorEnter(self->lock_);
  self->running_ = false;
  self->jvmti_->RawMonitorNotifyAll(self->lock_);
  self->jvmti_->RawMonitorExit(self->lock_);
}

void WriterThread::loop(JNIEnv* jni) {
  bool busy = false;
  for (;;) {
    Work work = next_work(busy);
    jobs_->before_round();
    busy = false;
    switch (work.kind) {
      case Work::Kind::kStop:
        // VM death: the VMDeath thread waits in stop_and_wait() until this returns, so the final
        // report may still walk the heap and take stacks. Requests still queued are covered by it.
        jobs_->report(jni, /*at_exit=*/true);
        return;
      case Work::Kind::kReport:
        jobs_->report(jni, /*at_exit=*/false);
        break;
      case Work::Kind::kCommand:
        jobs_->command(jni, work.command);
        command_done();
        break;
      case Work::Kind::kDrain:
        busy = jobs_->drain(jni) >= kFullBatch;
        break;
    }
  }
}

WriterThread::Work WriterThread::next_work(bool busy) {
  Work work;
  jvmti_->RawMonitorEnter(lock_);
  if (!stop_requested_ && pending_reports_ == 0 && pending_commands_.empty() && !busy) {
    jvmti_->RawMonitorWait(lock_, round_ms_);
  }
  if (stop_requested_) {
    work.kind = Work::Kind::kStop;
  } else if (pending_reports_ > 0) {
    --pending_reports_;
    work.kind = Work::Kind::kReport;
  } else if (!pending_commands_.empty()) {
    work.kind = Work::Kind::kCommand;
    work.command = pending_commands_.front();
    pending_commands_.pop_front();
  }
  jvmti_->RawMonitorExit(lock_);
  return work;
}

void WriterThread::command_done() {
  jvmti_->RawMonitorEnter(lock_);
  ++commands_done_;
  jvmti_->RawMonitorNotifyAll(lock_);
  jvmti_->RawMonitorExit(lock_);
}

void WriterThread::request_report() {
  jvmti_->RawMonitorEnter(lock_);
  ++pending_reports_;
  jvmti_->RawMonitorNotifyAll(lock_);
  jvmti_->RawMonitorExit(lock_);
}

bool WriterThread::queue_command(const NetCommand& command) {
  jvmti_->RawMonitorEnter(lock_);
  while (pending_commands_.size() >= kMaxQueuedCommands && !stop_requested_ && running_) {
    jvmti_->RawMonitorWait(lock_, 100);
  }
  bool open = !stop_requested_ && running_;
  if (open) {
    pending_commands_.push_back(command);
    ++commands_queued_;
    jvmti_->RawMonitorNotifyAll(lock_);
  }
  jvmti_->RawMonitorExit(lock_);
  return open;
}

bool WriterThread::wait_for_queued_commands() {
  jvmti_->RawMonitorEnter(lock_);
  uint64_t before = commands_queued_;
  while (commands_done_ < before && !stop_requested_ && running_) jvmti_->RawMonitorWait(lock_, 100);
  bool dying = stop_requested_;
  jvmti_->RawMonitorExit(lock_);
  return !dying;
}

bool WriterThread::stop_and_wait() {
  jvmti_->RawMonitorEnter(lock_);
  bool started = running_;
  stop_requested_ = true;
  jvmti_->RawMonitorNotifyAll(lock_);
  while (running_) jvmti_->RawMonitorWait(lock_, 100);
  jvmti_->RawMonitorExit(lock_);
  return started;
}

}  // namespace fasthprof
