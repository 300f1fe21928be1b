/**
 * alloc=inject at depth > 1 with virtual threads (tests/integration/alloc_inject.py deep_virtual):
 * N virtual threads in batches, each sleeping 1 ms unmounted, then allocating 100 int[4] through
 * two frames of its own. Thousands of threads making their first allocation while others unmount
 * is what deadlocked the tracker's monitor with the JDK's VirtualThread-unblocker.
 */
public class VirtualAllocs {
    static final Object[] kept = new Object[1 << 20];

    static void make(int index) {
        for (int i = 0; i < 100; i++) {
            kept[(index * 100 + i) & (kept.length - 1)] = new int[4]; // SITE:make
        }
    }

    static void mid(int index) {
        make(index); // SITE:mid
    }

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        int batch = Integer.parseInt(args[1]);
        for (int from = 0; from < threads; from += batch) {
            Thread[] started = new Thread[Math.min(batch, threads - from)];
            for (int t = 0; t < started.length; t++) {
                final int index = from + t;
                started[t] = Thread.ofVirtual().start(() -> {
                    try {
                        Thread.sleep(1);
                    } catch (InterruptedException e) {
                        return;
                    }
                    mid(index); // SITE:lambda
                });
            }
            for (Thread thread : started) thread.join();
        }
        System.out.println("VirtualAllocs done " + threads);
    }
}
