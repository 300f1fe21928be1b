import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * The program of the chaos test (tests/integration/chaos.py): known allocations first, then
 * allocating threads and thread churn for a while, during which the test sends kill -QUIT, fills
 * the disk and misbehaves as a net= peer. It prints the counts it knows:
 *
 *   known Chaos$Fixed alloc=N live=M      before "ready": exact in every report after it
 *   known Chaos$Churned alloc=N live=N    at the end: exact in the exit report
 *   chaos done                            the last line, once every thread has ended
 *
 * Usage: Chaos <seconds> <seed>
 */
public class Chaos {
    static final class Fixed {
        final int value;
        Fixed(int value) { this.value = value; }
    }

    static final class Churned {
        final long value;
        Churned(long value) { this.value = value; }
    }

    static final class Garbage {
        final byte[] payload;
        Garbage(int size) { payload = new byte[size]; }
    }

    static final int FIXED_ALLOCATED = 6000;
    static final int FIXED_KEPT = 2500;
    static final int CHURN_PER_THREAD = 40;
    static final int MAX_CHURN_THREADS = 5000;

    static Object[] fixed = new Object[FIXED_ALLOCATED];
    static Object[] churned = new Object[CHURN_PER_THREAD * MAX_CHURN_THREADS];
    static volatile Object sink;

    static void allocateFixed() {
        for (int i = 0; i < FIXED_ALLOCATED; i++) {
            fixed[i] = new Fixed(i);
        }
        for (int i = FIXED_KEPT; i < FIXED_ALLOCATED; i++) fixed[i] = null;
    }

    static void churn(int index) {
        for (int i = 0; i < CHURN_PER_THREAD; i++) {
            churned[index * CHURN_PER_THREAD + i] = new Churned(i);
        }
    }

    public static void main(String[] args) throws Exception {
        long seconds = Long.parseLong(args[0]);
        long seed = Long.parseLong(args[1]);
        allocateFixed();
        System.gc();
        System.out.println("known Chaos$Fixed alloc=" + FIXED_ALLOCATED + " live=" + FIXED_KEPT);
        System.out.println("ready");
        System.out.flush();

        long end = System.nanoTime() + seconds * 1_000_000_000L;
        List<Thread> workers = new ArrayList<>();
        for (int w = 0; w < 3; w++) {
            final Random random = new Random(seed + w);
            Thread worker = new Thread(() -> {
                List<Object> window = new ArrayList<>();
                while (System.nanoTime() < end) {
                    window.add(new Garbage(16 + random.nextInt(4096)));
                    if (window.size() > 2000) window.subList(0, 1000).clear();
                    sink = new int[random.nextInt(64)];
                }
            }, "chaos-worker-" + w);
            worker.start();
            workers.add(worker);
        }
        Random random = new Random(seed);
        int threads = 0;
        while (System.nanoTime() < end && threads < MAX_CHURN_THREADS) {
            final int index = threads++;
            Thread t = new Thread(() -> churn(index), "chaos-churn-" + index);
            t.start();
            if (random.nextInt(4) == 0) t.join();
            Thread.sleep(random.nextInt(3));
        }
        for (Thread worker : workers) worker.join();
        // Every churn thread has ended once it is no longer alive; wait for the last ones.
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("chaos-churn-")) t.join();
        }
        int churnedObjects = threads * CHURN_PER_THREAD;
        System.out.println("known Chaos$Churned alloc=" + churnedObjects + " live=" + churnedObjects);
        System.out.println("chaos done");
    }
}
