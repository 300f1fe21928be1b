/*
 * The allocation counter of heap=sites counted by injection (docs/allocation-sites.md "Counted by
 * injection"). The class rewriter puts a call before every allocation instruction; it reaches
 * FasthprofTracker.alloc / allocArray, which count here, per thread, with no JNI and no JVMTI.
 *
 * A site ID is (index << 4) | kind, both chosen by the agent when it rewrote the class:
 *   kind 0        new C: one object; its bytes are the agent's (C's instance size, at the report)
 *   kind 1 .. 4   an array of 1, 2, 4 or 8-byte elements (newarray)
 *   kind 5        an array of references (anewarray, and the levels of a multianewarray above its
 *                 innermost)
 * so the bytes of an array are computed here from its length (header, elements, alignment: the
 * agent gives the layout it checked against the JVM's own object sizes, start()). A multianewarray
 * of d >= 2 dimensions makes arrays at d levels, each its own site: the ID given names the
 * innermost level, the levels above it are the d - 1 indexes just before, all of kind 5
 * (levelCounts says how many arrays each level gets, as HotSpot makes them).
 *
 * Each thread counts into its own arrays (objects and bytes by site index), found by thread ID in
 * an open-addressing table that is replaced whole when it grows. The agent's writer thread takes
 * the counts through collect(): it reads the arrays without a lock and keeps in rep* what it has
 * reported, which only it writes, so no count is lost to a race: a count it misses now it sees at
 * the next collect. A negative length counts nothing (the instruction throws).
 *
 * With allocation traces (alloc=inject at depth > 1) an allocation is counted by (the node on top
 * of the thread's shadow stack, FasthprofTracker's, and the site) in a second table of the state;
 * the first time a pair is met its node's frames (methods and the positions they call from) are
 * copied here, so that collect() gives whole traces whatever becomes of the tracker's nodes. An
 * empty shadow stack, or no budget left for the pair, counts under the site alone (one frame).
 *
 * A call of Unsafe.allocateInstance(c) (how the JDK makes the objects of lambdas and other method
 * handle constructors) makes an instance of a class known only when it runs: the agent gives each
 * (call, class) pair a site of its own when first asked (newClassSite, a native), and classSite
 * keeps the answers in a table that collect() drops, so that no class is held here for longer than
 * between two collections (a class loader that goes away is not kept alive).
 */
package java.lang;

import jdk.internal.misc.Unsafe;

final class FasthprofAllocs {
    private FasthprofAllocs() {}

    private static final Unsafe U = Unsafe.getUnsafe();
    private static final long TID_OFFSET = U.objectFieldOffset(Thread.class, "tid");
    // Not a monitor: on JDK 24+ a virtual thread blocked on a monitor unmounts, and the JDK's
    // VirtualThread-unblocker thread, which must schedule it again once it is handed the monitor,
    // itself runs counted code whose first call here needs this lock (seen: a deadlock with 500
    // virtual threads). A spin lock keeps waiters mounted; no section under it blocks.
    private static final FasthprofLock LOCK = new FasthprofLock();

    static final class State {
        final Thread thread;
        final long tid;
        // An agent thread: nothing it allocates is counted.
        boolean off;
        // FasthprofMarks': the thread's hash generator, the objects it could not mark.
        long seed;
        long unmarked;
        // Written by the thread alone; replaced (bigger) by it, so read through the field.
        volatile long[] objects = new long[64];
        volatile long[] bytes = new long[64];
        // What collect() reported (the writer thread only).
        long[] repObjects = new long[0];
        long[] repBytes = new long[0];

        // Traced counts: slot by key (node << 32 | site index), open addressing, 0 free; per slot
        // its site, its frames at tFrames[2 * tAt ...] (method, position pairs, tLength of them).
        // tCount is published last (volatile), after the arrays it covers.
        long[] tKeys = new long[64];
        int[] tSlot = new int[64];
        volatile int tCount;
        int[] tSite = new int[16];
        int[] tAt = new int[16];
        int[] tLength = new int[16];
        int[] tFrames = new int[128];
        int tFrameWords;
        volatile long[] tObjects = new long[16];
        volatile long[] tBytes = new long[16];
        long[] tRepObjects = new long[0];
        long[] tRepBytes = new long[0];

        State(Thread thread, long tid) {
            this.thread = thread;
            this.tid = tid;
        }
    }

    // Counting: started, not paused (net= CONTROL allocation off), not stopped; set under LOCK.
    private static volatile boolean engaged;
    private static boolean paused, stopped;

    // classSite's answers, replaced whole under LOCK (FasthprofClassSites).
    private static volatile FasthprofClassSites classSites = new FasthprofClassSites(64);
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
    private static long endedUnmarked;  // FasthprofMarks' count of the states removed

    // ---- the agent's calls (JNI) ------------------------------------------------------------

    /** Starts counting: the array layout per kind (1..5), the object alignment, the thread cap. */
    static void start(int[] bases, int[] shifts, int alignment, int threadCap) {
        for (int k = 1; k <= 5; k++) {
            BASE[k] = bases[k];
            SHIFT[k] = shifts[k];
        }
        alignMask = alignment - 1;
        maxThreads = threadCap;
        LOCK.lock();
        try {
            engaged = !paused && !stopped;
        } finally {
            LOCK.unlock();
        }
    }

    /** net= CONTROL allocation off (true) and on (false): nothing is counted while paused. */
    static void pause(boolean on) {
        LOCK.lock();
        try {
            paused = on;
            engaged = !paused && !stopped;
        } finally {
            LOCK.unlock();
        }
    }

    /** The current thread is the agent's: its allocations are not counted. */
    static void ignoreCurrentThread() {
        Thread t = Thread.currentThread();
        LOCK.lock();
        try {
            long tid = U.getLong(t, TID_OFFSET);
            State s = find(table, tid);
            if (s == null) {
                s = new State(t, tid);
                insert(s);
            }
            s.off = true;
        } finally {
            LOCK.unlock();
        }
    }

    /** Stops counting (VM death). */
    static void stop() {
        LOCK.lock();
        try {
            stopped = true;
            engaged = false;
        } finally {
            LOCK.unlock();
        }
    }

    /**
     * The counts since the last collect() of every thread: {int[] rows: (thread index, site
     * index) pairs, long[] (objects, bytes) pairs, Thread[] threads (null for the shared state),
     * long[] {states, counts of threads over the cap}}. The states of the threads in `ended` are
     * dropped after their counts are taken.
     */
    static Object[] collect(Thread[] ended) {
        LOCK.lock();
        try {
            classSites = new FasthprofClassSites(64);
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
            Traced traced = new Traced();
            at = 0;
            for (int i = -1; i < tab.length; i++) {
                State s = i < 0 ? SHARED : tab[i];
                if (s != null) {
                    takeTraced(s, at++, traced);
                }
            }
            int[] outKeys = new int[rows * 2];
            long[] outValues = new long[rows * 2];
            System.arraycopy(keys, 0, outKeys, 0, rows * 2);
            System.arraycopy(values, 0, outValues, 0, rows * 2);
            long unmarked = SHARED.unmarked + endedUnmarked;
            for (State s : table) {
                unmarked += s != null ? s.unmarked : 0;
            }
            return new Object[] {outKeys, outValues, threads, new long[] {states - 1, sharedCounts, unmarked},
                                 traced.keys(), traced.values(), traced.frames()};
        } finally {
            LOCK.unlock();
        }
    }

    // collect()'s traced rows: (thread index, site index, frames) triples, (objects, bytes) pairs,
    // (method, position) pairs of every row's frames in turn.
    static final class Traced {
        int[] keys = new int[48];
        long[] values = new long[32];
        int[] frames = new int[128];
        int rows;
        int words;

        // A negative length is a walked row's context (-length): no frames of its own.
        void add(int thread, int site, long objects, long bytes, int[] from, int at, int length) {
            if ((rows + 1) * 3 > keys.length) {
                keys = FasthprofArrays.copy(keys, keys.length * 2);
                values = FasthprofArrays.copy(values, values.length * 2);
            }
            int copied = length > 0 ? length : 0;
            if (words + copied * 2 > frames.length) {
                frames = FasthprofArrays.copy(frames, frames.length * 2 + copied * 2);
            }
            keys[rows * 3] = thread;
            keys[rows * 3 + 1] = site;
            keys[rows * 3 + 2] = length;
            values[rows * 2] = objects;
            values[rows * 2 + 1] = bytes;
            System.arraycopy(from, at * 2, frames, words, copied * 2);
            words += copied * 2;
            rows++;
        }

        int[] keys() {
            return FasthprofArrays.copy(keys, rows * 3);
        }

        long[] values() {
            return FasthprofArrays.copy(values, rows * 2);
        }

        int[] frames() {
            return FasthprofArrays.copy(frames, words);
        }
    }

    // Under LOCK: the traced counts of s that changed since the last collect, as thread `at`'s.
    private static void takeTraced(State s, int at, Traced out) {
        int n = s.tCount;
        long[] objects = s.tObjects;
        long[] bytes = s.tBytes;
        int[] site = s.tSite;
        int[] from = s.tAt;
        int[] length = s.tLength;
        int[] frames = s.tFrames;
        n = min(min(n, objects.length), min(bytes.length, min(site.length, length.length)));
        if (s.tRepObjects.length < n) {
            s.tRepObjects = grown(s.tRepObjects, n);
            s.tRepBytes = grown(s.tRepBytes, n);
        }
        for (int slot = 0; slot < n; slot++) {
            long o = objects[slot];
            long b = bytes[slot];
            if ((o == s.tRepObjects[slot] && b == s.tRepBytes[slot]) || (from[slot] + length[slot]) * 2 > frames.length) {
                continue;
            }
            out.add(at, site[slot], o - s.tRepObjects[slot], b - s.tRepBytes[slot], frames, from[slot], length[slot]);
            s.tRepObjects[slot] = o;
            s.tRepBytes[slot] = b;
        }
    }

    // ---- the injected calls (through FasthprofTracker) -----------------------------------------

    /** An allocation at `site` under t's top node (FasthprofTracker with allocation traces). */
    static void countTraced(FasthprofThreadState t, int site) {
        State s = tracedState(t);
        if (s == null) {
            count(site);
        } else if (!s.off) {
            addTraced(s, t, site >>> 4, 0);
        }
    }

    static void countArrayTraced(FasthprofThreadState t, int length, int site) {
        State s = tracedState(t);
        if (s == null) {
            countArray(length, site);
        } else if (!s.off && length >= 0) {
            addTraced(s, t, site >>> 4, arrayBytes(length, site & 15));
        }
    }

    // Traces by frame walk (depth > 1 without a shadow stack): `context` is what callers() gave
    // the allocating call, 0 when the allocating method has no caller (its one frame is the trace).

    static void countWalked(int context, int site) {
        State s = walkedState(context);
        if (s == null) {
            count(site);
        } else if (!s.off) {
            addKeyed(s, null, context, site >>> 4, 1, 0);
        }
    }

    static void countArrayWalked(int context, int length, int site) {
        State s = walkedState(context);
        if (s == null) {
            countArray(length, site);
        } else if (!s.off && length >= 0) {
            addKeyed(s, null, context, site >>> 4, 1, arrayBytes(length, site & 15));
        }
    }

    static void countMultiWalked(int context, int[] lengths, int site) {
        State s = walkedState(context);
        if (s == null) {
            countMulti(lengths, site);
        } else if (!s.off) {
            addMulti(s, null, context, lengths, site);
        }
    }

    // The calling thread's state when the allocation is counted with its walked context: null when
    // by its site alone (no context, the threads over the cap).
    private static State walkedState(int context) {
        if (!engaged || context <= 0) {
            return null;
        }
        State s = state();
        return s == SHARED ? null : s;
    }

    /** The context of the allocation under way (agent/sites/frame_walk.h); called by the counting method itself. */
    static native int callers();

    /** callers() (0 without traces by frame walk) before a clone FasthprofTracker.allocClone counts: marks its VMObjectAlloc event left out. */
    static native int cloneCallers();

    // t's allocation state when the allocation is counted with a trace: null when it is counted by
    // its site alone (no shadow stack, an empty one, the empty node, the threads over the cap).
    private static State tracedState(FasthprofThreadState t) {
        if (!engaged || t == null || t.off || t.sp <= 0 || t.stNode[t.sp - 1] == 0) {
            return null;
        }
        State s = t.allocs;
        if (s == null) {
            s = state();
            if (s == null || s == SHARED) {
                return null;
            }
            t.allocs = s;
        }
        return s;
    }

    private static void addTraced(State s, FasthprofThreadState t, int index, long size) {
        addTraced(s, t, index, 1, size);
    }

    private static void addTraced(State s, FasthprofThreadState t, int index, long count, long size) {
        addKeyed(s, t, t.stNode[t.sp - 1], index, count, size);
    }

    // Counts under (node, site index): the node of t's shadow stack, or without t a walked
    // context (FasthprofAllocs.callers), whose frames the agent keeps.
    private static void addKeyed(State s, FasthprofThreadState t, int node, int index, long count, long size) {
        long key = ((long) node << 32) | index;
        long[] keys = s.tKeys;
        int mask = keys.length - 1;
        int h = (int) (key ^ (key >>> 32)) * 0x9E3779B1;
        int i = (h ^ (h >>> 16)) & mask;
        int slot;
        while (true) {
            long k = keys[i];
            if (k == key) {
                slot = s.tSlot[i];
                break;
            }
            if (k == 0) {
                slot = t != null ? newSlot(s, t, node, index, key) : claim(s, index, key, 0, -node);
                if (slot < 0) {
                    addTo(s, index, count, size);  // no budget left: the site alone
                    return;
                }
                break;
            }
            i = (i + 1) & mask;
        }
        s.tObjects[slot] += count;
        s.tBytes[slot] += size;
    }

    // A slot for (node, index), its frames copied from the node: -1 when the budget is spent.
    private static int newSlot(State s, FasthprofThreadState t, int node, int index, long key) {
        int length = t.nodeLength[node];
        if (!FasthprofTracker.charge(t, 64 + 8L * length)) {
            return -1;
        }
        int words = s.tFrameWords;
        if (words + length * 2 > s.tFrames.length) {
            s.tFrames = FasthprofArrays.copy(s.tFrames, s.tFrames.length * 2 + length * 2);
        }
        int[] fr = s.tFrames;
        int at = t.nodeAt[node];
        for (int k = 0; k < length; k++) {
            fr[words + 2 * k] = t.frames[at + k];
            fr[words + 2 * k + 1] = t.framePos[at + k];
        }
        s.tFrameWords = words + length * 2;
        return claim(s, index, key, words / 2, length);
    }

    // A new traced slot of s for key: its site index, its frames at tFrames[2 * at] (length pairs;
    // a negative length is a walked context's -ID, no frames), published last.
    private static int claim(State s, int index, long key, int at, int length) {
        int slot = s.tCount;
        if (slot == s.tSite.length) {
            int size = slot * 2;
            s.tSite = FasthprofArrays.copy(s.tSite, size);
            s.tAt = FasthprofArrays.copy(s.tAt, size);
            s.tLength = FasthprofArrays.copy(s.tLength, size);
            s.tBytes = grown(s.tBytes, size);
            s.tObjects = grown(s.tObjects, size);
        }
        s.tSite[slot] = index;
        s.tAt[slot] = at;
        s.tLength[slot] = length;
        if ((slot + 1) * 2 > s.tKeys.length) {
            rehashTraced(s, slot);
        }
        putKey(s, key, slot);
        s.tCount = slot + 1;  // publishes the slot (volatile)
        return slot;
    }

    private static void putKey(State s, long key, int slot) {
        long[] keys = s.tKeys;
        int mask = keys.length - 1;
        int h = (int) (key ^ (key >>> 32)) * 0x9E3779B1;
        int i = (h ^ (h >>> 16)) & mask;
        while (keys[i] != 0) {
            i = (i + 1) & mask;
        }
        keys[i] = key;
        s.tSlot[i] = slot;
    }

    // The key table twice as large, with the slots before `slots`.
    private static void rehashTraced(State s, int slots) {
        long[] old = s.tKeys;
        int[] oldSlot = s.tSlot;
        s.tKeys = new long[old.length * 2];
        s.tSlot = new int[old.length * 2];
        for (int i = 0; i < old.length; i++) {
            if (old[i] != 0 && oldSlot[i] < slots) {
                putKey(s, old[i], oldSlot[i]);
            }
        }
    }

    // Not Math.min: java.lang.Math is instrumented, and the tracker must not call into counted code.
    private static int min(int a, int b) {
        return a < b ? a : b;
    }

    private static long arrayBytes(int length, int kind) {
        if (kind >= 1 && kind <= 5) {
            return ((long) BASE[kind] + ((long) length << SHIFT[kind]) + alignMask) & ~alignMask;
        }
        return 0;
    }

    /** The site of an object of class c made by the Unsafe.allocateInstance or Object.clone call `call`; -1: none. */
    static int classSite(Class<?> c, int call) {
        if (c == null || !engaged) {
            return -1;
        }
        int site = classSites.find(c, call);
        if (site != -1) {
            return site;
        }
        site = newClassSite(c, call);
        if (site < 0) {
            return -1;
        }
        LOCK.lock();
        try {
            FasthprofClassSites t = classSites;
            if (t.find(c, call) == -1) {
                classSites = t.with(c, call, site);
            }
        } finally {
            LOCK.unlock();
        }
        return site;
    }

    /** What a sure call of Object.clone makes (FasthprofTracker.allocClone): an object like o, at a site classSite() gave. */
    static void countCloneWalked(int context, Object o, int site) {
        if ((site & 15) == 0) {
            countWalked(context, site);
        } else {
            countArrayWalked(context, arrayLength(o), site);
        }
    }

    // Without java.lang.reflect.Array (a native while interpreted).
    private static int arrayLength(Object o) {
        return o instanceof Object[] a ? a.length : o instanceof byte[] b ? b.length : o instanceof int[] i ? i.length
                : o instanceof char[] c ? c.length : o instanceof long[] l ? l.length : o instanceof double[] d ? d.length
                : o instanceof float[] f ? f.length : o instanceof short[] h ? h.length : ((boolean[]) o).length;
    }

    // The agent's (bound at start): a new site for (call, c), or -1.
    private static native int newClassSite(Class<?> c, int call);

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
        if (!engaged || length < 0) {
            return;
        }
        State s = state();
        if (s == null || s.off) {
            return;
        }
        add(s, site >>> 4, arrayBytes(length, site & 15));
    }

    static void countMulti(int[] lengths, int site) {
        if (!engaged) {
            return;
        }
        State s = state();
        if (s == null || s.off) {
            return;
        }
        long[] arrays = levelCounts(lengths);
        int last = lengths.length - 1;
        for (int k = 0; k <= last && arrays[k] != 0; k++) {
            int kind = k < last ? 5 : site & 15;
            add(s, (site >>> 4) - last + k, arrays[k], times(arrays[k], arrayBytes(lengths[k], kind)));
        }
    }

    static void countMultiTraced(FasthprofThreadState t, int[] lengths, int site) {
        State s = tracedState(t);
        if (s == null) {
            countMulti(lengths, site);
        } else if (!s.off) {
            addMulti(s, t, t.stNode[t.sp - 1], lengths, site);
        }
    }

    // Every level of a multianewarray (as countMulti) under (node or walked context, its site).
    private static void addMulti(State s, FasthprofThreadState t, int node, int[] lengths, int site) {
        long[] arrays = levelCounts(lengths);
        int last = lengths.length - 1;
        for (int k = 0; k <= last && arrays[k] != 0; k++) {
            int kind = k < last ? 5 : site & 15;
            addKeyed(s, t, node, (site >>> 4) - last + k, arrays[k], times(arrays[k], arrayBytes(lengths[k], kind)));
        }
    }

    /**
     * How many arrays each level of a multianewarray with these counts makes. HotSpot makes them
     * depth first (ArrayKlass::multi_allocate), each an allocation of its own, and a negative
     * count throws only when it is reached: what was made before stays made (the event path sees
     * each). So with a negative count somewhere, level 0 down gets one array each until the level
     * of the negative count, or just past a zero one (whose deeper counts are then checked); else
     * level k gets the product of the counts above it, saturated at 2^31 (far past what a heap
     * holds: the instruction then throws OutOfMemoryError, counted as asked for like any other).
     */
    static long[] levelCounts(int[] lengths) {
        long[] arrays = new long[lengths.length];
        boolean negative = false;
        for (int length : lengths) {
            negative |= length < 0;
        }
        long n = 1;
        for (int k = 0; k < lengths.length && n != 0; k++) {
            if (negative) {
                if (lengths[k] < 0) {
                    break;
                }
                arrays[k] = 1;
                n = lengths[k];
            } else {
                arrays[k] = n;
                n = n * lengths[k] > (1L << 31) ? (1L << 31) : n * lengths[k];
            }
        }
        return arrays;
    }

    // count * size, saturated: neither is negative, count at most 2^31.
    private static long times(long count, long size) {
        return size > Long.MAX_VALUE / 4 / count ? Long.MAX_VALUE / 4 : count * size;
    }

    private static void add(State s, int index, long size) {
        add(s, index, 1, size);
    }

    private static void add(State s, int index, long count, long size) {
        if (s == SHARED) {
            LOCK.lock();
            try {
                sharedCounts++;
                addTo(s, index, count, size);
            } finally {
                LOCK.unlock();
            }
            return;
        }
        addTo(s, index, count, size);
    }

    private static void addTo(State s, int index, long count, long size) {
        long[] objects = s.objects;
        long[] bytes = s.bytes;
        if (index >= objects.length || index >= bytes.length) {
            int n = objects.length * 2 > index ? objects.length * 2 : index + 1;
            bytes = s.bytes = grown(bytes, n);
            objects = s.objects = grown(objects, n);
        }
        objects[index] += count;
        bytes[index] += size;
    }

    // A copy of a at length n (n >= a.length). No java.util: what the tracker calls must not be
    // rewritten code, or its own allocations would be counted, and re-enter it.
    private static long[] grown(long[] a, int n) {
        long[] b = new long[n];
        System.arraycopy(a, 0, b, 0, a.length);
        return b;
    }

    static boolean counting() {
        return engaged;
    }

    static State state() {
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
        LOCK.lock();
        try {
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
        } finally {
            LOCK.unlock();
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
                endedUnmarked += old.unmarked;
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
