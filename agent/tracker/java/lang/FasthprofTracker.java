/*
 * The tracker of cpu=times and cpu=old (docs/cpu_times.md). fasthprof's class-file rewriter makes
 * every instrumented method call enter(id) first and exit(id) before each return; this class counts
 * those calls per thread, in Java, so that a call never crosses JNI or JVMTI. The agent's writer
 * thread takes the counts in bulk through collect().
 *
 * The agent defines this class with the boot loader, so it lives in java.base (java.lang is read by
 * every module). Its dependencies are kept to natives and intrinsics (Thread.currentThread,
 * System.arraycopy, jdk.internal.misc.Unsafe, which the agent never instruments), so no call made
 * here reaches instrumented code: a re-entry would otherwise count the tracker's own work, or
 * recurse. Allocations of the state of a new thread run Object.<init>, which is not instrumented
 * either; `creating` guards that path in case it ever were.
 *
 * Time: a coarse clock. A thread of the agent (a plain pthread) writes CLOCK_MONOTONIC nanoseconds
 * into off-heap memory every tick; reading it is one load. Differences are exact to within one tick
 * and unbiased while the ticker runs.
 */
package java.lang;

import jdk.internal.misc.Unsafe;

public final class FasthprofTracker {
    private FasthprofTracker() {}

    private static final Unsafe U = Unsafe.getUnsafe();
    private static final long TID_OFFSET = U.objectFieldOffset(Thread.class, "tid");
    private static final Object LOCK = new Object();

    // Off-heap words the agent owns (start()): the clock at +0, the node budget used at +64, and
    // at +72 the number of thread states (the agent collects early when it grows, so that the
    // states of ended threads go before the cap is reached).
    private static long clock;
    private static long budget;
    private static long statesWord;
    private static int depth;
    private static int maxNodes;
    private static int maxThreads;
    private static volatile boolean engaged;

    // Thread states by thread ID, open addressing; replaced whole when it grows or loses states,
    // so that a reader without the lock always sees a consistent array.
    private static volatile FasthprofThreadState[] table = new FasthprofThreadState[256];
    private static int liveStates;
    private static Thread creating;
    private static int untrackedThreads;

    // ---- the agent's calls (JNI) ------------------------------------------------------------

    /** Starts counting. clockAddress: the ticker's word, followed by the budget word at +64. */
    static void start(long clockAddress, int traceDepth, int nodeBudget, int threadCap) {
        clock = clockAddress;
        budget = clockAddress + 64;
        statesWord = clockAddress + 72;
        depth = traceDepth;
        maxNodes = nodeBudget;
        maxThreads = threadCap;
        engaged = true;
    }

    /** Stops counting (VM death): calls from here on are not counted. */
    static void stop() {
        engaged = false;
    }

    /** The current thread is the agent's: its calls are not counted. */
    static void ignoreCurrentThread() {
        Thread t = Thread.currentThread();
        synchronized (LOCK) {
            long tid = U.getLong(t, TID_OFFSET);
            if (find(table, tid) == null) {
                insert(new FasthprofThreadState(t, tid, true, depth));
            }
        }
    }

    /**
     * Exit by exception: the current thread caught one in method id (JVMTI ExceptionCatch), so every
     * open call above the catching activation of id has ended. Which activation catches matters in
     * a recursion, where the exception may have left activations of id above it: `live` is then the
     * number of activations of id on the thread's real stack (the catching one is the topmost of
     * them), counted by the agent; those are the lowest `live` of the shadow stack, and the others
     * have ended. With live = 0 (not counted) and at most one activation of id on the shadow stack,
     * the calls above it are closed; with more, nothing changes and their number is returned, for
     * the agent to count the live ones and call again. Returns 0 when done.
     */
    static int caught(int id, int live) {
        Thread t = Thread.currentThread();
        FasthprofThreadState s = find(table, U.getLong(t, TID_OFFSET));
        if (s == null || s.off) {
            return 0;
        }
        int[] methods = s.stMethod;
        int sp = s.sp;
        int at = -1;
        if (live <= 0) {
            int found = 0;
            for (int i = sp - 1; i >= 0; i--) {
                if (methods[i] == id) {
                    if (at < 0) {
                        at = i;
                    }
                    found++;
                }
            }
            if (found > 1) {
                return found;
            }
        } else {
            // The live-th activation from the bottom. Fewer on the shadow stack than live: some
            // began before the agent came (under attach) and are not on it; then the topmost is
            // taken, as without a count.
            for (int i = 0, seen = 0; i < sp; i++) {
                if (methods[i] == id) {
                    at = i;
                    if (++seen == live) {
                        break;
                    }
                }
            }
        }
        if (at >= 0) {
            long now = U.getLong(clock);
            for (int j = sp - 1; j > at; j--) {
                pop(s, j, now);
            }
        }
        return 0;
    }

    /**
     * The counts since the last collect(), of every thread. The states of the threads in `ended`
     * (found dead by the agent since the last call) are reported one last time and dropped.
     * Returns {int[] methods (depth per row, top first, 0 = none), long[] values (calls, self ns,
     * total ns per row), int[] rowThread (index into threads), Thread[] threads, long[] figures
     * (untracked threads, overflow calls, live states, nodes)}.
     */
    static Object[] collect(Thread[] ended) {
        synchronized (LOCK) {
            FasthprofThreadState[] tab = table;
            int d = depth > 0 ? depth : 1;
            int rows = 0;
            int states = 0;
            for (FasthprofThreadState s : tab) {
                if (s != null) {
                    states++;
                    if (!s.off) {
                        rows += s.nodeCount;
                    }
                }
            }
            int[] methods = new int[rows * d];
            long[] values = new long[rows * 3];
            int[] rowThread = new int[rows];
            Thread[] threads = new Thread[states];
            int row = 0;
            int ti = 0;
            long overflow = 0;
            long nodes = 0;
            for (FasthprofThreadState s : tab) {
                if (s == null) {
                    continue;
                }
                threads[ti++] = s.thread;
                if (s.off) {
                    continue;
                }
                int thread = ti - 1;
                int n = s.nodeCount;  // volatile: the arrays read below cover n nodes
                int[] nm = s.nodeMethods;
                long[] c = s.calls;
                long[] sf = s.self;
                long[] tt = s.total;
                n = min(n, c.length, sf.length, tt.length);
                if (s.repCalls == null || s.repCalls.length < n) {
                    s.repCalls = grow(s.repCalls, n);
                    s.repSelf = grow(s.repSelf, n);
                    s.repTotal = grow(s.repTotal, n);
                }
                nodes += n;
                overflow += s.overflowCalls;
                for (int i = 0; i < n && row < rows; i++) {
                    long dc = c[i] - s.repCalls[i];
                    if (dc == 0) {
                        continue;
                    }
                    long ds = sf[i] - s.repSelf[i];
                    long dt = tt[i] - s.repTotal[i];
                    s.repCalls[i] += dc;
                    s.repSelf[i] += ds;
                    s.repTotal[i] += dt;
                    if (depth > 0) {
                        System.arraycopy(nm, i * depth, methods, row * d, depth);
                    }
                    values[row * 3] = dc;
                    values[row * 3 + 1] = ds;
                    values[row * 3 + 2] = dt;
                    rowThread[row] = thread;
                    row++;
                }
            }
            if (ended != null && ended.length > 0) {
                drop(ended);
            }
            long[] figures = {untrackedThreads, overflow, liveStates, nodes};
            if (row < rows) {
                methods = copy(methods, row * d);
                values = copy(values, row * 3);
                rowThread = copy(rowThread, row);
            }
            return new Object[] {methods, values, rowThread, threads, figures};
        }
    }

    // ---- the injected calls -----------------------------------------------------------------

    public static void enter(int id) {
        if (!engaged) {
            return;
        }
        try {
            push(id);
        } catch (Throwable e) {
            // Never into the program: an OutOfMemoryError or StackOverflowError here costs this
            // call its count, and the program meets the error where it would have anyway.
        }
    }

    public static void exit(int id) {
        if (!engaged) {
            return;
        }
        try {
            popTo(id);
        } catch (Throwable e) {
            // As in enter().
        }
    }

    private static void push(int id) {
        FasthprofThreadState s = state();
        if (s == null || s.off) {
            return;
        }
        int sp = s.sp;
        if (sp == s.stNode.length) {
            growStack(s);
        }
        int parent = sp == 0 ? 0 : s.stNode[sp - 1];
        s.stNode[sp] = depth == 0 ? 0 : child(s, parent, id);
        s.stMethod[sp] = id;
        s.stStart[sp] = U.getLong(clock);
        s.stCallees[sp] = 0;
        s.sp = sp + 1;
    }

    private static void popTo(int id) {
        FasthprofThreadState s = state();
        if (s == null || s.off) {
            return;
        }
        int top = s.sp - 1;
        if (top < 0) {
            return;  // a call that began before the agent came
        }
        long now = U.getLong(clock);
        if (s.stMethod[top] != id) {
            // The frames above this call's ended by an exception that no ExceptionCatch reported
            // (caught by code that is not instrumented); or this call began before the agent came
            // and is not on the stack at all, and then nothing is popped.
            int i = top - 1;
            while (i >= 0 && s.stMethod[i] != id) {
                i--;
            }
            if (i < 0) {
                return;
            }
            for (; top > i; top--) {
                pop(s, top, now);
            }
        }
        pop(s, top, now);
    }

    // ---- inside -----------------------------------------------------------------------------

    private static void pop(FasthprofThreadState s, int i, long now) {
        long elapsed = now - s.stStart[i];
        if (elapsed < 0) {
            elapsed = 0;
        }
        long own = elapsed - s.stCallees[i];
        if (own < 0) {
            own = 0;
        }
        int node = s.stNode[i];
        s.calls[node]++;
        s.self[node] += own;
        s.total[node] += elapsed;
        if (i > 0) {
            s.stCallees[i - 1] += elapsed;
        }
        s.sp = i;
    }

    private static FasthprofThreadState state() {
        Thread t = Thread.currentThread();
        long tid = U.getLong(t, TID_OFFSET);
        FasthprofThreadState[] tab = table;
        FasthprofThreadState s = tab[(int) tid & (tab.length - 1)];
        if (s != null && s.tid == tid) {
            return s;
        }
        return slowState(t, tid);
    }

    private static FasthprofThreadState slowState(Thread t, long tid) {
        if (tid == 0) {
            // A Thread object still being constructed: the JVM runs the constructor on the thread
            // it attaches (JNI AttachCurrentThread), before the thread has its ID. Not counted.
            return null;
        }
        FasthprofThreadState s = find(table, tid);
        if (s != null) {
            return s;
        }
        synchronized (LOCK) {
            s = find(table, tid);
            if (s != null || creating == t) {
                return s;
            }
            creating = t;
            boolean off = liveStates >= maxThreads;
            if (off) {
                untrackedThreads++;
            }
            s = new FasthprofThreadState(t, tid, off, depth);
            insert(s);
            creating = null;
            return s;
        }
    }

    private static FasthprofThreadState find(FasthprofThreadState[] tab, long tid) {
        int mask = tab.length - 1;
        for (int i = (int) tid & mask, n = 0; n <= mask; i = (i + 1) & mask, n++) {
            FasthprofThreadState s = tab[i];
            if (s == null) {
                return null;
            }
            if (s.tid == tid) {
                return s;
            }
        }
        return null;
    }

    // Under LOCK.
    private static void insert(FasthprofThreadState s) {
        FasthprofThreadState[] tab = table;
        int count = 1;
        for (FasthprofThreadState x : tab) {
            if (x != null) {
                count++;
            }
        }
        if (count * 2 > tab.length) {
            tab = rebuild(tab, tab.length * 2, null);
        } else {
            tab = copy(tab);
        }
        place(tab, s);
        if (!s.off) {
            liveStates++;
        }
        table = tab;
        U.putIntVolatile(null, statesWord, liveStates);
    }

    // Under LOCK: forgets the states of these threads (they ended).
    private static void drop(Thread[] ended) {
        FasthprofThreadState[] tab = table;
        int size = tab.length;
        while (size > 256 && liveStates * 8 < size) {
            size /= 2;
        }
        table = rebuild(tab, size, ended);
        U.putIntVolatile(null, statesWord, liveStates);
    }

    private static FasthprofThreadState[] rebuild(FasthprofThreadState[] tab, int size, Thread[] ended) {
        FasthprofThreadState[] fresh = new FasthprofThreadState[size];
        for (FasthprofThreadState s : tab) {
            if (s == null) {
                continue;
            }
            if (ended != null && contains(ended, s.thread)) {
                if (!s.off) {
                    liveStates--;
                    U.getAndAddInt(null, budget, -s.nodeCount);
                }
                continue;
            }
            place(fresh, s);
        }
        return fresh;
    }

    private static boolean contains(Thread[] threads, Thread t) {
        for (Thread x : threads) {
            if (x == t) {
                return true;
            }
        }
        return false;
    }

    private static void place(FasthprofThreadState[] tab, FasthprofThreadState s) {
        int mask = tab.length - 1;
        int i = (int) s.tid & mask;
        while (tab[i] != null) {
            i = (i + 1) & mask;
        }
        tab[i] = s;
    }

    private static int hash(int from, int method) {
        int h = from * 0x9E3779B1 + method * 0x85EBCA6B;
        return h ^ (h >>> 15);
    }

    // The node of a call of `method` made from node `from`.
    private static int child(FasthprofThreadState s, int from, int method) {
        int[] ef = s.edgeFrom;
        int mask = ef.length - 1;
        int i = hash(from, method) & mask;
        while (true) {
            int f = ef[i];
            if (f == from && s.edgeMethod[i] == method) {
                return s.edgeTo[i];
            }
            if (f == FasthprofThreadState.EMPTY) {
                break;
            }
            i = (i + 1) & mask;
        }
        int to = nodeFor(s, from, method);
        addEdge(s, from, method, to);
        return to;
    }

    private static void addEdge(FasthprofThreadState s, int from, int method, int to) {
        if ((s.edgeCount + 1) * 2 > s.edgeFrom.length) {
            int[] of = s.edgeFrom;
            int[] om = s.edgeMethod;
            int[] ot = s.edgeTo;
            int size = of.length * 2;
            s.edgeFrom = new int[size];
            s.edgeMethod = new int[size];
            s.edgeTo = new int[size];
            for (int i = 0; i < size; i++) {
                s.edgeFrom[i] = FasthprofThreadState.EMPTY;
            }
            s.edgeCount = 0;
            for (int i = 0; i < of.length; i++) {
                if (of[i] != FasthprofThreadState.EMPTY) {
                    putEdge(s, of[i], om[i], ot[i]);
                }
            }
        }
        putEdge(s, from, method, to);
    }

    private static void putEdge(FasthprofThreadState s, int from, int method, int to) {
        int mask = s.edgeFrom.length - 1;
        int i = hash(from, method) & mask;
        while (s.edgeFrom[i] != FasthprofThreadState.EMPTY) {
            i = (i + 1) & mask;
        }
        s.edgeFrom[i] = from;
        s.edgeMethod[i] = method;
        s.edgeTo[i] = to;
        s.edgeCount++;
    }

    // The node whose trace is `method` on top of the first depth-1 frames of node `from`.
    private static int nodeFor(FasthprofThreadState s, int from, int method) {
        int d = depth;
        int[] nm = s.nodeMethods;
        int h = method;
        for (int k = 1; k < d; k++) {
            h = h * 31 + nm[from * d + k - 1];
        }
        h ^= h >>> 16;
        int[] bc = s.byContent;
        int mask = bc.length - 1;
        int i = h & mask;
        while (bc[i] != FasthprofThreadState.EMPTY) {
            int n = bc[i];
            if (nm[n * d] == method && sameTail(nm, n * d + 1, from * d, d - 1)) {
                return n;
            }
            i = (i + 1) & mask;
        }
        if (U.getAndAddInt(null, budget, 1) >= maxNodes) {
            U.getAndAddInt(null, budget, -1);
            s.overflowCalls++;
            return 0;
        }
        int n = s.nodeCount;
        if (n == s.calls.length) {
            int size = n * 2;
            s.nodeMethods = copy(nm, size * d);
            s.calls = copy(s.calls, size);
            s.self = copy(s.self, size);
            s.total = copy(s.total, size);
            nm = s.nodeMethods;
        }
        nm[n * d] = method;
        System.arraycopy(nm, from * d, nm, n * d + 1, d - 1);
        if ((n + 1) * 2 > bc.length) {
            int[] fresh = new int[bc.length * 2];
            for (int k = 0; k < fresh.length; k++) {
                fresh[k] = FasthprofThreadState.EMPTY;
            }
            int fm = fresh.length - 1;
            for (int old : bc) {
                if (old != FasthprofThreadState.EMPTY) {
                    int j = contentHash(nm, old * d, d) & fm;
                    while (fresh[j] != FasthprofThreadState.EMPTY) {
                        j = (j + 1) & fm;
                    }
                    fresh[j] = old;
                }
            }
            s.byContent = fresh;
            bc = fresh;
            mask = fm;
            i = h & mask;
            while (bc[i] != FasthprofThreadState.EMPTY) {
                i = (i + 1) & mask;
            }
        }
        bc[i] = n;
        s.nodeCount = n + 1;  // publishes the node (volatile)
        return n;
    }

    private static int contentHash(int[] nm, int at, int d) {
        int h = nm[at];
        for (int k = 1; k < d; k++) {
            h = h * 31 + nm[at + k];
        }
        return h ^ (h >>> 16);
    }

    private static boolean sameTail(int[] nm, int a, int b, int n) {
        for (int k = 0; k < n; k++) {
            if (nm[a + k] != nm[b + k]) {
                return false;
            }
        }
        return true;
    }

    private static void growStack(FasthprofThreadState s) {
        int size = s.stNode.length * 2;
        s.stNode = copy(s.stNode, size);
        s.stMethod = copy(s.stMethod, size);
        s.stStart = copy(s.stStart, size);
        s.stCallees = copy(s.stCallees, size);
    }

    // Copies without java.util.Arrays (instrumented): System.arraycopy is a native.
    private static int[] copy(int[] a, int size) {
        int[] b = new int[size];
        System.arraycopy(a, 0, b, 0, a.length < size ? a.length : size);
        return b;
    }

    private static long[] copy(long[] a, int size) {
        long[] b = new long[size];
        System.arraycopy(a, 0, b, 0, a.length < size ? a.length : size);
        return b;
    }

    private static FasthprofThreadState[] copy(FasthprofThreadState[] a) {
        FasthprofThreadState[] b = new FasthprofThreadState[a.length];
        System.arraycopy(a, 0, b, 0, a.length);
        return b;
    }

    private static long[] grow(long[] a, int n) {
        int size = 16;
        while (size < n) {
            size *= 2;
        }
        return a == null ? new long[size] : copy(a, size);
    }

    private static int min(int a, int b, int c, int d) {
        int m = a < b ? a : b;
        m = m < c ? m : c;
        return m < d ? m : d;
    }
}
