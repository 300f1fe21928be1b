import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Allocates known numbers of objects from the very first line of main, for the tests that
 * heap=sites counts every allocation from the start (tests/integration/alloc_exact.py). Every
 * object escapes into a static array; lines marked "SITE:" are found by the test from this source.
 *
 *   (no arguments)  4000 byte[16] at the first line of main, 2000 Early through makeEarly(),
 *                   1000 long[2] of which 500 are dropped, then exit
 *   attach GO       the same, then start a worker and print "ready"; once the file GO exists the
 *                   main thread allocates 3000 byte[24] and the worker 2000 Late, then exit
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
    static final Object[] attached = new Object[8_000];

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

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 4000; i++) kept[i] = new byte[16]; // SITE:first
        makeEarly(4000, 2000);
        makeDropped(6000, 1000);
        if (args.length < 2 || !args[0].equals("attach")) {
            System.out.println("AllocEarly done");
            return;
        }
        Path go = Path.of(args[1]);
        Thread worker = new Thread(() -> {
            try {
                awaitFile(go);
            } catch (InterruptedException e) {
                return;
            }
            makeLate(3000, 2000);
        }, "late-worker");
        worker.start();
        System.out.println("AllocEarly ready");
        System.out.flush();
        awaitFile(go);
        for (int i = 0; i < 3000; i++) attached[i] = new byte[24]; // SITE:attached
        worker.join();
        System.out.println("AllocEarly done attach");
    }
}
