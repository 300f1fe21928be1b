import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;

/**
 * The program bench/fork_dump_bench.py dumps: a heap of small objects (and, for the large-heap
 * variant, MiB-sized long[] blocks written end to end so that every page is resident), then a probe
 * thread and a light allocator, so that the program runs on while it is dumped.
 *
 * Usage: DumpPauseHeap <objects> <fill MiB> [allocating threads, default 1]
 *
 * stdout: "ready <objects> <fill MiB>" once the heap is built (after a System.gc()), then one reply
 * per command line read on stdin:
 *   reset  -> "reset-ok": the probe forgets its longest gap
 *   probe  -> "probe <longest gap ns> <end of that gap, System.nanoTime> <wake-ups>" since the reset,
 *             the gap still open (since the probe's last wake-up) included
 *   (end of input) -> exit 0
 * A kill -QUIT's thread dump also lands on stdout: the script looks for its replies by their first word.
 *
 * The probe sleeps 1 ms at a time and keeps the longest time between two wake-ups: whatever held the
 * program (a safepoint, a stop of every thread, the machine's scheduler) shows there as the
 * application sees it. The allocator makes a few hundred short-lived objects per millisecond (about
 * 5 MB/s): the program keeps running, not so much that a young collection is likely inside a dump.
 */
public class DumpPauseHeap {
    /** One record: with its String, the String's byte[], a boxed Integer, an Object[3] and a long[2], 6 objects. */
    static final class Entry {
        int key;
        long seen;
        String label;
        Integer boxed;
        Entry prior;
        Object[] links;
        long[] counters;
    }

    static final List<Entry[]> entries = new ArrayList<>();
    static final List<long[]> blocks = new ArrayList<>();

    static final Object probeLock = new Object();
    static long longestGap;
    static long longestGapEnd;
    static long lastWake;
    static long wakeups;

    static void build(long objects, long fillMiB) {
        long count = objects / 6;
        Entry[] page = new Entry[8192];
        int filled = 0;
        Entry prior = null;
        for (long i = 0; i < count; i++) {
            Entry e = new Entry();
            e.key = (int) i;
            e.seen = i ^ 0x5DEECE66DL;
            e.label = "e" + Long.toHexString(i);
            e.boxed = Integer.valueOf(1000 + (int) i);
            e.prior = (i % 100 == 0) ? null : prior;
            e.links = new Object[] {e.label, prior, null};
            e.counters = new long[] {i, -i};
            if (prior != null) prior.links[2] = e;
            prior = e;
            page[filled++] = e;
            if (filled == page.length) {
                entries.add(page);
                page = new Entry[8192];
                filled = 0;
            }
        }
        entries.add(page);
        for (long m = 0; m < fillMiB; m++) {
            long[] block = new long[1 << 17];  // 1 MiB
            for (int j = 0; j < block.length; j++) block[j] = m * 131072 + j + 1;
            blocks.add(block);
        }
    }

    static void probe() {
        long last = System.nanoTime();
        for (;;) {
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            long gap = now - last;
            synchronized (probeLock) {
                wakeups++;
                lastWake = now;
                if (gap > longestGap) {
                    longestGap = gap;
                    longestGapEnd = now;
                }
            }
            last = now;
        }
    }

    static void allocate() {
        Object[] ring = new Object[1 << 14];
        int next = 0;
        for (;;) {
            for (int k = 0; k < 100; k++) {
                ring[next++ & (ring.length - 1)] = new long[4];
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    static void daemon(Runnable body, String name) {
        Thread thread = new Thread(body, name);
        thread.setDaemon(true);
        thread.start();
    }

    public static void main(String[] args) throws Exception {
        long objects = Long.parseLong(args[0]);
        long fillMiB = Long.parseLong(args[1]);
        int allocators = args.length > 2 ? Integer.parseInt(args[2]) : 1;
        build(objects, fillMiB);
        System.gc();
        daemon(DumpPauseHeap::probe, "probe");
        for (int i = 0; i < allocators; i++) daemon(DumpPauseHeap::allocate, "allocator-" + i);
        System.out.println("ready " + (objects / 6) * 6 + " " + fillMiB);
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String reply;
            synchronized (probeLock) {
                if (line.equals("reset")) {
                    longestGap = 0;
                    longestGapEnd = 0;
                    wakeups = 0;
                    reply = "reset-ok";
                } else if (line.equals("probe")) {
                    // A stop that has just ended may not have let the probe run yet: the gap still open counts.
                    long now = System.nanoTime();
                    long open = lastWake != 0 ? now - lastWake : 0;
                    reply = open > longestGap ? "probe " + open + " " + now + " " + wakeups
                                              : "probe " + longestGap + " " + longestGapEnd + " " + wakeups;
                } else {
                    reply = "unknown " + line;
                }
            }
            System.out.println(reply);
            System.out.flush();
        }
        System.exit(0);
    }
}
