import java.util.ArrayList;
import java.util.List;

// monitor=y with virtual threads (tests/integration/monitor.py, JDK 21+): `threads` virtual threads
// contend for one lock (held 5 ms each time, `rounds` times each) and wait on it with
// Object.wait(10) between rounds; prints the contention it measured and "done".
public class MonitorVirtual {
  static final class Shared {}

  public static void main(String[] args) throws Exception {
    int threadCount = Integer.parseInt(args[0]);
    int rounds = Integer.parseInt(args[1]);
    Shared shared = new Shared();
    long[] contended = new long[threadCount];
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < threadCount; t++) {
      int index = t;
      threads.add(Thread.ofVirtual().name("virtual-" + t).start(() -> {
        try {
          for (int r = 0; r < rounds; r++) {
            long before = System.nanoTime();
            synchronized (shared) {
              contended[index] += System.nanoTime() - before;
              Thread.sleep(5);
              shared.wait(10);
            }
          }
        } catch (InterruptedException e) {
          throw new RuntimeException(e);
        }
      }));
    }
    for (Thread thread : threads) thread.join();
    long total = 0;
    for (long nanos : contended) total += nanos;
    System.out.println("contended_ms=" + total / 1_000_000);
    System.out.println("done");
  }
}
