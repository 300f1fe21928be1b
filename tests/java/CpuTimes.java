import java.nio.file.Files;
import java.nio.file.Path;

// cpu=times and cpu=old (tests/integration/cpu_times.py): known call graphs whose counts the test
// knows exactly, and whose times the program measures itself with System.nanoTime (a native, so
// never instrumented) for the test to compare with the profile.
public class CpuTimes {
    static volatile long sink;

    // ---- graph: a() calls b() exactly 1000 times, b() sleeps 1 ms.
    static long bNanos;

    static void b() throws InterruptedException {
        Thread.sleep(1);
    }

    static void a() throws InterruptedException {
        for (int i = 0; i < 1000; i++) {
            long start = System.nanoTime();
            b();
            bNanos += System.nanoTime() - start;
        }
    }

    // ---- small: a method of about 10 microseconds called 100 000 times.
    static void tenMicros() {
        long end = System.nanoTime() + 10_000;
        long x = 0;
        while (System.nanoTime() < end) {
            x++;
        }
        sink = x;
    }

    // ---- recursion
    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    static int deep(int n) {
        return n == 0 ? 0 : 1 + deep(n - 1);
    }

    // ---- exceptions: thrown in c3, through c2 and c1, caught in thrower.
    static void c3() {
        throw new IllegalStateException("through three frames");
    }

    static void c2() {
        c3();
    }

    static void c1() {
        c2();
    }

    static void afterCatch() {
        sink++;
    }

    static void thrower() {
        try {
            c1();
        } catch (IllegalStateException e) {
            afterCatch();
        }
    }

    // ---- a catch in a middle activation of a recursion: recurse(3) -> recurse(2) -> recurse(1) ->
    // recurse(0), which throws; recurse(2) catches and calls recovered(), which sleeps 1 ms. The
    // two activations the exception left have ended there: neither recovered()'s trace nor its
    // time belongs to them.
    static void recovered() throws InterruptedException {
        Thread.sleep(1);
    }

    static void recurse(int n) throws InterruptedException {
        if (n == 0) {
            throw new IllegalStateException("from the innermost activation");
        }
        if (n == 2) {
            try {
                recurse(n - 1);
            } catch (IllegalStateException e) {
                recovered();
            }
            return;
        }
        recurse(n - 1);
    }

    // ---- threads
    static void leaf() {
        sink++;
    }

    static void work() {
        for (int i = 0; i < 1000; i++) {
            leaf();
        }
    }

    static void spin(long untilNanos) {
        long x = 0;
        while (System.nanoTime() < untilNanos) {
            x++;
        }
        sink = x;
    }

    // ---- busy_clock: loop() spins 20 ms, called from nest(k) at nesting depth k = 0..19, so that
    // each call has a trace of its own; the program prints what it measured of each call (inside
    // the call, so that a wait at a safepoint on the way back is not in it).
    static long loop() {
        long start = System.nanoTime();
        spin(start + 20_000_000L);
        return System.nanoTime() - start;
    }

    static long nest(int k) {
        return k > 0 ? nest(k - 1) : loop();
    }

    // Threads that keep both cores busy for the whole run (the ticker must still tick).
    static void saturate(int threads, long millis) {
        long until = System.nanoTime() + millis * 1_000_000L;
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> spin(until), "busy-" + i);
            t.setDaemon(true);
            t.start();
        }
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        switch (mode) {
            case "graph": {
                if (args.length > 1) {
                    saturate(Integer.parseInt(args[1]), 60_000);
                }
                a();
                System.out.println("CpuTimes b_ms=" + bNanos / 1_000_000);
                break;
            }
            case "small": {
                long total = 0;
                for (int i = 0; i < 100_000; i++) {
                    long start = System.nanoTime();
                    tenMicros();
                    total += System.nanoTime() - start;
                }
                System.out.println("CpuTimes small_ms=" + total / 1_000_000);
                break;
            }
            case "recursion":
                System.out.println("CpuTimes fib=" + fib(20) + " deep=" + deep(5000));
                break;
            case "busy_clock": {
                // 1 s: the 20 calls take about 0.4 s; the spinning ends before the report is written.
                saturate(Integer.parseInt(args[1]), 1_000);
                StringBuilder line = new StringBuilder("CpuTimes loop_us=");
                for (int k = 0; k < 20; k++) {
                    line.append(k == 0 ? "" : ",").append(nest(k) / 1000);
                }
                System.out.println(line);
                break;
            }
            case "heap_full": {
                // The heap filled up to its last megabyte, then a deep recursion: the tracker's
                // traces find no room. The program lets its arrays go and ends normally.
                java.util.ArrayList<long[]> held = new java.util.ArrayList<>(100_000);
                try {
                    while (true) {
                        held.add(new long[128 * 1024]);
                    }
                } catch (OutOfMemoryError e) {
                    held.remove(held.size() - 1);
                }
                int depth = deep(3000);
                held.clear();
                System.out.println("CpuTimes heap_full deep=" + depth + " fib=" + fib(15));
                break;
            }
            case "exceptions":
                for (int i = 0; i < 100; i++) {
                    thrower();
                }
                for (int i = 0; i < 100; i++) {
                    recurse(3);
                }
                System.out.println("CpuTimes exceptions done");
                break;
            case "threads": {
                Thread[] threads = new Thread[8];
                for (int i = 0; i < 8; i++) {
                    threads[i] = new Thread(CpuTimes::work, "worker-" + i);
                    threads[i].start();
                }
                for (Thread t : threads) {
                    t.join();
                }
                System.out.println("CpuTimes threads done");
                break;
            }
            case "attach": {
                // Waits (in a loop already running when the agent comes) for the file `go`, then
                // makes 500 calls of b() through a().
                System.out.println("CpuTimes waiting");
                Path go = Path.of(args[1]);
                while (!Files.exists(go)) {
                    Thread.sleep(20);
                }
                for (int i = 0; i < 500; i++) {
                    leafFromAttach();
                }
                System.out.println("CpuTimes attach done");
                break;
            }
            default:
                throw new IllegalArgumentException(mode);
        }
    }

    static void leafFromAttach() {
        leaf();
    }
}
