// Which thread owns the profile right now (docs/ARCHITECTURE.md): the thread that makes the agent
// live (VMInit's, or the attach thread) until it starts the writer thread, then the writer thread
// until VM death. The owner alone calls the ProfileWriter, the registries behind it, the class
// tracker's registration and the sink; any other thread hands its events to the owner through a
// queue. A thread learns here whether it is the owner, so that an event that happens on the owner
// itself (a class prepared by a report's own Java call) is applied at once instead of queued.
#pragma once

namespace fasthprof {

class ProfileOwner {
 public:
  // Marks the calling thread as the owner for the scope's lifetime.
  class Scope {
   public:
    Scope() : previous_(owner_here) { owner_here = true; }
    ~Scope() { owner_here = previous_; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    bool previous_;
  };

  static bool is_current_thread() { return owner_here; }

 private:
  static inline thread_local bool owner_here = false;
};

}  // namespace fasthprof
