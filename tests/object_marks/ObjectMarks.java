// Writes allocation-site IDs into objects' mark words the way injected code will (by Unsafe, with a
// random identity hash where the mark has none), from the layout the test agent reads from the VM
// (tests/object_marks/object_marks_agent.cpp; nothing about the mark is hard-coded here), keeps a
// known part of the objects and drops the rest, holds some of the kept ones locked in each way a
// mark can be displaced (stack-locked and recursively, waited on, contended), runs young and full
// collections, then asks the agent to collect and walk the heap, and compares the counts per ID
// (and the arrays' summed lengths, read at the layout's length offset) with what it kept: equal,
// or it exits 1. Two threads allocate unmarked objects throughout the walk.
//
//   java --add-exports java.base/jdk.internal.misc=ALL-UNNAMED -agentpath:libobjectmarks.so \
//        ObjectMarks [objects per kind, 20000] [marked objects for the timed walk, 0]
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;

import jdk.internal.misc.Unsafe;

public class ObjectMarks {
    static native long[] layout();
    static native String whyNot();
    static native long[] walk(int maxId);

    static final Unsafe U = Unsafe.getUnsafe();
    static int idShift, idBits, hashShift, lengthOffset;
    static long hashMask, lockMask, unlocked;
    static final Random RANDOM = new Random(17);

    static final int KINDS = 14;          // IDs 1..14: one per kind of object made by make()
    static final int HUGE = 15;          // long arrays of a megabyte (humongous under G1)
    static final int STACK = 16, RECURSIVE = 17, WAITED = 18, CONTENDED = 19, BIG = 20, MAX = 20;
    static final List<String> FAILURES = new ArrayList<>();
    static volatile Object sink;
    static volatile boolean done;

    static class Holder {
        long a;
        Object b;
        int c;
    }

    // Writes id into o's mark, and a random nonzero hash when it has none; returns the hash.
    static long mark(Object o, long id) {
        while (true) {
            long m = U.getLongVolatile(o, 0L);
            if ((m & lockMask) != unlocked) throw new IllegalStateException("a locked mark: " + Long.toHexString(m));
            long n = m & ((1L << idShift) - 1);
            long hash = (n >>> hashShift) & hashMask;
            if (hash == 0) {
                while (hash == 0) hash = RANDOM.nextInt() & hashMask;
                n |= hash << hashShift;
            }
            n |= id << idShift;
            if (U.compareAndSetLong(o, 0L, m, n)) return hash;
        }
    }

    // An object of kind `kind` (1..KINDS); arrays are `length` long.
    static Object make(int kind, int length) {
        switch (kind) {
            case 1: return new Object();
            case 2: return new Holder();
            case 3: return new boolean[length];
            case 4: return new byte[length];
            case 5: return new char[length];
            case 6: return new short[length];
            case 7: return new int[length];
            case 8: return new float[length];
            case 9: return new long[length];
            case 10: return new double[length];
            case 11: return new Object[length];
            case 12: return new String[length];
            case 13: return new int[length][];
            case 14: return new String(new char[] {'m', 'a', 'r', 'k', (char) ('a' + length % 26)});
            default: throw new IllegalArgumentException("kind " + kind);
        }
    }

    static boolean isArray(int kind) {
        return (kind >= 3 && kind <= 13) || kind == HUGE;
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            FAILURES.add(what);
            System.out.println("FAIL: " + what);
        }
    }

    // n young collections of the collector in use (G1 Young Generation, PS Scavenge, Copy), by
    // allocating garbage.
    static void youngCollections(int n) {
        GarbageCollectorMXBean young = null;
        for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) {
            String name = bean.getName();
            if (name.contains("Young") || name.contains("Scavenge") || name.equals("Copy")) young = bean;
        }
        long until = young.getCollectionCount() + n;
        for (long i = 0; young.getCollectionCount() < until && i < 50_000_000L; i++) sink = new byte[1024];
        check(young.getCollectionCount() >= until, n + " young collections (" + young.getName() + ")");
    }

    // Makes and marks the objects of every kind, keeping two in three (in kept, their kinds in
    // keptKinds) and half of those with the top ID (in top). In a method of its own: no local of
    // main's frame keeps a dropped one alive (the interpreter keeps a frame's locals to its end).
    static void makeAll(int perKind, long topId, List<Object> kept, List<Integer> keptKinds, List<Object> top) {
        for (int i = 0; i < perKind; i++) {
            for (int kind = 1; kind <= KINDS; kind++) {
                Object o = make(kind, (i * 7 + kind) % 41);
                mark(o, kind);
                if (i % 3 != 0) {
                    kept.add(o);
                    keptKinds.add(kind);
                }
            }
        }
        for (int i = 0; i < 24; i++) {
            long[] huge = new long[(1 << 17) + i];
            mark(huge, HUGE);
            if (i % 3 != 0) {
                kept.add(huge);
                keptKinds.add(HUGE);
            }
        }
        // The highest ID the layout holds, on a few plain objects.
        for (int i = 0; i < 100; i++) {
            Object o = new Object();
            mark(o, topId);
            if (i % 2 == 0) top.add(o);
        }
        // The hash written is the one Java sees.
        Object hashed = new Holder();
        long hash = mark(hashed, 2);
        kept.add(hashed);
        keptKinds.add(2);
        check(System.identityHashCode(hashed) == (int) hash, "identityHashCode is the hash written ("
                + System.identityHashCode(hashed) + " against " + hash + ")");
    }

    public static void main(String[] args) throws Exception {
        long[] l = layout();
        if (l[0] == 0) {
            System.out.println("ObjectMarks: layout unusable: " + whyNot());
            return;
        }
        idShift = (int) l[1];
        idBits = (int) l[2];
        hashShift = (int) l[3];
        hashMask = l[4];
        lockMask = l[5];
        unlocked = l[6];
        lengthOffset = (int) l[7];
        long topId = (1L << idBits) - 1;
        int perKind = args.length > 0 ? Integer.parseInt(args[0]) : 20000;
        int big = args.length > 1 ? Integer.parseInt(args[1]) : 0;

        long[] expected = new long[MAX + 1];
        long[] lengths = new long[MAX + 1];
        List<Object> kept = new ArrayList<>();
        List<Integer> keptKinds = new ArrayList<>();
        List<Object> top = new ArrayList<>();
        makeAll(perKind, topId, kept, keptKinds, top);

        youngCollections(3);
        System.gc();
        // Some kept ones die in the old generation.
        for (int i = kept.size() - 1; i >= 0; i -= 5) {
            kept.remove(i);
            keptKinds.remove(i);
        }
        youngCollections(2);

        Object[] bigObjects = new Object[big];
        for (int i = 0; i < big; i++) {
            bigObjects[i] = new Object();
            mark(bigObjects[i], BIG);
        }
        expected[BIG] = big;

        // Marked objects held locked through the walk.
        Object stack = new Object(), recursive = new Object(), waited = new Object(), contended = new Object();
        mark(stack, STACK);
        mark(recursive, RECURSIVE);
        mark(waited, WAITED);
        mark(contended, CONTENDED);
        expected[STACK] = expected[RECURSIVE] = expected[WAITED] = expected[CONTENDED] = 1;
        CountDownLatch ready = new CountDownLatch(3);
        Thread holder = new Thread(() -> {
            synchronized (stack) {
                synchronized (recursive) {
                    synchronized (recursive) {
                        ready.countDown();
                        while (!done) LockSupport.park();
                    }
                }
            }
        }, "holder");
        Thread waiter = new Thread(() -> {
            synchronized (waited) {
                ready.countDown();
                while (!done) {
                    try {
                        waited.wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
        }, "waiter");
        Thread owner = new Thread(() -> {
            synchronized (contended) {
                ready.countDown();
                while (!done) LockSupport.park();
            }
        }, "owner");
        Thread blocked = new Thread(() -> {
            synchronized (contended) {
                sink = contended;
            }
        }, "blocked");
        holder.start();
        waiter.start();
        owner.start();
        ready.await();
        blocked.start();
        while (blocked.getState() != Thread.State.BLOCKED) Thread.sleep(1);
        while (waiter.getState() != Thread.State.WAITING) Thread.sleep(1);

        // Threads allocating (unmarked objects) through the walk: TLABs left part filled.
        Thread[] churn = new Thread[2];
        for (int t = 0; t < churn.length; t++) {
            churn[t] = new Thread(() -> {
                Object[] ring = new Object[4096];
                for (int i = 0; !done; i++) ring[i & 4095] = (i & 1) == 0 ? new Holder() : new int[i & 63];
                sink = ring;
            }, "churn-" + t);
            churn[t].start();
        }

        for (int i = 0; i < kept.size(); i++) {
            int kind = keptKinds.get(i);
            expected[kind]++;
            if (isArray(kind)) lengths[kind] += java.lang.reflect.Array.getLength(kept.get(i));
        }
        long[] walked = walk(MAX);

        done = true;
        LockSupport.unpark(holder);
        LockSupport.unpark(owner);
        synchronized (waited) {
            waited.notifyAll();
        }
        holder.join();
        waiter.join();
        owner.join();
        blocked.join();
        for (Thread t : churn) t.join();

        if (walked == null) {
            check(false, "the agent walked the heap");
        } else {
            long overMax = walked[2 * (MAX + 1)], objects = walked[2 * (MAX + 1) + 1];
            long marked = walked[2 * (MAX + 1) + 2], unreadable = walked[2 * (MAX + 1) + 3];
            long walkNs = walked[2 * (MAX + 1) + 4];
            long stackLocked = walked[2 * (MAX + 1) + 6], inflated = walked[2 * (MAX + 1) + 7];
            // stack and recursive on the holder's stack (inflated too with -XX:LockingMode=0);
            // waited and contended inflated.
            check(stackLocked + inflated == 4 && inflated >= 2, stackLocked + " marked objects stack-locked and "
                    + inflated + " inflated: 4 held locked, 2 of them inflated");
            long total = overMax;
            for (int id = 1; id <= MAX; id++) {
                total += walked[id];
                check(walked[id] == expected[id], "ID " + id + ": " + walked[id] + " objects walked, " + expected[id] + " kept");
                if (isArray(id)) {
                    long sum = walked[MAX + 1 + id];
                    check(sum == lengths[id], "ID " + id + ": lengths sum to " + sum + ", kept " + lengths[id]);
                }
            }
            check(overMax == top.size(), "the top ID " + topId + ": " + overMax + " objects walked, " + top.size() + " kept");
            check(unreadable == 0, unreadable + " objects' marks unreadable");
            check(marked == total, "marked " + marked + " = the counts' sum " + total);
            System.out.printf("ObjectMarks: %d objects walked, %d marked, %d unreadable, walk %.1f ms (%.1f ns an object)%n",
                    objects, marked, unreadable, walkNs / 1e6, objects == 0 ? 0.0 : (double) walkNs / objects);
        }
        sink = kept;
        sink = top;
        sink = bigObjects;
        System.out.println(FAILURES.isEmpty() ? "ObjectMarks: OK" : "ObjectMarks: " + FAILURES.size() + " failure(s)");
        System.exit(FAILURES.isEmpty() ? 0 : 1);
    }
}
