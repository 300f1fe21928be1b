/*
 * The allocation counter of heap=sites counted by injection (docs/allocation-sites.md "Counted by
 * injection"). The class rewriter puts a call before every allocation instruction; it reaches
 * FasthprofTracker.alloc / allocArray, which count here, per thread, with no JNI and no JVMTI.
 *
 * A site ID is (index << 4) | kind, both chosen by the agent when it rewrote the class:
 *   kind 0        new C: one object; its bytes are the agent's (C's instance size, at the report)
 *   kind 1 .. 4   an array of 1, 2, 4 or 8-byte elements (newarray)
 *   kind 5        an array of references (anewarray, and the outermost array of multianewarray)
 *   kind 6        multianewarray of 4 or more dimensions: the outer length is not known (-1), only
 *                 the object is counted, no bytes
 * so the bytes of an array are computed here from its length (header, elements, alignment: the
 * agent gives the layout it checked against the JVM's own object sizes, start()).
 *
 * Each thread counts into its own arrays (objects and bytes by site index), found by thread ID in
 * an open-addressing table that is replaced whole when it grows. The agent's writer thread takes
 * the counts through collect(): it reads the arrays without a lock and keeps in rep* what it has
 * reported, which only it writes, so no count is lost to a race: a count it misses now it sees at
 * the next collect. A negative length counts nothing (the instruction throws).
 */
package java.lang;

import jdk.internal.misc.Unsafe;

final class FasthprofAllocs {
    private FasthprofAllocs() {}

    private static final Unsafe U = Unsafe.getUnsafe();
    private static final long TID_OFFSET = U.objectFieldOffset(Thread.class, "tid");
    private static final Object LOCK = new Object();

    static final class State {
        final Thread thread;
        final long tid;
        // An agent thread: nothing it allocates is counted.
        boolean off;
        // Written by the thread alone; replaced (bigger) by it, so read through the field.
        volatile long[] objects = new long[64];
        volatile long[] bytes = new long[64];
        // What collect() reported (the writer thread only).
        long[] repObjects = new long[0];
        long[] repBytes = new long[0];

        State(Thread thread, long tid) {
            this.thread = thread;
            this.tid = tid;
        }
    }

    private static volatile boolean engaged;
    // Array layout (start()): the base offset and the shift of the element size per kind, the
    // object alignment minus one.
    private static final int[] BASE = new int[7];
    private static final int[] SHIFT = new int[7];
    private static long alignMask = 7;
    private static int maxThreads = 16384;
    private static volatile State[] table = new State[256];
    private static int liveStates;
    // Threads over the cap count here, under LOCK.
    private static final State SHARED = new State(null, -1);
    private static long sharedCounts;

    // ---- the agent's calls (JNI) ------------------------------------------------------------

    /** Starts counting: the array layout per kind (1..5), the object alignment, the thread cap. */
    static void start(int[] bases, int[] shifts, int alignment, int threadCap) {
        for (int k = 1; k <= 5; k++) {
            BASE[k] = bases[k];
            SHIFT[k] = shifts[k];
        }
        alignMask = alignment - 1;
        maxThreads = threadCap;
        engaged = true;
    }

    /** The current thread is the agent's: its allocations are not counted. */
    static void ignoreCurrentThread() {
        Thread t = Thread.currentThread();
        synchronized (LOCK) {
            long tid = U.getLong(t, TID_OFFSET);
            State s = find(table, tid);
            if (s == null) {
                s = new State(t, tid);
                insert(s);
            }
            s.off = true;
        }
    }

    /** Stops counting (VM death). */
    static void stop() {
        engaged = false;
    }

    /**
     * The counts since the last collect() of every thread: {int[] rows: (thread index, site
     * index) pairs, long[] (objects, bytes) pairs, Thread[] threads (null for the shared state),
     * long[] {states, counts of threads over the cap}}. The states of the threads in `ended` are
     * dropped after their counts are taken.
     */
    static Object[] collect(Thread[] ended) {
        synchronized (LOCK) {
            State[] tab = table;
            int states = 1;
            for (State s : tab) {
                if (s != null) {
                    states++;
                }
            }
            Thread[] threads = new Thread[states];
            int[] keys = new int[64];
            long[] values = new long[64];
            int rows = 0;
            int at = 0;
            for (int i = -1; i < tab.length; i++) {
                State s = i < 0 ? SHARED : tab[i];
                if (s == null) {
                    continue;
                }
                threads[at] = s.thread;
                long[] objects = s.objects;
                long[] bytes = s.bytes;
                int n = objects.length < bytes.length ? objects.length : bytes.length;
                if (s.repObjects.length < n) {
                    s.repObjects = grown(s.repObjects, n);
                    s.repBytes = grown(s.repBytes, n);
                }
                for (int site = 0; site < n; site++) {
                    long o = objects[site];
                    long b = bytes[site];
                    if (o == s.repObjects[site] && b == s.repBytes[site]) {
                        continue;
                    }
                    if (rows * 2 + 2 > keys.length) {
                        int[] k = new int[keys.length * 2];
                        System.arraycopy(keys, 0, k, 0, rows * 2);
                        keys = k;
                        values = grown(values, values.length * 2);
                    }
                    keys[rows * 2] = at;
                    keys[rows * 2 + 1] = site;
                    values[rows * 2] = o - s.repObjects[site];
                    values[rows * 2 + 1] = b - s.repBytes[site];
                    s.repObjects[site] = o;
                    s.repBytes[site] = b;
                    rows++;
                }
                at++;
            }
            if (ended != null) {
                for (Thread t : ended) {
                    if (t != null) {
                        remove(U.getLong(t, TID_OFFSET));
                    }
                }
            }
            int[] outKeys = new int[rows * 2];
            long[] outValues = new long[rows * 2];
            System.arraycopy(keys, 0, outKeys, 0, rows * 2);
            System.arraycopy(values, 0, outValues, 0, rows * 2);
            return new Object[] {outKeys, outValues, threads, new long[] {states - 1, sharedCounts}};
        }
    }

    // ---- the injected calls (through FasthprofTracker) -----------------------------------------

    static void count(int site) {
        if (!engaged) {
            return;
        }
        State s = state();
        if (s == null || s.off) {
            return;
        }
        add(s, site >>> 4, 0);
    }

    static void countArray(int length, int site) {
        if (!engaged || length < 0 && (site & 15) != 6) {
            return;
        }
        State s = state();
        if (s == null || s.off) {
            return;
        }
        int kind = site & 15;
        long size = 0;
        if (kind >= 1 && kind <= 5) {
            size = ((long) BASE[kind] + ((long) length << SHIFT[kind]) + alignMask) & ~alignMask;
        }
        add(s, site >>> 4, size);
    }

    private static void add(State s, int index, long size) {
        if (s == SHARED) {
            synchronized (LOCK) {
                sharedCounts++;
                addTo(s, index, size);
            }
            return;
        }
        addTo(s, index, size);
    }

    private static void addTo(State s, int index, long size) {
        long[] objects = s.objects;
        long[] bytes = s.bytes;
        if (index >= objects.length || index >= bytes.length) {
            int n = objects.length * 2 > index ? objects.length * 2 : index + 1;
            bytes = s.bytes = grown(bytes, n);
            objects = s.objects = grown(objects, n);
        }
        objects[index]++;
        bytes[index] += size;
    }

    // A copy of a at length n (n >= a.length). No java.util: what the tracker calls must not be
    // rewritten code, or its own allocations would be counted, and re-enter it.
    private static long[] grown(long[] a, int n) {
        long[] b = new long[n];
        System.arraycopy(a, 0, b, 0, a.length);
        return b;
    }

    private static State state() {
        Thread t = Thread.currentThread();
        long tid = U.getLong(t, TID_OFFSET);
        State[] tab = table;
        State s = tab[(int) tid & (tab.length - 1)];
        if (s != null && s.tid == tid) {
            return s;
        }
        return slowState(t, tid);
    }

    private static State slowState(Thread t, long tid) {
        if (tid == 0) {
            // A Thread object still being constructed on a thread the JVM attaches: not counted.
            return null;
        }
        State s = find(table, tid);
        if (s != null) {
            return s;
        }
        synchronized (LOCK) {
            s = find(table, tid);
            if (s != null) {
                return s;
            }
            if (liveStates >= maxThreads) {
                return SHARED;
            }
            s = new State(t, tid);
            insert(s);
            return s;
        }
    }

    private static State find(State[] tab, long tid) {
        int mask = tab.length - 1;
        for (int i = (int) tid & mask, n = 0; n <= mask; i = (i + 1) & mask, n++) {
            State s = tab[i];
            if (s == null) {
                return null;
            }
            if (s.tid == tid) {
                return s;
            }
        }
        return null;
    }

    // Under LOCK: a new table with s in it (at most half full).
    private static void insert(State s) {
        State[] tab = table;
        int size = tab.length;
        while ((liveStates + 1) * 2 > size) {
            size *= 2;
        }
        State[] next = new State[size];
        for (State old : tab) {
            if (old != null) {
                place(next, old);
            }
        }
        place(next, s);
        liveStates++;
        table = next;
    }

    // Under LOCK: a new table without the state of tid (its counts were taken).
    private static void remove(long tid) {
        State[] tab = table;
        State[] next = new State[tab.length];
        boolean found = false;
        for (State old : tab) {
            if (old == null) {
                continue;
            }
            if (old.tid == tid) {
                found = true;
                continue;
            }
            place(next, old);
        }
        if (found) {
            liveStates--;
            table = next;
        }
    }

    private static void place(State[] tab, State s) {
        int mask = tab.length - 1;
        int i = (int) s.tid & mask;
        while (tab[i] != null) {
            i = (i + 1) & mask;
        }
        tab[i] = s;
    }
}
