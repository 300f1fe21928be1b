import java.util.concurrent.CountDownLatch;

// Programs for tests/integration/monitor.py and bench/monitor_bench.py (monitor=y):
//   contend <threads> <rounds> <hold_ms>  threads take one Counter's lock `rounds` times each and hold
//                                         it hold_ms; the program measures its own contention (from
//                                         just before the call of the synchronized method to its
//                                         first statement, summed) and prints "contended_ms=<n>"
//   deadlock                              two threads deadlock (Deadlock$First / Deadlock$Second, the
//                                         first entered twice) and a third waits on a monitor that
//                                         nobody owns; prints the threads' names and "ready", then
//                                         runs until killed
//   waits <count>                         Object.wait(50) `count` times on a Sleeper
//   uncontended <calls>                   one thread, `calls` synchronized calls; prints the time and
//                                         the thread's CPU time
public class MonitorScenes {
  static final class Counter {
    long value;
    long contendedNanos;

    synchronized void hold(long before, long holdMillis) throws InterruptedException {
      contendedNanos += System.nanoTime() - before;  // the first statement inside
      value++;
      Thread.sleep(holdMillis);
    }

    synchronized void bump() {
      value++;
    }
  }

  static final class Deadlock {
    static final class First {}

    static final class Second {}
  }

  static final class Lonely {}

  static final class Sleeper {}

  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "contend" -> contend(Integer.parseInt(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]));
      case "deadlock" -> deadlock();
      case "waits" -> waits(Integer.parseInt(args[1]));
      case "uncontended" -> uncontended(Long.parseLong(args[1]));
      default -> throw new IllegalArgumentException(args[0]);
    }
  }

  static void contend(int threadCount, int rounds, int holdMillis) throws Exception {
    Counter counter = new Counter();
    Thread[] threads = new Thread[threadCount];
    CountDownLatch start = new CountDownLatch(1);
    for (int t = 0; t < threadCount; t++) {
      threads[t] = new Thread(() -> {
        try {
          start.await();
          for (int r = 0; r < rounds; r++) counter.hold(System.nanoTime(), holdMillis);
        } catch (InterruptedException e) {
          throw new RuntimeException(e);
        }
      }, "contender-" + t);
      threads[t].start();
    }
    long began = System.nanoTime();
    start.countDown();
    for (Thread thread : threads) thread.join();
    long wall = System.nanoTime() - began;
    synchronized (counter) {
      System.out.println("contended_ms=" + counter.contendedNanos / 1_000_000 + " wall_ms=" + wall / 1_000_000
          + " value=" + counter.value);
    }
  }

  static void deadlock() throws Exception {
    Object first = new Deadlock.First();
    Object second = new Deadlock.Second();
    Object lonely = new Lonely();
    CountDownLatch bothHold = new CountDownLatch(2);
    Thread a = new Thread(() -> {
      synchronized (first) {
        synchronized (first) {  // entered twice: entry count 2
          bothHold.countDown();
          awaitQuietly(bothHold);
          synchronized (second) {
            System.out.println("never");
          }
        }
      }
    }, "holder-first");
    Thread b = new Thread(() -> {
      synchronized (second) {
        bothHold.countDown();
        awaitQuietly(bothHold);
        synchronized (first) {
          System.out.println("never");
        }
      }
    }, "holder-second");
    Thread w = new Thread(() -> {
      synchronized (lonely) {
        try {
          lonely.wait();
        } catch (InterruptedException e) {
          // ends the thread
        }
      }
    }, "lonely-waiter");
    w.setDaemon(true);
    a.setDaemon(true);
    b.setDaemon(true);
    a.start();
    b.start();
    w.start();
    while (a.getState() != Thread.State.BLOCKED || b.getState() != Thread.State.BLOCKED
        || w.getState() != Thread.State.WAITING) {
      Thread.sleep(10);
    }
    System.out.println("ready");
    System.out.flush();
    Thread.sleep(600_000);
  }

  static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      throw new RuntimeException(e);
    }
  }

  static void waits(int count) throws Exception {
    Sleeper sleeper = new Sleeper();
    long began = System.nanoTime();
    for (int i = 0; i < count; i++) {
      synchronized (sleeper) {
        sleeper.wait(50);
      }
    }
    System.out.println("waited_ms=" + (System.nanoTime() - began) / 1_000_000);
  }

  // Reachable from a static field, so that the JIT cannot drop the lock as it could for an object
  // that never escapes.
  static final Counter UNCONTENDED = new Counter();

  static void uncontended(long calls) {
    Counter counter = UNCONTENDED;
    java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
    long cpuBegan = cpu.getCurrentThreadCpuTime();
    long began = System.nanoTime();
    for (long i = 0; i < calls; i++) counter.bump();
    long wall = System.nanoTime() - began;
    long cpuTime = cpu.getCurrentThreadCpuTime() - cpuBegan;
    // CPU time too: on a shared machine it does not grow while the thread waits for a core.
    System.out.println("uncontended_ms=" + wall / 1_000_000 + " uncontended_cpu_ms=" + cpuTime / 1_000_000
        + " value=" + counter.value);
  }
}
