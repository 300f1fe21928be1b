import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

/**
 * Allocates known numbers of objects from the very first line of main, for the tests that
 * heap=sites counts every allocation from the start, and after an attach (tests/integration/
 * alloc_exact.py). Every object escapes into a static array; lines marked "SITE:" are found by the
 * test from this source.
 *
 *   (no arguments)  4000 byte[16] at the first line of main, 2000 Early through makeEarly(),
 *                   1000 long[2] of which 500 are dropped, then exit
 *   attach GO       the same, then main and a worker allocate 8 MiB of garbage each and main
 *                   prints "ready". Once the file GO exists: main allocates 3000 byte[24] and the
 *                   worker 2000 int[3] at once; each allocates 8 MiB of garbage again, then 2000
 *                   (main) and 1000 (worker) Late through makeLate(); a thread started after GO
 *                   allocates 500 Late; then exit
 */
public class AllocEarly {
    static final class Early {
        final int value;
        Early(int value) { this.value = value; }
    }

    static final class Late {
        final long value;
        Late(long value) { this.value = value; }
    }

    static final Object[] kept = new Object[16_000];
    static final Object[] attached = new Object[10_000];

    static void makeEarly(int from, int count) {
        for (int i = 0; i < count; i++) {
            kept[from + i] = new Early(i); // SITE:early
        }
    }

    static void makeDropped(int from, int count) {
        for (int i = 0; i < count; i++) {
            kept[from + i] = new long[2]; // SITE:dropped
        }
        for (int i = 0; i < count; i += 2) kept[from + i] = null;
    }

    static void awaitFile(Path go) throws InterruptedException {
        while (!Files.exists(go)) Thread.sleep(20);
    }

    static void makeLate(int from, int count) {
        for (int i = 0; i < count; i++) {
            attached[from + i] = new Late(i); // SITE:late
        }
    }

    static final Object[] ring = new Object[4096];

    // Small objects that all escape, so that the JIT cannot remove them: they fill TLABs and carry
    // the thread past the sampling point the JVM drew for it when it started.
    static void churn(int mebibytes) {
        for (int i = 0; i < mebibytes * 16384; i++) ring[i & 4095] = new byte[48];
    }

    static void worker(Path go) {
        try {
            awaitFile(go);
        } catch (InterruptedException e) {
            return;
        }
        for (int i = 0; i < 2000; i++) attached[8000 + i] = new int[3]; // SITE:workerNow
        churn(8);
        makeLate(5000, 1000); // SITE:lateWorker
    }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 4000; i++) kept[i] = new byte[16]; // SITE:first
        makeEarly(4000, 2000);
        makeDropped(6000, 1000);
        if (args.length < 2 || !args[0].equals("attach")) {
            System.out.println("AllocEarly done");
            return;
        }
        Path go = Path.of(args[1]);
        CountDownLatch churned = new CountDownLatch(1);
        Thread worker = new Thread(() -> {
            churn(8);
            churned.countDown();
            worker(go);
        }, "early-worker");
        worker.start();
        churn(8);
        churned.await();
        System.out.println("AllocEarly ready");
        System.out.flush();
        awaitFile(go);
        for (int i = 0; i < 3000; i++) attached[i] = new byte[24]; // SITE:attached
        churn(8);
        makeLate(3000, 2000); // SITE:lateMain
        Thread fresh = new Thread(() -> makeLate(6000, 500), "late-thread"); // SITE:lateFresh
        fresh.start();
        fresh.join();
        worker.join();
        System.out.println("AllocEarly done attach");
    }
}
