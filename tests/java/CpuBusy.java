/**
 * N threads that spin for a fixed time, for the cpu=samples benchmark. Usage: CpuBusy threads
 * milliseconds. Prints the work done, so that runs with and without the agent can be compared, and
 * the CPU time the busy threads got.
 */
public class CpuBusy {
    static volatile boolean running = true;
    static volatile long sink;

    static long spin() {
        long x = 3;
        for (int i = 0; i < 10_000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        long millis = args.length > 1 ? Long.parseLong(args[1]) : 3000;
        long[] work = new long[threads * 8];
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int slot = t * 8;
            workers[t] = new Thread(() -> {
                long done = 0;
                long x = 0;
                while (running) {
                    x ^= spin();
                    done++;
                }
                sink = x;
                work[slot] = done;
            }, "busy-" + t);
        }
        long began = System.nanoTime();
        for (Thread w : workers) w.start();
        Thread.sleep(millis);
        // CPU time of the busy threads, for the samples a CPU-time rule can count.
        java.lang.management.ThreadMXBean bean = java.lang.management.ManagementFactory.getThreadMXBean();
        long cpuNanos = 0;
        for (Thread w : workers) cpuNanos += Math.max(0, bean.getThreadCpuTime(w.getId()));
        running = false;
        for (Thread w : workers) w.join();
        long elapsed = System.nanoTime() - began;
        long total = 0;
        for (int t = 0; t < threads; t++) total += work[t * 8];
        System.out.printf("CpuBusy threads=%d run_ms=%.1f work=%d cpu_ms=%.1f%n", threads, elapsed / 1e6, total,
                          cpuNanos / 1e6);
    }
}
